"""The user's own code as an input (`secperf device crypto --source FILES --entry FUNCTION
--harness FILE`): the source files, the entry function, the row's name and the harness file (how many
calls, the build flags, the entry's arguments), each checked with an InputError naming the option or
the file and field. measure/device_user.py builds and counts what these describe.

The harness (a TOML file, `--harness`; every field optional):

    [run]
    calls = 3           # counted calls after the warm-up (1..10000)
    warmup = 1          # calls between the cold (first) one and the counted ones (0..1000)
    seed = 1            # seed of the input buffers' pattern
    time_limit_s = 120  # the whole emulated run; past it the run is stopped and named
    instruction_limit = 2000000000  # instructions of the whole guest process; past it, stopped and named
    returns = "u32"     # the entry's return type: u32, i32, u64, i64 (r0:r1, recorded whole) or void
    [build]
    opt = "-O2"         # the user's objects' optimisation (-O0..-O3, -Os, -Oz, -Og)
    cflags = ["-DFAST"] # more flags: -D, -U, -I, -std=, -f, -W only
    [[arg]]             # the entry's arguments in order (up to 12)
    kind = "in"         # an input buffer (its address): `bytes` long, `fill` "pattern" (seeded) or
    bytes = 256         #   "zero", or `hex`; restored before every call
    [[arg]]
    kind = "inout"      # the same, for a buffer the function changes: shown after the last call
    hex = "00ff"
    [[arg]]
    kind = "out"        # an output buffer of `bytes`, zeroed before every call, shown after the last
    bytes = 4
    [[arg]]
    kind = "int"        # a 32-bit word: `value` (0..2^32-1, or a negative int32)
    value = 256
    [[arg]]
    kind = "u64"        # a 64-bit integer `value`: "u64" 0..2^64-1, "i64" -2^63..2^63-1
    value = 1000
    [[arg]]
    kind = "double"     # a finite `value`: "double" (64-bit) or "float" (32-bit, in range)
    value = 0.5
    [[arg]]
    kind = "struct"     # a struct by value: its bytes as they lie in memory (`hex`, or `bytes` and
    hex = "0100000000000000020000000000000f"  # `fill`), padding included, at most 128, a multiple
    align = 8           #   of `align`: 4, or 8 when it holds a 64-bit integer or a double

Where each argument goes is the AAPCS's rule for the core (layout() below; the row's `arguments`
label shows it, e.g. "u64 1000 @r2:r3"), with the float ABI the core's compiler flags select (hard:
Cortex-M4F, M33 and the A-profile builds; soft: Cortex-M0+): 32-bit words (buffers' addresses,
int, a soft-float float) in r0-r3 then on the stack; 64-bit ones (i64, u64, a soft-float double) in
an even/odd pair (r0:r1 or r2:r3) or an 8-byte aligned stack slot; a struct in the next core
registers, split between r3 and the stack when the stack is still empty, an 8-byte aligned one
starting at an even register; once an argument goes to the stack no later one takes a core register.
Hard float: a float in the lowest free s0-s15 (back-filling one a double skipped), a double in the
lowest free d0-d7, then the stack. The arguments take at most 256 stack bytes (MAX_STACK).
"""

from __future__ import annotations

import math
import re
import struct
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import InputError
from ..core.files import read_input

SUFFIXES = (".c", ".S", ".s")


MAX_ARGS = 12


MAX_STRUCT = 128  # bytes of a struct passed by value


MAX_STACK = 256  # bytes of arguments the harness passes on the stack (AAPCS NSAA from SP)


VALUES = ("int", "i64", "u64", "float", "double", "struct")  # passed by value (their bytes in the data file)


BUFFERS = ("in", "out", "inout")


RETURNS = ("u32", "i32", "u64", "i64", "void")


MAX_BUFFER = 16 * 1024 * 1024


CFLAG_PREFIXES = ("-D", "-U", "-I", "-std=", "-f", "-W")


OPTS = ("-O0", "-O1", "-O2", "-O3", "-Os", "-Oz", "-Og")


