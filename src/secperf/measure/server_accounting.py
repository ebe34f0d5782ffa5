"""Does the probe server's CPU accounting add up? Its CPU per full handshake against the measured
signature plus a no-key baseline (`secperf server --check-accounting`)."""

from __future__ import annotations

import dataclasses
import statistics
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.paths import private_dir
from .server_config import LoadParams, ServerConfig, ServerMeasureError
from .server_cpu import pin
from .server_load import loadgen_argv, run_level, summarize_level
from .server_start import pid_port, private_op_us, start_server

if TYPE_CHECKING:
    from ..lab.pki import LabPKI


def accounting_check(
    pki: LabPKI,
    key: str = "rsa-2048",
    rounds: int = 5,
    seconds: float = 1.5,
    share: float = 0.5,
    core: int = 0,
    workdir: Path | None = None,
    seed: int = 1,
    ref: str = "ecdsa-p256",
) -> dict[str, Any]:
    """Does the probe server's own accounting add up? Its CPU per full handshake with `key` against
    the sum of its per-operation cost (the signature, `secperf-probe speed` on the server's core)
    and its no-key baseline: the same server's CPU per full handshake with a cheap reference key
    (`ref`) minus that key's own measured signature. That baseline keeps everything a full
    handshake does besides the key's arithmetic (the Certificate message, the transcript hash and
    the signing set-up inside the TLS stack); a resumed handshake (also reported) lacks them, about
    a tenth of a full handshake here, which is why it is not the baseline.

    All handshakes run at the same open-loop rate (`share` of the key's capacity, measured first),
    interleaved `rounds` times with the signature timings; medians are compared. Same rate, because
    CPU per handshake depends on load (at a lower rate every handshake pays more wake-ups and colder
    caches); interleaved, because other work on this machine changes CPU costs minute to minute."""

    wd = private_dir((workdir or Path(tempfile.mkdtemp(prefix="secperf-acc-"))) / f"accounting-{key}")
    cfg, rcfg = ServerConfig("probe", key), ServerConfig("probe", ref)
    srv = start_server(cfg, pki, private_dir(wd / "key"), seed)
    rsrv = None
    try:
        rsrv = start_server(rcfg, pki, private_dir(wd / "ref"), seed)
        pid, port = pid_port(srv)
        pin(pid, core)
        pin(pid_port(rsrv)[0], core)
        cap_p = LoadParams(concurrency=[8], duration_s=max(1.0, seconds), warmup_s=0.3, seed=seed, core=core)
        cap = summarize_level(run_level(loadgen_argv(port, cfg, 8, cap_p), pid, 60))
        rate = max(10.0, share * cap["handshakes_per_s"])
        p = LoadParams(concurrency=[1], duration_s=seconds, warmup_s=0.3, seed=seed, core=core)
        got: dict[str, list[float]] = {"full": [], "ref_full": [], "resumed": [], "sign": [], "ref_sign": []}
        rates = []
        runs = (
            ("full", srv, cfg),
            ("ref_full", rsrv, rcfg),
            ("resumed", srv, dataclasses.replace(cfg, resume_ratio=1.0)),
        )
        for _ in range(rounds):
            for name, sv, c in runs:
                sv_pid, sv_port = pid_port(sv)
                lv = summarize_level(run_level(loadgen_argv(sv_port, c, 1, p, rate=rate), sv_pid, seconds + 30))
                if not lv["server_cpu_us_per_handshake"]:
                    raise ServerMeasureError(f"accounting: no handshakes at {rate:.0f}/s ({c.label()})")
                got[name].append(lv["server_cpu_us_per_handshake"])
                rates.append(lv["handshakes_per_s"])
            got["sign"].append(private_op_us(key, 20, seed, core)["cpu_us"])
            got["ref_sign"].append(private_op_us(ref, 20, seed, core)["cpu_us"])
    finally:
        srv.stop()
        if rsrv is not None:
            rsrv.stop()
    m = {k: statistics.median(v) for k, v in got.items()}
    base = m["ref_full"] - m["ref_sign"]
    return {
        "key": key,
        "reference_key": ref,
        "capacity_per_s": cap["handshakes_per_s"],
        "rate_per_s": rate,
        "achieved_per_s": [min(rates), max(rates)],
        "full_cpu_us": m["full"],
        "sign_cpu_us": m["sign"],
        "no_key_baseline_us": base,
        "ratio": m["full"] / (m["sign"] + base),
        "resumed_cpu_us": m["resumed"],
        "ratio_with_resumed_baseline": m["full"] / (m["sign"] + m["resumed"]),
        "rounds": got,
        "baseline": f"full handshakes with {ref} at the same rate minus its measured signature",
    }
