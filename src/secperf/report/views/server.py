"""The tables of `secperf server` and `secperf fleet` Results, built once as Grids
(report/views/grid.py) for the terminal and the HTML page alike: capacity and server CPU per
handshake with the private-key split, capacity by key and key source, who limited the rate, the
closed- and open-loop capacity curves, the reconnect storm model and its replay."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...core.analysis_schema import FleetAnalysis
from ...core.result_schema import LatencyMs, Result, Series, ServerDerived
from ...model.fleet import KNEE_RULE, knee, open_loop_knee
from .grid import FAILED, Grid


def server_series(doc: Result) -> list[Series]:
    return [s for s in doc.series if s.kind == "server"]


def configs(doc: Result, loop: str = "closed") -> dict[str, list[Series]]:
    """Series grouped by configuration (everything but the load level), in measuring order; closed
    loop (levels: concurrent clients) or open loop (levels: offered connections/s)."""
    out: dict[str, list[Series]] = {}
    for s in server_series(doc):
        if s.labels.get("loop", "closed") == loop:
            out.setdefault(s.labels["config"], []).append(s)
    return out


def open_curve(series: Sequence[Series]) -> list[tuple[float, float | None, float | None]]:
    """(offered/s, achieved handshakes/s, P95 ms) per open-loop level."""
    return [
        (s.labels["offered_per_s"], _d(s).handshakes_per_s, _lat(s).p95_ms)
        for s in series
        if s.labels.get("offered_per_s")
    ]


def _f(v: object, fmt: str = "{:.0f}") -> str:
    return "–" if v is None else fmt.format(v)


def capacity_row(series: Sequence[Series]) -> dict[str, Any]:
    """At saturation: the level with the highest handshakes/s; its CPU per handshake and latency."""
    ok = [(s, r) for s in series if (r := _d(s).handshakes_per_s)]
    if not ok:
        return {}
    best, rate = max(ok, key=lambda x: x[1])
    d = _d(best)
    sp = d.split or {}
    return {
        "handshakes_per_s": rate,
        "concurrency": best.labels["concurrency"],
        "cpu_us": d.server_cpu_us_per_handshake,
        "utilisation": d.server_utilisation,
        "p95_ms": _lat(best).p95_ms,
        "key_op_us": sp.get("key_op_us"),
        "key_op_wall_us": sp.get("key_op_wall_us"),
        "rest_us": sp.get("rest_us"),
        "resumed_share": d.resumed_share,
        "card_bound_per_s": sp.get("card_bound_per_s"),
        "card_host_cpu_us": sp.get("card_host_cpu_us"),
        "extractable": best.labels.get("key_extractable"),
        "knee": knee([(s.labels["concurrency"], r) for s, r in ok]),
    }


PIVOT_COLUMNS = (
    ("nginx", "software", False),
    ("probe", "software", False),
    ("probe", "software", True),
    ("nginx", "busy", False),
    ("nginx", "sleep", False),
)
PIVOT_HEAD = (
    "software CRT (nginx)",
    "software CRT (probe)",
    "software no-CRT (probe)",
    "offload busy-poll (nginx)",
    "offload sleep (nginx)",
)


def pivot(doc: Result) -> list[tuple[str, list[dict[str, Any] | None]]]:
    """The capacity table by server key (rows) and key source (columns: PIVOT_COLUMNS), from the
    plain configurations (no client auth, no resumption, chain depth 1); each cell the capacity row
    at saturation, its offload profile and the CPU-bound capacity (1 / server CPU per handshake: what
    the server would reach with the core to itself)."""
    rows: dict[str, list[dict[str, Any] | None]] = {}
    for series in configs(doc).values():
        lb = series[0].labels
        if lb["client_auth"] or lb["resume_ratio"] or lb["chain_depth"] != 1 or lb["server"] == "mosquitto":
            continue
        src = lb["key_source"]
        kind = "software" if src == "software" else src.rsplit(":", 1)[-1]
        key = lb["key"].removesuffix("-nocrt")
        try:
            col = PIVOT_COLUMNS.index((lb["server"], kind, lb["key"].endswith("-nocrt")))
        except ValueError:
            continue
        r = capacity_row(series)
        if r:
            r = {**r, "profile": lb.get("profile"), "cpu_bound_per_s": 1e6 / r["cpu_us"] if r.get("cpu_us") else None}
        rows.setdefault(key, [None] * len(PIVOT_COLUMNS))[col] = r or {"failed": True}
    order = ("rsa-1024", "rsa-2048", "rsa-3072", "rsa-4096", "ecdsa-p256", "ecdsa-p384", "ed25519")
    return sorted(rows.items(), key=lambda kv: order.index(kv[0]) if kv[0] in order else 99)


def pivot_cell(r: Mapping[str, Any] | None) -> str:
    if r is None:
        return "–"
    if r.get("failed"):
        return "failed"
    out = f"{r['handshakes_per_s']:.0f}/s · {_f(r['cpu_us'])} µs CPU/hs"
    if r.get("card_bound_per_s"):
        # offload: the card bounds the rate; the host CPU a real card would leave (emulation taken out)
        return out + f" (real card {_f(r.get('card_host_cpu_us'))}) · card-bound {r['card_bound_per_s']:.0f}/s"
    return out + (f" · CPU-bound {r['cpu_bound_per_s']:.0f}/s" if r.get("cpu_bound_per_s") else "")


def _d(s: Series) -> ServerDerived:
    return s.derived_as(ServerDerived)


def _lat(s: Series) -> LatencyMs:
    """A level's latency percentiles (all None when the generator gave none)."""
    lat = _d(s).latency_ms
    return lat if lat is not None else LatencyMs()


