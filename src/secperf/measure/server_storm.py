"""A reconnect storm replayed on a real server: nginx's capacity just before and after, and in
between many clients connecting at once and retrying after a back-off policy."""

from __future__ import annotations

import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import InputError, MeasurementError
from ..core.jsonlines import parse_line
from ..core.paths import private_dir
from .accept_rate import measure_accept_rate
from .server_config import LoadParams, ServerConfig, ServerMeasureError, find_loadgen
from .server_cpu import pin, process_cpu_s
from .server_load import loadgen_argv, run_level, summarize_level
from .server_start import pid_port, start_server

if TYPE_CHECKING:
    from ..lab.pki import LabPKI


def storm_argv(
    port: int,
    clients: int,
    policy: str,
    base_s: float,
    cap_s: float,
    timeout_s: float,
    duration_s: float,
    tls: str = "1.3",
    app: str = "http",
    spread_s: float = 0.0,
    seed: int = 1,
    max_attempts: int = 100,
) -> list[str]:
    return [
        str(find_loadgen()),
        "--port",
        str(port),
        "--storm",
        str(clients),
        "--backoff",
        policy,
        "--backoff-base-ms",
        f"{base_s * 1000:g}",
        "--backoff-cap-ms",
        f"{cap_s * 1000:g}",
        "--timeout-ms",
        str(int(timeout_s * 1000)),
        "--max-attempts",
        str(max_attempts),
        "--spread-ms",
        f"{spread_s * 1000:g}",
        "--duration",
        f"{duration_s:g}",
        "--tls",
        tls,
        "--app",
        app,
        "--seed",
        str(seed),
    ]


def idle_accept(port: int, server: str) -> dict[str, Any]:
    """The accept rate of the idle server this replay started here, measured just before its capacity
    run (measure/accept_rate: bursts of TCP connects into its accept queue, read by sock_diag), which
    fleet's model takes instead of its assumed 20,000/s. A reading that cannot be made is recorded
    with its reason, and the model then says it assumed its default."""
    try:
        acc = measure_accept_rate(port)
    except (MeasurementError, OSError) as exc:
        return {"accept_per_s": None, "why_none": str(exc)}
    if acc.get("accept_per_s"):
        bound = ", a lower bound (most rounds drained within one reading)" if acc.get("lower_bound") else ""
        acc["from"] = f"measured: bursts of TCP connects into the idle {server}'s accept queue (accept_rate){bound}"
    return acc


def replay_storm(
    pki: LabPKI,
    clients: int,
    policy: str = "exponential",
    base_s: float = 0.5,
    cap_s: float = 8.0,
    timeout_s: float = 10.0,
    key: str = "rsa-2048",
    core: int = 0,
    capacity_s: float = 2.0,
    duration_s: float = 120.0,
    workdir: Path | None = None,
    seed: int = 1,
) -> dict[str, Any]:
    """A small reconnect storm on a real server: nginx (pinned to `core`, listen backlog and
    worker_connections above `clients`) measured at saturation (closed loop, 32 clients) just before
    and just after the storm (the model gets their mean: other work on the machine moves what the
    server gets), and in between `clients` clients of `secperf-loadgen --storm` connecting at once,
    each retrying after the back-off policy until it is back. Returns the capacity, the storm's end
    line (time until all are back, wait percentiles, failed attempts), the server's CPU during it and
    its idle accept rate (idle_accept)."""
    wd = private_dir((workdir or Path(tempfile.mkdtemp(prefix="secperf-storm-"))) / f"storm-{clients}")
    cfg = ServerConfig("nginx", key)
    srv = start_server(cfg, pki, wd, seed, backlog=max(512, clients + 64))
    try:
        pid, port = pid_port(srv)
        pin(pid, core)
        accept = idle_accept(port, "nginx")
        p = LoadParams(concurrency=[32], duration_s=capacity_s, warmup_s=0.3, seed=seed, core=core)
        before = summarize_level(run_level(loadgen_argv(port, cfg, 32, p), pid, capacity_s + 30))
        time.sleep(1.0)  # the capacity run's connections are gone before the storm starts
        cpu0 = process_cpu_s(pid)
        try:
            r = subprocess.run(
                storm_argv(port, clients, policy, base_s, cap_s, timeout_s, duration_s, seed=seed),
                capture_output=True,
                text=True,
                timeout=duration_s + 60,
            )
        except subprocess.TimeoutExpired:
            raise ServerMeasureError(f"secperf-loadgen --storm did not end within {duration_s + 60:.0f} s") from None
        cpu = process_cpu_s(pid) - cpu0
        time.sleep(1.0)
        after = summarize_level(run_level(loadgen_argv(port, cfg, 32, p), pid, capacity_s + 30))
    finally:
        srv.stop()
    lines, end = storm_output(r)
    return storm_record(
        "nginx",
        key,
        (clients, policy, base_s, cap_s, timeout_s),
        before,
        after,
        end,
        before["server_cpu_us_per_handshake"],
        cpu,
        intervals=[m for m in lines if m.get("type") == "interval"],
        accept_rate=accept,
    )


def storm_output(r: subprocess.CompletedProcess[str]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The storm generator's JSON lines and its end line; a refused option is the user's (InputError),
    no end line a failed storm (ServerMeasureError) with the generator's last words."""
    if r.returncode == 2:
        raise InputError(f"secperf-loadgen --storm: {r.stderr.strip()}")
    lines = [m for m in map(parse_line, r.stdout.splitlines()) if m]
    end = next((m for m in lines if m.get("type") == "end"), None)
    if end is None:
        raise ServerMeasureError(f"secperf-loadgen --storm gave no end line: {(r.stderr or r.stdout).strip()[-300:]}")
    return lines, end


def storm_record(
    server: str,
    key: str,
    storm_of: tuple[int, str, float, float, float],
    before: dict[str, Any],
    after: dict[str, Any],
    storm: dict[str, Any],
    cpu_us_per_handshake: float | None,
    server_cpu_s: float | None,
    **more: Any,
) -> dict[str, Any]:
    """A replayed storm as fleet keeps it, the same for every path (here, a --target, a cluster): who,
    the storm (clients, policy, base, cap, timeout), the capacity measured before and after it, the
    storm's end line and the server's CPU, then what the path adds (`more`)."""
    clients, policy, base_s, cap_s, timeout_s = storm_of
    return {
        "server": server,
        "key": key,
        "clients": clients,
        "policy": policy,
        "base_s": base_s,
        "cap_s": cap_s,
        "timeout_s": timeout_s,
        "capacity_per_s": (before["handshakes_per_s"] + after["handshakes_per_s"]) / 2,
        "capacity_before_after_per_s": [before["handshakes_per_s"], after["handshakes_per_s"]],
        "capacity_cpu_us_per_handshake": cpu_us_per_handshake,
        "storm": storm,
        "server_cpu_s": server_cpu_s,
        **more,
    }
