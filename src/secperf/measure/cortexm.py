"""Cortex-M cost without a board: the MAC kernels of native/mac (Chaskey, Chaskey-12, a plain C
AES-128-CMAC, HMAC-SHA256) cross-compiled with arm-none-eabi-gcc for Cortex-M0 and M3/M4, run
bare-metal under qemu-system-arm, with every executed instruction counted by a TCG plugin we
build ourselves (native/mac/cortexm/insn_count.c, declarations in qemu_plugin_api.h because
Debian's QEMU ships no plugin header).

How one number is made: the firmware calls secperf_mark() right before and right after one tag
computation with a prepared key; the plugin adds 1 to a counter before every guest instruction
and records the counter whenever secperf_mark's first instruction runs. The difference between
the two marks, minus the marks' own cost (an empty pair measured first), is the instruction count
of that tag. Each tag is checked against a host implementation (secperf.mac for Chaskey, the
`cryptography` package for CMAC and HMAC).

Instructions are a LOWER BOUND for cycles: loads, taken branches and multi-cycle instructions cost
more than one cycle on real cores, and flash wait states add more. QEMU models no timing.

Sources are found installed inside the package (secperf/share/mac) or in the source tree
(native/mac); firmware and plugin are built at run time into a temporary directory with the fixed
flags below, so the table is byte-identical across runs on the same toolchain.
"""

from __future__ import annotations

import hashlib
import hmac as _hmac
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.ciphers import algorithms
from cryptography.hazmat.primitives.cmac import CMAC

from ..core import result as R
from ..core.errors import InputError, SetupError
from ..core.native import shipped_sources
from ..core.result_schema import CortexmDerived, Series
from ..lab import registry
from ..mac import chaskey

SIZES = (8, 16, 64, 256, 1024)
MACS = ("chaskey", "chaskey-12", "aes-128-cmac", "hmac-sha256")
CFLAGS = ("-mthumb", "-O2", "-std=c11", "-ffreestanding", "-fno-common", "-fno-pic", "-Wall", "-Wextra")
LDFLAGS = ("-nostdlib",)
FIRMWARE_SOURCES = (
    "cortexm/startup.c",
    "cortexm/bench.c",
    "cortexm/aes128.c",
    "cortexm/cmac.c",
    "cortexm/sha256.c",
    "chaskey.c",
)
# the sources holding each MAC's implementation (its code size: text, data, bss of their objects)
MAC_SOURCES = {
    "chaskey": ("chaskey.c",),
    "chaskey-12": ("chaskey.c",),
    "aes-128-cmac": ("cortexm/aes128.c", "cortexm/cmac.c"),
    "hmac-sha256": ("cortexm/sha256.c",),
}
PLUGIN_CFLAGS = ("-O2", "-Wall", "-Wextra", "-shared", "-fPIC", "-fvisibility=hidden")
RUN_TIMEOUT_S = 120


@dataclass(frozen=True)
class Target:
    name: str
    cpu: str
    machine: str
    description: str


TARGETS = {
    "m0": Target("m0", "cortex-m0", "microbit", "Cortex-M0 (ARMv6-M), QEMU board microbit (nRF51)"),
    "m3": Target("m3", "cortex-m3", "mps2-an385", "Cortex-M3 (ARMv7-M), QEMU board mps2-an385"),
    "m4": Target("m4", "cortex-m4", "mps2-an386", "Cortex-M4 (ARMv7E-M, no FPU use), QEMU board mps2-an386"),
}
DEFAULT_TARGETS = ("m0", "m3")

LABEL = (
    "instructions executed under QEMU (TCG plugin count), arm-none-eabi-gcc -O2: a lower bound for cycles, not cycles"
)


class CortexMError(SetupError):
    """The toolchain or QEMU is missing, or a build/run failed; the message says which."""


def sources_dir() -> Path:
    """native/mac as installed inside the package (secperf/share/mac), else the source tree."""
    found = shipped_sources("mac", "native/mac", "cortexm/bench.c", "chaskey.c")
    if found:
        return found
    raise CortexMError("the Cortex-M kernel sources (native/mac) were not found: reinstall with `make build`")


def _tool(name: str, debian: str) -> str:
    exe = shutil.which(name)
    if not exe:
        raise CortexMError(f"{name} not found: install the Debian package {debian} (scripts/bootstrap lists it)")
    return exe


