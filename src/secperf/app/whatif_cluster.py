"""What-if cells on a Ray cluster (`whatif --cluster`): merge on the workers.

Each Ray task predicts a chunk of cells and returns the chunk's rows already as the Result keeps
them (the Series: labels, summary, reservoir of draws, derived figures; never the prediction's
flight plan and raw draws), packed into one payload (RowChunk). The driver's work per cell is then
unpickling one row and nothing else. What the packing saves on the driver (measured with
benchmarks/cluster_sweep.py, cProfile on the driver: unpickling the rows was all of its time):

- every row's reservoir of draws travels in one float64 array per chunk (one buffer), not as
  hundreds of float objects per row, and becomes each row's list with one C call;
- sub-objects equal in the rows of a chunk (the timer, the flights, the costs, the energy note...)
  travel once and the rows that have them share that one object (pickle keeps one copy of an object
  met twice): a fifth of a row's bytes here;
- each chunk is unpacked as it arrives, while the workers compute the next ones, with no garbage
  collection walking the rows meanwhile (app/cluster.map_chunks);
- the cells go out as one C-made pickle per chunk, not through Ray's per-object pickler.

A chunk that fails on the cluster (its code raising something other than secperf's own errors, its
worker lost on every retry) becomes one failed row per cell, naming the reason: the sweep's other
rows stand. A secperf error (bad input) is raised as the local run raises it.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.result_schema import Series, WhatifDerived
from ..model import costs as C
from ..sim import sweep as SW
from ..sim.whatif_rows import failed_series, series
from .cluster import ChunkTiming, Cluster, map_chunks
from .reporter import reporter
from .whatif_cell import link_of, predict_cell
from .whatif_options import WhatifOptions

# a row's derived fields that are the same in many rows of a sweep (they depend on the scenario and
# the cost table, not on the link's draws): sent once per chunk
SHARED_DERIVED = ("flights", "costs", "energy", "crosses", "se", "calibration", "no_security")


@dataclass
class RowChunk:
    """A chunk's rows as they travel: the Series without their values, and the values end to end."""

    rows: list[Series]  # values_us emptied: they travel in `values`
    values: np.ndarray  # float64: every row's values_us, one row after the other
    lengths: np.ndarray  # int64: how many of `values` each row has


def _same(memo: dict[bytes, Any], x: Any) -> Any:
    """The object of this chunk equal to x, by its exact pickle: key order and number types count as
    in its JSON (a float is not an int, {a, b} is not {b, a}), at a third of the JSON's cost per row;
    two equal objects whose pickles still differ (shared parts inside one of them) are only not shared."""
    if x is None or isinstance(x, (str, int, float)):
        return x
    try:
        key = pickle.dumps(x, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError):
        return x  # not picklable by the C pickler: sent as it is
    return memo.setdefault(type(x).__name__.encode() + b"\0" + key, x)


def pack(rows: list[Series]) -> RowChunk:
    """Rows as one payload (their own objects are changed: the values leave them)."""
    memo: dict[bytes, Any] = {}
    lengths = np.fromiter((len(r.values_us) for r in rows), dtype=np.int64, count=len(rows))
    values = np.fromiter((v for r in rows for v in r.values_us), dtype=np.float64, count=int(lengths.sum()))
    for r in rows:
        # assignments below skip validation on purpose: each value is the row's own, already checked
        r.__dict__["values_us"] = []
        r.__dict__["timer"] = _same(memo, r.timer)
        d = r.derived
        if isinstance(d, WhatifDerived):
            for f in SHARED_DERIVED:
                d.__dict__[f] = _same(memo, d.__dict__.get(f))
    return RowChunk(rows, values, lengths)


def unpack(chunk: RowChunk) -> list[Series]:
    """The rows of a payload, each with its values back (the driver's only work per row)."""
    ends = np.cumsum(chunk.lengths).tolist()
    starts = [0, *ends[:-1]]
    for r, a, b in zip(chunk.rows, starts, ends):
        r.__dict__["values_us"] = chunk.values[a:b].tolist()
    return chunk.rows


def rows_chunk(shared: tuple[C.CostTable, WhatifOptions], cells: list[SW.Cell]) -> RowChunk:
    """On a worker: every cell's row of the chunk, packed."""
    table, o = shared
    device = o.core or o.device
    return pack([series(c, predict_cell(c, table, o), table, o.until, device=device) for c in cells])


def failed_rows(cells: list[SW.Cell], table: C.CostTable, o: WhatifOptions, reason: str) -> RowChunk:
    """The rows of a chunk that failed on the cluster: one failed row per cell, with the reason."""
    reporter().note(f"cluster: {reason}; those cells are failed rows in the Result")
    rows = [failed_series(c, table, o.until, reason, link_of(c, o)) for c in cells]
    return RowChunk(rows, np.zeros(0), np.zeros(len(rows), dtype=np.int64))


def predict_on(
    cluster: Cluster,
    cells: list[SW.Cell],
    table: C.CostTable,
    o: WhatifOptions,
    timings: list[ChunkTiming] | None = None,
) -> list[Series]:
    """Every cell's row, predicted in chunks on the cluster: the rows a local run makes, in order
    (with `timings`, when and where each chunk ran: map_chunks)."""
    rows = map_chunks(
        rows_chunk,
        (table, o),
        cells,
        cluster,
        "what-if cells",
        failed=lambda chunk, reason: failed_rows(chunk, table, o, reason),
        received=unpack,
        timings=timings,
    )
    return [r for part in rows for r in part]
