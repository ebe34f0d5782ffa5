"""Energy of a device's communication: radio states per link profile, CPU and secure-element active
power (data/energy.toml, every figure with its source), and the arithmetic that turns an activity
(a message, a connection set-up, a keep-alive ping) into joules split radio / CPU / secure element.

Radio accounting per activity (one burst of traffic): a promotion when the radio was idle (the gap
since the previous activity exceeded the tail), transmit and receive airtime at their powers, the
rest of the time on the air interface at the connected power, then the inactivity tail (cut short
when the next activity starts). Outside activities the radio sits at its floor: `idle_mw` when the
device must stay reachable, else `psm_mw`. Pure functions; no simulation here.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from ..core.errors import InputError
from ..inputs.core_profiles import Core

DAY_S = 86_400.0
RADIO_FIELDS = ("tx_mw", "rx_mw", "active_mw", "tail_mw", "tail_s", "promotion_s", "promotion_mw", "idle_mw", "psm_mw")


class EnergyError(InputError):
    pass


@dataclass(frozen=True)
class Radio:
    name: str
    description: str
    tx_mw: float
    rx_mw: float
    active_mw: float
    tail_mw: float
    tail_s: float
    promotion_s: float
    promotion_mw: float
    idle_mw: float
    psm_mw: float
    sources: dict[str, Any]

    def floor_mw(self, reachable: bool) -> float:
        return self.idle_mw if reachable else self.psm_mw


@dataclass(frozen=True)
class Power:
    """Active power of a part (CPU or secure element) with its source."""

    name: str
    active_mw: float
    source: str


@dataclass(frozen=True)
class Activity:
    """One burst of traffic, as means over simulated draws."""

    on_s: float  # first packet to the answer processed (radio connected)
    tx_s: float  # uplink airtime
    rx_s: float  # downlink airtime
    cpu_s: float  # device CPU busy (client compute)
    se_s: float  # secure element busy
    bytes: float  # wire bytes up + down


@dataclass(frozen=True)
class ActivityEnergy:
    radio_j: float
    cpu_j: float
    se_j: float
    radio_s: float  # time the radio spends out of its floor state for this activity

    @property
    def total_j(self) -> float:
        return self.radio_j + self.cpu_j + self.se_j


@lru_cache(maxsize=1)
def _data() -> dict[str, Any]:
    return tomllib.loads(resources.files("secperf.data").joinpath("energy.toml").read_text())


def radio_names() -> list[str]:
    return list(_data()["links"])


def radio(name: str) -> Radio:
    links = _data()["links"]
    key = name
    if key not in links:
        raise EnergyError(
            f"energy: no radio profile for link {name!r}; known: {', '.join(links)} "
            f"(add one to data/energy.toml with a source per figure, or pick --network from these)"
        )
    t = links[key]
    if "alias" in t:
        key = t["alias"]
        t = links[key]
    missing = [f for f in RADIO_FIELDS if f not in t]
    if missing:
        raise EnergyError(f"energy: radio profile {key!r} lacks {', '.join(missing)}")
    vals = {f: float(t[f]) for f in RADIO_FIELDS}
    for f, v in vals.items():
        if not math.isfinite(v) or v < 0:
            raise EnergyError(f"energy: radio profile {key!r}: {f} = {v} must be a finite number >= 0")
    return Radio(name=name, description=t.get("description", ""), sources=dict(t.get("sources", {})), **vals)


def cpu(device: str | Core) -> Power:
    """Active CPU power of a cost table's device (by its name), or of an emulated core (its class's
    mW per MHz x its clock, data/energy.toml [cpu_per_mhz]): the Core object as the command
    resolved it (a core's name is not looked up here)."""
    table = _data()["cpu"]
    name = device.name if isinstance(device, Core) else device
    core: Core | None = None
    if isinstance(device, Core):
        core = device
    elif name in table:
        return Power(name, float(table[name]["active_mw"]), table[name]["source"])
    if core is not None:
        fam = core.timing.model if core.timing is not None else core.qemu_cpu
        per = _data().get("cpu_per_mhz", {}).get(fam)
        if per is not None:
            mw = float(per["mw_per_mhz"]) * core.clock_mhz
            return Power(name, mw, f"{per['mw_per_mhz']} mW/MHz x {core.clock_mhz:g} MHz: {per['source']}")
    raise EnergyError(
        f"energy: no CPU power for device {name!r}; known: {', '.join(table)} and the emulated "
        f"cores of `secperf device list`"
    )


def se(name: str | None) -> Power:
    if name is None:
        return Power("none", 0.0, "no secure element")
    table = _data()["se"]
    if name not in table:
        raise EnergyError(f"energy: no active power for secure element {name!r}; known: {', '.join(table)}")
    return Power(name, float(table[name]["active_mw"]), table[name]["source"])


def tail_and_promotion(r: Radio, gap_s: float | None, random_gaps: bool) -> tuple[float, float]:
    """(expected tail seconds after an activity, probability the next activity needs a promotion)
    for a gap to the next activity: fixed, exponential with that mean (random_gaps), or None (no
    next activity soon: the full tail)."""
    if r.tail_s <= 0:
        return 0.0, 1.0 if r.promotion_s > 0 else 0.0
    if gap_s is None:
        return r.tail_s, 1.0
    if random_gaps:
        if gap_s <= 0:
            return 0.0, 0.0
        p_beyond = math.exp(-r.tail_s / gap_s)
        return gap_s * (1.0 - p_beyond), p_beyond
    return (min(gap_s, r.tail_s), 1.0 if gap_s > r.tail_s else 0.0)


def activity_energy(
    a: Activity, r: Radio, cpu_p: Power, se_p: Power, gap_s: float | None, random_gaps: bool = False
) -> ActivityEnergy:
    """Joules of one activity, split radio / CPU / secure element."""
    tail_s, p_promo = tail_and_promotion(r, gap_s, random_gaps)
    air = min(a.on_s, a.tx_s + a.rx_s)
    waiting = max(0.0, a.on_s - air)
    scale = a.on_s / (a.tx_s + a.rx_s) if a.tx_s + a.rx_s > a.on_s > 0 else 1.0
    radio_mj = (
        p_promo * r.promotion_s * r.promotion_mw
        + a.tx_s / scale * r.tx_mw
        + a.rx_s / scale * r.rx_mw
        + waiting * r.active_mw
        + tail_s * r.tail_mw
    )
    return ActivityEnergy(
        radio_j=radio_mj / 1e3,
        cpu_j=a.cpu_s * cpu_p.active_mw / 1e3,
        se_j=a.se_s * se_p.active_mw / 1e3,
        radio_s=p_promo * r.promotion_s + a.on_s + tail_s,
    )


def floor_energy_j(r: Radio, busy_s: float, reachable: bool, period_s: float = DAY_S) -> float:
    """The radio's floor over the rest of the period."""
    return max(0.0, period_s - busy_s) * r.floor_mw(reachable) / 1e3


def battery_j(capacity_mah: float, voltage_v: float) -> float:
    return capacity_mah / 1e3 * voltage_v * 3600.0


def battery_days(capacity_j: float, per_day_j: float) -> float:
    return math.inf if per_day_j <= 0 else capacity_j / per_day_j
