"""The `secperf server` / `secperf fleet` section of the HTML report: capacity curves with the knee,
CPU split bars (private-key operation vs the rest), storm recovery plots."""

from __future__ import annotations

from .plots import Plot, slug
from .svg import figure
from ..model.fleet import KNEE_RULE, open_loop_knee
from .terminal_server import PIVOT_HEAD, capacity_row, configs, open_curve, pivot, pivot_cell
from .units import esc as _e


def plots(doc: dict) -> list[Plot]:
    out = []
    groups = configs(doc)
    if groups:
        curves = [(name, [(s["labels"]["concurrency"], s["derived"].get("handshakes_per_s"))
                          for s in series if s["derived"].get("handshakes_per_s")]) for name, series in groups.items()]
        out.append(Plot("server-capacity", "line", "Handshakes/s against concurrent clients", curves,
                        "Closed loop: each client starts a new connection when its last one ends.",
                        {"x_label": "concurrent clients", "y_label": "handshakes/s", "log_x": True}))
        p95 = [(name, [(s["labels"]["concurrency"], s["derived"].get("latency_ms", {}).get("p95_ms"))
                       for s in series if s["derived"].get("latency_ms", {}).get("p95_ms")])
               for name, series in groups.items()]
        out.append(Plot("server-p95", "line", "P95 connection latency against concurrent clients", p95, "",
                        {"x_label": "concurrent clients", "y_label": "P95 ms", "log_x": True, "log_y": True}))
        rows = []
        for name, series in groups.items():
            r = capacity_row(series)
            if r and r.get("cpu_us"):
                key = r["key_op_us"] if r["key_op_us"] is not None else 0.0
                rows.append((name, [("private-key operation", key), ("rest of the handshake", r["cpu_us"] - key)]))
        if rows:
            out.append(Plot("server-cpu-split", "stacked", "Server CPU per handshake at saturation", rows,
                            "Offloaded rows show no key-operation CPU segment: the token's time is wall time "
                            "(busy-poll spends it inside the total; sleep does not).", {"unit": "µs"}))
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
        out.append(Plot("server-open-capacity", "line", "Achieved handshakes/s against offered load",
                        ach + [("offered (ideal)", [(o, o) for o in ideal])] + knees_a,
                        cap, {"x_label": "offered connections/s", "y_label": "handshakes/s"}))
        out.append(Plot("server-open-p95", "line", "P95 connection latency against offered load",
                        p95 + knees_p, cap,
                        {"x_label": "offered connections/s", "y_label": "P95 ms", "log_y": True}))
    fl = doc.get("analysis", {}).get("fleet")
    if fl and fl.get("replays"):
        rp = [(f"{r['clients']:,} clients, {r['policy']}, timeout {r['timeout_s']:g} s (measured)",
               [(iv["t_s"], iv["back_total"] / r["clients"]) for iv in r.get("intervals", [])])
              for r in fl["replays"] if not r.get("failed")]
        if rp:
            out.append(Plot(slug("fleet-replay"), "line", "Replayed storm against nginx: share of clients back", rp,
                            "secperf-loadgen --storm: every client connects at once and retries after its back-off "
                            "until it is back.", {"x_label": "seconds after the start", "y_label": "share back"}))
    if fl and fl.get("runs"):
        rec = [(f"{r['model']['devices']:,} {r['model']['policy']}",
                list(zip(r["series"]["t_s"], r["series"]["back_share"]))) for r in fl["runs"]]
        out.append(Plot(slug("fleet-recovery"), "line", "Share of devices back after the outage", rec, "",
                        {"x_label": "seconds after the outage", "y_label": "share back"}))
        q = [(f"{r['model']['devices']:,} {r['model']['policy']}",
              list(zip(r["series"]["t_s"], r["series"]["queue"]))) for r in fl["runs"]]
        out.append(Plot(slug("fleet-queue"), "line", "Server queue during the storm", q, "",
                        {"x_label": "seconds after the outage", "y_label": "handshakes waiting"}))
    return out


def section(doc: dict) -> str:
    ps = plots(doc)
    if not ps:
        return ""
    intro = ("<h2>The server side: handshake capacity, private-key offload, reconnect storms</h2>"
             "<p>A real server started by secperf is pinned to one core and driven by "
             "<code>secperf-loadgen</code>; its CPU comes from its own accounting (the kernel's per-thread run "
             "time). The private-key operation is measured side by side (software) or read from the shim's "
             "log (offload). Study S3: a busy-polled accelerator keeps the CPU busy; an interrupt-driven one "
             "(wait = sleep) frees it, while capacity stays bounded by the card.</p>")
    pv = pivot(doc)
    table = ""
    if pv:
        head = "<tr><th class='l'>server key</th>" + "".join(f"<th>{_e(h)}</th>" for h in PIVOT_HEAD) + "</tr>"
        rows = "".join(f"<tr><td class='l'>{_e(k)}</td>" + "".join(f"<td>{_e(pivot_cell(c))}</td>" for c in cells)
                       + "</tr>" for k, cells in pv)
        table = ("<h3>Capacity by server key and key source</h3><p>Handshakes/s at saturation · server CPU per "
                 "handshake · CPU-bound capacity (1 / CPU per handshake: the rate with the core to itself).</p>"
                 f"<table>{head}{rows}</table>")
    return intro + table + "".join(f"<h3>{_e(p.title)}</h3>{figure(p)}" for p in ps)
