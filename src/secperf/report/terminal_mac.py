"""Terminal tables for `secperf mac` and `secperf can`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.table import Table


def cortexm_table(table: Mapping[str, Any]) -> Table:
    sizes = table["sizes"]
    t = Table(
        title="Cortex-M instructions per tag under QEMU (a lower bound for cycles)",
        title_justify="left",
        header_style="bold",
    )
    for c in ("target", "MAC", *[f"{n} B" for n in sizes], "instr/B (long)", "code B", "stack B", "tags ok"):
        t.add_column(c, justify="left" if c in ("target", "MAC") else "right")
    for tg in table["targets"].values():
        for mac in dict.fromkeys(r["mac"] for r in tg["rows"]):
            mr = {r["bytes"]: r for r in tg["rows"] if r["mac"] == mac and r["op"] == "mac"}
            first: Mapping[str, Any] = next(iter(mr.values()), {})
            marg = first.get("marginal_instructions_per_byte")
            code = (tg.get("code") or {}).get(mac)
            stacks = [r["stack_bytes"] for r in tg["rows"] if r["mac"] == mac and "stack_bytes" in r]
            t.add_row(
                tg["cpu"],
                mac,
                *[f"{mr[n]['instructions']:,}" if n in mr else "–" for n in sizes],
                "–" if marg is None else f"{marg:.1f}",
                f"{code['text'] + code['data']:,}" if code else "–",
                f"{max(stacks):,}" if stacks else "–",
                "yes" if all(r.get("tag_ok") for r in mr.values()) else "[red]NO[/red]",
            )
    return t


def can_tables(can: Mapping[str, Any]) -> list[Table]:
    out = []
    for label, part in (("", can), (" (CAN FD, tag in frame)", can.get("fd"))):
        if not part or not part.get("sweeps"):
            continue
        t = Table(title=f"CAN: CPU and bus load of MAC computation{label}", title_justify="left", header_style="bold")
        for c in (
            "device",
            "MAC",
            "k",
            "cost/tag",
            "CPU load",
            "extra bus",
            "bus load",
            "fits period",
            "fits budget",
            "fits bus",
        ):
            t.add_column(c, justify="left" if c in ("device", "MAC") else "right")
        for sw in part["sweeps"]:
            for r in sw["rows"]:
                t.add_row(
                    r["device"],
                    r["mac"],
                    str(r["k"]),
                    f"{r['cost_per_tag']:,.0f} {r['cost_unit'][:3]}",
                    ("≥" if r["lower_bound"] else "") + f"{100 * r['cpu_load']:.2f} %",
                    f"{100 * r['extra_bus_load']:.1f} %",
                    f"{100 * r['bus_load']:.1f} %",
                    "yes" if r["fits_period"] else "[red]no[/red]",
                    "yes" if r["within_cpu_budget"] else "no",
                    "yes" if r["fits_bus"] else "[red]no[/red]",
                )
        out.append(t)
        b = Table(
            title=f"Smallest k within a {100 * part['params']['cpu_budget']:g} % CPU budget{label}",
            title_justify="left",
            header_style="bold",
        )
        for c in ("device", "MAC", "best k"):
            b.add_column(c)
        for sw in part["sweeps"]:
            b.add_row(sw["device"], sw["mac"], str(sw["best_k"]) if sw["best_k"] else "none of 1..8")
        out.append(b)
    return out
