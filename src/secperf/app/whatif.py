"""`secperf whatif`: predict connection set-up for scenarios that cannot run here, write a Result of
kind `whatif` through the run store (one series per scenario and link), print its tables."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import host
from ..core import result as R
from ..core.analysis_schema import WhatifAnalysis
from ..core.derived import derived
from ..core.errors import InputError
from ..core.result_schema import Result, Series, WhatifDerived
from ..core.store import RunStore
from ..inputs import devices as D
from ..inputs import netspec as NS
from ..inputs.core_profiles import Core
from ..measure.device_plan import target_for
from ..measure.wakeup import lateness_ms
from ..model import costs as C
from ..model import flights as F
from ..model import predict as P
from ..model import s1 as S1
from ..report.export import write_csv
from ..report.html import render
from ..report.units import fmt_time_us
from ..sim import sweep as SW
from ..sim.whatif_rows import row_derived, row_usable, security_cost, series
from . import device_stacks as DS
from .cluster import Cluster, connect
from .device_counts import device_counts
from .host_costs import host_table
from .reading import read_result
from .reporter import reporter
from .runner import check_output_file
from .whatif_cell import link_of as link_of
from .whatif_cell import predict_cell as predict_cell
from .whatif_cluster import predict_on
from .whatif_options import WhatifOptions as WhatifOptions
from .whatif_options import context as scenario_context
from .whatif_options import scenarios as scenarios

if TYPE_CHECKING:
    from ..inputs.devices import DeviceChoice

CellKey = tuple[F.Scenario, str, str]  # a cell's identity: its scenario, its link spelled out, its swept inputs


# --baseline: the reference rows of each scenario row, and what they mean (docs/how-to/whatif.md, "What security costs")
ROLE_BASELINE = "without security"
ROLE_SOFTWARE = "software key"


@dataclass(frozen=True)
class DeviceInput:
    """--device resolved once for the run: the inputs layer's DeviceChoice (name with old spellings
    mapped; a cost table's name, which takes precedence over a core of that name; else the emulated
    core, None when unknown or no --device) and the target its stacks are built for. cost_table and
    drop_unrunnable take this object, never the name again."""

    choice: DeviceChoice
    target: str | None = None  # the core's build target (measure/device_plan.target_for), when a core

    @property
    def name(self) -> str | None:
        return self.choice.name

    @property
    def core(self) -> Core | None:
        return self.choice.core

    @property
    def table(self) -> bool:
        return self.choice.table


def device_input(o: WhatifOptions) -> DeviceInput:
    """--device as the object the run passes down: one look-up of the name (inputs.devices.choose_device:
    the cost tables, then the cores) and the core's build target."""

    given = o.device_choice  # a --system file's [device].core, chosen while the file was read
    choice = given if given is not None and given.name == o.device else D.choose_device(o.device)
    if choice.core is None:  # no --device, a cost table, or unknown (cost_table says so)
        return DeviceInput(choice)

    # the target only where a count is built (without --calibrate): a core without builds is refused there
    return DeviceInput(choice, target=None if o.calibrate else target_for(choice.core))


def emulated_core(o: WhatifOptions) -> Core | None:
    """--device as the emulated core it names (None: a cost table's name, or no --device)."""
    return device_input(o).core


