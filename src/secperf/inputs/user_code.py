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
    [build]
    opt = "-O2"         # the user's objects' optimisation (-O0..-O3, -Os, -Oz, -Og)
    cflags = ["-DFAST"] # more flags: -D, -U, -I, -std=, -f, -W only
    [[arg]]             # the entry's arguments in order, each one 32-bit word (AAPCS r0-r3, stack)
    kind = "in"         # an input buffer: `bytes` long, `fill` "pattern" (seeded) or "zero", or `hex`
    bytes = 256
    [[arg]]
    kind = "int"        # a word: `value` (0..2^32-1, or a negative int32)
    value = 256
    [[arg]]
    kind = "out"        # an output buffer of `bytes`, zeroed before every call
    bytes = 4
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import InputError
from ..core.files import read_input

SUFFIXES = (".c", ".S", ".s")


MAX_ARGS = 8


MAX_BUFFER = 16 * 1024 * 1024


CFLAG_PREFIXES = ("-D", "-U", "-I", "-std=", "-f", "-W")


OPTS = ("-O0", "-O1", "-O2", "-O3", "-Os", "-Oz", "-Og")


@dataclass
class Arg:
    kind: str  # in, out, int
    size: int = 0  # bytes (buffers)
    value: int = 0  # the word (int)
    data: bytes = b""  # an input buffer's contents

    def plan_line(self) -> str:
        return f"arg int {self.value & 0xFFFFFFFF}" if self.kind == "int" else f"arg {self.kind} {self.size}"


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
    path: str | None = None

    def describe(self) -> str:
        def one(a: Arg) -> str:
            return f"int {a.value}" if a.kind == "int" else f"{a.kind}[{a.size}]"

        return f"({', '.join(one(a) for a in self.args)})" if self.args else "()"


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
        ("run", run, {"calls", "warmup", "seed", "time_limit_s", "instruction_limit"}),
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


def _arg(where: str, a: object, seed: int) -> Arg:
    if not isinstance(a, dict):
        raise InputError(f"{where}: must be a table ([[arg]])")
    kind = a.get("kind")
    keys = {"in": {"kind", "bytes", "fill", "hex"}, "out": {"kind", "bytes"}, "int": {"kind", "value"}}
    if kind not in keys:
        raise InputError(
            f"{where}: kind {kind!r}: give \"in\" (an input buffer), \"out\" (an output buffer) or "
            f"\"int\" (a 32-bit word)"
        )
    if set(a) - keys[kind]:
        raise InputError(
            f"{where} (kind {kind}): unknown key {', '.join(sorted(set(a) - keys[kind]))}; "
            f"known: {', '.join(sorted(keys[kind]))}"
        )
    if kind == "int":
        return Arg("int", value=_int(f"{where}: value", a.get("value"), -(2**31), 2**32 - 1))
    if kind == "in" and "hex" in a:
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
        return Arg("in", size=len(data), data=data)
    size = _int(f"{where}: bytes", a.get("bytes"), 1, MAX_BUFFER)
    if kind == "out":
        return Arg("out", size=size)
    fill = a.get("fill", "pattern")
    if fill not in ("pattern", "zero"):
        raise InputError(f"{where}: fill {fill!r}: give \"pattern\" (seeded), \"zero\", or hex = \"...\" instead")
    return Arg("in", size=size, data=pattern(size, seed) if fill == "pattern" else bytes(size))


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
