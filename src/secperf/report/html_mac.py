"""MAC sections of the HTML report: Cortex-M instruction counts next to published cycles/byte,
and the CAN bus load model (table per device and MAC, CPU load against k)."""

from __future__ import annotations

from .plots import Plot
from .svg import figure
from .units import esc as _e

PUBLISHED = {  # device profile used for the "published cycles/byte" column, per target
    "m0": "cortex-m0", "m3": "cortex-m3", "m4": "cortex-m3",
}


def _pct(x: float) -> str:
    return f"{100 * x:.2f} %"


def cortexm_section(table: dict | None) -> str:
    if not table:
        return ""
    from ..inputs.devices import devices
    devs = devices()
    sizes = table["sizes"]
    head = ("<tr><th class='l'>target</th><th class='l'>MAC</th>" +
            "".join(f"<th>{n} B: instr (instr/B)</th>" for n in sizes) +
            "<th>long-message instr/B</th><th>published cycles/B</th><th>code B</th><th>stack B</th>"
            "<th>tags checked</th></tr>")
    rows = []
    for tname, t in table["targets"].items():
        pub = devs.get(PUBLISHED.get(tname, ""), {}).get("macs", {})
        for mac in dict.fromkeys(r["mac"] for r in t["rows"]):
            mr = {r["bytes"]: r for r in t["rows"] if r["mac"] == mac and r["op"] == "mac"}
            setup = [r for r in t["rows"] if r["mac"] == mac and r["op"] == "setup"]
            cells = "".join(f"<td>{mr[n]['instructions']:,} ({mr[n]['instructions_per_byte']:.1f})</td>"
                            if n in mr else "<td>–</td>" for n in sizes)
            marg = next(iter(mr.values()), {}).get("marginal_instructions_per_byte")
            cpb = pub.get(mac, {}).get("cycles_per_byte")
            ok = all(r.get("tag_ok") for r in mr.values())
            code = (t.get("code") or {}).get(mac)
            stacks = [r["stack_bytes"] for r in t["rows"] if r["mac"] == mac and "stack_bytes" in r]
            code_s = f"{code['text'] + code['data']:,}" if code else "–"
            stack_s = f"{max(stacks):,}" if stacks else "–"
            rows.append(f"<tr><td class='l'>{_e(t['cpu'])}</td><td class='l'>{_e(mac)}"
                        + (f" <span class='muted'>(key setup {setup[0]['instructions']:,})</span>" if setup else "")
                        + f"</td>{cells}<td>{'–' if marg is None else f'{marg:.1f}'}</td>"
                        f"<td>{'–' if cpb is None else _e(cpb)}</td>"
                        f"<td>{code_s}</td><td>{stack_s}</td>"
                        f"<td class='{'' if ok else 'fail'}'>{'yes' if ok else 'MISMATCH'}</td></tr>")
    tc = table["toolchain"]
    intro = (f"Executed instructions per tag with a prepared key, counted under QEMU by secperf's TCG plugin "
             f"({_e(tc['qemu'])}; {_e(tc['arm_gcc'])} {_e(' '.join(table['cflags']))}). "
             f"<b>Instructions are a lower bound for cycles</b>: loads, taken branches and flash wait states "
             f"cost more than one cycle on real cores. The published cycles/byte (Mouha et al. 2014, study S4) "
             f"are for assembly-optimised code on real M0/M3/M4 cores; our AES is plain byte-oriented C. "
             f"Every tag the firmware computed was checked against a host implementation. Code: the MAC's "
             f"sources compiled alone (text incl. read-only data, plus data); stack: the deepest a tag "
             f"computation wrote, painted under QEMU, without the caller's own frame.")
    return (f"<h2>Cortex-M cost without a board</h2><p>{intro}</p><table>{head}{''.join(rows)}</table>")


def _can_plot(can: dict, name: str = "can-cpu-load") -> Plot:
    lines = [(f"{sw['mac']} on {sw['device']}", [(r["k"], 100 * r["cpu_load"]) for r in sw["rows"]])
             for sw in can["sweeps"]]
    return Plot(name, "line", "CPU load of MAC computation against k (one tag every k frames)", lines,
                f"One line per MAC per device; log scale. The budget is {_pct(can['params']['cpu_budget'])}.",
                {"x_label": "k (frames per tag)", "y_label": "CPU load (%)", "log_y": True})


