"""`secperf whatif`: predict connection set-up for scenarios that cannot run here, write a Result of
kind `whatif` through the run store (one series per scenario and link), print its tables."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..core import host, result as R
from ..core.errors import EXIT_OK, InputError
from ..core.store import RunStore
from ..model import costs as C
from ..model import flights as F
from ..model import predict as P
from ..model import s1 as S1
from ..model import network as N
from ..sim import montecarlo as M
from ..sim import sweep as SW
from ..spec import netspec as NS
from ..spec import se_profiles as SE

TIMER = {"name": "connection set-up (predicted)",
         "start": "the client's first packet (TCP SYN; DTLS/OpenVPN: first datagram)",
         "end": "the protocol's answer processed (HTTP response, CONNACK, CoAP ACK, PUSH_REPLY + tun)",
         "value": "simulated: values_us holds a reservoir of the first 2000 draws; summary covers all n",
         "clock": "model time"}


@dataclass
class WhatifOptions:
    protocols: list[str]
    networks: list[str] = field(default_factory=lambda: ["loopback"])
    keys: list[str] = field(default_factory=lambda: ["software"])
    groups: list[str] = field(default_factory=lambda: ["x25519"])
    certs: list[str] = field(default_factory=list)
    handshakes: list[str] = field(default_factory=list)
    sweep: str | None = None
    calibrate: str | None = None
    device: str | None = None
    stack: str | None = None               # the device Result's library, when it counted several
    n: int = 100_000
    seed: int = 1
    s1: bool = False
    coap_random_factor: float = N.COAP_ACK_RANDOM_FACTOR
    path_floor_ms: float = 0.0
    host_scheduling: str | float = "off"     # off, measure, or a fixed lateness in ms
    wakeup_samples_ms: tuple[float, ...] = ()  # filled by host_wakeups() from host_scheduling
    json: bool = False
    out: str = "results"
    no_report: bool = False
    command: list[str] = field(default_factory=lambda: ["secperf", "whatif"])
    allow_partial: bool = False            # --calibrate may name a running or abandoned run
    max_draws: int = SW.DEFAULT_MAX_DRAWS  # cells x n at most (--max-draws)
    max_cells: int = SW.DEFAULT_MAX_CELLS  # cells at most (--max-cells)


def cost_table(o: WhatifOptions) -> C.CostTable:
    from ..spec import devices as D
    from .reading import read_result
    if o.device and o.device not in C.table_names():
        if o.device not in D.cores():
            raise InputError(f"--device: unknown device {o.device!r}; cost tables: {', '.join(C.table_names())}; "
                             f"emulated cores (with --calibrate DEVICE_RESULT): {', '.join(D.cores())}")
        if not o.calibrate:
            raise InputError(f"--device {o.device}: an emulated core has no costs without its instruction counts; "
                             f"give --calibrate results/X/result.json from `secperf device crypto --device {o.device}` "
                             f"(and `secperf device handshake --device {o.device}`), or a cost table: "
                             f"{', '.join(C.table_names())}")
        table = C.load_table()
        paths = [x.strip() for x in o.calibrate.split(",") if x.strip()]   # crypto counts, handshake rows
        docs = [read_result(p, "--calibrate", o.allow_partial) for p in paths]
        with R.reading(f"--calibrate {o.calibrate}", "the device rows"):
            stack = C.device_stack(docs, o.stack, o.device)
            for path, doc in zip(paths, docs):
                table = C.from_device(doc, D.core(o.device), table, where=f"--calibrate {path}", stack=stack)
        return table
    table = C.load_table(o.device or "host-default")
    if o.calibrate:
        if o.device:
            raise InputError("--calibrate and --device exclude each other: a calibration run measures this host, "
                             "a device table describes another machine; give one")
        doc = read_result(o.calibrate, "--calibrate", o.allow_partial)
        with R.reading(f"--calibrate {o.calibrate}", "the measured rows (series labels and values)"):
            table = C.calibrate(doc, table, where=f"--calibrate {o.calibrate}")
    return table


def _keys(keys: list[str]) -> list[str]:
    out = []
    profiles = None
    for k in keys:
        if k == "software":
            out.append(k)
            continue
        if not k.startswith("se:"):
            raise InputError(f"--key: {k!r} must be software or se:PROFILE[:cold] (see `secperf signer --profile list`)")
        parts = k.split(":")
        if len(parts) > 3 or (len(parts) == 3 and parts[2] != "cold"):
            raise InputError(f"--key: {k!r}: write se:PROFILE for a warm key (session kept) or se:PROFILE:cold")
        profiles = profiles or SE.load_profiles()
        if parts[1] not in profiles:
            raise InputError(f"--key: unknown secure-element profile {parts[1]!r}; known: {', '.join(profiles)}")
        out.append(k)
    return out


def scenarios(o: WhatifOptions) -> list[F.Scenario]:
    for p in o.protocols:
        if p not in F.PROTOCOLS:
            raise InputError(f"PROTOCOL: unknown protocol {p!r}; known: {', '.join(F.PROTOCOLS)}")
    for g in o.groups:
        if g not in F.groups():
            raise InputError(f"--group: unknown group {g!r}; known: {', '.join(F.groups())}")
    certs = [SW.parse_cert(c) for c in o.certs] or [(None, 1)]
    for t, d in certs:
        if t is not None and t not in F.key_types():
            raise InputError(f"--cert: unknown key type {t!r}; known: {', '.join(F.key_types())}")
    out = []
    for p in o.protocols:
        hss = o.handshakes or [F.HANDSHAKES[p][0]]
        known = [h for h in hss if h in F.HANDSHAKES[p]]
        if not known and len(o.protocols) == 1:
            raise InputError(f"--handshake: {p} has no {', '.join(hss)} handshake; known: {', '.join(F.HANDSHAKES[p])}")
        for h in known:
            for k in _keys(o.keys):
                for g in o.groups:
                    for t, d in certs:
                        out.append(F.Scenario(p, h, g, t, d, k))
    if not out:
        raise InputError(f"--handshake: none of {', '.join(o.handshakes)} applies to {', '.join(o.protocols)}")
    return out


def host_wakeups(o: WhatifOptions) -> tuple[float, ...]:
    """The wake-up lateness samples (ms) --host-scheduling asks for: none, this host's now, or one fixed value."""
    if o.host_scheduling == "off":
        return ()
    if o.host_scheduling == "measure":
        from ..measure.wakeup import lateness_ms
        return tuple(lateness_ms())
    return (float(o.host_scheduling),)


