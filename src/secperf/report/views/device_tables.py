"""The tables of `secperf device` Results, built once as Grids (report/views/grid.py) for the terminal
and the HTML page alike: per phase (cold, warm) the instructions per handshake message across
configurations with the totals, modelled time and checks; then the primitive operations."""

from __future__ import annotations

from collections.abc import Sequence

from ...core.result_schema import DeviceCryptoDerived, DeviceDerived, Result, Series
from . import device as V
from .grid import FAILED, Grid


def handshake(phase: str, series: Sequence[Series]) -> Grid:
    """Instructions per handshake message, one column per configuration, and what follows from them."""
    varying = V.varying_labels(series)
    first = series[0].labels
    g = Grid(
        f"Guest instructions per handshake message, {phase} ({first['device']}, {first['library']}, median)",
        ["message", *(V.column_name(s, varying) for s in series)],
        notes=[x for x in [V.profile_note(series)] if x],
    )
    order, mat = V.matrix(series)
    for msg, vals in zip(order, mat):
        g.add([msg, *(V.fmt_count(v) for v in vals)])
    counted = [s.derived_as(DeviceDerived) for s in series]
    g.add(["handshake total", *(V.fmt_count(d.instructions_median) for d in counted)], strong=True)
    g.add(["cycles (timing model)", *(V.cycles(d.time) for d in counted)])
    g.add(["time (band)", *(V.time_band(d.time) for d in counted)], strong=True)
    for name, value in (
        ("old CPI range (for comparison)", V.ms_range),
        ("build", V.build_label),
        ("application data", lambda s: V.fmt_count(s.derived_as(DeviceDerived).app_instructions_median)),
        ("library footprint (linked)", V.footprint),
        ("handshake stack (worst, painted)", V.stack),
        ("checks", lambda s: "; ".join(V.checks(s))),
    ):
        g.add([name, *(value(s) for s in series)], muted=True)
    return g


def crypto(series: Sequence[Series]) -> Grid | None:
    """The primitive operations (device_crypto series): the build column holds a short id (stack and
    config), the libraries' full names go under the table once each."""
    if not series:
        return None
    builds = {V.build_id(s): V.build_label(s) for s in series}
    devices = {s.labels["device"] for s in series}
    one = len(devices) == 1
    legend = "; ".join(f"{k}: {v}" for k, v in builds.items() if k != v)
    head = [
        *(() if one else ("device",)),
        "build",
        "operation",
        "instr. cold",
        "instr. warm",
        "cycles",
        "time (band)",
        "old CPI range",
        "stack (painted)",
    ]
    g = Grid(
        "Guest instructions and modelled time per primitive operation (warm median; first call as cold)"
        + (f" on {next(iter(devices))}" if one else ""),
        head,
        notes=[x for x in (V.profile_note(series), f"builds: {legend}" if legend else "") if x],
        left=2 if one else 3,
    )
    for s in series:
        d = s.derived_as(DeviceCryptoDerived)
        dev = [] if one else [s.labels["device"]]
        if d.instructions_cold is None:  # failed: at most its footprint was measured
            g.add([*dev, V.build_id(s), s.labels["op"], FAILED])
            continue
        g.add(
            [
                *dev,
                V.build_id(s),
                s.labels["op"],
                V.fmt_count(d.instructions_cold),
                V.fmt_count(d.instructions_median),
                V.cycles(d.time),
                V.time_band(d.time),
                V.ms_range(s),
                V.op_stack(s),
            ]
        )
    return g


def grids(doc: Result) -> list[Grid]:
    """Every device table in report order: the handshake phases, then the primitives."""
    out = [handshake(phase, series) for phase, series in V.phases(doc).items()]
    c = crypto(V.crypto_series(doc))
    return out + ([c] if c is not None else [])
