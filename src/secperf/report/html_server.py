"""The `secperf server` / `secperf fleet` section of the HTML report: capacity curves with the knee,
CPU split bars (private-key operation vs the rest), storm recovery plots."""

from __future__ import annotations

from typing import Any

from ..core.analysis_schema import FleetRun
from ..core.result_schema import Result
from ..model.fleet import KNEE_RULE, open_loop_knee
from . import html_grid
from .html_env import figure_view
from .plots import Plot, slug
from .views import server as V
from .views.server import _agreed, _d, _p95_ms, _software, capacity_row, configs, open_curve, server_series


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
    gen = next((_d(s).loadgen for s in ss if _d(s).loadgen), None)
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


def _closed_plots(doc: Result) -> list[Plot]:
    """Closed loop: capacity and P95 against clients, the CPU split at saturation."""
    out: list[Plot] = []
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
    return out


def _open_plots(doc: Result) -> list[Plot]:
    """Open loop: achieved rate and P95 against the offered load, each knee marked."""
    out: list[Plot] = []
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
    return out


def _run_name(r: FleetRun) -> str:
    """A storm run's curve name: its fleet size and policy."""
    m = r.model or {}
    return f"{m['devices']:,} {m['policy']}"


def _run_curve(r: FleetRun, what: str) -> list[tuple[Any, Any]]:
    """One of a storm run's time series against its time axis."""
    ts = r.series or {}
    return list(zip(ts["t_s"], ts[what]))


def _fleet_plots(doc: Result) -> list[Plot]:
    """The storm: a replay against nginx, the model's recovery and queue."""
    out: list[Plot] = []
    fl = doc.analysis.fleet
    if fl is not None and fl.replays:
        rp = [
            (
                f"{r['clients']:,} clients, {r['policy']}, timeout {r['timeout_s']:g} s (measured)",
                [(iv["t_s"], iv["back_total"] / r["clients"]) for iv in r.get("intervals", [])],
            )
            for r in fl.replays
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
    if fl is not None and fl.runs:
        rec = [(_run_name(r), _run_curve(r, "back_share")) for r in fl.runs]
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
        q = [(_run_name(r), _run_curve(r, "queue")) for r in fl.runs]
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


def plots(doc: Result) -> list[Plot]:
    return _closed_plots(doc) + _open_plots(doc) + _fleet_plots(doc)


def view(doc: Result) -> dict[str, Any] | None:
    """The server part: the grids of report/views/server.py (the terminal draws the same), then every
    plot under its title."""
    ps = plots(doc)
    grids = V.grids(doc)
    if not ps and not grids:
        return None
    return {
        "template": "server.html.j2",
        "title": "The server side: handshake capacity, private-key offload, reconnect storms",
        "warnings": list(V.limit_warnings(doc)),
        "tables": [html_grid.view(g) for g in grids],
        "measured": bool(server_series(doc)),  # the load generator's note: for measured servers only
        "figures": [(p.title, figure_view(p)) for p in ps],
    }
