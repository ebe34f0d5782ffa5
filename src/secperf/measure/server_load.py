"""One load level of `secperf server`: the load generator's command line, its run with the server's
CPU read at the counting window's bounds, the level's totals, and the split of the server's CPU per
handshake into the private-key operation and the rest."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from ..core.errors import InputError, MeasurementError
from ..core.jsonlines import parse_line
from ..lab import registry
from ..lab.services import stop_process
from .server_config import LoadParams, ServerConfig, ServerMeasureError, find_loadgen
from .server_cpu import alive, core_times, cores_busy, generator_procs, process_cpu_s


def loadgen_argv(
    port: int,
    cfg: ServerConfig,
    concurrency: int,
    p: LoadParams,
    client_pair: tuple[Path, Path] | tuple[str, str] | None = None,
    app: str = "auto",
    rate: float | None = None,
) -> list[str]:
    """The generator's command line: closed loop at `concurrency` clients, or open loop at `rate`
    new connections per second (then `concurrency` is ignored)."""
    if app == "auto":
        app = {"nginx": "http", "probe": "http", "mosquitto": "mqtt", "coap-server": "none"}[cfg.server]
    procs = generator_procs(p)
    load = (
        ["--rate", f"{rate:g}", "--max-inflight", "4000", "--procs", str(procs)]
        if rate
        else ["--concurrency", str(concurrency), "--procs", str(min(procs, concurrency))]
    )
    argv = [
        str(find_loadgen()),
        "--port",
        str(port),
        *load,
        "--duration",
        f"{p.duration_s:g}",
        "--warmup",
        f"{p.warmup_s:g}",
        *(["--dtls", "--tls", "1.2"] if cfg.protocol == "dtls" else ["--tls", cfg.tls]),
        "--resume-ratio",
        f"{cfg.resume_ratio:g}",
        "--app",
        app,
        "--seed",
        str(p.seed),
    ]
    if cfg.key_type == "rsa-1024":
        argv += ["--ciphers", "DEFAULT:@SECLEVEL=0"]  # a 1024-bit server key is below OpenSSL's level 2
    if client_pair:
        argv += ["--cert", str(client_pair[0]), "--key", str(client_pair[1])]
    return argv


def run_level(
    argv: list[str], server_pid: int | None, timeout_s: float, cores: list[int] | None = None
) -> dict[str, Any]:
    """Run the generator (pinned to `cores`, default: every core but the server's); read the
    server's CPU when counting starts (first interval boundary is warm-up + interval) and after the
    run. Returns the generator's lines and the CPU readings. `server_pid` None: a server secperf did
    not start (--target), whose CPU is not read (the readings are None)."""
    if server_pid is None:
        cores = cores or sorted(os.sched_getaffinity(0))
    elif cores is None:
        usable, server = os.sched_getaffinity(0), os.sched_getaffinity(server_pid)
        cores = sorted(usable - server) or sorted(usable)
    pinned: list[int] = cores

    def pin_generator() -> None:
        os.sched_setaffinity(0, pinned)  # inherited by the generator's forked processes

    proc = registry.spawn(
        argv, "secperf-loadgen", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=pin_generator
    )
    lines: list[dict[str, Any]] = []
    readings: list[tuple[float, float]] = []  # (monotonic s, server cpu s) per interval line
    meta_seen = threading.Event()

    def reader() -> None:
        for line in proc.stdout or ():
            m = parse_line(line)
            if m is None:
                continue
            if m.get("type") == "interval" and m.get("proc", 0) == 0 and server_pid is not None:
                try:
                    readings.append((time.monotonic(), process_cpu_s(server_pid)))
                except MeasurementError:
                    pass  # the server stopped (a signal ends the run): this thread just stops reading it
            if m.get("type") == "meta":
                meta_seen.set()
            lines.append(m)

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    # the counting window opens warm-up seconds after start: read the server's CPU then
    meta_seen.wait(10)
    warm = next((m.get("warmup_s", 0) for m in lines if m.get("type") == "meta"), 0)
    time.sleep(warm)
    start = (time.monotonic(), process_cpu_s(server_pid) if server_pid is not None else None)
    cores0 = core_times()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        stop_process(proc)
        raise ServerMeasureError(f"secperf-loadgen did not finish within {timeout_s:.0f} s") from None
    t.join(5)
    registry.forget(proc)
    end = (time.monotonic(), process_cpu_s(server_pid) if server_pid is not None else None)
    cores1 = core_times()
    err = proc.stderr.read().strip() if proc.stderr else ""
    if proc.returncode == 2:
        raise InputError(f"secperf-loadgen: {err}")
    return {
        "lines": lines,
        "start": start,
        "end": end,
        "readings": readings,
        "stderr": err,
        "returncode": proc.returncode,
        "cores": list(cores),
        "server_core_busy": cores_busy(
            cores0,
            cores1,
            sorted(os.sched_getaffinity(server_pid)) if server_pid is not None and alive(server_pid) else [],
        ),
        "loadgen_cores_busy": cores_busy(cores0, cores1, cores),
    }


def summarize_level(run: dict[str, Any]) -> dict[str, Any]:
    """Totals over the generator's processes, the server's CPU in the window, per handshake."""
    ends = [m for m in run["lines"] if m.get("type") == "end"]
    errors = [m for m in run["lines"] if m.get("type") == "error"]
    if not ends:
        why = errors[0]["reason"] if errors else (run["stderr"] or "no end line")
        raise ServerMeasureError(f"secperf-loadgen failed: {why}")
    tot = {
        k: sum(e.get(k, 0) for e in ends)
        for k in (
            "handshakes",
            "full",
            "resumed",
            "resume_missed",
            "failed",
            "started",
            "not_started",
            "cpu_s",
            "target_rate_per_s",
            "cookie_exchanges",
            "retransmits",
        )
    }
    elapsed = max(e["elapsed_s"] for e in ends)
    reasons: dict[str, int] = {}
    for e in ends:
        for k, v in (e.get("errors") or {}).items():
            reasons[k] = reasons.get(k, 0) + v
    wall_s = run["end"][0] - run["start"][0]
    cpu_s = run["end"][1] - run["start"][1] if run["end"][1] is not None else 0.0  # None: not read (--target)
    hs = tot["handshakes"]
    # latency: the busiest process's percentiles (each process sees the same server)
    lat = max(ends, key=lambda e: e.get("handshakes", 0))
    # the generator's own CPU (getrusage inside its counting window) over the cores it could use
    gen_cores = min(len(ends), len(run.get("cores") or [])) or len(ends)
    meta: dict[str, Any] = next((m for m in run["lines"] if m.get("type") == "meta"), {})
    return {
        "handshakes": hs,
        "full": tot["full"],
        "resumed": tot["resumed"],
        "resume_missed": tot["resume_missed"],
        "failed": tot["failed"],
        "errors": reasons,
        "elapsed_s": elapsed,
        "handshakes_per_s": hs / elapsed if elapsed else 0.0,
        "offered_per_s": tot["target_rate_per_s"] or None,
        "started_per_s": tot["started"] / elapsed if elapsed else 0.0,
        "not_started": tot["not_started"],
        "resumed_share": tot["resumed"] / hs if hs else 0.0,
        "cookie_exchanges": tot["cookie_exchanges"],
        "retransmits": tot["retransmits"],
        "server_cpu_s": cpu_s,
        "server_wall_s": wall_s,
        "server_utilisation": cpu_s / wall_s if wall_s else 0.0,
        "server_cpu_us_per_handshake": cpu_s * 1e6 / hs if hs else None,
        "loadgen_cpu_us_per_handshake": tot["cpu_s"] * 1e6 / hs if hs else None,
        "loadgen_cpu_s": tot["cpu_s"],
        "loadgen_busy": tot["cpu_s"] / (elapsed * gen_cores) if elapsed else None,
        "loadgen_cores_n": gen_cores,
        # the same CPU over every core it was pinned to (what the cores' own busy share compares with)
        "loadgen_share_of_cores": tot["cpu_s"] / (elapsed * len(run.get("cores") or ends)) if elapsed else None,
        "server_core_busy": run.get("server_core_busy"),
        "loadgen_cores_busy": run.get("loadgen_cores_busy"),
        "loadgen": {
            "procs": len(ends),
            "cores": run.get("cores"),
            "library": meta.get("library"),
            "verify": "off (load, not authentication: as openssl s_time, tls-perf and h2load)",
        },
        "latency_ms": {k: lat.get(k) for k in ("p50_ms", "p90_ms", "p95_ms", "p99_ms", "max_ms")},
        "handshake_ms": {k[3:]: lat.get(k) for k in ("hs_p50_ms", "hs_p95_ms", "hs_p99_ms")},
    }


def interval_cpu_per_hs(run: dict[str, Any]) -> list[float]:
    """Per interval: server CPU µs / handshakes (proc 0's intervals; all processes' counts)."""
    ivs: dict[float, int] = {}
    for m in run["lines"]:
        if m.get("type") == "interval":
            ivs[round(m["t_s"])] = ivs.get(round(m["t_s"]), 0) + m["handshakes"]
    out, prev = [], run["start"]
    for (t, cpu), (_k, hs) in zip(run["readings"], sorted(ivs.items())):
        if hs > 0 and cpu > prev[1]:
            out.append((cpu - prev[1]) * 1e6 / hs)
        prev = (t, cpu)
    return out


SLEEP_SPIN_TAIL_US = 400.0  # the shim's sleep mode spins the last 400 µs before its deadline (se_shim.c)


def split(
    level: dict[str, Any],
    op: dict[str, Any] | None,
    offload_calls: list[dict[str, Any]] | None = None,
    wait: str | None = None,
) -> dict[str, Any]:
    """Server CPU per handshake = private-key operations + the rest (both µs per handshake). With
    the key offloaded, the shim's log gives each C_Sign's wall time (lock wait + SoftHSM2's own
    signature + injected delay), the card's occupancy per signature (SoftHSM2 + delay: the token's
    lock serialises them, so 1 / occupancy bounds the capacity) and the emulation's own host CPU:
    SoftHSM2 computes the signature on this CPU (a real card would not) and, in sleep mode, the shim
    spins the last 400 µs before its deadline. SoftHSM2's CPU per signature is taken as the software
    signature's (`op`, measured side by side: SoftHSM2 signs with OpenSSL), at most its wall time in
    the shim log (which on a loaded machine also holds time spent waiting for the CPU).
    `card_host_cpu_us` is the CPU per handshake with that taken out: what the server would spend
    with a real card."""
    total = level.get("server_cpu_us_per_handshake")
    hs = level["handshakes"]
    if total is None or not hs:
        return {}
    signs_per_hs = level["full"] / hs
    out = {"total_us": total, "signatures_per_handshake": signs_per_hs}
    if offload_calls is not None:
        signs = [c for c in offload_calls if c.get("fn") == "C_Sign" and not c.get("length_query")]
        n = len(signs) or 1
        per = sum(c.get("duration_ns", 0) for c in signs) / n / 1000 if signs else 0.0
        real = sum(c.get("real_ns", 0) for c in signs) / n / 1000 if signs else 0.0
        delay = sum(c.get("delay_ns", 0) for c in signs) / n / 1000 if signs else 0.0
        soft = min(real, op["cpu_us"]) if op else real
        emu = soft + (min(SLEEP_SPIN_TAIL_US, delay) if wait == "sleep" else 0.0)
        out.update(
            key_op_source="shim log (C_Sign duration: lock wait + SoftHSM2 + injected delay)",
            key_op_wall_us=per,
            token_signs=len(signs),
            token_real_us=real,
            token_delay_us=delay,
            card_occupancy_us=real + delay,
            card_bound_per_s=1e6 / (real + delay) if signs and real + delay > 0 else None,
            emulation_cpu_us=emu * signs_per_hs,
            softhsm_cpu_us=soft,
            card_host_cpu_us=max(0.0, total - emu * signs_per_hs),
        )
        return out
    if op is None:
        return out
    key_us = op["cpu_us"] * signs_per_hs
    out.update(
        key_op_source=f"secperf-probe speed {op['alg']} sign, measured side by side",
        key_op_us=key_us,
        rest_us=total - key_us,
        key_op_share=key_us / total if total else None,
    )
    return out
