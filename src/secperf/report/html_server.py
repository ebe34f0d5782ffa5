"""The `secperf server` / `secperf fleet` section of the HTML report: capacity curves with the knee,
CPU split bars (private-key operation vs the rest), storm recovery plots."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.result_schema import Result, Series, ServerDerived
from ..model.fleet import KNEE_RULE, open_loop_knee
from .html_env import cell, figure_view, hcell
from .plots import Plot, slug
from .terminal_server import (
    PIVOT_HEAD,
    capacity_row,
    configs,
    limit_warnings,
    open_curve,
    pivot,
    pivot_cell,
    server_series,
)


def _d(s: Series) -> ServerDerived:
    return s.derived_as(ServerDerived)


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


def provenance_rows(doc: Result) -> list[tuple[str, str]]:
    """Header lines of a server Result: each server's software (version, TLS library and build, as
    the program reports them), what the handshakes negotiated, and where the load generator ran."""
    ss = server_series(doc)
    if not ss:
        return []
    rows: list[tuple[str, str]] = []
    seen: dict[Any, Any] = {}
    for s in ss:
        seen.setdefault(s.labels.get("server"), s.labels.get("server_software"))
    for name, sw in seen.items():
        rows.append((f"server: {name}", _software(sw)))
    agreed = list(dict.fromkeys(_agreed(_d(s).negotiated) for s in ss if _d(s).negotiated))
    if agreed:
        rows.append(("negotiated", "; ".join(agreed) + " (one handshake per configuration)"))
    gen = next((_d(s).get("loadgen") for s in ss if _d(s).get("loadgen")), None)
    if gen:
        rows.append(
            (
                "load generator",
                f"secperf-loadgen ({gen.get('library') or 'library not printed'}), "
                f"{gen.get('procs')} process(es) on core(s) {', '.join(map(str, gen.get('cores') or [])) or '?'}; "
                f"server on core {ss[0].labels.get('core')}; certificate verification "
                f"{gen.get('verify', 'off')}",
            )
        )
    return rows


def provenance_table(doc: Result) -> dict[str, Any] | None:
    """Per configuration at its best level: software, negotiated parameters, and which side limited
    the rate (server and generator CPU)."""
    groups = {**configs(doc), **configs(doc, "open")}
    if not groups:
        return None
    rows = []
    for name, series in groups.items():
        ok = [s for s in series if _d(s).handshakes_per_s]
        if not ok:
            continue
        best = max(ok, key=lambda s: _d(s).handshakes_per_s or 0.0)
        d = _d(best)
        lim = d.limited_by or "not recorded"
        if lim == "neither" and d.get("limited_by_why"):
            lim += f" ({d['limited_by_why']})"
        gen_us = "–" if d.loadgen_cpu_us_per_handshake is None else f"{d.loadgen_cpu_us_per_handshake:.0f}"
        sw = best.labels.get("server_software") or {}
        short = f"{sw.get('server')} {sw.get('version') or ''}".strip() if sw else "not recorded"  # in full: the header
        rows.append(
            [
                name,
                cell(short, cls="nw"),
                cell(_agreed(d.negotiated), cls="nw"),
                f"{d.handshakes_per_s:.0f}",
                _pct(d.server_utilisation),
                _pct(d.get("loadgen_busy")),
                gen_us,
                cell(lim, cls="l warn" if d.limited_by == "load generator" else "l"),
            ]
        )
    if not rows:
        return None
    return {
        "head": [
            "configuration",
            "server software",
            "negotiated",
            "handshakes/s",
            "server busy",
            "generator busy",
            "generator CPU µs/hs",
            hcell("rate limited by"),
        ],
        "rows": rows,
    }


def plots(doc: Result) -> list[Plot]:
    out = []
    groups = configs(doc)
    if groups:
        curves = [
            (name, [(s.labels["concurrency"], _d(s).handshakes_per_s) for s in series if _d(s).handshakes_per_s])
            for name, series in groups.items()
        ]
        out.append(
            Plot(
                "server-capacity",
                "line",
                "Handshakes/s against concurrent clients",
                curves,
                "Closed loop: each client starts a new connection when its last one ends.",
                {"x_label": "concurrent clients", "y_label": "handshakes/s", "log_x": True},
            )
        )
        p95 = [
            (name, [(s.labels["concurrency"], _p95_ms(s)) for s in series if _p95_ms(s)])
            for name, series in groups.items()
        ]
        out.append(
            Plot(
                "server-p95",
                "line",
                "P95 connection latency against concurrent clients",
                p95,
                "",
                {"x_label": "concurrent clients", "y_label": "P95 ms", "log_x": True, "log_y": True},
            )
        )
        rows = []
        for name, series in groups.items():
            r = capacity_row(series)
            if r and r.get("cpu_us"):
                key = r["key_op_us"] if r["key_op_us"] is not None else 0.0
                rows.append((name, [("private-key operation", key), ("rest of the handshake", r["cpu_us"] - key)]))
        if rows:
            out.append(
                Plot(
                    "server-cpu-split",
                    "stacked",
                    "Server CPU per handshake at saturation",
                    rows,
                    "Offloaded rows show no key-operation CPU segment: the token's time is wall time "
                    "(busy-poll spends it inside the total; sleep does not).",
                    {"unit": "µs"},
                )
            )
    og = configs(doc, "open")
    if og:
        ach, p95, knees_a, knees_p = [], [], [], []
        for name, series in og.items():
            pts = open_curve(series)
            ach.append((name, [(o, a) for o, a, _ in pts if a is not None]))
            p95.append((name, [(o, p) for o, _, p in pts if p]))
            k = open_loop_knee(pts)
            for o, a, p in pts:
                if o == k:  # one single-point series per configuration: a marker, not a line across configs
                    knees_a.append((f"knee: {name}", [(o, a)]))
                    if p:
                        knees_p.append((f"knee: {name}", [(o, p)]))
        ideal = sorted({o for _, pts in ach for o, _ in pts})
        cap = f"Open loop: connections arrive at the offered rate whatever the server does. Marked knee: {KNEE_RULE}."
        out.append(
            Plot(
                "server-open-capacity",
                "line",
                "Achieved handshakes/s against offered load",
                ach + [("offered (ideal)", [(o, o) for o in ideal])] + knees_a,
                cap,
                {"x_label": "offered connections/s", "y_label": "handshakes/s"},
            )
        )
        out.append(
            Plot(
                "server-open-p95",
                "line",
                "P95 connection latency against offered load",
                p95 + knees_p,
                cap,
                {"x_label": "offered connections/s", "y_label": "P95 ms", "log_y": True},
            )
        )
    fl = doc.analysis.get("fleet")
    if fl and fl.get("replays"):
        rp = [
            (
                f"{r['clients']:,} clients, {r['policy']}, timeout {r['timeout_s']:g} s (measured)",
                [(iv["t_s"], iv["back_total"] / r["clients"]) for iv in r.get("intervals", [])],
            )
            for r in fl["replays"]
            if not r.get("failed")
        ]
        if rp:
            out.append(
                Plot(
                    slug("fleet-replay"),
                    "line",
                    "Replayed storm against nginx: share of clients back",
                    rp,
                    "secperf-loadgen --storm: every client connects at once and retries after its back-off "
                    "until it is back.",
                    {"x_label": "seconds after the start", "y_label": "share back"},
                )
            )
    if fl and fl.get("runs"):
        rec = [
            (
                f"{r['model']['devices']:,} {r['model']['policy']}",
                list(zip(r["series"]["t_s"], r["series"]["back_share"])),
            )
            for r in fl["runs"]
        ]
        out.append(
            Plot(
                slug("fleet-recovery"),
                "line",
                "Share of devices back after the outage",
                rec,
                "",
                {"x_label": "seconds after the outage", "y_label": "share back"},
            )
        )
        q = [
            (f"{r['model']['devices']:,} {r['model']['policy']}", list(zip(r["series"]["t_s"], r["series"]["queue"])))
            for r in fl["runs"]
        ]
        out.append(
            Plot(
                slug("fleet-queue"),
                "line",
                "Server queue during the storm",
                q,
                "",
                {"x_label": "seconds after the outage", "y_label": "handshakes waiting"},
            )
        )
    return out


def view(doc: Result) -> dict[str, Any] | None:
    """The server part: warnings about what limited the rate, capacity by key and key source, who
    limited the rate, then every plot under its title."""
    ps = plots(doc)
    if not ps:
        return None
    pv = pivot(doc)
    return {
        "template": "server.html.j2",
        "title": "The server side: handshake capacity, private-key offload, reconnect storms",
        "warnings": list(limit_warnings(doc)),
        "pivot": {
            "head": ["server key", *PIVOT_HEAD],
            "rows": [[k, *(pivot_cell(c) for c in cells)] for k, cells in pv],
        }
        if pv
        else None,
        "provenance": provenance_table(doc),
        "figures": [(p.title, figure_view(p)) for p in ps],
    }
