"""The user's own code on an emulated core: `secperf device crypto --source FILES --entry FUNCTION`.

The user's C (.c) and assembly (.S, .s) files are compiled with the core's cross compiler and the
flags secperf's own library builds use for that target (device_build.TARGETS; ARMv7-A Thumb-2 for
the A-profile cores), linked statically with secperf's harness (native/device/user/harness.c, the
marker and the stack painter) and a generated stub (call_stub: the entry's address and the call
site, typed for the entry's arguments so that the compiler places each where the core's ABI says;
the float ABI is read from the compiler, float_abi), and run under qemu-arm
with the counting plugin and the core's timing model, as a library primitive is
(measure/device_crypto.py measure_crypto).

The inputs (the files, the entry, the row's name and the harness file with its fields) are read and
checked in inputs/user_code.py.

What one count is: the instructions from the harness's call of the entry function to its return,
the entry's own return included; the harness's instructions around the call (markers, argument
loading, the call) are measured on an empty function (one `bx lr`) called from the same call site
and subtracted, so a function of k instructions counts k. Cycles: the same difference of the timing
model's cycles (the empty function's return included in what is subtracted). Input buffers are
restored and output buffers zeroed before every call, outside the markers.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import re
import resource
import statistics
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import result as R
from ..core.errors import InputError, MeasurementError
from ..core.native import shipped_sources
from ..core.result_schema import DeviceCryptoDerived, DeviceTime, Series
from ..inputs.core_profiles import Core
from ..inputs.user_code import Harness, check_entry, check_name, check_sources, layout, load_harness, pattern
from ..lab import registry
from . import build_stage
from . import device_attrib as A
from . import device_timing as T
from .device_build import (
    ARMHF_SOURCE_FLAGS,
    NEWLIB_TARGETS,
    TARGETS,
    DeviceSetupError,
    _run,
    device_home,
    footprint,
    qemu_plugin_include,
    shared_decls_dir,
    tool,
)

COMPILE_TIMEOUT_S = 120
# the inputs' checks stay importable from here, as callers import them
__all__ = [
    "COMPILE_TIMEOUT_S",
    "EMPTY_CALLS",
    "RULE",
    "STACK",
    "Harness",
    "UserBuild",
    "build_user",
    "call_stub",
    "check_entry",
    "check_name",
    "check_sources",
    "ensure_plugins",
    "harness_dir",
    "load_harness",
    "measure_user",
    "new_series",
    "pattern",
    "run_user",
    "target_flags",
]

STACK = "user"
RULE = (
    "instructions from the harness's call of the entry to its return (the entry's return included), minus "
    "the harness's own (an empty function called from the same call site)"
)


@dataclass(frozen=True)
class UserBuild:
    binary: Path
    plugin: Path
    limiter: Path
    qemu: str
    qemu_version: str
    cross_cc: str
    target: str
    flags: str
    library: str  # "crc32.c 1f2e3d4c5b6a" (file names and the first digits of their sha256)
    sources: list[dict[str, Any]]
    footprint: dict[str, Any]
    entry_bytes: int | None
    float_abi: str = "soft"  # "hard" when the core's flags select the AAPCS VFP variant (__ARM_PCS_VFP)
    placement: tuple[str, ...] = ()  # where each argument goes (inputs.user_code.layout)


def target_flags(target: str) -> str:
    flags = TARGETS[target][0]
    return ARMHF_SOURCE_FLAGS if flags is None else flags


def harness_dir() -> Path:
    found = shipped_sources("device", "native/device", "user/harness.c", "marker.c", "stackpaint.c")
    if found is None:
        raise DeviceSetupError("the harness sources (native/device/user) were not found: reinstall with `make build`")
    return found


def ensure_plugins(src: Path) -> tuple[Path, Path]:
    """The counting plugin (native/device/plugin) and the instruction limiter (native/device/user/limit.c),
    built once into $SECPERF_HOME/device/build."""

    decls = shared_decls_dir(src)
    inc = qemu_plugin_include()
    h = hashlib.sha256(str(inc).encode())
    for p in sorted((src / "plugin").glob("*")) + [decls / "qemu_plugin_api.h", src / "user" / "limit.c"]:
        h.update(p.read_bytes())
    out = device_home() / "build" / f"user-plugin-{h.hexdigest()[:16]}"
    plugin, limiter = out / "libinsn_events.so", out / "libuser_limit.so"
    if not (build_stage.is_complete(out) and plugin.is_file() and limiter.is_file()):
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(device_home() / "build" / ".user-plugins.lock", "w") as lock:  # not the library builds' lock
            fcntl.flock(lock, fcntl.LOCK_EX)
            build_stage.remove_stale(out.parent)  # dead builders' staging directories only (PID rule)
            if not (build_stage.is_complete(out) and plugin.is_file() and limiter.is_file()):
                build_stage.invalidate(out)
                tmp = build_stage.stage(out)  # built apart, renamed into place when it succeeded
                try:
                    args = ["make", "-s", "-f", str(src / "Makefile"), f"OUT={tmp}", f"SHARED_DECLS={decls}", "plugin"]
                    if inc is not None:
                        args.append(f"QEMU_PLUGIN_INCLUDE={inc}")
                    _run(args, "building the counting plugin (native/device/Makefile)", 300)
                    hdr = ["-DSECPERF_QEMU_PLUGIN_HEADER", f"-I{inc}"] if inc is not None else [f"-I{decls}"]
                    _run(
                        [
                            tool("gcc", "build-essential"),
                            "-O2",
                            "-Wall",
                            "-Wextra",
                            "-shared",
                            "-fPIC",
                            "-fvisibility=hidden",
                            *hdr,
                            "-o",
                            str(tmp / limiter.name),
                            str(src / "user" / "limit.c"),
                        ],
                        "building the instruction limiter (native/device/user/limit.c)",
                        120,
                    )
                    build_stage.publish(tmp, out)
                finally:
                    build_stage.discard(tmp)
    return plugin, limiter


RET_TYPES = {"u32": "uint32_t", "i32": "int32_t", "u64": "uint64_t", "i64": "int64_t", "void": "void"}


def call_stub(entry: str, h: Harness) -> str:
    """C of the harness's call site, generated for the entry's argument types (harness.c calls it for
    the empty function and the entry alike): compiled with the core's flags, the compiler places
    every argument as the core's ABI says (core registers, VFP registers, stack), as a caller of the
    user's function built for that core would. Each argument's bytes come from the harness's cell
    for it (a buffer's cell holds its address)."""
    structs = "".join(
        f"struct sp_user_s{i} {{ {a.members or f'uint{8 * a.align}_t'} w[{a.size // a.align}]; }};\n"
        for i, a in enumerate(h.args)
        if a.kind == "struct"
    )
    params = ", ".join(a.ctype(i) for i, a in enumerate(h.args)) or "void"
    values = ", ".join(f"*(const {a.ctype(i)} *)sp_user_cells[{i}]" for i, a in enumerate(h.args))
    ret = RET_TYPES[h.returns]
    call = f"f({values});" if ret == "void" else f"r = (uint64_t)({ret})f({values});"
    return (
        "#include <stdint.h>\n#include \"marker.h\"\n"
        "extern uint64_t sp_user_cells[][16];\n"
        f"{structs}typedef {ret} (*sp_user_fn)({params});\n"
        f"extern void {entry}(void);\nvoid *const sp_user_entry = (void *){entry};\n"
        "__attribute__((noinline)) uint64_t sp_user_call(void *fn, unsigned id)\n{\n"
        "    sp_user_fn f = (sp_user_fn)fn;\n    uint64_t r = 0;\n"
        f"    sp_mark(SP_MARK_OP_BEGIN, id);\n    {call}\n    sp_mark(SP_MARK_OP_END, id);\n"
        "    return r;\n}\n"
    )


def float_abi(cc: str, flags: list[str], work: Path) -> str:
    """The float ABI the core's flags select, from the compiler itself: "hard" when it defines
    __ARM_PCS_VFP (floats in VFP registers), else "soft" (core registers)."""
    p = _compile(cc, [*flags, "-dM", "-E", "-x", "c", "/dev/null"], "reading the compiler's float ABI", work)
    if p.returncode != 0:
        raise DeviceSetupError(f"the compiler does not take the core's flags: {_trim(p.stderr)}")
    return "hard" if re.search(r"^#define __ARM_PCS_VFP 1$", p.stdout, re.M) else "soft"


def _trim(text: str, limit: int = 1500) -> str:
    """The compiler's or linker's words, the first lines that matter (no absolute build paths)."""
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    out = "\n".join(lines[:25])
    return out if len(out) <= limit else out[:limit] + " ..."


def _compile(cc: str, argv: list[str], what: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    try:
        return registry.run([cc, *argv], what, timeout=COMPILE_TIMEOUT_S, capture_output=True, text=True, cwd=cwd)
    except subprocess.TimeoutExpired as exc:
        raise InputError(f"{what}: the compiler did not finish within {exc.timeout:g} s") from None


def build_user(sources: list[Path], entry: str, target: str, h: Harness, work: Path) -> UserBuild:
    """Compile the user's files and the harness for `target` and link them (InputError with the
    compiler's or linker's own words when the user's code does not build)."""
    newlib = target in NEWLIB_TARGETS
    cc = (
        tool("arm-none-eabi-gcc", "gcc-arm-none-eabi")
        if newlib
        else tool("arm-linux-gnueabihf-gcc", "gcc-arm-linux-gnueabihf")
    )
    readelf = tool("arm-linux-gnueabihf-readelf", "binutils-arm-linux-gnueabihf")
    objcopy = tool("arm-linux-gnueabihf-objcopy", "binutils-arm-linux-gnueabihf")
    qemu = tool("qemu-arm", "qemu-user")
    src = harness_dir()
    plugin, limiter = ensure_plugins(src)
    flags = target_flags(target).split()
    abi = float_abi(cc, flags, work)
    placement, _ = layout(h.args, abi == "hard", f"--harness {h.path}")  # InputError: past the stack bound
    strip_attrs = target not in ("armhf",) and not newlib  # M code linked with the A-profile glibc
    cflags = ["-g0", "-ffunction-sections", "-fdata-sections", *flags]
    objs: list[Path] = []
    shown: list[dict[str, Any]] = []
    for i, s in enumerate(sources):
        o = work / f"u{i}-{s.stem}.o"
        p = _compile(
            cc, [*cflags, h.opt, f"-I{s.parent}", *h.cflags, "-c", "-o", str(o), str(s)], f"compiling {s.name}", work
        )
        if p.returncode != 0:
            raise InputError(
                f"--source {s.name}: does not compile for {target} ({Path(cc).name} {' '.join(flags)} "
                f"{h.opt}):\n{_trim(p.stderr or p.stdout)}"
            )
        objs.append(o)
        shown.append({"file": s.name, "sha256": hashlib.sha256(s.read_bytes()).hexdigest()})
    (work / "sp_user_stub.c").write_text(call_stub(entry, h))
    own = [src / "user" / "harness.c", src / "marker.c", src / "stackpaint.c", work / "sp_user_stub.c"]
    if newlib:
        own.append(src / "m0" / "sys.c")
    hobjs = []
    for f in own:
        o = work / f"sp-{f.stem}.o"
        p = _compile(
            cc,
            [
                *cflags,
                "-O2",
                "-std=gnu11",
                "-D_GNU_SOURCE",
                "-fno-strict-aliasing",  # the stub reads each argument's cell as its type
                "-w",
                f"-I{src}",
                f"-I{src / 'm0' / 'include'}" if newlib else f"-I{src}",
                "-c",
                "-o",
                str(o),
                str(f),
            ],
            f"compiling the harness ({f.name})",
            work,
        )
        if p.returncode != 0:
            raise DeviceSetupError(f"the harness ({f.name}) does not compile for {target}: {_trim(p.stderr)}")
        hobjs.append(o)
    if strip_attrs:
        for o in objs + hobjs:
            _run([objcopy, "--remove-section=.ARM.attributes", str(o)], "preparing the objects for the link", 60)
    binary = work / "sp-user"
    ld = [*flags, "-static", "-Wl,--gc-sections", f"-Wl,-Map={binary}.map", "-o", str(binary)]
    if newlib:
        ld += ["-nostartfiles", "-Wl,-Ttext-segment=0x10000", "-Wl,--wrap=printf"]
    p = _compile(cc, [*ld, *map(str, hobjs), *map(str, objs), "-lm"], "linking the user's code with the harness", work)
    if p.returncode != 0:
        words = _trim(re.sub(r"^\S*ld(\.bfd)?: ", "ld: ", p.stderr, flags=re.M))
        if re.search(rf"undefined reference to `{re.escape(entry)}'", p.stderr):
            raise InputError(
                f"--entry {entry}: no such function in {', '.join(s.name for s in sources)}; the linker says:\n{words}"
            )
        raise InputError(f"--source: the user's code does not link with the harness:\n{words}")
    syms = _run([readelf, "-sW", str(binary)], "reading the user's symbols", 60)
    # "Num: Value Size Type Bind Vis Ndx Name": a function symbol (its address carries the Thumb bit)
    m = re.search(rf"^\s*\d+: [0-9a-f]+\s+(\d+) (\w+)\s+\w+\s+\w+\s+\S+ {re.escape(entry)}$", syms, re.M)
    if m is None or m.group(2) != "FUNC":
        raise InputError(
            f"--entry {entry}: the symbol is not a function (in assembly: `.type {entry}, %function` "
            f"and `.thumb_func` before its label)"
        )
    fp = footprint(Path(f"{binary}.map").read_text(errors="replace"), tuple(o.name for o in objs))
    fp["rule"] = (
        "the user's objects' sections kept by the linker (--gc-sections), from the link map; "
        "flash = text + rodata + data, static RAM = data + bss"
    )
    digest = hashlib.sha256("".join(x["sha256"] for x in shown).encode()).hexdigest()[:12]
    return UserBuild(
        binary=binary,
        plugin=plugin,
        limiter=limiter,
        qemu=qemu,
        qemu_version=_version(qemu),
        cross_cc=_version(cc),
        target=target,
        flags=" ".join([*flags, h.opt, *h.cflags]),
        library=f"{', '.join(x['file'] for x in shown)} sha256:{digest}",
        sources=shown,
        footprint=fp,
        entry_bytes=int(m.group(1)) or None,
        float_abi=abi,
        placement=tuple(placement),
    )


def _version(exe: str) -> str:
    try:
        out = subprocess.run([exe, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.splitlines()[0].strip() if out else "unknown"


EMPTY_CALLS = 2


def _no_core() -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a faulting guest leaves no core file behind


def run_user(
    b: UserBuild, dev: Core, h: Harness, work: Path, timed: bool, run_cpu: str
) -> tuple[list[dict[str, Any]], list[A.Event], str]:
    """One emulated run of the harness: its JSON lines, the plugin's events, and the failure ('' when
    none) in the emulator's own words."""
    plan = work / "plan.txt"
    plan.write_text(
        f"calls {h.calls}\nwarmup {h.warmup}\nempty {EMPTY_CALLS}\n" + "".join(a.plan_line() + "\n" for a in h.args)
    )
    data = work / "data.bin"
    data.write_bytes(b"".join(a.data for a in h.args if a.kind not in ("out", "int")))
    ev = work / "events.txt"
    timing = f",timing={T.write_params(dev, b.binary, work / 'timing.txt')}" if timed and dev.timing else ""
    argv = [
        b.qemu,
        "-cpu",
        run_cpu,
        "-plugin",
        f"{b.plugin},out={ev}{timing}",
        "-plugin",
        f"{b.limiter},limit={h.instruction_limit}",
        str(b.binary),
        "--plan",
        str(plan),
        "--data",
        str(data),
    ]
    try:
        p = registry.run(
            argv,
            "qemu device emulator (user code)",
            timeout=h.time_limit_s,
            capture_output=True,
            text=True,
            cwd=work,
            preexec_fn=_no_core,
        )
    except subprocess.TimeoutExpired as exc:
        return (
            [],
            [],
            (
                f"time limit: the run did not finish within {exc.timeout:g} s (run.time_limit_s of the "
                f"harness); the emulator was stopped — an endless loop, or raise the limit"
            ),
        )
    lines = []
    for ln in p.stdout.splitlines():
        try:
            lines.append(json.loads(ln))
        except ValueError:
            continue
    done = next((x for x in lines if x.get("user") == "done"), None)
    limit = re.search(r"^secperf-limit: (.*)$", p.stderr, re.M)
    if limit:
        return lines, [], f"instruction limit: {limit.group(1)} (run.instruction_limit of the harness)"
    if p.returncode != 0 or done is None:
        calls = [x["call"] for x in lines if "call" in x]
        at = (
            "an empty harness call"
            if not any("empty" in x for x in lines)
            else f"call {calls[-1] + 1 if calls else 0}" + (" (the cold one)" if not calls else "")
        )
        err = next((x["error"] for x in lines if x.get("user") == "harness"), None)
        words = err or (p.stderr.strip() or f"exit status {p.returncode}")
        sig = f" (signal {-p.returncode})" if p.returncode < 0 else ""
        return lines, [], f"{at}: the guest stopped{sig}: {_trim(words, 600)}"
    _, events = A.read_events(ev)
    return lines, events, ""


def _ret(line: dict[str, Any], returns: str) -> int | None:
    """The entry's return value from a harness line: r0 ("ret"), with r1 ("ret_hi") for a 64-bit one,
    signed for i32/i64; None for a void function or a line without it."""
    if returns == "void" or "ret" not in line:
        return None
    v = int(line["ret"]) | (int(line.get("ret_hi", 0)) << 32 if returns in ("u64", "i64") else 0)
    bits = 64 if returns in ("u64", "i64") else 32
    return v - (1 << bits) if returns in ("i32", "i64") and v >> (bits - 1) else v


CallRow = tuple[int, tuple[float, ...] | None, dict[str, int] | None]  # instructions, cycles, classes


def _split_calls(events: list[A.Event]) -> tuple[list[CallRow], list[CallRow]]:
    """(empty calls, entry calls): each a list of (instructions, cycles or None, classes or None)."""
    counts = A.op_counts(events)
    timed = bool(events) and events[0].timed is not None
    cyc = list(zip(*[[c for _, c in A.op_counts(A.in_cycles(events, k))] for k in range(3)])) if timed else []
    cls = A.op_classes(events) if timed else []
    rows = [(c, cyc[i] if cyc else None, cls[i] if cls else None, op) for i, (op, c) in enumerate(counts)]
    return [r[:3] for r in rows if r[3] == 0], [r[:3] for r in rows if r[3] == 1]


def new_series(device: str, b: UserBuild, entry: str, op: str, h: Harness, run_cpu: str) -> Series:
    return R.new_series(
        f"device-crypto/{device}/{STACK}/{op}",
        kind="device_crypto",
        labels={
            "device": device,
            "stack": STACK,
            "library": b.library,
            "op": op,
            "entry": entry,
            "sources": b.sources,
            "harness": h.path,
            "arguments": h.describe(list(b.placement)),
            "float_abi": b.float_abi,
            "returns": h.returns,
            "qemu_cpu": run_cpu,
            "build_target": b.target,
            "config": h.opt,
            "config_description": f"the user's code, {b.flags}",
            "qemu": b.qemu_version,
            "cross_cc": b.cross_cc,
            "warmup_calls": h.warmup,
        },
        timer={
            "name": "guest instructions per call of the user's entry function",
            "start": "marker OP_BEGIN, then the call",
            "end": "the entry returned; marker OP_END",
            "unit": "instructions",
            "rule": RULE,
        },
    )


def measure_user(
    device: str,
    dev: Core,
    b: UserBuild,
    entry: str,
    op: str,
    h: Harness,
    work: Path,
    timed: bool = True,
    run_cpu: str = "max",
) -> Series:
    """Count the built entry function: one device_crypto series (a library op's shape); a fault or a
    run past the time limit is the series' failure, in the emulator's words."""
    s = new_series(device, b, entry, op, h, run_cpu)
    lines, events, failure = run_user(b, dev, h, work, timed, run_cpu)
    if failure:
        R.add_failure(s, failure)
        s.status = "failed"  # nothing counted: no derived figures (the views show the row as failed)
        return s
    empty, calls = _split_calls(events)
    if not empty or len(calls) != 1 + h.warmup + h.calls:
        raise MeasurementError(
            f"the harness marked {len(empty)} empty and {len(calls)} entry calls; expected "
            f"{EMPTY_CALLS} and {1 + h.warmup + h.calls}"
        )
    base_i = min(c for c, _, _ in empty)
    empty_cyc = [e[1] for e in empty if e[1] is not None]  # all of them, or none (the timing model off)
    base_c = tuple(min(x[k] for x in empty_cyc) for k in range(3)) if empty[0][1] else None
    ret = {x["call"]: _ret(x, h.returns) for x in lines if "call" in x}
    for i, (c, cyc, _) in enumerate(calls):
        phase = "cold" if i == 0 else "warm" if i > h.warmup else "warmup"
        s.samples.append(
            {
                "i": i,
                "instructions": c - base_i + 1,
                "phase": phase,
                "ret": ret.get(i),
                **({"cycles": [cyc[k] - base_c[k] for k in range(3)]} if cyc and base_c else {}),
            }
        )
    warm = [x for x in s.samples if x["phase"] == "warm"]
    ins = [x["instructions"] for x in warm]
    med = statistics.median(ins)
    done = next(x for x in lines if x.get("user") == "done")
    empty_line = next((x for x in lines if "empty" in x), {})
    lo, hi = dev.ms_range(med)
    s.derived = DeviceCryptoDerived(
        instructions_cold=s.samples[0]["instructions"],
        instructions_median=med,
        instructions_min=min(ins),
        instructions_max=max(ins),
        stack_bytes_max=done.get("stack_bytes"),
        derived_ms={
            "ms_low": lo,
            "ms_high": hi,
            "clock_mhz": dev.clock_mhz,
            "cpi": list(dev.cpi),
            "cpi_estimate": dev.cpi_estimate,
        },
        footprint=b.footprint,
        entry_bytes=b.entry_bytes,
        check={"ret": _ret(done, h.returns), "outputs": done.get("outputs", [])},
        harness={
            "instructions": base_i,
            "stack_bytes": empty_line.get("stack_bytes"),
            **({"cycles": list(base_c)} if base_c else {}),
            "rule": RULE,
        },
    )
    wc = [x["cycles"] for x in warm if "cycles" in x]
    if wc:
        # where the last call's cycles come from (instruction classes, stall events), the harness's taken out
        last, base = calls[-1][2] or {}, empty[-1][2] or {}
        d = s.derived_as(DeviceCryptoDerived)
        d.time = DeviceTime.model_validate(
            {
                **T.figure(tuple(statistics.median(c[k] for c in wc) for k in range(3)), dev),
                **T.model_note(dev),
                "counters": {k: v - base.get(k, 0) for k, v in last.items() if v - base.get(k, 0)},
            }
        )
        d.time_cold = T.figure(tuple(s.samples[0]["cycles"]), dev)
    s.status = "ok"
    return s