def _failed(d: ServerDerived) -> str:
    return "–" if d.failed is None else str(d.failed)


def _p95_ms(s: Series) -> float | None:
    lat = _d(s).latency_ms
    return lat.p95_ms if lat is not None else None


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.0%}"


def _software(sw: Mapping[str, Any] | None) -> str:
    if not sw:
        return "not recorded"
    text = f"{sw.get('server')} {sw.get('version') or '(version not printed)'}"
    if sw.get("tls_library"):
        text += f", TLS: {sw['tls_library']}"
    if sw.get("build") and sw.get("build") != sw.get("tls_library"):
        text += f" (built with {sw['build']})"
    return text


def _agreed(n: Mapping[str, Any] | None) -> str:
    if not n:
        return "not recorded"
    if n.get("error"):
        return f"unknown ({n['error']})"
    return " · ".join(str(n[k]) for k in ("version", "cipher", "group") if n.get(k))


def limit_warnings(doc: Result) -> list[str]:
    """One line per configuration whose best level (the capacity shown) was not limited by the server:
    the load generator or other work on the machine set the rate (measure/server.rate_limit), so
    that figure is a lower bound of the server's capacity."""
    out = []
    for loop in ("closed", "open"):
        for name, series in configs(doc, loop).items():
            ok = [(d, r) for s in series if (r := (d := _d(s)).handshakes_per_s)]
            if not ok:
                continue
            d, rate = max(ok, key=lambda x: x[1])
            if d.limited_by in ("load generator", "other work on this machine") and d.limit_note:
                out.append(f"⚠ {name}, {rate:.0f}/s: {d.limit_note}")
    return out


CAPACITY_NOTE = (
    "key op: the private-key operation measured side by side (software) or the token's C_Sign time from the "
    "shim log (offload: wall time; with wait=sleep the CPU is free meanwhile). rest = CPU per handshake − key op."
)
PIVOT_NOTE = (
    "offload: the token's key behind the shim with the profile of its algorithm (rsa-1024: rsa-card-1998, "
    "rsa-2048: hsm-network-rsa2048, ecdsa-p256: atecc608); 'real card': CPU per handshake without the "
    "emulation's own CPU (SoftHSM2 signs on this CPU; the shim's sleep mode spins its last 400 µs); card-bound: "
    "1 / the token's time per signature (its lock serialises them); the lab token holds no 3072/4096-bit RSA, "
    "P-384 or Ed25519 key (–). No-CRT runs on the probe server: OpenSSL cannot load an n, e, d-only key from a file."
)


def _key_op(r: Mapping[str, Any]) -> str:
    if r["key_op_us"] is not None:
        return _f(r["key_op_us"])
    return _f(r["key_op_wall_us"]) + " (wall)" if r["key_op_wall_us"] is not None else "–"