def cost_table(o: WhatifOptions, dev: DeviceInput | None = None) -> C.CostTable:
    """The costs a what-if draws from: this host's (app/host_costs.py: --host-costs, or --calibrate Results),
    a cost table by name, or an emulated core (`--device CORE`): the client's from its counts
    (app/device_counts.py, or the `secperf device` Results --calibrate names), the server's this host's.
    dev: --device as run() resolved it (resolved here when not given)."""

    dev = dev or device_input(o)
    device = dev.name
    if device and not dev.table:
        if dev.core is None:
            raise dev.choice.unknown()
        core = dev.core  # the core object (run() resolves it once): counting and the rows take it
        paths = [x.strip() for x in (o.calibrate or "").split(",") if x.strip()]
        docs = [read_result(p, "--calibrate", o.allow_partial) for p in paths]
        table = host_table(o.host_costs, calibrated=any(d.kind != "device" for d in docs))
        for path, doc in zip(paths, docs):  # the host's own rows: the server side
            if doc.kind != "device":
                with R.reading(f"--calibrate {path}", "the measured rows (series labels and values)"):
                    table = C.calibrate(doc, table, where=f"--calibrate {path}")
        dev_docs = [(p, d) for p, d in zip(paths, docs) if d.kind == "device"]
        if not dev_docs:
            ctx = scenario_context(o, counted=True)  # the model asked once: resolved, tables, flight models
            counts = device_counts(
                core,
                list(ctx.given),
                o.stack,
                o.config,
                quiet=o.json,
                stack_from=o.stack_from,
                config_from=o.config_from,
                base=table,
                target=dev.target,
                context=ctx,
            )
            reporter().note(f"{device}: {counts.note()}")
            return counts.table
        elif o.config:
            raise InputError(
                f"--config {o.config}: the build configuration is the one the --calibrate device "
                f"Results were counted with; give --config without device Results to count it"
            )
        with R.reading(f"--calibrate {o.calibrate}", "the device rows"):
            stack = C.device_stack([d for _, d in dev_docs], o.stack, device)
            for path, doc in dev_docs:
                table = C.from_device(doc, core, table, where=path, stack=stack)
        return table
    if o.stack or o.config:
        raise InputError(
            f"--{'stack' if o.stack else 'config'} picks the device's library; it needs --device CORE "
            f"(an emulated core: {', '.join(D.cores())})"
        )
    table = C.load_table(device) if device else host_table(o.host_costs, calibrated=bool(o.calibrate))
    if o.calibrate:
        if device and device != "host-default":
            raise InputError(
                "--calibrate and --device exclude each other: a calibration run measures this host, "
                "a device table describes another machine; give one"
            )
        doc = read_result(o.calibrate, "--calibrate", o.allow_partial)
        with R.reading(f"--calibrate {o.calibrate}", "the measured rows (series labels and values)"):
            table = C.calibrate(doc, table, where=f"--calibrate {o.calibrate}")
    return table


def drop_unrunnable(o: WhatifOptions, dev: DeviceInput | None = None) -> None:
    """A comparison of several protocols on an emulated core lists a protocol the core runs no stack
    of (QUIC on a microcontroller) with the reason instead of stopping: the others are still the
    answer. Asked alone, it stays an input error (device_counts says why). A stack the user named
    that lacks a protocol the core does run stays an error naming the stacks that have it
    (device_stacks.choose). dev: --device as run() resolved it (resolved here when not given)."""
    dev = dev or device_input(o)
    if dev.core is None or dev.name is None or dev.target is None or o.calibrate:
        return

    protos = [p for p in dict.fromkeys(o.protocols) if p in DS.FAMILY]
    bad = DS.unrunnable(protos, dev.name, dev.target)
    if bad and len(bad) < len(protos):
        for p, why in bad.items():
            reporter().note(f"note: {p} is not predicted on {dev.name}: {why}")
        o.not_counted = bad
        o.protocols = [p for p in o.protocols if p not in bad]


def host_wakeups(o: WhatifOptions) -> tuple[float, ...]:
    """The wake-up lateness samples (ms) --host-scheduling asks for: none, this host's now, or one fixed value."""
    if o.host_scheduling == "off":
        return ()
    if o.host_scheduling == "measure":
        return tuple(lateness_ms())
    return (float(o.host_scheduling),)


