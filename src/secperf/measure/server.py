"""Server CPU per handshake and handshake capacity (study S3 on today's servers).

A real server started by secperf (nginx with `worker_processes 1` and no master process, the probe
server in its concurrent mode, mosquitto) is pinned to one core and driven by secperf-loadgen in
closed loop at each concurrency level. The server's CPU comes from its own accounting: the kernel's
per-thread run time (/proc/PID/task/*/schedstat, ns; /proc/PID/stat's utime+stime as the
fallback), read when the generator starts counting and after every interval it reports. CPU per
handshake = server CPU in the window / handshakes the generator completed in it.

The split "private-key operation vs the rest" takes the private-key operation's cost measured side
by side (`secperf-probe speed`, the same key, sign with SHA-256) times the signatures the server made
(one per full handshake, none per resumed one); the rest is what remains. With the key offloaded to
the token behind the shim, the operation's cost is what the shim's log shows per C_Sign (lock wait,
SoftHSM2 and the injected delay); in `sleep` mode that time is wall time the server's thread slept,
not CPU, which is the point of the comparison (study S3: a busy-polled card does not free the CPU).

The parts, one concern each: configurations and checks (server_config), CPU accounting and pinning
(server_cpu), starting the server and the side-by-side private-key operation (server_start), one
load level (server_load), the accounting check (server_accounting) and the reconnect storm
(server_storm). This module runs a configuration's levels into series.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import result as R
from ..core.errors import MeasurementError, SetupError
from ..core.paths import private_dir
from ..core.result_schema import Result, Series, ServerDerived
from ..lab.server_software import server_software
from .server_accounting import accounting_check
from .server_config import (
    DTLS_SERVERS,
    KEYS,
    LOADGEN_NAME,
    OFFLOAD_PROFILE,
    OFFLOAD_SERVERS,
    PROTOCOLS,
    SERVERS,
    TOKEN_KEYS,
    WAITS,
    LoadParams,
    ServerConfig,
    ServerMeasureError,
    find_loadgen,
    validate,
)
from .server_cpu import (
    BUSY,
    MAX_AUTO_PROCS,
    OTHERS,
    core_times,
    cores_busy,
    generator_cores,
    generator_procs,
    pin,
    process_cpu_s,
    rate_limit,
)
from .server_load import SLEEP_SPIN_TAIL_US, interval_cpu_per_hs, loadgen_argv, run_level, split, summarize_level
from .server_start import Offload, low_seclevel_conf, negotiated, pid_port, private_op_us, start_server

if TYPE_CHECKING:
    from ..core.store import Run
    from . import Progress
from ..lab.pki import LabPKI
from .server_storm import replay_storm, storm_argv

TOKEN_BOUND = 0.85  # a level at this share of the token's one-at-a-time bound is limited by the token

__all__ = [
    "BUSY",
    "DTLS_SERVERS",
    "KEYS",
    "LOADGEN_NAME",
    "MAX_AUTO_PROCS",
    "OFFLOAD_PROFILE",
    "OFFLOAD_SERVERS",
    "OTHERS",
    "PROTOCOLS",
    "SERVERS",
    "SLEEP_SPIN_TAIL_US",
    "TOKEN_BOUND",
    "TOKEN_KEYS",
    "WAITS",
    "LoadParams",
    "Offload",
    "ServerConfig",
    "ServerMeasureError",
    "accounting_check",
    "core_times",
    "cores_busy",
    "fill_level",
    "find_loadgen",
    "generator_cores",
    "generator_procs",
    "interval_cpu_per_hs",
    "level_failures",
    "loadgen_argv",
    "low_seclevel_conf",
    "measure_config",
    "negotiated",
    "pin",
    "private_op_us",
    "process_cpu_s",
    "rate_limit",
    "replay_storm",
    "run_level",
    "run_server",
    "split",
    "start_server",
    "storm_argv",
    "summarize_level",
    "validate",
]


def measure_config(
    cfg: ServerConfig,
    p: LoadParams,
    pki: LabPKI,
    doc: Result | None = None,
    on_series: Callable[[Series], object] | None = None,
) -> list[Series]:
    """One server set-up at every concurrency level; one series per level."""
    workdir = private_dir(
        (p.workdir or Path("/tmp")) / "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in cfg.series_id(0))
    )
    off = None
    series_out = []
    op = None
    try:
        if cfg.offload:
            off = Offload(*cfg.offloaded(), cfg.key_type, workdir, p.seed)
        # offloaded too: SoftHSM2 signs with OpenSSL on this CPU, about the software signature's cost
        op = private_op_us(cfg.key, p.op_n, p.seed)
    except (MeasurementError, SetupError, subprocess.TimeoutExpired, OSError) as exc:
        s = _series(cfg, None if p.rates else p.concurrency[0], p, None, p.rates[0] if p.rates else None)
        R.add_failure(s, f"set-up: {exc}")
        return [R.finalize_series(s)]
    client_pair = None
    if cfg.client_auth:  # mosquitto too: require_certificate follows --client-auth (start_server)
        cs = pki.client("ecdsa-p256")
        client_pair = (cs.cert, cs.key)
    srv = None
    try:
        srv = start_server(cfg, pki, workdir, p.seed, off)
        pid, port = pid_port(srv)
        affinity = pin(pid, p.core)
        gen_cores = generator_cores(p.core)
        software = server_software(cfg.server)
        agreed = negotiated(port, cfg, client_pair)
        levels = [(None, r) for r in p.rates] if p.rates else [(c, None) for c in p.concurrency]
        for conc, rate in levels:
            s = _series(cfg, conc, p, off, rate)
            s.labels.update(
                server_pid=pid,
                pinned_to=affinity,
                loadgen_cores=gen_cores,
                loadgen_procs=generator_procs(p),
                server_software=software,
            )
            t0_ns = time.monotonic_ns()
            try:
                argv = loadgen_argv(port, cfg, conc or 1, p, client_pair, rate=rate)
                run = run_level(argv, pid, p.warmup_s + p.duration_s + 30, gen_cores)
                level = summarize_level(run)
            except ServerMeasureError as exc:
                R.add_failure(s, str(exc))
                series_out.append(R.finalize_series(s))
                continue
            fill_level(s, level, run, op, off.calls(t0_ns) if off else None, off, rate)
            d = s.derived_as(ServerDerived)
            d.negotiated = agreed
            if rate and level["started_per_s"] < 0.95 * rate:
                # the generator could not start connections at the asked rate: a warning with what it did
                d.warning = (
                    f"the load generator started {level['started_per_s']:.0f} connections/s "
                    f"of the {rate:g}/s asked ({level['not_started']} arrivals found no free "
                    "slot or came late): the achieved rate is reported, not the asked one"
                )
            level_failures(s, level)
            series_out.append(R.finalize_series(s))
            if on_series:
                on_series(series_out[-1])
    except MeasurementError as exc:
        s = _series(cfg, None if p.rates else p.concurrency[0], p, off, p.rates[0] if p.rates else None)
        R.add_failure(s, str(exc))
        series_out.append(R.finalize_series(s))
    finally:
        if srv is not None:
            srv.stop()
    return series_out


def fill_level(
    s: Series,
    level: dict[str, Any],
    run: dict[str, Any],
    op: dict[str, Any] | None,
    calls: list[dict[str, Any]] | None,
    off: Offload | None,
    rate: float | None,
) -> None:
    """One load level's numbers into its series (local generators or a cluster's merged ones): the
    level's summary, which side limited the rate, the server CPU split, and the per-interval samples."""
    d = s.derived_as(ServerDerived)
    for k, v in [*level.items(), *rate_limit(level, open_loop=bool(rate)).items()]:
        setattr(d, k, v)  # the generator's and the limit's figures, each a ServerDerived field (checked)
    d.split = split(level, op, calls, off.profile.wait if off else None)
    bound = (d.split or {}).get("card_bound_per_s") if off else None
    if off and bound and (d.handshakes_per_s or 0) >= TOKEN_BOUND * bound:
        # the token signs one handshake at a time: at its bound, neither CPU is what limited the rate
        d.limited_by, d.limited_by_why = "the token", None
        d.limit_note = (
            f"the token limited the rate: one signature at a time, {1e3 / bound:.1f} ms each with profile "
            f"{off.profile.name} ({bound:.1f}/s at most), {d.handshakes_per_s:.1f}/s reached"
        )
    if op:
        d.private_op = op
    per_iv = interval_cpu_per_hs(run)
    s.values_us = per_iv or ([level["server_cpu_us_per_handshake"]] if level["server_cpu_us_per_handshake"] else [])
    s.samples = [m for m in run["lines"] if m.get("type") == "interval"]