def capacity(doc: Result) -> Grid | None:
    """One row per configuration at saturation (its best level); the warnings about what set the rate."""
    if not (groups := configs(doc)):
        return None
    g = Grid(
        "Server capacity and CPU per handshake (server pinned to one core; CPU from its own accounting)",
        [
            "configuration",
            "handshakes/s",
            "at clients",
            "knee",
            "server CPU µs/hs",
            "utilisation",
            "key op µs",
            "rest µs",
            "P95 ms",
            "resumed",
            "key extractable",
        ],
        notes=[CAPACITY_NOTE, *limit_warnings(doc)],  # the generator, not the server, may have set the rate
    )
    for name, series in groups.items():
        r = capacity_row(series)
        if not r:
            g.add([name, FAILED])
            continue
        g.add(
            [
                name,
                _f(r["handshakes_per_s"], "{:.1f}"),
                str(r["concurrency"]),
                _f(r["knee"]),
                _f(r["cpu_us"]),
                _f(r["utilisation"], "{:.0%}"),
                _key_op(r),
                _f(r["rest_us"]),
                _f(r["p95_ms"], "{:.1f}"),
                _f(r["resumed_share"], "{:.0%}"),
                # None: a server secperf did not start (--target): its key is not known here
                "no" if r["extractable"] is False else "yes (file)" if r["extractable"] else "–",
            ]
        )
    return g


def pivot_grid(doc: Result) -> Grid | None:
    pv = pivot(doc)
    if not pv:
        return None
    g = Grid(
        "Capacity by server key and key source: handshakes/s at saturation · server CPU per handshake · "
        "CPU-bound capacity (1 / CPU per handshake)",
        ["server key", *PIVOT_HEAD],
        notes=[PIVOT_NOTE],
    )
    for key, cells in pv:
        g.add([key, *(pivot_cell(c) for c in cells)])
    return g


def provenance(doc: Result) -> Grid | None:
    """Per configuration at its best level: software, negotiated parameters, and which side limited
    the rate (server and generator CPU)."""
    groups = {**configs(doc), **configs(doc, "open")}
    g = Grid(
        "Who limited the rate, and what was measured (each configuration's best level)",
        [
            "configuration",
            "server software",
            "negotiated",
            "handshakes/s",
            "server busy",
            "generator busy",
            "generator CPU µs/hs",
            "rate limited by",
        ],
        left=3,
        text=("rate limited by",),
    )
    for name, series in groups.items():
        ok = [s for s in series if _d(s).handshakes_per_s]
        if not ok:
            continue
        best = max(ok, key=lambda s: _d(s).handshakes_per_s or 0.0)
        d = _d(best)
        lim = d.limited_by or "not recorded"
        if lim == "neither" and d.limited_by_why:
            lim += f" ({d.limited_by_why})"
        sw = best.labels.get("server_software") or {}
        short = f"{sw.get('server')} {sw.get('version') or ''}".strip() if sw else "not recorded"  # in full: the header
        g.add(
            [
                name,
                short,
                _agreed(d.negotiated),
                f"{d.handshakes_per_s:.0f}",
                _pct(d.server_utilisation),
                _pct(d.loadgen_busy),
                _f(d.loadgen_cpu_us_per_handshake),
                lim,
            ]
        )
    return g if g.rows else None


def curve(doc: Result) -> Grid | None:
    """Every load level of each configuration: its rate, the server's CPU, latency and failures."""
    if not (groups := configs(doc)):
        return None
    g = Grid(
        "Capacity curve: handshakes/s and latency against concurrent clients",
        ["configuration", "clients", "handshakes/s", "server CPU µs/hs", "P50 ms", "P95 ms", "failed"],
    )
    for name, series in groups.items():
        for s in series:
            d, lat = _d(s), _lat(s)
            g.add(
                [
                    name,
                    str(s.labels["concurrency"]),
                    _f(d.handshakes_per_s, "{:.1f}"),
                    _f(d.server_cpu_us_per_handshake),
                    _f(lat.p50_ms, "{:.1f}"),
                    _f(lat.p95_ms, "{:.1f}"),
                    _failed(d),
                ]
            )
    return g


def open_loop(doc: Result) -> Grid | None:
    og = configs(doc, "open")
    if not og:
        return None
    g = Grid(
        "Open-loop capacity curve: achieved handshakes/s and P95 latency against offered load",
        [
            "configuration",
            "offered/s",
            "started/s",
            "achieved/s",
            "server CPU µs/hs",
            "P50 ms",
            "P95 ms",
            "failed",
            "knee",
            "warning",
        ],
        notes=[f"knee: {KNEE_RULE}; latency counts from the scheduled start, so queueing at the server is included"],
        text=("warning",),
    )
    for name, series in og.items():
        k = open_loop_knee(open_curve(series))
        for s in series:
            d, lat, off = _d(s), _lat(s), s.labels["offered_per_s"]
            g.add(
                [
                    name,
                    _f(off),
                    _f(d.started_per_s),
                    _f(d.handshakes_per_s, "{:.1f}"),
                    _f(d.server_cpu_us_per_handshake),
                    _f(lat.p50_ms, "{:.1f}"),
                    _f(lat.p95_ms, "{:.1f}"),
                    _failed(d),
                    "◀ knee" if k is not None and off == k else "",
                    d.warning or "",
                ]
            )
    return g


