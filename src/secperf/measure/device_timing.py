"""The timing model's side of `secperf device`: the parameter file the counting plugin reads
(native/device/plugin/timing.c) and the cycles it records at every event.

How a cycle count is made: the plugin classifies every executed instruction from its disassembly
and charges the class's cycles from the core's Technical Reference Manual (data/devices.toml
[timing_models]); it resolves every branch as taken or not from where execution went next; on a
microcontroller it simulates instruction fetch from flash (wait states behind the prefetch buffer
and the instruction cache of the part, on the fetched addresses) and constant loads from flash
behind the part's data cache, with everything else in zero-wait-state SRAM; on an A-profile core it
simulates L1 instruction and data caches, a unified L2 and a 2-bit branch predictor. Three
parameter sets (every value's low, point and high) run side by side in one emulation, so each
figure is a point with a band. What the band does not cover: timings that depend on operands
(divide), register dependencies, bus contention and what the guest's C library does that firmware
would not (its code is ARMv7-A glibc on the M builds).

Flash on a microcontroller holds the code and read-only data: the guest's first loadable segment
(text, rodata) is taken as flash, the rest (data, bss, heap, stack) as SRAM.
"""

from __future__ import annotations

import statistics
import struct
import subprocess
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import MeasurementError
from ..inputs.core_profiles import COST_NAMES, GEOMETRY_NAMES, MEMORY_COSTS, OPTIONAL_COSTS, Core, DeviceError
from ..lab import registry
from .device_build import _run, qemu_plugin_include, shared_decls_dir, sources_dir, tool

SETS = ("low", "point", "high")
# the plugin's counters, in the order of its "classes=" header (native/device/plugin/timing.c):
# instruction classes, then memory and predictor events
CLASS_NAMES = (
    "alu",
    "load",
    "load_pipelined",
    "store",
    "ldrd",
    "strd",
    "ldm",
    "stm",
    "ldstm_regs",
    "mul",
    "mla",
    "mull",
    "div",
    "branch",
    "branch_taken",
    "branch_not_taken",
    "pc_write",
    "it",
    "vfp",
    "vfp_mem",
    "vdiv",
    "neon",
    "neon_mem",
    "other",
    "ifetch_miss",
    "ifetch_seq_stall",
    "dflash_miss",
    "l1i_miss",
    "l1d_miss",
    "l2_miss",
    "mispredict",
    "agu_stall",
    "store_regoff",
    "branch_load_taken",
    "branch_taken_unaligned",
    "dual_issue",
    "unaligned_run",
)
RULE = (
    "cycles from the per-class timing model (instruction classes x the core's TRM cycle costs, branches "
    "resolved taken or not, flash wait states behind the part's prefetch buffer and caches or L1/L2 caches "
    "simulated on the guest's addresses) / clock; band: every parameter at its low and high value"
)


def flash_range(binary: Path) -> tuple[int, int]:
    """[start, end) of the first loadable, executable segment of an ELF32 ARM executable: its code and
    read-only data, which a microcontroller keeps in flash."""
    try:
        data = Path(binary).read_bytes()[: 1 << 16]
    except OSError as exc:
        raise MeasurementError(f"cannot read the guest binary {binary}: {exc.strerror}") from None
    if data[:4] != b"\x7fELF" or data[4] != 1:
        raise MeasurementError(f"{binary} is not an ELF32 executable")
    (phoff,) = struct.unpack_from("<I", data, 28)
    phentsize, phnum = struct.unpack_from("<HH", data, 42)
    for i in range(phnum):
        p_type, _off, vaddr, _pa, _filesz, memsz, flags, _al = struct.unpack_from("<8I", data, phoff + i * phentsize)
        if p_type == 1 and flags & 1:  # PT_LOAD, executable
            return vaddr, vaddr + memsz
    raise MeasurementError(f"{binary} has no executable loadable segment")


def write_params(dev: Core, binary: Path, path: Path) -> Path:
    """The plugin's parameter file for `dev` running `binary` (DeviceError when the core has no model)."""
    t = dev.timing
    if t is None:
        raise DeviceError(f"core {dev.name} has no timing model in devices.toml (timing_model and a memory table)")
    lo, hi = flash_range(binary) if dev.profile == "M" else (0, 0)
    lines = [f"# secperf timing parameters: core {dev.name}, model {t.model}; sets {' '.join(SETS)}"]
    lines += [f"{k} {' '.join(repr(x) for x in t.costs[k])}" for k in COST_NAMES + MEMORY_COSTS]
    lines += [f"{k} {' '.join(repr(x) for x in t.costs[k])}" for k in OPTIONAL_COSTS if k in t.costs]
    lines += [f"flash_lo {lo:#x}", f"flash_hi {hi:#x}"]
    lines += [f"{k} {t.geometry[k]}" for k in GEOMETRY_NAMES]
    cache = decode_cache_path(binary)
    if cache is not None:
        lines.append(f"decode_cache {cache}")
    path.write_text("\n".join(lines) + "\n")
    return path


