"""A what-if cell's row: the `whatif` series built from a cell's prediction (its summary, flights,
costs and energy per connection) and, for a --baseline row, what security adds against its
reference rows.

The app layer (app/whatif.py) chooses the cells, runs the predictions (here or on a cluster) and
writes the Result; the figures of each row are assembled here, from the model's plan and the
simulator's draws only.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from ..core import result as R
from ..core.errors import InternalError
from ..core.result_schema import Percentiles, Series, Summary, WhatifDerived
from ..inputs.core_profiles import Core
from ..model import costs as C
from ..model import energy as E
from ..model import flights as F
from ..model import predict as P
from . import sweep as SW

TIMER = {
    "name": "connection set-up (predicted)",
    "start": "the client's first packet (TCP SYN; DTLS/OpenVPN: first datagram)",
    "end": "the protocol's answer processed (HTTP response, CONNACK, CoAP ACK, PUSH_REPLY + tun)",
    "value": "simulated: values_us holds a reservoir of the first 2000 draws; summary covers all n",
    "clock": "model time",
}


# --until handshake: the same start, the clock stops at the client's handshake completion (TCP
# connect inside, as `openssl s_time`; `secperf handshake`'s own window, from TCP connected, is
# derived.handshake in every row)
TIMER_HANDSHAKE = {
    **TIMER,
    "name": "connection set-up until the handshake completes (predicted)",
    "end": "the client's handshake complete (TLS 1.3: its Finished built; TLS 1.2/DTLS: the server's "
    "Finished verified; OpenVPN: control-channel key exchange done; no security: TCP "
    "connected, UDP at once); nothing after it is counted",
}


def timer(until: str) -> dict[str, str]:
    return TIMER_HANDSHAKE if until == "handshake" else TIMER


def series_id(cell: SW.Cell, sc: F.Scenario) -> str:
    return f"whatif/{sc.label()} @ {cell.network.name}"


def connection_energy(
    d: WhatifDerived, network: str, device: str | Core | None, se_profile: str | None
) -> dict[str, Any]:
    """Joules of one isolated connection (model/energy.py: promotion, airtime, the radio connected
    while waiting, the full inactivity tail; the client CPU and the secure element at their active
    power) from a row's simulated means, when the link has a radio energy profile (a named network:
    lte-m, nb-iot, ...); otherwise {"note": why not}."""
    if network not in E.radio_names():
        return {
            "note": f"no radio energy profile for link {network!r} (energy needs a named network: "
            f"{', '.join(E.radio_names())})"
        }
    radio = E.radio(network)
    notes = []
    try:
        cpu = E.cpu(device or "host-default")
    except E.EnergyError:
        cpu = E.Power("none", 0.0, "")
        name = device.name if isinstance(device, Core) else device
        notes.append(f"no CPU power figure for {name!r}: CPU energy not counted")
    try:
        se = E.se(se_profile)
    except E.EnergyError:
        se = E.Power("none", 0.0, "")
        notes.append(f"no active power for {se_profile!r}: secure-element energy not counted")
    b, u, air = d.breakdown_mean_us, d.usable, d.radio
    if b is None or u is None or u.mean_us is None or air is None:
        raise InternalError("internal: a what-if row's energy needs its simulated means (breakdown, usable, radio)")
    a = E.Activity(
        on_s=u.mean_us / 1e6,
        tx_s=air["airtime_tx_mean_us"] / 1e6,
        rx_s=air["airtime_rx_mean_us"] / 1e6,
        cpu_s=b["client_compute"] / 1e6,
        se_s=b["secure_element"] / 1e6,
        bytes=(d.bytes_up_mean or 0.0) + (d.bytes_down_mean or 0.0),
    )
    e = E.activity_energy(a, radio, cpu, se, None)
    return {
        "total_mj": e.total_j * 1e3,
        "radio_mj": e.radio_j * 1e3,
        "cpu_mj": e.cpu_j * 1e3,
        "se_mj": e.se_j * 1e3,
        "radio_s": e.radio_s,
        "radio_profile": radio.name,
        "cpu": cpu.name,
        "note": "; ".join(["one isolated connection: radio promotion and full inactivity tail included"] + notes),
    }


def _adds(secured: float | None, without: float | None) -> dict[str, float | None] | None:
    if secured is None or without is None:
        return None
    return {
        "secured": secured,
        "without": without,
        "adds": secured - without,
        "share": (secured - without) / secured if secured > 0 else None,
    }


def security_cost(s: Series, base: Series, soft: Series | None, until: str) -> dict[str, Any]:
    """What security adds to a row (docs/how-to/whatif.md, "What security costs"): the row against the same exchange
    without security, in time (difference of the two rows' P50s and of their means: both simulated
    with the same seed and draws, not a P50 of differences), bytes (mean wire bytes up + down),
    radio-on time (mean, first packet to the end point) and energy per connection; and what the key
    source adds against a software key (secure-element rows)."""
    # the figures only (the docstring is the Result's rule): app/whatif.security_line words them
    d, b = row_derived(s), row_derived(base)
    du, bu = row_usable(d), row_usable(b)
    out: dict[str, Any] = {
        "end_point": until,
        "baseline_series": base.id,
        "software_key_series": soft.id if soft is not None else None,
        "time_p50_us": _adds(du.p50_us, bu.p50_us),
        "time_p95_us": _adds(du.p95_us, bu.p95_us),
        "time_mean_us": _adds(du.mean_us, bu.mean_us),
        "bytes": _adds(_sum(d.bytes_up_mean, d.bytes_down_mean), _sum(b.bytes_up_mean, b.bytes_down_mean)),
        "packets": _adds(_sum(d.packets_up_mean, d.packets_down_mean), _sum(b.packets_up_mean, b.packets_down_mean)),
        "radio_on_us": _adds((d.radio or {}).get("on_mean_us"), (b.radio or {}).get("on_mean_us")),
        "crypto_ops": {
            "secured": sum(
                1
                for c in d.costs or []
                if not c["op"].startswith("base:") and c["party"] != "secure element" and c["op"] != "tun_setup"
            ),
            "without": sum(1 for c in b.costs or [] if c["op"] != "tun_setup"),
        },
    }
    eb, es = b.energy or {}, d.energy or {}
    out["energy_mj"] = _adds(es.get("total_mj"), eb.get("total_mj"))
    out["energy_note"] = es.get("note")
    if soft is not None:
        sd = row_derived(soft)
        su = row_usable(sd)
        out["key_vs_software"] = {
            "time_p50_us": _adds(du.p50_us, su.p50_us),
            "time_mean_us": _adds(du.mean_us, su.mean_us),
            "energy_mj": _adds(es.get("total_mj"), (sd.energy or {}).get("total_mj")),
        }
    return out


def row_derived(s: Series) -> WhatifDerived:
    return s.derived_as(WhatifDerived)


def row_usable(d: WhatifDerived) -> Percentiles:
    """A predicted row's usable-time percentiles (every row `series` builds has them)."""
    if d.usable is None:
        raise AssertionError("a what-if row without its usable-time percentiles")
    return d.usable