def storm(fl: FleetAnalysis | None) -> Grid | None:
    """The reconnect storm: the fluid queueing model over the measured capacity, one row per run."""
    runs = fl.runs if fl is not None else []
    if fl is None or not runs:
        return None
    keyed = any(r.key for r in runs)  # one set of rows per server key
    g = Grid(
        "Reconnect storm (fluid queueing model over the measured capacity)",
        [
            *(("server key",) if keyed else ()),
            "devices",
            "policy",
            "capacity/s",
            "all back s",
            "wait P50 s",
            "P90 s",
            "P99 s",
            "failed attempts",
            "gave up",
            "peak queue",
        ],
        notes=[f"capacity source: {fl.capacity_source or 'given'}", *(f"warning: {w}" for w in fl.warnings or [])],
        left=1 if keyed else 0,
    )
    for r in runs:
        m, w = r.model or {}, r.wait_s or {}
        g.add(
            [
                *((r.key or "",) if keyed else ()),
                f"{m['devices']:,}",
                m["policy"],
                f"{m['capacity_per_s']:.0f}" + (" (lower bound)" if r.capacity_warning else ""),
                _f(r.time_all_back_s, "{:.1f}"),
                _f(w.get("p50"), "{:.1f}"),
                _f(w.get("p90"), "{:.1f}"),
                _f(w.get("p99"), "{:.1f}"),
                f"{r.failed_attempts or 0:,.0f}",
                f"{r.gave_up or 0:,.0f}",
                f"{r.peak_queue or 0:,.0f}",
            ]
        )
    return g


def replays(fl: FleetAnalysis | None) -> Grid | None:
    """A storm replayed against nginx beside the fleet model at the capacity measured just before."""
    if fl is None or not fl.replays:
        return None
    accepts = {
        (r["accept_per_s"], r.get("accept_from") or "")
        for r in fl.replays
        if not r.get("failed") and r.get("accept_per_s")
    }
    g = Grid(
        "Replayed storm (secperf-loadgen --storm against nginx) against the fleet model at the capacity "
        "measured just before",
        [
            "clients",
            "policy",
            "timeout s",
            "capacity/s",
            "measured all back s",
            "measured P99 s",
            "failed attempts",
            "model",
            "model all back s",
            "model P99 s",
            "ratio all back",
            "ratio P99",
        ],
        notes=[
            "ratio = measured / model. 'abandoned work': the model lets the server finish attempts whose client "
            "gave up (as nginx does); 'late work dropped': the optimistic variant. capacity: mean of closed-loop "
            "runs just before and after the storm. No time when not every client came back.",
            *(f"the model's accept rate: {a:,.0f}/s ({said})" for a, said in sorted(accepts)),
        ],
        left=0,
    )
    for r in fl.replays:
        if r.get("failed"):
            g.add([f"{r['clients']:,}", r["policy"], "", "", f"{FAILED}: " + r["failed"][:80]])
            continue
        me = r["measured"]
        for name, m in r["models"].items():
            g.add(
                [
                    f"{r['clients']:,}",
                    r["policy"],
                    _f(r["timeout_s"], "{:g}"),
                    _f(r["capacity_per_s"]),
                    _f(me.get("time_all_back_s"), "{:.1f}"),
                    _f(me.get("wait_p99_s"), "{:.1f}"),
                    f"{me.get('failed_attempts', 0):,}",
                    name,
                    _f(m["time_all_back_s"], "{:.1f}"),
                    _f(m["wait_p99_s"], "{:.1f}"),
                    _f(m.get("ratio_time_all_back_s"), "{:.2f}"),
                    _f(m.get("ratio_wait_p99_s"), "{:.2f}"),
                ]
            )
    return g


def grids(doc: Result) -> list[Grid]:
    """Every server and fleet table in report order."""
    fl = doc.analysis.fleet
    out = [capacity(doc), pivot_grid(doc), provenance(doc), curve(doc), open_loop(doc), storm(fl), replays(fl)]
    return [g for g in out if g is not None]
