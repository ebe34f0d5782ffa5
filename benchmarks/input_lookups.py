"""Issue 44's "inputs resolved once", for every input a command names: how many times one command
looks up an emulated core, a link (a --network spec or profile name), a secure-element profile
(a --key se:NAME) and a system file by name, and from where; and how many times the walk enters
each of secperf's source files (a call from a function of another file into a function of this
one), the issue's target being "a walk of `whatif --device` from the parser to the cycles enters
each file at most twice".

    .venv/bin/python benchmarks/input_lookups.py [--files N] [-- whatif mqtt --device cortex-m4-80 ...]

Default command: `whatif mqtt --device cortex-m4-80 --network nb-iot --key se:iot-safe-sim:cold
--n 200 --host-costs shipped --no-report --json`. Run it once before (the device rows are then
counted on the emulator; the walk measured is the one with a warm counting cache). The counts come
from a profiler hook (sys.setprofile): a lookup is a call of one of the registries' readers by a
function outside the registry's own module, whatever the import spelling. Prints the lookups per
input and caller, then the N files entered most; exit 0 when every lookup comes from the command's
edge (app/, subcommands/, cli.py) and no name is looked up twice, 1 otherwise.
"""

from __future__ import annotations

import collections
import contextlib
import io
import sys
import tempfile
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

from secperf.cli import main
from secperf.inputs import devices, netspec, se_profiles, system

DEFAULT = [
    "whatif",
    "mqtt",
    "--device",
    "cortex-m4-80",
    "--network",
    "nb-iot",
    "--key",
    "se:iot-safe-sim:cold",
    "--n",
    "200",
    "--host-costs",
    "shipped",
    "--no-report",
    "--json",
]
EDGE = ("secperf/app/", "secperf/subcommands/", "secperf/cli.py")
SRC = str(Path(devices.__file__).resolve().parent.parent) + "/"

# input -> the readers that look it up by name (a call from outside their own module counts)
READERS: dict[str, list[Any]] = {
    "core": [devices.core],
    "link": [netspec.parse, netspec.parse_networks],  # model/ has no text parser: it takes a NetSpec
    "secure-element profile": [
        se_profiles.get_profile,
        se_profiles.load_profiles,
        se_profiles.profiles_with,
        se_profiles.profile_of_key,
    ],
    "system file": [system.load_system],
}


def _rel(filename: str) -> str:
    return "secperf/" + filename[len(SRC) :] if filename.startswith(SRC) else filename


Counts = collections.Counter[str]


def run(
    argv: list[str], until: CodeType | None = None
) -> tuple[int, dict[str, Counts], dict[str, Counts], Counts, Counts]:
    """The command's exit code, the lookups per input and caller, the lookups per input and name
    (the reader's first argument), the file entries of the whole walk and those up to the first
    return of `until` (the parser to the cycles: app/whatif.cost_table)."""
    code_of: dict[CodeType, str] = {f.__code__: what for what, fs in READERS.items() for f in fs}
    lookups: dict[str, collections.Counter[str]] = {what: collections.Counter() for what in READERS}
    names: dict[str, collections.Counter[str]] = {what: collections.Counter() for what in READERS}
    entries: collections.Counter[str] = collections.Counter()
    first: collections.Counter[str] = collections.Counter()
    to_cycles = [True]

    def hook(frame: FrameType, event: str, arg: object) -> None:
        code = frame.f_code
        if event == "return" and code is until:
            to_cycles[0] = False
        if event != "call":
            return
        callee = code.co_filename
        caller = frame.f_back
        if not callee.startswith(SRC) or caller is None:
            return
        if caller.f_code.co_filename != callee:
            entries[_rel(callee)] += 1
            if to_cycles[0]:
                first[_rel(callee)] += 1
            what = code_of.get(code)
            if what is not None:
                lookups[what][f"{_rel(caller.f_code.co_filename)}:{caller.f_code.co_name}"] += 1
                arg = frame.f_locals.get(code.co_varnames[0]) if code.co_argcount else None
                names[what][repr(arg)[:60]] += 1

    with tempfile.TemporaryDirectory(prefix="secperf-lookups-") as out, contextlib.redirect_stdout(io.StringIO()):
        sys.setprofile(hook)
        try:
            rc = main([*argv, "--out", out])
        finally:
            sys.setprofile(None)
    return rc, lookups, names, entries, first


def main_() -> int:
    args = sys.argv[1:]
    files = 15
    if args[:1] == ["--files"]:
        files, args = int(args[1]), args[2:]
    args = args[1:] if args[:1] == ["--"] else args
    from secperf.app import whatif

    rc, lookups, names, entries, first = run(args or DEFAULT, whatif.cost_table.__code__)
    print(f"command exit {rc}")
    bad = []
    for what, calls in lookups.items():
        print(f"{what}: looked up by name {sum(calls.values())} time(s)")
        for where, n in calls.most_common():
            print(f"  {n:3d}  {where}")
        below = [w for w in calls if not w.startswith(EDGE)]
        if below:
            bad.append(f"{what} below the command's edge: {', '.join(below)}")
        again = {n: k for n, k in names[what].items() if k > 1}
        if again:
            bad.append(f"{what} looked up more than once by the same name: {again}")
    for title, counts in (
        ("the parser to the cycles (app/whatif.cost_table returns)", first),
        ("whole command", entries),
    ):
        over = sum(1 for n in counts.values() if n > 2)
        print(f"{title}: source files entered: {len(counts)}; entered more than twice: {over}; the most:")
        for f, n in counts.most_common(files):
            print(f"  {n:6d}  {f}")
    for b in bad:
        print(b)
    return 1 if bad or rc not in (0, 1) else 0


if __name__ == "__main__":
    sys.exit(main_())
