"""MAC sections of the HTML report: Cortex-M instruction counts next to published cycles/byte,
and the CAN bus load model (table per device and MAC, CPU load against k)."""

from __future__ import annotations

from typing import Any

from ..core.result_schema import Result
from ..inputs.devices import devices
from .html_env import cell, figure_view, frag, hcell
from .plots import Plot

PUBLISHED = {  # device profile used for the "published cycles/byte" column, per target
    "m0": "cortex-m0",
    "m3": "cortex-m3",
    "m4": "cortex-m3",
}


def _pct(x: float) -> str:
    return f"{100 * x:.2f} %"


def _yes(x: object) -> str:
    return "yes" if x else "no"


def cortexm_view(table: dict[str, Any] | None) -> dict[str, Any] | None:
    """Instructions per tag on the Cortex-M targets, next to the published cycles/byte."""
    if not table:
        return None

    devs = devices()
    sizes = table["sizes"]
    head = [
        "target",
        "MAC",
        *(f"{n} B: instr (instr/B)" for n in sizes),
        "long-message instr/B",
        "published cycles/B",
        "code B",
        "stack B",
        "tags checked",
    ]
    rows = []
    for tname, t in table["targets"].items():
        pub = devs.get(PUBLISHED.get(tname, ""), {}).get("macs", {})
        for mac in dict.fromkeys(r["mac"] for r in t["rows"]):
            mr = {r["bytes"]: r for r in t["rows"] if r["mac"] == mac and r["op"] == "mac"}
            setup = [r for r in t["rows"] if r["mac"] == mac and r["op"] == "setup"]
            cells = [
                f"{mr[n]['instructions']:,} ({mr[n]['instructions_per_byte']:.1f})" if n in mr else "–" for n in sizes
            ]
            first: dict[str, Any] = next(iter(mr.values()), {})
            marg = first.get("marginal_instructions_per_byte")
            cpb = pub.get(mac, {}).get("cycles_per_byte")
            ok = all(r.get("tag_ok") for r in mr.values())
            code = (t.get("code") or {}).get(mac)
            stacks = [r["stack_bytes"] for r in t["rows"] if r["mac"] == mac and "stack_bytes" in r]
            name: list[Any] = [mac] + (
                [" ", frag(f"(key setup {setup[0]['instructions']:,})", span="muted")] if setup else []
            )
            rows.append(
                [
                    t["cpu"],
                    cell(parts=name),
                    *cells,
                    "–" if marg is None else f"{marg:.1f}",
                    "–" if cpb is None else cpb,
                    f"{code['text'] + code['data']:,}" if code else "–",
                    f"{max(stacks):,}" if stacks else "–",
                    cell("yes", cls="") if ok else cell("MISMATCH", cls="fail"),
                ]
            )
    tc = table["toolchain"]
    return {"head": head, "rows": rows, "qemu": tc["qemu"], "gcc": f"{tc['arm_gcc']} {' '.join(table['cflags'])}"}


def _can_plot(can: dict[str, Any], name: str = "can-cpu-load") -> Plot:
    lines = [
        (f"{sw['mac']} on {sw['device']}", [(r["k"], 100 * r["cpu_load"]) for r in sw["rows"]]) for sw in can["sweeps"]
    ]
    return Plot(
        name,
        "line",
        "CPU load of MAC computation against k (one tag every k frames)",
        lines,
        f"One line per MAC per device; log scale. The budget is {_pct(can['params']['cpu_budget'])}.",
        {"x_label": "k (frames per tag)", "y_label": "CPU load (%)", "log_y": True},
    )


def plots(doc: Result) -> list[Plot]:
    """The CAN model's CPU load against k (and the same for CAN FD when the Result has it)."""
    can = doc.analysis.can
    if not can or not can.get("sweeps"):
        return []
    out = [_can_plot(can)]
    if can.get("fd") and can["fd"].get("sweeps"):
        out.append(_can_plot(can["fd"], "can-fd-cpu-load"))
    return out


def can_view(can: dict[str, Any] | None) -> dict[str, Any] | None:
    """The CAN bus model (study S4): the parameters, the smallest k per device and MAC, every row;
    CAN FD's the same way when the Result has it."""
    if not can or not can.get("sweeps"):
        return None
    p = can["params"]
    params = (
        f"{'CAN FD' if p['fd'] else 'Classic CAN'} at {p['bitrate_bps'] / 1e6:g} Mbit/s with "
        f"{_pct(p['usable_share'])} usable; {p['frame_bits']}-bit frames carrying {p['data_bytes']} data bytes; "
        f"{p['period_s'] * 1e3:g} ms ECU period; MCU clock {p['clock_hz'] / 1e6:g} MHz; "
        + (
            f"{p['frames_per_period']} frames per period"
            if p["frames_per_period"]
            else f"frames per period from the chip's limit of {p['frame_limit_bps'] / 1e3:g} kbit/s"
        )
        + f"; {p['tag_bytes']}-byte tag {'inside the frame' if p['fd'] else 'in an extra frame'}; "
        f"CPU budget {_pct(p['cpu_budget'])}. A tag every k frames covers those k frames' data. "
        f"Rows marked ≥ use measured instruction counts (a lower bound for cycles)."
    )
    rows = [
        [
            r["device"],
            r["mac"],
            r["k"],
            r["frames_per_period"],
            f"{r['cost_per_tag']:,.0f} {r['cost_unit']}",
            f"{'≥ ' if r['lower_bound'] else ''}{_pct(r['cpu_load'])}",
            _pct(r["extra_bus_load"]),
            _pct(r["bus_load"]),
            cell(_yes(r["fits_period"]), cls="l"),
            cell(_yes(r["within_cpu_budget"]), cls="l"),
            cell(_yes(r["fits_bus"]), cls="l"),
        ]
        for sw in can["sweeps"]
        for r in sw["rows"]
    ]
    best = [[sw["device"], sw["mac"], sw["best_k"] if sw["best_k"] else "none of 1..8"] for sw in can["sweeps"]]
    skipped = "; ".join(f"{s['mac']} on {s['device']}" for s in can.get("skipped") or [])
    return {
        "params": params,
        "figure": figure_view(_can_plot(can)),
        "best": best,
        "rows": rows,
        "head": [
            "device",
            "MAC",
            "k",
            "frames/period",
            "cost/tag",
            "CPU load",
            "extra bus load",
            "bus load",
            hcell("fits period"),
            hcell("fits budget"),
            hcell("fits bus"),
        ],
        "skipped": skipped,
        "fd": can_view({**can["fd"], "fd": None}) if can.get("fd") else None,
    }


def view(doc: Result) -> dict[str, Any] | None:
    """The MAC part: Cortex-M counts and the CAN bus model (either may be absent)."""
    a = doc.analysis
    cm, can = cortexm_view(a.cortexm), can_view(a.can)
    if not cm and not can:
        return None
    title = (
        "Cortex-M cost without a board" if cm else "CAN bus: can the ECU afford to authenticate its frames? (study S4)"
    )
    return {"template": "mac.html.j2", "title": title, "cortexm": cm, "can": can}