def plugin_arg(dev: Core, binary: Path, tmp: Path, timed: bool) -> str:
    """The counting plugin's argument that turns the timing model on for this core and binary ('' when
    off: not asked, or a core without a timing model); its parameters are written into tmp."""
    if not timed or dev.timing is None:
        return ""
    return f",timing={write_params(dev, binary, tmp / 'timing.txt')}"


def cpi_ms(dev: Core, instructions: float) -> dict[str, float]:
    """Milliseconds DERIVED from an instruction count by the core's CPI range and clock (the earlier
    estimate beside the timing model's cycles): {"ms_low", "ms_high"}."""
    lo, hi = dev.ms_range(instructions)
    return {"ms_low": lo, "ms_high": hi}


def decode_cache_path(binary: Path) -> Path | None:
    """Where the plugin keeps what it decoded of `binary` for the next run (beside it, named by its
    size and time, so a rebuilt binary starts a new one); None for a path the parameter file cannot
    carry (white space, too long)."""
    try:
        st = binary.stat()
    except OSError:
        return None
    p = binary.with_name(f".{binary.name}.{st.st_size:x}-{st.st_mtime_ns:x}.decode")
    text = str(p)
    return None if len(text) >= 470 or any(c.isspace() for c in text) else p


@dataclass(frozen=True)
class Timed:
    """Cycles (low, point, high) and class counters at one event of the plugin's file."""

    cycles: tuple[float, float, float]
    classes: tuple[int, ...]


def read_header(line: str) -> tuple[tuple[float, ...] | None, list[str], list[int]]:
    """(total cycles, class names, class totals) of a v2 header line; (None, [], []) for v1."""
    if not line.startswith("# insn_events v2"):
        return None, [], []
    fields = dict(f.split("=", 1) for f in line.split()[3:] if "=" in f)
    try:
        cyc = tuple(float(x) for x in fields["cycles"].split(","))
        return cyc, fields["classes"].split(","), [int(x) for x in fields["totals"].split(",")]
    except (KeyError, ValueError):
        raise MeasurementError(f"malformed timing header in the plugin's event file: {line[:200]}") from None


def class_deltas(start: Timed, end: Timed) -> dict[str, int]:
    """Counter name -> how many between two events (only the non-zero ones)."""
    return {n: b - a for n, a, b in zip(CLASS_NAMES, start.classes, end.classes) if b - a}


def parse_tail(tail: str) -> Timed:
    """The ' | c_low c_point c_high | k0 k1 ...' part of a v2 event line."""
    parts = tail.split("|")
    try:
        cyc = tuple(float(x) for x in parts[1].split())
        cls = tuple(int(x) for x in parts[2].split())
    except (IndexError, ValueError):
        raise MeasurementError(f"malformed timing fields in the plugin's event file: {tail[:200]}") from None
    if len(cyc) != 3:
        raise MeasurementError(f"the plugin's event file has {len(cyc)} cycle sets, expected 3")
    if len(cls) != len(CLASS_NAMES):
        raise MeasurementError(
            f"the plugin's event file has {len(cls)} counters, expected {len(CLASS_NAMES)} "
            f"(plugin and secperf from different versions?)"
        )
    return Timed(cyc, cls)


def ms(cycles: float, dev: Core) -> float:
    return cycles / (dev.clock_mhz * 1e3)


Cycles3 = tuple[float, float, float]  # the timing model's cycles: low, point, high


def median3(rows: Iterable[Sequence[float]]) -> Cycles3:
    """Median of each of the three cycle figures (low, point, high) over the rows."""
    got = list(rows)
    lo, mid, hi = (float(statistics.median(x[k] for x in got)) for k in range(3))
    return lo, mid, hi


def figure(cycles: Cycles3, dev: Core) -> dict[str, float]:
    """A cycles figure with its band and milliseconds at the core's clock."""
    lo, mid, hi = cycles
    return {
        "cycles": mid,
        "cycles_low": lo,
        "cycles_high": hi,
        "ms": ms(mid, dev),
        "ms_low": ms(lo, dev),
        "ms_high": ms(hi, dev),
    }