def link_of(cell: SW.Cell, o: WhatifOptions) -> N.LinkModel:
    """The network model of a cell with the path floor and host scheduling the options give."""
    link = N.from_spec(cell.network, o.coap_random_factor)
    if o.path_floor_ms and not cell.network.loopback:     # loopback: the calibration holds its path
        link = N.with_path_floor(link, o.path_floor_ms)
    if o.wakeup_samples_ms:
        link = N.with_host_wakeups(link, o.wakeup_samples_ms)
    return link


def predict_cell(cell: SW.Cell, table: C.CostTable, o: WhatifOptions) -> dict:
    link = link_of(cell, o)
    pl = P.plan(cell.scenario, table, link)
    r = M.simulate(pl, o.n, o.seed)
    return {"plan": pl, "sim": r, "link": link}


def _series(cell: SW.Cell, pred: dict, table: C.CostTable) -> dict:
    pl, r, link = pred["plan"], pred["sim"], pred["link"]
    sc = pl.model.scenario
    sid = f"whatif/{sc.label()} @ {cell.network.name}"
    labels = {**{k: v for k, v in asdict(sc).items()}, "network": cell.network.name,
              "network_spec": cell.network.canonical(), "link": link.as_dict(), "inputs": cell.inputs,
              "cost_table": table.name}
    s = R.new_series(sid, kind="whatif", labels=labels, timer=TIMER)
    s["values_us"] = r["reservoir_us"]
    u = r["usable"]
    s["summary"] = {k: u[k] for k in ("n", "mean_us", "sd_us", "min_us", "p50_us", "p90_us", "p95_us", "p99_us",
                                      "max_us", "median_ci95_us")}
    s["summary"]["percentiles_from"] = u["percentiles_from"]
    s["status"] = "ok"
    s["derived"] = {
        "usable": u, "handshake": r["handshake"],
        "handshake_timer": "from TCP connected (DTLS/OpenVPN: the first datagram) to the client's handshake complete",
        "breakdown_mean_us": r["breakdown_mean_us"],
        "bytes_up_mean": r["bytes_up_mean"], "bytes_down_mean": r["bytes_down_mean"],
        "packets_up_mean": r["packets_up_mean"], "packets_down_mean": r["packets_down_mean"],
        "radio": r["radio"], "failed_share": r["failed_share"],
        "round_trips": pl.model.round_trips, "round_trips_to_handshake_done": pl.model.round_trips_to_handshake_done(),
        "flights": [dict(row, packets=fp.packets, wire_bytes=fp.wire_bytes, extra_window_rounds=fp.extra_rounds)
                    for row, fp in zip(pl.model.table(), [f for f in pl.flights if f is not None])],
        "crosses": {"initial_window": any(f.extra_rounds for f in pl.flights if f),
                    "mtu": any(f.packets > 1 for f in pl.flights if f)},
        "costs": P.compute_breakdown(pl),
        "se": ({"profile": pl.se_profile.name, "calls": list(pl.se_calls), "host_us": pl.se_host_us,
                "host_source": pl.se_host_source} if pl.se_profile else None),
        "calibration": ({k: v for k, v in pl.calibration.items() if k != "ratios"}
                        | {"spread_values": len(pl.calibration.get("ratios") or ())} if pl.calibration else None),
        "seed": r["seed"],
    }
    return s


