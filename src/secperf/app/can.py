"""The CAN bus question (study S4) from command-line style options: CPU load and extra bus load of
frame authentication per device and MAC, classic CAN and (unless the frame is given) CAN FD."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..core.errors import InputError
from ..inputs.defaults import (  # the commands' defaults (the parser shows them), named here for app.commands
    CAN_DEFAULT_DEVICES as CAN_DEFAULT_DEVICES,
)
from ..inputs.defaults import CAN_DEFAULT_MACS as CAN_DEFAULT_MACS
from ..inputs.defaults import MAC_DEFAULT_ALGS as MAC_DEFAULT_ALGS
from ..inputs.defaults import MAC_DEFAULT_SIZES as MAC_DEFAULT_SIZES
from ..inputs.devices import devices
from ..model import can as CAN

if TYPE_CHECKING:
    from ..model.can import CanParams


@dataclass
class CanOptions:
    device: list[str] | None = None  # device profiles (None: the command's default list)
    mac: list[str] | None = None  # MACs (None: the command's default list)
    bitrate_kbps: float = 1000.0
    usable_share: float = 0.5
    frame_bits: int | None = None
    data_bytes: int | None = None
    period_ms: float = 10.0
    clock_mhz: float = 32.0
    frames: int | None = None
    frame_limit_kbps: float = 216.0
    tag_bytes: int = 8
    k: int | None = None
    cpu_budget: float = 0.10
    cycles_per_block: float | None = None
    fd: bool = False

    @classmethod
    def from_namespace(cls, ns: argparse.Namespace) -> CanOptions:
        return cls(**{f: getattr(ns, f) for f in cls.__dataclass_fields__})


def can_analysis(o: CanOptions, devices: str, macs: str) -> dict[str, Any]:
    """The CAN load analysis of `o`; `devices` and `macs` (comma lists) where o names none."""

    for opt in ("device", "mac"):
        if getattr(o, opt) is not None and not getattr(o, opt):
            raise InputError(f"--{opt}: empty; name at least one value or drop --{opt} for the default")
    devs, mac_list = list(o.device or devices.split(",")), list(o.mac or macs.split(","))
    if o.k is not None and o.k not in CAN.K_RANGE:
        raise InputError(
            f"--k {o.k}: outside 1..8; send a tag at least once every 8 frames and at most once "
            f"per frame (k = 1), or drop --k to see all of 1..8"
        )
    base = CAN.CanParams(
        bitrate_bps=o.bitrate_kbps * 1e3,
        usable_share=o.usable_share,
        period_s=o.period_ms / 1e3,
        clock_hz=o.clock_mhz * 1e6,
        frames_per_period=o.frames,
        frame_limit_bps=o.frame_limit_kbps * 1e3,
        tag_bytes=o.tag_bytes,
        cpu_budget=o.cpu_budget,
        cycles_per_block=o.cycles_per_block,
    )
    classic = replace(base, frame_bits=o.frame_bits or 108, data_bytes=o.data_bytes or 8)
    fd = replace(
        CAN.fd_defaults(),
        **{
            k: getattr(base, k)
            for k in (
                "bitrate_bps",
                "usable_share",
                "period_s",
                "clock_hz",
                "frames_per_period",
                "frame_limit_bps",
                "tag_bytes",
                "cpu_budget",
                "cycles_per_block",
            )
        },
    )
    if o.data_bytes:
        fd = replace(fd, data_bytes=o.data_bytes)
    if o.frame_bits:
        fd = replace(fd, frame_bits=o.frame_bits)
    ks = [o.k] if o.k else list(CAN.K_RANGE)
    _check_macs(mac_list, o.cycles_per_block is not None)
    for p in [fd] if o.fd else [classic, fd] if o.data_bytes is None and o.frame_bits is None else [classic]:
        _check_frame(p, o)

    def run(p: CAN.CanParams) -> dict[str, Any]:
        try:
            if o.cycles_per_block is not None:
                p = replace(p, device="given")
                return {
                    "params": p.as_dict(),
                    "sweeps": [CAN.sweep(replace(p, mac=m), ks) for m in mac_list],
                    "skipped": [],
                }
            res = CAN.analysis(p, devs, mac_list)
            if not res["sweeps"]:
                raise InputError(
                    "--device/--mac: no device has a figure for these MACs: "
                    + "; ".join(x["reason"] for x in res["skipped"][:4])
                    + " (`secperf can --list-devices` lists each device's MACs)"
                )
            if ks != list(CAN.K_RANGE):
                for sw in res["sweeps"]:
                    sw["rows"] = [r for r in sw["rows"] if r["k"] in ks]
            return res
        except CAN.CanInputError as exc:
            raise InputError(str(exc)) from None

    if o.fd:
        return run(fd)
    out = run(classic)
    if o.data_bytes is None and o.frame_bits is None:
        out["fd"] = run(fd)  # the same question for CAN FD, where the tag fits in the frame
    return out


# ISO 11898-1 base frame without data, stuff bits and intermission: SOF 1, identifier 11, RTR 1,
# IDE 1, r0 1, DLC 4, CRC 15, CRC delimiter 1, ACK 2, EOF 7 (S4's 108-bit frame = 44 + 64 data bits)
CAN_FRAME_OVERHEAD_BITS = 44


def _check_macs(macs: list[str], given_cycles: bool) -> None:
    """A MAC no device profile knows (md5, a typo) is an input error, not an empty table."""

    known = sorted({m for d in devices().values() for m in d.get("macs", {})})
    for m in macs:
        if m not in known and not given_cycles:
            raise InputError(
                f"--mac {m!r}: no device profile has figures for it; known MACs: {', '.join(known)} "
                f"(or give --cycles-per-block for your own)"
            )


def _check_frame(p: CanParams, o: CanOptions) -> None:
    """A frame must hold its data bytes plus the frame overhead, and the frames offered per period
    must fit on the bus at all; else the loads computed would be meaningless (e.g. 10^9 %)."""
    need = 8 * p.data_bytes + CAN_FRAME_OVERHEAD_BITS
    if o.frame_bits is not None and p.frame_bits < need:
        raise InputError(
            f"--frame-bits {p.frame_bits}: a frame carrying {p.data_bytes} data bytes needs at least "
            f"{need} bits (8 per byte + {CAN_FRAME_OVERHEAD_BITS} of frame overhead)"
        )
    if o.tag_bytes > p.data_bytes and o.fd:
        raise InputError(f"--tag-bytes {o.tag_bytes}: larger than the {p.data_bytes} data bytes of a CAN FD frame")
    if p.frames_per_period:
        busy_s = p.frames_per_period * p.frame_bits / p.bitrate_bps
        if busy_s > p.period_s:
            raise InputError(
                f"--frames {p.frames_per_period}: {p.frames_per_period} frames of {p.frame_bits} bits take "
                f"{busy_s * 1e3:.4g} ms per {p.period_s * 1e3:g} ms period at {p.bitrate_bps / 1e3:g} "
                f"kbit/s: more than the bus carries; lower --frames or raise --bitrate-kbps"
            )