def model_note(dev: Core) -> dict[str, Any]:
    """What produced a timed figure: the model, its sources and the parameters that carry a band."""
    t = dev.timing
    if t is None:
        raise DeviceError(f"core {dev.name} has no timing model in devices.toml (timing_model and a memory table)")
    return {
        "model": t.model,
        "clock_mhz": dev.clock_mhz,
        "rule": RULE,
        "sources": t.sources,
        "banded": {k: list(t.costs[k]) for k in t.banded()},
        "memory": {k: t.geometry[k] for k in GEOMETRY_NAMES if t.geometry[k]}
        | {k: list(t.costs[k]) for k in MEMORY_COSTS if t.costs[k][2]},
    }


# --- the timing kernels (native/device/kernels): the model's cycles against the documented counts ---

KERNELS_TIMEOUT_S = 60  # the kernels' one guest run (a few thousand instructions), before $SECPERF_LIMIT_SCALE


class GuestTimeout(MeasurementError):
    """An emulated guest (a device client, the timing kernels) did not finish within its limit (it and
    all it started were stopped): a configuration's series fail with this reason and the run goes on.
    measure/device.py re-exports it (D.GuestTimeout) for the device runs."""


def kernel_dir() -> Path:
    return sources_dir() / "kernels"


def documented_kernels() -> tuple[str, dict[int, dict[str, Any]]]:
    """(the core they are documented for, kernel id -> its kernels.toml entry)."""

    data = tomllib.loads((kernel_dir() / "kernels.toml").read_text(encoding="utf-8"))
    return data["core"], {int(k): v for k, v in data["kernels"].items()}


def build_kernels(out: Path) -> tuple[Path, Path]:
    """(the kernels' executable, the counting plugin), built into out with the device toolchain."""

    src = sources_dir()
    cc = tool("arm-linux-gnueabihf-gcc", "gcc-arm-linux-gnueabihf")
    out.mkdir(parents=True, exist_ok=True)
    exe = out / "kernels"
    _run(
        [cc, "-nostdlib", "-static", "-mcpu=cortex-m4", "-mthumb", "-o", str(exe), str(src / "kernels" / "kernels.S")],
        "building the timing kernels (native/device/kernels)",
        120,
    )
    args = ["make", "-s", "-f", str(src / "Makefile"), f"OUT={out}", f"SHARED_DECLS={shared_decls_dir(src)}", "plugin"]
    inc = qemu_plugin_include()
    if inc is not None:
        args.append(f"QEMU_PLUGIN_INCLUDE={inc}")
    _run(args, "building the counting plugin", 300)
    return exe, out / "libinsn_events.so"


def run_kernels(dev: Core, exe: Path, plugin: Path, work: Path) -> dict[int, tuple[float, float, float]]:
    """Kernel id -> the model's cycles (low, point, high) of its own instructions on core dev (the
    marker's, measured by the empty kernel 1, subtracted)."""

    params = write_params(dev, exe, work / "kernel-timing.txt")
    ev = work / "kernel-events.txt"
    try:  # listed in the run registry: past its limit (after $SECPERF_LIMIT_SCALE) it and all it started are killed
        p = registry.run(
            ["qemu-arm", "-cpu", "max", "-plugin", f"{plugin},out={ev},timing={params}", str(exe)],
            "qemu timing kernels",
            timeout=KERNELS_TIMEOUT_S,
            capture_output=True,
            text=True,
        )
    except subprocess.TimeoutExpired as exc:  # registry.ChildTimeout: the emulator is stopped already
        raise GuestTimeout(f"the timing kernels' guest did not finish within {exc.timeout:g} s") from None
    if p.returncode != 0 or not ev.is_file():
        raise MeasurementError(f"the timing kernels did not run (exit {p.returncode}): {p.stderr.strip()[-400:]}")
    marks: dict[tuple[int, int], Timed] = {}
    for line in ev.read_text().splitlines()[1:]:
        head, sep, tail = line.partition(" | ")
        f = head.split()
        if sep and len(f) == 4 and f[1] == "M":
            marks[(int(f[2]), int(f[3]))] = parse_tail(" | " + tail)
    own = {
        k: tuple(b - a for a, b in zip(marks[(k, 0)].cycles, marks[(k, 1)].cycles))
        for k in {k for k, _ in marks}
        if (k, 1) in marks
    }
    if 1 not in own:
        raise MeasurementError("the timing kernels' event file has no empty kernel (id 1)")
    base = own[1]
    return {k: (v[0] - base[0], v[1] - base[1], v[2] - base[2]) for k, v in sorted(own.items()) if k != 1}