def level_failures(s: Series, level: dict[str, Any]) -> None:
    """The generators' errors of one level as failures, and a level where no handshake completed."""
    for reason, count in level["errors"].items():
        R.add_failure(s, f"{count}× {reason}")
    if level["handshakes"] == 0:
        R.add_failure(s, "no handshake completed: is the server reachable and does it accept this configuration?")


def _series(
    cfg: ServerConfig, conc: int | None, p: LoadParams, off: Offload | None, rate: float | None = None
) -> Series:
    labels = {
        "server": cfg.server,
        "key": cfg.key,
        "key_source": cfg.source,
        "client_auth": cfg.client_auth,
        "resume_ratio": cfg.resume_ratio,
        "chain_depth": cfg.depth,
        "tls": "dtls1.2" if cfg.protocol == "dtls" else cfg.tls,
        "protocol": cfg.protocol,
        "concurrency": conc,
        "loop": "open" if rate else "closed",
        "offered_per_s": rate,
        "core": p.core,
        "duration_s": p.duration_s,
        "warmup_s": p.warmup_s,
        "config": cfg.label(),
        "key_extractable": (False if off else True),
        "key_storage": (
            "token behind the shim (PKCS#11, not extractable)" if off else "PEM file readable by the server process"
        ),
    }
    if off:
        labels.update(profile=off.profile.name, wait=off.profile.wait, profile_source=off.profile.source)
    return R.new_series(
        cfg.series_id(conc or 0, rate),
        kind="server",
        labels=labels,
        timer={
            "name": "server CPU per handshake",
            "start": "the load generator's counting window opens (after warm-up): the server's CPU time read",
            "end": "each interval line / the window closes: the server's CPU time read again; the CPU in between "
            "divided by the handshakes completed in it",
            "clock": "/proc/PID/task/*/schedstat (run time, ns)",
        },
    )


def run_server(
    configs: list[ServerConfig], p: LoadParams, doc: Result, run: Run | None = None, progress: Progress | None = None
) -> Result:
    pki = LabPKI().ensure()
    if p.workdir is None and run is not None:
        p.workdir = private_dir(run.dir / "server")
    for i, cfg in enumerate(configs):
        if progress:
            progress("start", cfg, i, len(configs), None)
        doc.series += measure_config(cfg, p, pki, doc)
        if run is not None:
            run.save(doc)
        if progress:
            progress("done", cfg, i, len(configs), None)
    return doc