def _cells(o: WhatifOptions, table: C.CostTable):
    nets = NS.parse_networks(o.networks)
    sweep = SW.parse(o.sweep)
    scs = scenarios(o)
    if o.s1:
        scs = [sc for _, sc in S1.scenarios(table, o.protocols[0] if o.protocols[0] in ("tls1.3", "https", "mqtt")
                                            else "tls1.3")]
    SW.check_draws(len(scs), len(nets), sweep, o.n, o.max_draws, o.max_cells)  # before the cells are made
    return SW.expand(scs, nets, sweep), sweep


def predict_into(doc: dict, o: WhatifOptions, table: C.CostTable, cells=None, sweep=None, preds=None) -> None:
    """Append one `whatif` series per scenario and link to `doc`, and the cost table, tornado and
    S1 estimate to doc["analysis"]["whatif"] (used by `secperf whatif` and by a scenario's
    [whatif] block, which predicts next to the rows it measured)."""
    if cells is None:
        cells, sweep = _cells(o, table)
    preds = preds if preds is not None else [predict_cell(c, table, o) for c in cells]
    rows = []
    for c, pr in zip(cells, preds):
        s = _series(c, pr, table)
        doc["series"].append(s)
        rows.append({"inputs": c.inputs, "usable": s["derived"]["usable"]})
    doc["analysis"]["whatif"] = {"cost_table": {"name": table.name, "source": table.source,
                                                "description": table.description, "rows": table.rows()},
                                 "tornado": SW.tornado(rows, sweep) if sweep else [],
                                 "sweep": sweep}
    if o.s1:
        doc["analysis"]["whatif"]["s1"] = S1.per_message(table)


def run(o: WhatifOptions) -> int:
    from ..report import terminal_whatif
    from .runner import show_result
    table = cost_table(o)
    cells, sweep = _cells(o, table)
    o.wakeup_samples_ms = host_wakeups(o)
    params = {"protocols": o.protocols, "networks": o.networks, "keys": o.keys, "groups": o.groups,
              "certs": o.certs, "handshakes": o.handshakes, "sweep": o.sweep, "calibrate": o.calibrate,
              "device": o.device, "stack": o.stack, "n": o.n, "seed": o.seed, "s1": o.s1, "coap_random_factor": o.coap_random_factor,
              "path_floor_ms": o.path_floor_ms, "host_scheduling": o.host_scheduling}
    # validate every cell before creating a run directory, so bad input leaves nothing behind
    preds = [predict_cell(c, table, o) for c in cells]
    run_ = RunStore(o.out).create("whatif")
    doc = R.new_result(kind="whatif", command=o.command, params=params, host=host.collect(), run_id=run_.run_id)
    predict_into(doc, o, table, cells, sweep, preds)
    R.finish(doc)
    run_.save(doc)
    if not o.no_report:
        from ..report.html import render
        run_.write_text("report.html", render(doc))
    show_result(doc, run_, json_out=o.json, no_report=o.no_report, tables=terminal_whatif.tables(doc))
    return EXIT_OK