def _run(cmd: list[str], what: str, timeout: float = RUN_TIMEOUT_S, cwd: Path | None = None) -> str:
    try:
        p = registry.run(cmd, what, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired as exc:
        raise CortexMError(f"{what} did not finish within {exc.timeout:g} s") from None
    if p.returncode != 0:
        raise CortexMError(f"{what} failed (exit {p.returncode}): {(p.stderr or p.stdout).strip()[-800:]}")
    return str(p.stdout)


def toolchain() -> dict[str, Any]:
    gcc = _tool("arm-none-eabi-gcc", "gcc-arm-none-eabi")
    qemu = _tool("qemu-system-arm", "qemu-system-arm")
    host_cc = _tool("gcc", "build-essential")
    return {
        "arm_gcc": _run([gcc, "--version"], "arm-none-eabi-gcc --version").splitlines()[0],
        "qemu": _run([qemu, "--version"], "qemu-system-arm --version").splitlines()[0],
        "host_cc": _run([host_cc, "--version"], "gcc --version").splitlines()[0],
    }


def build_plugin(work: Path) -> Path:
    src = sources_dir() / "cortexm"
    out = work / "libinsn_count.so"
    _run(
        [_tool("gcc", "build-essential"), *PLUGIN_CFLAGS, "-I", str(src), "-o", str(out), str(src / "insn_count.c")],
        "building the instruction-count plugin",
    )
    return out


def build_firmware(target: Target, work: Path) -> tuple[Path, int]:
    """The ELF for target and the address of secperf_mark (Thumb bit cleared)."""
    src = sources_dir()
    elf = work / f"bench-{target.name}.elf"
    gcc = _tool("arm-none-eabi-gcc", "gcc-arm-none-eabi")
    _run(
        [
            gcc,
            f"-mcpu={target.cpu}",
            *CFLAGS,
            *LDFLAGS,
            "-T",
            str(src / "cortexm" / "link.ld"),
            "-o",
            str(elf),
            *(str(src / f) for f in FIRMWARE_SOURCES),
            "-lgcc",
        ],
        f"cross-compiling the MAC kernels for {target.cpu}",
    )
    nm = _run([_tool("arm-none-eabi-nm", "binutils-arm-none-eabi"), str(elf)], "arm-none-eabi-nm")
    m = re.search(r"^([0-9a-fA-F]+) [Tt] secperf_mark$", nm, re.M)
    if not m:
        raise CortexMError(f"secperf_mark not found in {elf.name}")
    return elf, int(m.group(1), 16) & ~1


def code_sizes(target: Target, work: Path) -> dict[str, dict[str, int]]:
    """{mac: {"text", "data", "bss"}}: the MAC's sources compiled alone for the target with the
    firmware's flags, sizes from arm-none-eabi-size (read-only data counts as text, as size reports it)."""
    src = sources_dir()
    gcc = _tool("arm-none-eabi-gcc", "gcc-arm-none-eabi")
    size = _tool("arm-none-eabi-size", "binutils-arm-none-eabi")
    per_file = {}
    for f in sorted({f for fs in MAC_SOURCES.values() for f in fs}):
        obj = work / f"{target.name}-{Path(f).stem}.o"
        _run(
            [gcc, f"-mcpu={target.cpu}", *CFLAGS, "-c", "-o", str(obj), str(src / f)],
            f"compiling {f} for {target.cpu} (code size)",
        )
        out = _run([size, str(obj)], "arm-none-eabi-size").splitlines()
        text, data, bss = (int(x) for x in out[-1].split()[:3])
        per_file[f] = {"text": text, "data": data, "bss": bss}
    return {
        mac: {k: sum(per_file[f][k] for f in fs) for k in ("text", "data", "bss")} for mac, fs in MAC_SOURCES.items()
    }


def run_firmware(target: Target, elf: Path, mark: int, plugin: Path, work: Path) -> tuple[list[str], list[int]]:
    """QEMU run: the firmware's console lines and the plugin's counter at every mark."""
    console, counts = work / f"console-{target.name}.txt", work / f"counts-{target.name}.txt"
    _run(
        [
            _tool("qemu-system-arm", "qemu-system-arm"),
            "-M",
            target.machine,
            "-kernel",
            str(elf),
            "-display",
            "none",
            "-monitor",
            "none",
            "-serial",
            "null",
            "-chardev",
            f"file,id=sh0,path={console}",
            "-semihosting-config",
            "enable=on,target=native,chardev=sh0",
            "-plugin",
            f"{plugin},mark={mark:#x},out={counts}",
        ],
        f"running the {target.cpu} firmware under QEMU ({target.machine})",
    )
    lines = console.read_text().splitlines()
    if not lines or lines[-1] != "done":
        raise CortexMError(f"the {target.cpu} firmware stopped early: {lines[-1] if lines else 'no output'}")
    raw = counts.read_text().splitlines()
    if not raw or not raw[0].startswith("# insn_count") or "overflow" in raw[0]:
        raise CortexMError(f"the instruction-count plugin wrote an unexpected file: {raw[:1]}")
    return lines[:-1], [int(x) for x in raw[1:]]


def host_tag(mac: str, data: bytes) -> bytes:
    """The tag a host implementation gives for the firmware's key and message."""
    key = bytes(range(32))
    if mac in ("chaskey", "chaskey-12"):
        return chaskey(key[:16], data, rounds=8 if mac == "chaskey" else 12)
    if mac == "aes-128-cmac":
        c = CMAC(algorithms.AES(key[:16]))
        c.update(data)
        return c.finalize()
    if mac == "hmac-sha256":
        return _hmac.new(key, data, hashlib.sha256).digest()
    raise InputError(f"unknown MAC {mac!r}")


def firmware_message(n: int) -> bytes:
    return bytes((i * 7 + 1) & 0xFF for i in range(n))


def parse_rows(lines: list[str], counts: list[int]) -> list[dict[str, Any]]:
    """Pair console rows with mark pairs; subtract the marks' own cost; check each tag."""
    if len(counts) != 2 * len(lines):
        raise CortexMError(f"{len(lines)} rows but {len(counts)} marks (expected two per row)")
    rows: list[dict[str, Any]] = []
    overhead: int | None = None
    depth0 = 0
    for i, line in enumerate(lines):
        parts = line.split()
        if len(parts) not in (5, 6) or parts[0] != "mac":
            raise CortexMError(f"unexpected firmware line {line!r}")
        _, mac, op, nbytes, tag = parts[:5]
        depth = int(parts[5]) if len(parts) == 6 else None
        delta = counts[2 * i + 1] - counts[2 * i]
        if mac == "marks":
            overhead, depth0 = delta, depth or 0
            continue
        if overhead is None:
            raise CortexMError("the firmware measured no empty mark pair first")
        n = int(nbytes)
        row: dict[str, Any] = {"mac": mac, "op": op, "bytes": n, "instructions": delta - overhead}
        if depth is not None:  # painted stack depth of the region, minus the empty region's (the marks')
            row["stack_bytes"] = max(0, depth - depth0)
        if op == "mac":
            want = host_tag(mac, firmware_message(n))
            row["tag_ok"] = bytes.fromhex(tag) == want
            row["instructions_per_byte"] = round(row["instructions"] / n, 3)
        rows.append(row)
    for mac in {r["mac"] for r in rows}:
        by = {r["bytes"]: r["instructions"] for r in rows if r["mac"] == mac and r["op"] == "mac"}
        if 256 in by and 1024 in by:  # the long-message rate, comparable with published cycles/byte
            for r in rows:
                if r["mac"] == mac and r["op"] == "mac":
                    r["marginal_instructions_per_byte"] = round((by[1024] - by[256]) / 768, 3)
    return rows


def measure(targets: Sequence[str] = DEFAULT_TARGETS) -> dict[str, Any]:
    """Build, run and count for each target; a deterministic table (no times, no paths)."""
    unknown = [t for t in targets if t not in TARGETS]
    if unknown:
        raise CortexMError(f"unknown Cortex-M target {unknown[0]!r}; known: {', '.join(TARGETS)}")
    tools = toolchain()
    out: dict[str, Any] = {
        "label": LABEL,
        "toolchain": tools,
        "cflags": list(CFLAGS),
        "sizes": list(SIZES),
        "route": "tcg-plugin",
        "targets": {},
    }
    with tempfile.TemporaryDirectory(prefix="secperf-cortexm-") as tmp:
        work = Path(tmp)
        plugin = build_plugin(work)
        for name in targets:
            t = TARGETS[name]
            elf, mark = build_firmware(t, work)
            lines, counts = run_firmware(t, elf, mark, plugin, work)
            out["targets"][name] = {
                "cpu": t.cpu,
                "machine": t.machine,
                "description": t.description,
                "rows": parse_rows(lines, counts),
                "code": code_sizes(t, work),
                "footprint_rule": "code: the MAC's sources compiled alone (arm-none-eabi-size: "
                "text incl. read-only data, data, bss); stack: painted under QEMU, the deepest "
                "word a tag computation overwrote, minus the empty region's",
            }
    return out


def to_series(table: dict[str, Any]) -> list[Series]:
    """Result series (kind "cortexm"): one per target, MAC and length; the count is the value."""

    timer = {
        "name": "instructions per tag",
        "start": "secperf_mark() before the tag computation",
        "end": "secperf_mark() after it (minus an empty mark pair)",
        "value": "executed guest instructions, not time: values_us holds no time",
    }
    series = []
    for tname, t in table["targets"].items():
        for r in t["rows"]:
            s = R.new_series(
                f"cortexm/{tname}/{r['mac']}/{r['op']}/{r['bytes']}",
                kind="cortexm",
                labels={
                    "target": tname,
                    "cpu": t["cpu"],
                    "machine": t["machine"],
                    "mac": r["mac"],
                    "op": r["op"],
                    "size_bytes": r["bytes"],
                    "unit": "instructions",
                    "note": table["label"],
                },
                timer=timer,
            )
            s.derived = CortexmDerived.model_validate({k: v for k, v in r.items() if k not in ("mac", "op", "bytes")})
            if r.get("tag_ok") is False:
                R.add_failure(s, "the firmware's tag differs from the host implementation's")
                s.status = "failed"
            else:
                s.status = "ok"
            series.append(s)
    return series