@dataclass
class Arg:
    kind: str  # in, out, inout (a buffer: its address), int, i64, u64, float, double, struct (by value)
    size: int = 0  # bytes (buffers, a struct)
    value: int | float = 0  # the number (int, i64, u64, float, double)
    data: bytes = b""  # an input buffer's contents; a by-value argument's bytes, little end first
    align: int = 4  # bytes: a struct's given alignment; 8 for i64, u64 and double
    members: str | None = None  # a struct of floats only ("float") or doubles only ("double")

    def plan_line(self) -> str:
        if self.kind == "int":
            return f"arg int {int(self.value) & 0xFFFFFFFF}"
        return f"arg {self.kind} {self.size}" if self.kind in BUFFERS else f"arg val {len(self.data)}"

    def words(self) -> int:
        """4-byte words the argument takes in core registers or on the stack (soft-float ABI for floats)."""
        return {"i64": 2, "u64": 2, "double": 2, "struct": self.size // 4}.get(self.kind, 1)

    def vfp(self) -> tuple[int, int] | None:
        """(single registers per member, members) when the hard-float ABI passes it in VFP registers
        (a VFP CPRC): a float, a double, a struct of 1-4 floats or of 1-4 doubles (a homogeneous aggregate)."""
        if self.kind in ("float", "double"):
            return (1 if self.kind == "float" else 2, 1)
        if self.members is not None and self.size // (4 if self.members == "float" else 8) <= 4:
            return (1 if self.members == "float" else 2, self.size // (4 if self.members == "float" else 8))
        return None

    def ctype(self, i: int) -> str:
        """The argument's C type in the harness's generated call (a struct: sp_user_sI, words of its
        alignment, so its AAPCS natural alignment is the given one)."""
        if self.kind == "struct":
            return f"struct sp_user_s{i}"
        return {"int": "uint32_t", "i64": "int64_t", "u64": "uint64_t", "float": "float", "double": "double"}.get(
            self.kind, "void *"
        )

    def show(self) -> str:
        if self.kind in BUFFERS:
            return f"{self.kind}[{self.size}]"
        if self.kind == "struct":
            return f"struct[{self.size}]/{self.align}" + (f" of {self.members}s" if self.members else "")
        return f"{self.kind} {self.value}"


@dataclass
class Harness:
    calls: int = 3
    warmup: int = 1
    seed: int = 1
    time_limit_s: float = 120.0
    instruction_limit: int = 2_000_000_000
    opt: str = "-O2"
    cflags: list[str] = field(default_factory=list)
    args: list[Arg] = field(default_factory=list)
    returns: str = "u32"  # the entry's return type: u32, i32, u64, i64 (r0:r1) or void
    path: str | None = None

    def describe(self, placement: list[str] | None = None) -> str:
        """The arguments, e.g. (in[256], u64 5, double 1.5); with a placement, where each goes (u64 5 @r2:r3)."""
        shown = [a.show() + (f" @{placement[i]}" if placement else "") for i, a in enumerate(self.args)]
        return f"({', '.join(shown)})"


def pattern(size: int, seed: int) -> bytes:
    """`size` bytes of splitmix64 output from `seed`, each word little end first (the sequence of
    native/device/crypto_only.c's fixed-seed generator)."""
    out, z0, mask = bytearray(), seed & 0xFFFFFFFFFFFFFFFF, 0xFFFFFFFFFFFFFFFF
    while len(out) < size:
        z0 = (z0 + 0x9E3779B97F4A7C15) & mask
        z = z0
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        z ^= z >> 31
        out += z.to_bytes(8, "little")
    return bytes(out[:size])


def _int(where: str, v: object, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise InputError(f"{where}: give a whole number {lo}..{hi} (got {v!r})")
    return v


def load_harness(path: str | None) -> Harness:
    """The harness file, checked field by field (InputError naming the file and the field)."""
    h = Harness(path=path)
    if path is None:
        return h
    data = read_input(path, "harness", f"--harness {path}")  # a regular file only: a FIFO would block
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"--harness {path}: not TOML: {exc}") from None
    where = f"--harness {path}"
    unknown = set(raw) - {"run", "build", "arg"}
    if unknown:
        raise InputError(f"{where}: unknown table {', '.join(sorted(unknown))}; known: run, build, arg")
    run, build = raw.get("run", {}), raw.get("build", {})
    for name, t, keys in (
        ("run", run, {"calls", "warmup", "seed", "time_limit_s", "instruction_limit", "returns"}),
        ("build", build, {"opt", "cflags"}),
    ):
        if not isinstance(t, dict):
            raise InputError(f"{where}: [{name}] must be a table")
        if set(t) - keys:
            raise InputError(
                f"{where}: [{name}] has unknown key {', '.join(sorted(set(t) - keys))}; "
                f"known: {', '.join(sorted(keys))}"
            )
    h.calls = _int(f"{where}: run.calls", run.get("calls", h.calls), 1, 10_000)
    h.warmup = _int(f"{where}: run.warmup", run.get("warmup", h.warmup), 0, 1_000)
    h.seed = _int(f"{where}: run.seed", run.get("seed", h.seed), 0, 2**64 - 1)
    lim = run.get("time_limit_s", h.time_limit_s)
    if isinstance(lim, bool) or not isinstance(lim, (int, float)) or not 1 <= lim <= 86_400:
        raise InputError(f"{where}: run.time_limit_s: give seconds 1..86400 (got {lim!r})")
    h.time_limit_s = float(lim)
    h.instruction_limit = _int(
        f"{where}: run.instruction_limit", run.get("instruction_limit", h.instruction_limit), 1_000_000, 10**13
    )
    h.returns = run.get("returns", h.returns)
    if h.returns not in RETURNS:
        raise InputError(
            f"{where}: run.returns {h.returns!r}: give one of {', '.join(RETURNS)} (the entry's return type)"
        )
    h.opt = build.get("opt", h.opt)
    if h.opt not in OPTS:
        raise InputError(f"{where}: build.opt {h.opt!r}: give one of {', '.join(OPTS)}")
    cflags = build.get("cflags", [])
    if not isinstance(cflags, list) or not all(isinstance(f, str) for f in cflags):
        raise InputError(f"{where}: build.cflags: give a list of strings")
    for f in cflags:
        if not f.startswith(CFLAG_PREFIXES) or f.startswith(("-fplugin", "-fdump")) or " " in f:
            raise InputError(
                f"{where}: build.cflags {f!r}: only {', '.join(CFLAG_PREFIXES)} flags (one per string); "
                f"the target's -mcpu/-march/float ABI are secperf's"
            )
    h.cflags = cflags
    args = raw.get("arg", [])
    if not isinstance(args, list) or len(args) > MAX_ARGS:
        raise InputError(f"{where}: [[arg]]: give up to {MAX_ARGS} arguments as [[arg]] tables")
    for i, a in enumerate(args, 1):
        h.args.append(_arg(f"{where}: arg {i}", a, h.seed + i - 1))
    return h


KEYS = {
    "in": {"kind", "bytes", "fill", "hex"},
    "inout": {"kind", "bytes", "fill", "hex"},
    "out": {"kind", "bytes"},
    "int": {"kind", "value"},
    "i64": {"kind", "value"},
    "u64": {"kind", "value"},
    "float": {"kind", "value"},
    "double": {"kind", "value"},
    "struct": {"kind", "bytes", "fill", "hex", "align", "members", "values"},
}


def _arg(where: str, a: object, seed: int) -> Arg:
    if not isinstance(a, dict):
        raise InputError(f"{where}: must be a table ([[arg]])")
    kind = a.get("kind")
    if kind not in KEYS:
        raise InputError(
            f"{where}: kind {kind!r}: give \"in\" (an input buffer), \"out\" (an output buffer), \"inout\" "
            f"(an input buffer the function changes), \"int\" (a 32-bit word), \"i64\"/\"u64\" (a 64-bit "
            f"integer), \"float\"/\"double\" or \"struct\" (passed by value)"
        )
    if set(a) - KEYS[kind]:
        raise InputError(
            f"{where} (kind {kind}): unknown key {', '.join(sorted(set(a) - KEYS[kind]))}; "
            f"known: {', '.join(sorted(KEYS[kind]))}"
        )
    if kind == "int":
        return Arg("int", value=_int(f"{where}: value", a.get("value"), -(2**31), 2**32 - 1))
    if kind in ("i64", "u64"):
        lo, hi = (-(2**63), 2**63 - 1) if kind == "i64" else (0, 2**64 - 1)
        v = _int(f"{where} (kind {kind}): value", a.get("value"), lo, hi)
        return Arg(kind, value=v, data=(v & (2**64 - 1)).to_bytes(8, "little"), align=8)
    if kind in ("float", "double"):
        fv = a.get("value")
        if isinstance(fv, bool) or not isinstance(fv, (int, float)) or not math.isfinite(fv):
            raise InputError(f"{where} (kind {kind}): value: give a finite number (got {fv!r})")
        try:
            data = struct.pack("<f" if kind == "float" else "<d", fv)
        except OverflowError:
            raise InputError(f"{where} (kind {kind}): value {fv!r} is out of range for a {kind}") from None
        return Arg(kind, value=fv, data=data, align=8 if kind == "double" else 4)
    if kind == "out":
        return Arg("out", size=_int(f"{where}: bytes", a.get("bytes"), 1, MAX_BUFFER))
    limit = MAX_STRUCT if kind == "struct" else MAX_BUFFER
    members = a.get("members")
    if kind == "struct" and members not in (None, "float", "double"):
        raise InputError(
            f"{where} (kind struct): members {members!r}: give \"float\" or \"double\" (a struct of floats only "
            f"or doubles only), or leave it out"
        )
    if "values" in a:
        if members is None or {"hex", "bytes", "fill"} & set(a):
            raise InputError(f"{where} (kind struct): values: give them with members, instead of hex, bytes and fill")
        vals = a["values"]
        fmt = "<f" if members == "float" else "<d"
        if not isinstance(vals, list) or not 1 <= len(vals) <= limit // struct.calcsize(fmt):
            raise InputError(
                f"{where} (kind struct): values: give a list of 1..{limit // struct.calcsize(fmt)} numbers"
            )
        for v in vals:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise InputError(f"{where} (kind struct): values: {v!r} is not a finite number")
        try:
            data = b"".join(struct.pack(fmt, v) for v in vals)
        except OverflowError:
            raise InputError(f"{where} (kind struct): values: out of range for a float") from None
    elif "hex" in a:
        if "fill" in a:
            raise InputError(f"{where}: give either hex or fill, not both")
        try:
            data = bytes.fromhex(str(a["hex"]))
        except ValueError:
            raise InputError(f"{where}: hex: not hexadecimal bytes ({str(a['hex'])[:40]!r})") from None
        if "bytes" in a and a["bytes"] != len(data):
            raise InputError(f"{where}: bytes {a['bytes']!r} but hex holds {len(data)} bytes")
        if not data:
            raise InputError(f"{where}: hex: give at least one byte")
        if len(data) > limit:
            raise InputError(f"{where} (kind {kind}): hex holds {len(data)} bytes; at most {limit}")
    else:
        if "bytes" not in a and kind == "struct":
            raise InputError(
                f"{where} (kind struct): bytes: give the struct's bytes (hex = \"...\", or bytes = N and fill)"
            )
        size = _int(f"{where}: bytes", a.get("bytes"), 1, limit)
        fill = a.get("fill", "pattern")
        if fill not in ("pattern", "zero"):
            raise InputError(f"{where}: fill {fill!r}: give \"pattern\" (seeded), \"zero\", or hex = \"...\" instead")
        data = pattern(size, seed) if fill == "pattern" else bytes(size)
    if kind != "struct":
        return Arg(kind, size=len(data), data=data)
    align = a.get("align", {"float": 4, "double": 8}.get(members or ""))
    if members is not None and align != (4 if members == "float" else 8):
        raise InputError(
            f"{where} (kind struct): align {align!r}: a struct of {members}s is {4 if members == 'float' else 8}-byte aligned"
        )
    if isinstance(align, bool) or align not in (4, 8):
        raise InputError(
            f"{where} (kind struct): align {align!r}: give 4 or 8 (8 when the struct holds a 64-bit integer or "
            f"a double)"
        )
    if len(data) % align:
        raise InputError(
            f"{where} (kind struct): bytes: {len(data)} is not a multiple of align {align} (a C struct's size "
            f"is; give its padding bytes too)"
        )
    return Arg("struct", size=len(data), data=data, align=align, members=members)


def layout(args: list[Arg], hard: bool, where: str = "--harness") -> tuple[list[str], int]:
    """Where the AAPCS puts each argument of the entry (the Procedure Call Standard for the Arm
    Architecture, parameter passing stages B and C), and the stack bytes they take: ("r0", "r2:r3",
    "s1", "d0", "r2-r3+stack+0..7", "stack+8", ...). `hard`: the VFP variant (the compiler defines
    __ARM_PCS_VFP for the core's flags); float and double go in s0-s15/d0-d7, a float back-filling a
    single register a double skipped (a struct of 1-4 floats or 1-4 doubles likewise, in consecutive
    registers); once one goes to the stack, no later float or double takes a
    VFP register. Otherwise they are core-register words like integers. Core registers: a
    double-word aligned argument starts at an even register (NCRN rounded up); one that does not fit
    goes to the stack (NSAA, rounded up to its alignment) and no later argument takes a core
    register; a struct is split between the last core registers and the stack when nothing is on the
    stack yet. InputError naming the argument past the harness's MAX_STACK stack bytes."""
    ncrn, nsaa, free = 0, 0, [True] * 16
    out: list[str] = []
    for i, a in enumerate(args, 1):
        cprc = a.vfp() if hard else None
        if cprc is not None:
            unit, count = cprc
            n = unit * count  # single registers, the lowest free run starting at a multiple of unit
            k = next((j for j in range(0, 17 - n, unit) if all(free[j : j + n])), None)
            if k is not None:
                free[k : k + n] = [False] * n
                first, last = (f"s{k}", f"s{k + n - 1}") if unit == 1 else (f"d{k // 2}", f"d{(k + n) // 2 - 1}")
                out.append(first if count == 1 else f"{first}-{last}")
                continue
            free = [False] * 16  # C.2: every unallocated VFP register is now unavailable
            nsaa = -(-nsaa // a.align) * a.align
            out.append(f"stack+{nsaa}")
            nsaa += 4 * n
        else:
            words = a.words()
            if a.align == 8 and ncrn % 2:
                ncrn += 1  # C.3
            if ncrn + words <= 4:  # C.4
                out.append(
                    f"r{ncrn}"
                    if words == 1
                    else f"r{ncrn}:r{ncrn + 1}"
                    if words == 2
                    else f"r{ncrn}-r{ncrn + words - 1}"
                )
                ncrn += words
                continue
            if a.kind == "struct" and ncrn < 4 and nsaa == 0:  # C.5: split
                rest = 4 * (words - (4 - ncrn))
                out.append(f"r{ncrn}-r3+stack+0..{rest - 1}" if ncrn < 3 else f"r3+stack+0..{rest - 1}")
                ncrn, nsaa = 4, rest
            else:
                ncrn = 4  # C.6: no later argument back-fills a core register
                nsaa = -(-nsaa // a.align) * a.align  # C.7
                out.append(f"stack+{nsaa}")
                nsaa += 4 * words
        if nsaa > MAX_STACK:
            raise InputError(
                f"{where}: arg {i} (kind {a.kind}): too many argument words: by this one the arguments take "
                f"{nsaa} bytes of stack ({'hard' if hard else 'soft'}-float ABI); the harness passes at most {MAX_STACK}"
            )
    return out, nsaa


def check_sources(value: str | Iterable[str]) -> list[Path]:
    """--source files: each exists, is C or assembly, and names are unique."""
    items = [v.strip() for v in (value.split(",") if isinstance(value, str) else value) if v.strip()]
    if not items:
        raise InputError("--source: give one or more C (.c) or assembly (.S, .s) files, comma separated")
    out: list[Path] = []
    for v in items:
        p = Path(v)
        if p.suffix not in SUFFIXES:
            raise InputError(f"--source {v}: not a C (.c) or assembly (.S, .s) file")
        if not p.is_file():
            raise InputError(f"--source {v}: no such file")
        out.append(p.resolve())
    if len(set(out)) != len(out):
        raise InputError("--source: a file is named twice")
    return out


def check_entry(name: str | None) -> str:
    if not name or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise InputError(f"--entry {name!r}: give the entry function's C name (letters, digits, _)")
    if name in ("main", "sp_mark") or name.startswith(("sp_user_", "sp_stack_", "_")):
        raise InputError(f"--entry {name}: a name of the harness or the C library; rename the function")
    return name


def check_name(name: str | None, entry: str) -> str:
    """The op name the row carries: --name (lower case, digits, dashes), else the entry's name."""
    op = name if name else entry.lower().replace("_", "-")
    if not re.fullmatch(r"[a-z0-9][a-z0-9.-]*", op):
        raise InputError(f"--name {op!r}: lower case letters, digits, dots and dashes (e.g. ecdsa-p256-sign)")
    return op