def plots(doc: dict) -> list[Plot]:
    """The CAN model's CPU load against k (and the same for CAN FD when the Result has it)."""
    can = doc.get("analysis", {}).get("can")
    if not can or not can.get("sweeps"):
        return []
    out = [_can_plot(can)]
    if can.get("fd") and can["fd"].get("sweeps"):
        out.append(_can_plot(can["fd"], "can-fd-cpu-load"))
    return out


def can_section(can: dict | None) -> str:
    if not can or not can.get("sweeps"):
        return ""
    p = can["params"]
    out = ["<h2>CAN bus: can the ECU afford to authenticate its frames? (study S4)</h2>"]
    out.append(f"<p>{'CAN FD' if p['fd'] else 'Classic CAN'} at {p['bitrate_bps'] / 1e6:g} Mbit/s with "
               f"{_pct(p['usable_share'])} usable; {p['frame_bits']}-bit frames carrying {p['data_bytes']} data bytes; "
               f"{p['period_s'] * 1e3:g} ms ECU period; MCU clock {p['clock_hz'] / 1e6:g} MHz; "
               + (f"{p['frames_per_period']} frames per period" if p["frames_per_period"] else
                  f"frames per period from the chip's limit of {p['frame_limit_bps'] / 1e3:g} kbit/s")
               + f"; {p['tag_bytes']}-byte tag {'inside the frame' if p['fd'] else 'in an extra frame'}; "
               f"CPU budget {_pct(p['cpu_budget'])}. A tag every k frames covers those k frames' data. "
               f"Rows marked ≥ use measured instruction counts (a lower bound for cycles).</p>")
    head = ("<tr><th class='l'>device</th><th class='l'>MAC</th><th>k</th><th>frames/period</th><th>cost/tag</th>"
            "<th>CPU load</th><th>extra bus load</th><th>bus load</th><th class='l'>fits period</th>"
            "<th class='l'>fits budget</th><th class='l'>fits bus</th></tr>")
    trs = []
    for sw in can["sweeps"]:
        for r in sw["rows"]:
            lb = "≥ " if r["lower_bound"] else ""
            trs.append(f"<tr><td class='l'>{_e(r['device'])}</td><td class='l'>{_e(r['mac'])}</td><td>{r['k']}</td>"
                       f"<td>{r['frames_per_period']}</td><td>{r['cost_per_tag']:,.0f} {_e(r['cost_unit'])}</td>"
                       f"<td>{lb}{_pct(r['cpu_load'])}</td><td>{_pct(r['extra_bus_load'])}</td>"
                       f"<td>{_pct(r['bus_load'])}</td><td class='l'>{'yes' if r['fits_period'] else 'no'}</td>"
                       f"<td class='l'>{'yes' if r['within_cpu_budget'] else 'no'}</td>"
                       f"<td class='l'>{'yes' if r['fits_bus'] else 'no'}</td></tr>")
    best = "".join(f"<tr><td class='l'>{_e(sw['device'])}</td><td class='l'>{_e(sw['mac'])}</td>"
                   f"<td>{sw['best_k'] if sw['best_k'] else 'none of 1..8'}</td></tr>" for sw in can["sweeps"])
    out.append(figure(_can_plot(can)))
    out.append("<h3>Smallest k within the CPU budget and the bus share</h3>"
               f"<table><tr><th class='l'>device</th><th class='l'>MAC</th><th>k</th></tr>{best}</table>")
    out.append(f"<h3>All configurations</h3><table>{head}{''.join(trs)}</table>")
    if can.get("skipped"):
        out.append("<p class='muted'>Not modelled (no figure in the device profile): " +
                   _e("; ".join(f"{s['mac']} on {s['device']}" for s in can["skipped"])) + "</p>")
    if can.get("fd"):
        out.append("<h3>The same bus with CAN FD (tag inside a 64-byte frame)</h3>" +
                   can_section({**can["fd"], "fd": None}).split("</h2>", 1)[1])
    return "".join(out)


def section(doc: dict) -> str:
    a = doc.get("analysis", {})
    return cortexm_section(a.get("cortexm")) + can_section(a.get("can"))
