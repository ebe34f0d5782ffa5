"""CAN bus load model (study S4): can a microcontroller on a CAN bus afford to authenticate its
frames? Pure functions, usable without the CLI (e.g. by the what-if simulator):

    from secperf.model.can import CanParams, evaluate
    evaluate(CanParams(device="rl78", mac="chaskey"))

Model, per ECU cycle period T:
- frames N per period: given, or the chip's frame-handling limit: floor(limit_bps * T / frame_bits)
  (S4: RL78 handles about 216 kbps of frames; 216,000 * 0.01 / 108 = 20 frames).
- one tag every k frames, computed over the data of those k frames (k * data_bytes), so N/k tags
  per period (a long-run average); cost of one tag from the device profile.
- CPU load = cost of N/k tags / (clock * T). It fits the period when that is at most 1; it fits the
  budget when it is at most cpu_budget.
- bus: classic CAN tags travel in extra frames (ceil(tag / max payload) frames per tag, each of
  frame_bits); CAN FD carries the tag inside a 64-byte frame (no extra frame, less data room).
  Bus load = bits per period / (bit rate * T), compared with the usable share.
- best k: the smallest k in 1..8 whose CPU load fits the budget and whose bus load fits the share.
Costs in instructions (measured QEMU profiles) are used as cycles and labelled lower bounds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from typing import Any, NoReturn

from ..core.errors import InputError
from ..inputs.core_profiles import DeviceError
from ..inputs.devices import MacCost, mac_cost

CLASSIC_MAX_PAYLOAD = 8
FD_MAX_PAYLOAD = 64
K_RANGE = range(1, 9)
TAG_MAX = {"chaskey": 16, "chaskey-12": 16, "aes-128-cmac": 16, "hmac-sha256": 32}


class CanInputError(InputError):
    """An input the user must fix; the message names the field and what to do."""


def canfd_frame_bits(payload_bytes: int) -> int:
    """Bits of a CAN FD base-format frame at one bit rate (ISO 11898-1:2015 field lengths):
    SOF..DLC 22, data, stuff count 4, CRC 17 (<= 16 bytes) or 21, fixed stuff bits 6 or 7,
    CRC delimiter, ACK slot and delimiter, EOF 7, intermission 3. Dynamic stuff bits excluded."""
    crc, fsb = (17, 6) if payload_bytes <= 16 else (21, 7)
    return 22 + 8 * payload_bytes + 4 + crc + fsb + 1 + 1 + 1 + 7 + 3


@dataclass
class CanParams:
    bitrate_bps: float = 1_000_000  # S4: CAN 1 Mbps
    usable_share: float = 0.5  # S4: 50% usage margin
    frame_bits: int = 108  # S4: a frame is at most 108 bits (8-byte payload)
    data_bytes: int = 8  # S4: the 8-byte payload is usually full
    period_s: float = 0.010  # S4: 10 ms ECU cycle
    clock_hz: float = 32e6  # S4: RL78 at 32 MHz
    frames_per_period: int | None = None  # None: the chip's frame-handling limit decides
    frame_limit_bps: float = 216_000  # S4: RL78 (1 channel, 4 TX / 16 RX buffers) ~216 kbps of frames
    device: str = "rl78"
    mac: str = "chaskey"
    tag_bytes: int = 8
    mac_every: int = 1  # k: one tag every k frames
    cpu_budget: float = 0.10  # share of the CPU MACs may use (an assumption, not from S4)
    fd: bool = False  # CAN FD: 64-byte frames, tag inside the frame
    cycles_per_block: float | None = None  # override the device profile's cost

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def fd_defaults(**overrides: Any) -> CanParams:
    """S4's bus with CAN FD frames: 64-byte payload, tag inside it, 56 data bytes beside an 8-byte tag."""
    p = CanParams(fd=True, data_bytes=FD_MAX_PAYLOAD - 8, frame_bits=canfd_frame_bits(FD_MAX_PAYLOAD))
    return replace(p, **overrides)


def _check(p: CanParams) -> None:
    def bad(field_: str, msg: str) -> NoReturn:
        raise CanInputError(f"{field_}: {msg}")

    if not p.bitrate_bps > 0:
        bad("bitrate", f"{p.bitrate_bps} must be greater than 0 bit/s")
    if not 0 < p.usable_share <= 1:
        bad("usable share", f"{p.usable_share} must be in (0, 1]")
    if not p.period_s > 0:
        bad("period", f"{p.period_s} s must be greater than 0")
    if not p.clock_hz > 0:
        bad("clock", f"{p.clock_hz} Hz must be greater than 0")
    if not 0 < p.cpu_budget <= 1:
        bad("cpu budget", f"{p.cpu_budget} must be a share in (0, 1]")
    if not isinstance(p.mac_every, int) or p.mac_every not in K_RANGE:
        bad(
            "mac every (k)",
            f"{p.mac_every} is outside 1..8: send a tag at least once every 8 frames "
            f"and at most once per frame (k = 1)",
        )
    max_payload = FD_MAX_PAYLOAD if p.fd else CLASSIC_MAX_PAYLOAD
    kind = "CAN FD" if p.fd else "classic CAN"
    if not 1 <= p.data_bytes <= max_payload:
        bad(
            "data bytes",
            f"{p.data_bytes} bytes per frame is more than {kind} carries ({max_payload} bytes "
            f"at most){'' if p.fd else '; use --fd for CAN FD frames of up to 64 bytes'}",
        )
    if p.fd and p.data_bytes + p.tag_bytes > FD_MAX_PAYLOAD:
        bad(
            "tag bytes",
            f"a {p.tag_bytes}-byte tag beside {p.data_bytes} data bytes does not fit a 64-byte "
            f"CAN FD frame: lower --data-bytes to {FD_MAX_PAYLOAD - p.tag_bytes} or shorten the tag",
        )
    tag_max = TAG_MAX.get(p.mac, 16)
    if not 1 <= p.tag_bytes <= tag_max:
        bad("tag bytes", f"{p.tag_bytes} must be 1..{tag_max} for {p.mac}")
    if p.frame_bits < 1:
        bad("frame bits", f"{p.frame_bits} must be at least 1")
    frame_time = p.frame_bits / p.bitrate_bps
    if frame_time > p.period_s:
        bad(
            "frame bits",
            f"one {p.frame_bits}-bit frame takes {frame_time * 1e3:.3f} ms at "
            f"{p.bitrate_bps:g} bit/s, longer than the {p.period_s * 1e3:g} ms period: the bus cannot carry it",
        )
    if p.frames_per_period is not None and p.frames_per_period < 1:
        bad("frames per period", f"{p.frames_per_period} must be at least 1")
    if p.frames_per_period is None and not p.frame_limit_bps > 0:
        bad("frame limit", f"{p.frame_limit_bps} bit/s must be greater than 0 (or give frames per period)")
    if p.cycles_per_block is not None and not p.cycles_per_block > 0:
        bad("cycles per block", f"{p.cycles_per_block} must be greater than 0")


