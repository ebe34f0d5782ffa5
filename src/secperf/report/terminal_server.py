"""Terminal tables for `secperf server` (capacity and server CPU per handshake, with the
private-key split) and `secperf fleet` (reconnect storm recovery)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table

from ..core.result import as_result
from ..core.result_schema import Result, Series
from ..model.fleet import KNEE_RULE, knee, open_loop_knee
from .views import mqtt_load as MQ


def server_series(doc: Result | Mapping[str, Any]) -> list[Series]:
    return [s for s in as_result(doc).series if s.kind == "server"]


def configs(doc: Result | Mapping[str, Any], loop: str = "closed") -> dict[str, list[Series]]:
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
        (
            s.labels["offered_per_s"],
            s.derived.get("handshakes_per_s"),
            (s.derived.get("latency_ms") or {}).get("p95_ms"),
        )
        for s in series
        if s.labels.get("offered_per_s")
    ]


def _f(v: object, fmt: str = "{:.0f}") -> str:
    return "–" if v is None else fmt.format(v)


def capacity_row(series: Sequence[Series]) -> dict[str, Any]:
    """At saturation: the level with the highest handshakes/s; its CPU per handshake and latency."""
    ok = [s for s in series if s.derived.get("handshakes_per_s")]
    if not ok:
        return {}
    best = max(ok, key=lambda s: s.derived["handshakes_per_s"])
    d = best.derived
    sp = d.get("split", {})
    return {
        "handshakes_per_s": d["handshakes_per_s"],
        "concurrency": best.labels["concurrency"],
        "cpu_us": d.get("server_cpu_us_per_handshake"),
        "utilisation": d.get("server_utilisation"),
        "p95_ms": d.get("latency_ms", {}).get("p95_ms"),
        "key_op_us": sp.get("key_op_us"),
        "key_op_wall_us": sp.get("key_op_wall_us"),
        "rest_us": sp.get("rest_us"),
        "resumed_share": d.get("resumed_share"),
        "card_bound_per_s": sp.get("card_bound_per_s"),
        "card_host_cpu_us": sp.get("card_host_cpu_us"),
        "extractable": best.labels.get("key_extractable"),
        "knee": knee([(s.labels["concurrency"], s.derived["handshakes_per_s"]) for s in ok]),
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


def pivot(doc: Result | Mapping[str, Any]) -> list[tuple[str, list[dict[str, Any] | None]]]:
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


def tables(doc: Result | Mapping[str, Any]) -> list[Table]:
    doc = as_result(doc)
    groups = configs(doc)
    out = []
    if groups:
        caption = (
            "key op: the private-key operation measured side by side (software) or the token's "
            "C_Sign time from the shim log (offload: wall time; with wait=sleep the CPU is free "
            "meanwhile). rest = CPU per handshake − key op."
        )
        t = Table(
            title="Server capacity and CPU per handshake (server pinned to one core; CPU from its own accounting)",
            title_justify="left",
            header_style="bold",
            caption=caption,
            caption_justify="left",
        )
        for c in (
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
        ):
            t.add_column(c, justify="left" if c == "configuration" else "right")
        for name, series in groups.items():
            r = capacity_row(series)
            if not r:
                t.add_row(name, "[red]failed[/red]", "", "", "", "", "", "", "", "", "")
                continue
            key_op = (
                _f(r["key_op_us"])
                if r["key_op_us"] is not None
                else (_f(r["key_op_wall_us"]) + " (wall)" if r["key_op_wall_us"] is not None else "–")
            )
            t.add_row(
                name,
                _f(r["handshakes_per_s"], "{:.1f}"),
                str(r["concurrency"]),
                _f(r["knee"]),
                _f(r["cpu_us"]),
                _f(r["utilisation"], "{:.0%}"),
                key_op,
                _f(r["rest_us"]),
                _f(r["p95_ms"], "{:.1f}"),
                _f(r["resumed_share"], "{:.0%}"),
                # None: a server secperf did not start (--target): its key is not known here
                "no" if r["extractable"] is False else "yes (file)" if r["extractable"] else "–",
            )
        out.append(t)
        t.caption = "\n".join([caption, *limit_warnings(doc)])  # the generator, not the server, set the rate
        pv = pivot(doc)
        if pv:
            t2 = Table(
                title="Capacity by server key and key source: handshakes/s at saturation · server CPU per "
                "handshake · CPU-bound capacity (1 / CPU per handshake)",
                title_justify="left",
                header_style="bold",
                caption="offload: the token's key behind the shim with the profile of "
                "its algorithm (rsa-1024: rsa-card-1998, rsa-2048: hsm-network-rsa2048, ecdsa-p256: atecc608); "
                "'real card': CPU per handshake without the emulation's own CPU (SoftHSM2 signs on this CPU; "
                "the shim's sleep mode spins its last 400 µs); card-bound: 1 / the token's time per signature "
                "(its lock serialises them); "
                "the lab token holds no 3072/4096-bit RSA, P-384 or Ed25519 key (–). No-CRT runs on the probe "
                "server: OpenSSL cannot load an n, e, d-only key from a file.",
                caption_justify="left",
            )
            t2.add_column("server key")
            for h in PIVOT_HEAD:
                t2.add_column(h, justify="right")
            for key, cells in pv:
                t2.add_row(key, *[pivot_cell(c) for c in cells])
            out.append(t2)
        curve = Table(
            title="Capacity curve: handshakes/s and latency against concurrent clients",
            title_justify="left",
            header_style="bold",
        )
        for col in ("configuration", "clients", "handshakes/s", "server CPU µs/hs", "P50 ms", "P95 ms", "failed"):
            curve.add_column(col, justify="left" if col == "configuration" else "right")
        for name, series in groups.items():
            for s in series:
                d = s.derived
                curve.add_row(
                    name,
                    str(s.labels["concurrency"]),
                    _f(d.get("handshakes_per_s"), "{:.1f}"),
                    _f(d.get("server_cpu_us_per_handshake")),
                    _f(d.get("latency_ms", {}).get("p50_ms"), "{:.1f}"),
                    _f(d.get("latency_ms", {}).get("p95_ms"), "{:.1f}"),
                    str(d.get("failed", "–")),
                )
        out.append(curve)
    og = configs(doc, "open")
    if og:
        o = Table(
            title="Open-loop capacity curve: achieved handshakes/s and P95 latency against offered load",
            title_justify="left",
            header_style="bold",
            caption=f"knee: {KNEE_RULE}; latency counts from "
            "the scheduled start, so queueing at the server is included",
            caption_justify="left",
        )
        for col in (
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
        ):
            o.add_column(col, justify="left" if col in ("configuration", "warning") else "right")
        for name, series in og.items():
            k = open_loop_knee(open_curve(series))
            for s in series:
                d, off = s.derived, s.labels["offered_per_s"]
                o.add_row(
                    name,
                    _f(off),
                    _f(d.get("started_per_s")),
                    _f(d.get("handshakes_per_s"), "{:.1f}"),
                    _f(d.get("server_cpu_us_per_handshake")),
                    _f((d.get("latency_ms") or {}).get("p50_ms"), "{:.1f}"),
                    _f((d.get("latency_ms") or {}).get("p95_ms"), "{:.1f}"),
                    str(d.get("failed", "–")),
                    "◀ knee" if k is not None and off == k else "",
                    d.get("warning", ""),
                )
        out.append(o)
    fl = doc.analysis.get("fleet")
    if fl:
        f = Table(
            title="Reconnect storm (fluid queueing model over the measured capacity)",
            title_justify="left",
            header_style="bold",
            caption=f"capacity source: {fl.get('capacity_source', 'given')}"
            + "".join(f"\n[yellow]warning: {w}[/yellow]" for w in fl.get("warnings") or []),
            caption_justify="left",
        )
        keyed = any(r.get("key") for r in fl.get("runs", []))
        if keyed:  # one set of rows per server key
            f.add_column("server key", justify="left")
        for col in (
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
        ):
            f.add_column(col, justify="right")
        for r in fl.get("runs", []):
            m, w = r["model"], r["wait_s"]
            f.add_row(
                *((r.get("key") or "",) if keyed else ()),
                f"{m['devices']:,}",
                m["policy"],
                f"{m['capacity_per_s']:.0f}" + (" (lower bound)" if r.get("capacity_warning") else ""),
                _f(r["time_all_back_s"], "{:.1f}"),
                _f(w["p50"], "{:.1f}"),
                _f(w["p90"], "{:.1f}"),
                _f(w["p99"], "{:.1f}"),
                f"{r['failed_attempts']:,.0f}",
                f"{r['gave_up']:,.0f}",
                f"{r['peak_queue']:,.0f}",
            )
        if fl.get("runs"):
            out.append(f)
        if fl.get("replays"):
            rp = Table(
                title="Replayed storm (secperf-loadgen --storm against nginx) against the fleet model at the "
                "capacity measured just before",
                title_justify="left",
                header_style="bold",
                caption="ratio = measured / model. 'abandoned work': the model lets the server finish "
                "attempts whose client gave up (as nginx does); 'late work dropped': the optimistic variant. "
                "capacity: mean of closed-loop runs just before and after the storm. No time when not every client came back.",
                caption_justify="left",
            )
            for col in (
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
            ):
                rp.add_column(col, justify="right")
            for r in fl["replays"]:
                if r.get("failed"):
                    rp.add_row(
                        f"{r['clients']:,}",
                        r["policy"],
                        "",
                        "",
                        "[red]failed[/red]: " + r["failed"][:80],
                        "",
                        "",
                        "",
                        "",
                        "",
                        "",
                        "",
                    )
                    continue
                me = r["measured"]
                for name, m in r["models"].items():
                    rp.add_row(
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
                    )
            out.append(rp)
    return out + mqtt_load_tables(doc)


def _grid_table(title: str, grid: MQ.Grid) -> Table:
    t = Table(
        title=title,
        title_justify="left",
        header_style="bold",
        caption="; ".join(grid["notes"]) or None,
        caption_justify="left",
    )
    for i, h in enumerate(grid["head"]):
        t.add_column(h, justify="left" if i == 0 else "right")
    for row in grid["rows"]:
        t.add_row(*row)
    return t


def mqtt_load_tables(doc: Result) -> list[Table]:
    """secperf mqtt-load's tables (report/views/mqtt_load.py, the HTML report draws the same)."""
    m = MQ.present(doc.analysis)
    if m is None:
        return []
    out = [_grid_table("MQTT load: " + "; ".join(MQ.facts(m)), MQ.phases(m))]
    model = MQ.storm_model(m)
    if model is not None:
        out.append(_grid_table("The storm beside fleet's model (ratios measured / modelled)", model))
    return out


def limit_warnings(doc: Result | Mapping[str, Any]) -> list[str]:
    """One line per configuration whose best level (the capacity shown) was not limited by the server:
    the load generator or other work on the machine set the rate (measure/server.rate_limit), so
    that figure is a lower bound of the server's capacity."""
    out = []
    for loop in ("closed", "open"):
        for name, series in configs(doc, loop).items():
            ok = [s for s in series if s.derived.get("handshakes_per_s")]
            d = max(ok, key=lambda s: s.derived["handshakes_per_s"]).derived if ok else {}
            if d.get("limited_by") in ("load generator", "other work on this machine") and d.get("limit_note"):
                out.append(f"⚠ {name}, {d['handshakes_per_s']:.0f}/s: {d['limit_note']}")
    return out