def reference_cells(cells: list[SW.Cell], o: WhatifOptions) -> list[list[tuple[str, SW.Cell]]]:
    """Per cell, its --baseline reference cells: (role, cell) for the same exchange without security
    (flights.no_security: one per protocol, network and swept network input) and, when the row's key
    is a secure element, the same scenario with a software key. A row with a software key is its own
    software-key reference. Empty lists without --baseline."""
    if not o.baseline:
        return [[] for _ in cells]
    out: list[list[tuple[str, SW.Cell]]] = []
    for c in cells:
        refs = [(ROLE_BASELINE, SW.Cell(F.no_security(c.scenario), c.network, c.inputs))]
        if c.scenario.key != "software":
            refs.append((ROLE_SOFTWARE, SW.Cell(F.software_key(c.scenario), c.network, c.inputs)))
        out.append(refs)
    return out


def _cell_key(c: SW.Cell) -> CellKey:
    return (c.scenario, c.network.canonical(), repr(sorted(c.inputs.items())))


def predict_references(
    cells: list[SW.Cell],
    table: C.CostTable,
    o: WhatifOptions,
    known: dict[CellKey, Any] | None = None,
    cluster: Cluster | None = None,
) -> dict[CellKey, Any]:
    """Predictions of every reference cell, once each (a baseline is shared by the rows of a protocol
    and link; a software-key reference that is also a row of the run is not predicted again)."""

    preds = dict(known or {})
    todo: dict[CellKey, SW.Cell] = {}
    # the reference rows are secperf's own combinations: a check refusing one is secperf's, not the user's
    with derived(
        "whatif --baseline derived its reference rows (the same exchange without security, and with a software key)"
    ):
        for refs in reference_cells(cells, o):
            for _, rc in refs:
                k = _cell_key(rc)
                if k not in preds:
                    todo.setdefault(k, rc)
        preds.update(zip(todo, predict_cells(list(todo.values()), table, o, cluster)))
    return preds


def predict_cells(
    cells: list[SW.Cell], table: C.CostTable, o: WhatifOptions, cluster: Cluster | None = None
) -> list[Any]:
    """Every cell's prediction here, or its row from Ray tasks on `cluster` (chunks of rows built
    and packed on the workers: app/whatif_cluster.py): the same rows either way (a cell's draws
    depend on the seed only)."""
    if cluster is None:
        return [predict_cell(c, table, o) for c in cells]

    return predict_on(cluster, cells, table, o)


def _row(
    cell: SW.Cell, pred: Any, table: C.CostTable, until: str, role: str | None = None, device: str | Core | None = None
) -> Series:
    """A cell's row: built from its prediction, or already built on a worker (app/whatif_cluster.py)."""
    if isinstance(pred, Series):
        pred.labels.update({"role": role} if role else {})
        return pred
    return series(cell, pred, table, until, role=role, device=device)


def fmt_adds(x: dict[str, Any] | None, fmt: Callable[[float], str]) -> str:
    """'4.10 s of 5.88 s (70 %)' from an _adds dict."""
    if x is None:
        return "–"
    share = "" if x["share"] is None else f" ({x['share'] * 100:.0f} %)"
    return f"{fmt(x['adds'])} of {fmt(x['secured'])}{share}"


def security_line(out: dict[str, Any], until: str) -> str:
    """security_cost's figures in one line, as the terminal and the Result's summary show them."""

    soft = out.get("key_vs_software")
    line = f"security adds {fmt_adds(out['time_p50_us'], fmt_time_us)} at P50"
    line += f"; {fmt_adds(out['bytes'], lambda v: f'{v:,.0f} B')}"
    line += f"; radio on {fmt_adds(out['radio_on_us'], fmt_time_us)} (mean)"
    if out["energy_mj"]:
        line += f"; energy {fmt_adds(out['energy_mj'], lambda v: f'{v:.1f} mJ')} per connection"
    if soft is not None:
        line += f"; the key source adds {fmt_adds(soft['time_p50_us'], fmt_time_us)} over a software key"
    return line + f" (until {'the handshake completes' if until == 'handshake' else 'the response'})"


