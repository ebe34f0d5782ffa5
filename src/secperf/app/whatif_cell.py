"""One what-if cell's prediction: its link (the path floor and host scheduling the options give) and the
planned, simulated connection. Used by app/whatif.py on this machine and by app/whatif_cluster.py on a
worker, so neither imports the other."""

from __future__ import annotations

from typing import Any

from ..model import costs as C
from ..model import network as N
from ..model import predict as P
from ..sim import montecarlo as M
from ..sim import sweep as SW
from .whatif_options import WhatifOptions, key_profile


def link_of(cell: SW.Cell, o: WhatifOptions) -> N.LinkModel:
    """The network model of a cell with the path floor and host scheduling the options give."""
    link = N.from_spec(cell.network, o.coap_random_factor)
    if o.path_floor_ms and not cell.network.loopback:  # loopback: the calibration holds its path
        link = N.with_path_floor(link, o.path_floor_ms)
    if o.wakeup_samples_ms:
        link = N.with_host_wakeups(link, o.wakeup_samples_ms)
    return link


def predict_cell(cell: SW.Cell, table: C.CostTable, o: WhatifOptions) -> dict[str, Any]:
    link = link_of(cell, o)
    pl = P.plan(cell.scenario, table, link, until=o.until, se=key_profile(o, cell.scenario))
    r = M.simulate(pl, o.n, o.seed)
    return {"plan": pl, "sim": r, "link": link}
