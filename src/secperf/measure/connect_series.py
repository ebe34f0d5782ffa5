"""A `secperf connect` series: its timer and labels, the phases one connection's establishment time
splits into, and what is derived over a row's connections (phase medians, resumption, the secure
element's calls)."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from ..core import result as R
from ..core import stats
from ..core.result_schema import ConnectDerived, Series
from .connect_config import RESUMPTION_REFUSED, ConnectConfig
from .signer import per_call_breakdown

if TYPE_CHECKING:
    from .connect_keys import KeyMaterial


PHASES = (
    "socket connect",
    "handshake: client CPU",
    "secure element",
    "handshake: server + network",
    "protocol step",
    "other",
)


def probe_phases(
    conn: dict[str, Any], calls: list[dict[str, Any]], busy: bool = False
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Split one probe connection's establishment time into phases (µs, summing to usable_us).

    The shim's calls inside the connection [t0_ns, t1_ns] are the secure element: their real
    (SoftHSM2) part ran on the client thread inside the TLS library's CPU, their injected delay
    while the thread waited; both are moved out of those phases into "secure element"."""
    t0, t1 = conn.get("t0_ns", 0), conn.get("t1_ns", 0)
    mine = [c for c in calls if t0 <= c.get("start_ns", -1) <= t1]
    se_real = sum(c.get("real_ns", 0) for c in mine) / 1000
    se_delay = sum(c.get("delay_ns", 0) for c in mine) / 1000
    usable = float(conn["usable_us"])
    tcp = float(conn.get("tcp_connect_us", 0.0))
    hs = float(conn.get("handshake_wall_us", 0.0))
    lib = float(conn.get("lib_cpu_us", 0.0))
    app = conn.get("app") or {}
    step = float(app.get("write_us", 0.0)) + float(app.get("read_us", 0.0))
    # a busy-waiting element (profile wait = busy) spins on the client thread: its delay is CPU too
    client_cpu = max(0.0, lib - se_real - (se_delay if busy else 0.0))
    se = se_real + se_delay
    server_net = max(0.0, hs - client_cpu - se)
    other = usable - tcp - client_cpu - se - server_net - step
    parts = [tcp, client_cpu, se, server_net, step, other]
    phases = [{"phase": p, "us": round(v, 3)} for p, v in zip(PHASES, parts)]
    fns: dict[str, int] = {}
    for c in mine:
        fns[c["fn"]] = fns.get(c["fn"], 0) + 1
    return phases, {"calls": len(mine), "by_fn": fns, "se_us": round(se, 3)}


def phase_medians(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    order: list[str] = []
    per: dict[str, list[float]] = {}
    for s in samples:
        for p in s.get("phases", []):
            if p["phase"] not in per:
                order.append(p["phase"])
                per[p["phase"]] = []
            per[p["phase"]].append(float(p["us"]))
    return [{"phase": k, "p50_us": stats.median(per[k])} for k in order]


def new_series(cfg: ConnectConfig, timer_start: str, timer_end: str, clock: str) -> Series:
    labels = {k: v for k, v in asdict(cfg).items()}
    labels["profile"] = cfg.profile
    labels["label"] = cfg.label
    return R.new_series(
        cfg.series_id,
        kind="connect",
        labels=labels,
        timer={"name": "establishment", "start": timer_start, "end": timer_end, "clock": clock},
    )


def se_breakdown(samples: list[dict[str, Any]], calls: list[dict[str, Any]]) -> dict[str, Any]:

    # a cold connection starts at its process's C_OpenSession (see cold_phases)
    iters = [
        {"start_ns": (s.get("cold") or {}).get("start_ns", s["t0_ns"]), "end_ns": s["t1_ns"]}
        for s in samples
        if "t0_ns" in s
    ]
    return per_call_breakdown(iters, calls)


def derive_series(s: Series, cfg: ConnectConfig, calls: list[dict[str, Any]], km: KeyMaterial | None) -> None:
    ok = [c for c in s.samples if c.get("ok")]
    d = s.derived_as(ConnectDerived)
    if not ok:
        return
    d.phases_p50_us = phase_medians(ok)
    if "version" in ok[0]:
        d.negotiated = {k: ok[0].get(k) for k in ("version", "cipher", "group")}
    d.resumed = sum(1 for c in ok if c.get("resumed"))
    if cfg.handshake == "resumed" and d.resumed == 0:
        # the server never resumes: a property of the server, measured and said, not a failed run;
        # every reconnection here is a full handshake (the table shows resumed 0/n)
        d.resumption_note = RESUMPTION_REFUSED.get(cfg.protocol, "the server resumed no session")
        s.labels["note"] = d.resumption_note
    elif cfg.handshake == "resumed" and d.resumed < len(ok):
        R.add_failure(s, f"resumption did not happen on {len(ok) - d.resumed} of {len(ok)} connections")
    if km is not None and km.shim_log is not None:
        for c in ok:
            if "se" not in c and "t0_ns" in c:
                mine = [x for x in calls if c["t0_ns"] <= x.get("start_ns", -1) <= c["t1_ns"]]
                c["se"] = {"calls": len(mine), "se_us": sum(x.get("duration_ns", 0) for x in mine) / 1000}
        d.se_calls = se_breakdown(ok, calls)
        se = [c["se"]["se_us"] for c in ok if "se" in c]
        if se:
            d.se_p50_us = stats.median(se)
        s.labels["shim_log"] = str(km.shim_log)


def slug(text: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-." else "_" for ch in text)[:100]


def record_run(s: Series, i: int, warm: bool, sample: dict[str, Any]) -> None:
    if warm:
        return
    sample["i"] = i
    s.samples.append(sample)
    if sample.get("ok"):
        s.values_us.append(sample["usable_us"])
    else:
        R.add_failure(s, f"run {sample['i']}: {sample.get('reason', 'failed')}")