def _cells(o: WhatifOptions, table: C.CostTable) -> tuple[list[SW.Cell], SW.Sweep]:
    # a value given twice (`tls1.3,tls1.3`, `--network lte-m,lte-m`) is one row: a repeated cell would
    # repeat its series id, which makes a Result no reader takes
    links = o.links if o.links is not None else NS.parse_networks(o.networks)  # a --system file's: resolved
    nets = list({n.canonical(): n for n in links}.values())
    sweep = SW.parse(o.sweep)
    scs = list(dict.fromkeys(scenarios(o)))
    if o.s1:
        if len(o.protocols) != 1 or o.protocols[0] not in ("tls1.3", "https", "mqtt"):  # it computed TLS 1.3 rows
            raise InputError(
                f"--s1: study S1 compares TLS 1.3 full and PSK handshakes: acts on one of tls1.3, https, "
                f"mqtt; protocol {','.join(o.protocols)}: drop --s1 or name one of those"
            )
        scs = [sc for _, sc in S1.scenarios(table, o.protocols[0])]
    # --baseline: up to three rows per scenario (itself, without security, with a software key),
    # counted against the work limits before anything is simulated
    per = (3 if any(k != "software" for k in o.keys) else 2) if o.baseline else 1
    SW.check_draws(len(scs) * per, len(nets), sweep, o.n, o.max_draws, o.max_cells)  # before the cells are made
    return SW.expand(scs, nets, sweep), sweep


def predict_into(
    doc: Result,
    o: WhatifOptions,
    table: C.CostTable,
    cells: list[SW.Cell] | None = None,
    sweep: SW.Sweep | None = None,
    preds: list[Any] | None = None,
    refs: dict[CellKey, Any] | None = None,
) -> None:
    """Append one `whatif` series per scenario and link to `doc`, and the cost table, tornado and
    S1 estimate to doc.analysis["whatif"] (used by `secperf whatif` and by a scenario's
    [whatif] block, which predicts next to the rows it measured). With o.baseline each row is
    followed by its reference rows (labels.role) the first time one is used, and carries
    derived.security: what security adds (security_cost)."""
    P.check_until(o.until)
    if cells is None:
        cells, sweep = _cells(o, table)
    preds = preds if preds is not None else [predict_cell(c, table, o) for c in cells]
    ref_preds = (
        refs
        if refs is not None
        else predict_references(cells, table, o, {_cell_key(c): p for c, p in zip(cells, preds)})
    )
    rows = []
    by_key: dict[Any, Series] = {}
    main = [_row(c, pr, table, o.until, device=o.core or o.device) for c, pr in zip(cells, preds)]
    for c, s in zip(cells, main):
        by_key.setdefault(_cell_key(c), s)
    summary = []
    for c, s, refs_c in zip(cells, main, reference_cells(cells, o)):
        doc.series.append(s)
        ok = row_derived(s).usable is not None  # a failed row (its chunk failed on a cluster) has no figures
        if ok:
            rows.append({"inputs": c.inputs, "usable": row_usable(row_derived(s)).model_dump()})
        got = {}
        for role, rc in refs_c:
            k = _cell_key(rc)
            if k not in by_key:
                by_key[k] = _row(rc, ref_preds[k], table, o.until, role=role, device=o.core or o.device)
                doc.series.append(by_key[k])
            got[role] = by_key[k]
        if got and ok and all(row_derived(g).usable is not None for g in got.values()):
            sec = security_cost(s, got[ROLE_BASELINE], got.get(ROLE_SOFTWARE), o.until)
            sec["line"] = security_line(sec, o.until)
            s.derived_as(WhatifDerived).security_cost = sec  # a --baseline row's: what security adds
            summary.append({"series": s.id, "line": sec["line"]})
    wa: dict[str, Any] = {
        "cost_table": {
            "name": table.name,
            "source": table.source,
            "description": table.description,
            "rows": table.rows(),
            **_libraries(table, cells),
        },
        "tornado": SW.tornado(rows, sweep) if sweep else [],
        "sweep": sweep,
        "end_point": o.until,
        "end_point_description": P.UNTIL[o.until],
    }
    if o.baseline:
        wa["security_cost"] = {
            "rows": summary,
            "without_security": {p: F.PLAIN[p][1] for p in dict.fromkeys(c.scenario.protocol for c in cells)},
            "rule": " ".join((security_cost.__doc__ or "").split()),
        }
    if o.not_counted:
        wa["not_counted"] = dict(o.not_counted)
    if o.s1:
        wa["s1"] = S1.per_message(table)
    doc.analysis.whatif = WhatifAnalysis.model_validate(wa)