def _sum(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


def _labels(cell: SW.Cell, sc: F.Scenario, own: C.CostTable, link: Any, until: str) -> dict[str, Any]:
    labels = {
        **{k: v for k, v in asdict(sc).items()},
        "network": cell.network.name,
        "network_spec": cell.network.canonical(),
        "link": link.as_dict(),
        "inputs": cell.inputs,
        "cost_table": own.name,
        "until": until,
    }
    if own.stack:  # a device's table: the library whose counts cost this row
        labels["stack"], labels["library"] = own.stack, own.library or own.stack
    return labels


def failed_series(cell: SW.Cell, table: C.CostTable, until: str, reason: str, link: Any) -> Series:
    """A cell whose prediction failed (e.g. its chunk lost on a cluster): the row it would have been,
    with no figures, status failed and the reason."""
    try:
        sc = F.build(cell.scenario).scenario  # the scenario as the model completes it: the row's id
    except Exception:  # noqa: BLE001 (the failure may be this very build: the cell's own scenario names it)
        sc = cell.scenario
    s = R.new_series(
        series_id(cell, sc),
        kind="whatif",
        labels=_labels(cell, sc, table.for_protocol(sc.protocol), link, until),
        timer=timer(until),
    )
    s.derived = WhatifDerived(end_point=until, end_point_description=P.UNTIL[until])
    R.add_failure(s, reason)
    return s


def series(
    cell: SW.Cell,
    pred: dict[str, Any],
    table: C.CostTable,
    until: str = "response",
    role: str | None = None,
    device: str | Core | None = None,
) -> Series:
    pl, r, link = pred["plan"], pred["sim"], pred["link"]
    sc = pl.model.scenario
    sid = series_id(cell, sc)
    labels = _labels(cell, sc, table.for_protocol(sc.protocol), link, until)
    if role:
        labels["role"] = role
    s = R.new_series(sid, kind="whatif", labels=labels, timer=timer(until))
    s.values_us = r["reservoir_us"]
    u = r["usable"]
    # the summary's fields, with the P95 and where its percentiles come from (every draw or its histogram)
    s.summary = Summary.model_validate(
        {
            k: u[k]
            for k in (
                "n",
                "mean_us",
                "sd_us",
                "min_us",
                "p50_us",
                "p90_us",
                "p95_us",
                "p99_us",
                "max_us",
                "median_ci95_us",
                "percentiles_from",
            )
        }
    )
    s.status = "ok"
    derived = WhatifDerived(
        usable=u,
        handshake=r["handshake"],
        handshake_timer="from TCP connected (DTLS/OpenVPN: the first datagram) to the client's handshake complete",
        breakdown_mean_us=r["breakdown_mean_us"],
        bytes_up_mean=r["bytes_up_mean"],
        bytes_down_mean=r["bytes_down_mean"],
        packets_up_mean=r["packets_up_mean"],
        packets_down_mean=r["packets_down_mean"],
        radio=r["radio"],
        failed_share=r["failed_share"],
        end_point=until,
        end_point_description=P.UNTIL[until],
        round_trips=pl.model.round_trips_to_handshake_done() if until == "handshake" else pl.model.round_trips,
        round_trips_to_response=pl.model.round_trips,
        round_trips_to_handshake_done=pl.model.round_trips_to_handshake_done(),
        security="none" if sc.security == "none" else "on",
        no_security=F.PLAIN[sc.protocol][1] if sc.security == "none" else None,
        flights=[
            dict(row, packets=fp.packets, wire_bytes=fp.wire_bytes, extra_window_rounds=fp.extra_rounds)
            for row, fp in zip(pl.model.table(), [f for f in pl.flights if f is not None])
        ],
        crosses={
            "initial_window": any(f.extra_rounds for f in pl.flights if f),
            "mtu": any(f.packets > 1 for f in pl.flights if f),
        },
        costs=P.compute_breakdown(pl),
        se=(
            {
                "profile": pl.se_profile.name,
                "calls": list(pl.se_calls),
                "host_us": pl.se_host_us,
                "host_source": pl.se_host_source,
            }
            if pl.se_profile
            else None
        ),
        calibration=(
            {k: v for k, v in pl.calibration.items() if k != "ratios"}
            | {"spread_values": len(pl.calibration.get("ratios") or ())}
            if pl.calibration
            else None
        ),
        seed=r["seed"],
    )
    derived.energy = connection_energy(derived, cell.network.name, device, sc.se_profile)
    s.derived = derived
    return s
