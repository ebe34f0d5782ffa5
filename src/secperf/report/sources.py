"""`--sources`: where each figure of a what-if or a plan comes from, in the terminal -- the same
provenance the report and result.json hold (the cost table's name and description, the source of
each operation cost the flights used, the secure-element profile's and the network profile's own
sources), one row per figure, nothing that the prediction did not use.

Decision (issue 43, item 3): an option, not a footer: the list runs to a dozen rows or more, and a
default output that already fits 80 columns stays as it is; the option's help and the how-to name it."""

from __future__ import annotations

import textwrap

from ..core.result_schema import Result, WhatifDerived
from ..inputs import netspec as NS
from ..inputs import se_profiles as SE


def rows(doc: Result) -> list[tuple[str, str, str]]:
    """(what, figure, source) for every figure the Result's predictions used."""
    out: list[tuple[str, str, str]] = []
    ct = doc.analysis.whatif.cost_table if doc.analysis.whatif is not None else None
    if ct is not None:
        out.append(("cost table", ct.name or "", ct.description or ct.source or ""))
    seen: set[tuple[str, str]] = set()
    profiles: list[str] = []
    links: list[str] = []
    radios: list[str] = []
    for s in doc.series:
        d = s.derived if isinstance(s.derived, WhatifDerived) else WhatifDerived()
        for c in d.costs or []:
            key = (c.get("party", ""), c.get("op", ""))
            if key in seen:
                continue
            seen.add(key)
            out.append((f"{key[0]} {key[1]}", f"{float(c.get('us', 0.0)):.1f} µs", str(c.get("source", ""))))
        se = d.se or {}
        if se.get("profile") and se["profile"] not in profiles:
            profiles.append(se["profile"])
            if se.get("host_source"):
                out.append(
                    (
                        f"host work around {se['profile']}",
                        f"{float(se.get('host_us') or 0):.1f} µs",
                        str(se["host_source"]),
                    )
                )
        link = (s.labels or {}).get("network")
        if isinstance(link, str) and link not in links:
            links.append(link)
    for pat in doc.analysis.plan.patterns if doc.analysis.plan is not None else []:  # a plan: per pattern, its inputs
        inp = pat.inputs or {}
        out.append((f"pattern {pat.pattern}", str(inp.get("cost_table", "")), pat.source or ""))
        key_source, net = str(inp.get("key", "")), inp.get("network")
        if key_source.startswith("se:") and key_source.split(":")[1] not in profiles:
            profiles.append(key_source.split(":")[1])
        if isinstance(net, str) and net not in links:
            links.append(net)
        power = pat.power or {}
        radio = str((power.get("radio") or {}).get("profile", ""))
        if radio and radio not in radios:  # a radio profile's figures once, under the first pattern using it
            radios.append(radio)
            for field, src in (power.get("radio_sources") or {}).items():
                out.append((f"  radio {radio} {field}", str(power["radio"].get(field, "")), str(src)))
    out += _se_rows(profiles) + _network_rows(links)
    return out


def _se_rows(names: list[str]) -> list[tuple[str, str, str]]:
    out = []
    for n in names:
        try:
            p = SE.get_profile(n)
        except Exception:  # noqa: BLE001 - a profile of another file (--se-profiles): named, source unknown here
            out.append((f"secure element {n}", "", "profile from the run's own profile file"))
            continue
        out.append((f"secure element {n}", p.description, p.source))
        for fn, dist in p.functions.items():
            if dist.source and dist.source != p.source:
                out.append((f"  {fn}", dist.kind, dist.source))
    return out


def _network_rows(names: list[str]) -> list[tuple[str, str, str]]:
    table = NS.profile_table()
    out = []
    for n in names:
        p = table.get(n)
        if p is None:
            out.append((f"network {n}", n, "given as a spec on the command line (no profile)"))
            continue
        if not p.spec:
            continue
        out.append((f"network {n}", p.spec, p.description))
        for field, src in p.sources.items():
            out.append((f"  {field}", "", src))
    return out


def sources_lines(doc: Result, width: int = 80) -> list[str]:
    """The list as terminal lines: the figure and its value, then its source indented and wrapped."""

    rs = rows(doc)
    if not rs:
        return []
    out = ["Sources of the figures used"]
    for what, value, src in rs:
        out += textwrap.wrap(
            f"{what}" + (f": {value}" if value else ""),
            width=max(40, width),
            initial_indent="  ",
            subsequent_indent="      ",
        )
        if src:
            out += textwrap.wrap(src, width=max(40, width), initial_indent="      ", subsequent_indent="      ")
    return out