def _libraries(table: C.CostTable, cells: list[SW.Cell]) -> dict[str, Any]:
    """A device table's library per protocol of the run, and whether they differ (the table says so)."""
    if not table.stack:
        return {}
    protos = list(dict.fromkeys(c.scenario.protocol for c in cells))
    libs = {p: table.for_protocol(p).library or table.for_protocol(p).stack for p in protos}
    stacks = {p: table.for_protocol(p).stack for p in protos}
    out: dict[str, Any] = {"stack": table.stack, "library": table.library, "libraries": libs, "stacks": stacks}
    if len(set(stacks.values())) > 1:
        out["mixed"] = "the rows differ in library: " + "; ".join(
            f"{', '.join(p for p in protos if stacks[p] == st)} on {st}" for st in dict.fromkeys(stacks.values())
        )
    return out


def run(o: WhatifOptions) -> Result:
    """The what-if Result, written to its run directory (and --csv); the caller shows it."""
    dev = device_input(o)  # --device, resolved once for the run
    o.core = dev.core
    drop_unrunnable(o, dev)
    table = cost_table(o, dev)
    cells, sweep = _cells(o, table)
    o.wakeup_samples_ms = host_wakeups(o)
    params = {
        "protocols": o.protocols,
        "networks": o.networks,
        "keys": o.keys,
        "groups": o.groups,
        "certs": o.certs,
        "handshakes": o.handshakes,
        "sweep": o.sweep,
        "calibrate": o.calibrate,
        "host_costs": o.host_costs,
        "device": o.device,
        "stack": o.stack,
        "n": o.n,
        "seed": o.seed,
        "s1": o.s1,
        "coap_random_factor": o.coap_random_factor,
        "path_floor_ms": o.path_floor_ms,
        "host_scheduling": o.host_scheduling,
        "baseline": o.baseline,
        "until": o.until,
        "max_draws": o.max_draws,
        "max_cells": o.max_cells,
    }
    # validate every cell before creating a run directory, so bad input leaves nothing behind

    check_output_file(o.csv, "--csv")

    with connect(o.cluster, quiet=o.json) if o.cluster else nullcontext() as cl:
        preds = predict_cells(cells, table, o, cl)
        refs = predict_references(cells, table, o, {_cell_key(c): p for c, p in zip(cells, preds)}, cl)
    if cl is not None:
        params["cluster"] = o.cluster
    run_ = RunStore(o.out).create("whatif")
    doc = R.new_result(kind="whatif", command=o.command, params=params, host=host.collect(), run_id=run_.run_id)
    if cl is not None:
        doc.analysis.cluster = {
            **cl.as_dict(),
            "predictions": len(refs),
            "rule": "chunks of cells as Ray tasks, each returning its rows built and packed on the worker; "
            "each cell's draws depend on --seed only; a chunk that failed is failed rows naming why",
            "failed_rows": sum(1 for s in refs.values() if isinstance(s, Series) and s.status == "failed"),
        }
    predict_into(doc, o, table, cells, sweep, preds, refs)
    R.finish(doc)
    run_.save(doc)
    if not o.no_report:
        run_.write_text("report.html", render(doc, log=run_.dir / "secperf.log"))
    if o.csv:
        write_csv(doc, Path(o.csv))
    return doc