def frames_per_period(p: CanParams) -> int:
    if p.frames_per_period is not None:
        return p.frames_per_period
    n = math.floor(p.frame_limit_bps * p.period_s / p.frame_bits + 1e-9)
    if n < 1:
        raise CanInputError(
            f"frame limit: {p.frame_limit_bps:g} bit/s handles no {p.frame_bits}-bit frame "
            f"per {p.period_s * 1e3:g} ms period; give frames per period"
        )
    return n


def _cost(p: CanParams) -> MacCost | None:
    if p.cycles_per_block is not None:
        return None
    try:
        return mac_cost(p.device, p.mac)
    except DeviceError as exc:
        raise CanInputError(f"device: {exc}") from None


def evaluate(p: CanParams) -> dict[str, Any]:
    """One configuration (one k): CPU load, bus load, whether it fits."""
    _check(p)
    cost = _cost(p)
    n = frames_per_period(p)
    k = p.mac_every
    tag_over = k * p.data_bytes
    if cost is None:
        assert p.cycles_per_block is not None  # _cost gives no profile figure only when cycles are given
        per_tag = p.cycles_per_block * max(1, math.ceil(tag_over / 16))
        unit, basis, source = "cycles", "given cycles per 16-byte block x blocks", "given on the command line"
    else:
        per_tag = cost.per_message(tag_over)
        unit, basis, source = cost.unit, cost.basis, cost.source
    tags = n / k
    capacity_cycles = p.clock_hz * p.period_s
    mac_cycles = tags * per_tag
    cpu_load = mac_cycles / capacity_cycles
    bus_capacity_bits = p.bitrate_bps * p.period_s
    base_bits = n * p.frame_bits
    if p.fd:
        extra_frames_per_tag = 0
    else:
        extra_frames_per_tag = math.ceil(p.tag_bytes / CLASSIC_MAX_PAYLOAD)
    extra_bits = tags * extra_frames_per_tag * p.frame_bits
    bus_load = (base_bits + extra_bits) / bus_capacity_bits
    return {
        "k": k,
        "device": p.device,
        "mac": p.mac,
        "fd": p.fd,
        "frames_per_period": n,
        "tags_per_period": tags,
        "bytes_per_tag": tag_over,
        "cost_per_tag": per_tag,
        "cost_unit": unit,
        "cost_basis": basis,
        "cost_source": source,
        "lower_bound": unit == "instructions",
        "mac_cycles_per_period": mac_cycles,
        "cycles_per_period": capacity_cycles,
        "cycles_per_frame_budget": capacity_cycles / n,
        "mac_cycles_per_frame": mac_cycles / n,
        "cpu_load": cpu_load,
        "fits_period": cpu_load <= 1.0,
        "within_cpu_budget": cpu_load <= p.cpu_budget,
        "base_bus_load": base_bits / bus_capacity_bits,
        "extra_bus_load": extra_bits / bus_capacity_bits,
        "bus_load": bus_load,
        "fits_bus": bus_load <= p.usable_share,
        "tag_payload_share": p.tag_bytes / (k * (p.data_bytes + p.tag_bytes)) if p.fd else 0.0,
    }


def sweep(p: CanParams, ks: Iterable[int] = K_RANGE) -> dict[str, Any]:
    """Every k for one MAC and device, and the smallest k that fits the CPU budget and the bus."""
    rows = [evaluate(replace(p, mac_every=k)) for k in ks]
    ok = [r["k"] for r in rows if r["within_cpu_budget"] and r["fits_bus"]]
    return {
        "device": p.device,
        "mac": p.mac,
        "fd": p.fd,
        "rows": rows,
        "best_k": ok[0] if ok else None,
        "cpu_budget": p.cpu_budget,
        "usable_share": p.usable_share,
    }


def analysis(base: CanParams, devices: list[str], macs: list[str]) -> dict[str, Any]:
    """The report's CAN section: a sweep per device and MAC (pairs the profile lacks are skipped
    and listed), for the classic bus and for CAN FD."""
    sweeps: list[dict[str, Any]] = []
    skipped: list[dict[str, str]] = []
    out = {"params": base.as_dict(), "sweeps": sweeps, "skipped": skipped}
    for dev in devices:
        for mac in macs:
            p = replace(base, device=dev, mac=mac)
            try:
                sweeps.append(sweep(p))
            except CanInputError as exc:
                if "has no figure" in str(exc):
                    skipped.append({"device": dev, "mac": mac, "reason": str(exc)})
                else:
                    raise
    return out
