"""Issue 44's "inputs resolved once", for every input a command names: how many times one command
looks up an emulated core, a link (a --network spec or profile name), a secure-element profile
(a --key se:NAME) and a system file by name, and from where; and how many times the walk enters
each of secperf's source files (a call from a function of another file into a function of this
one), the issue's target being "a walk of `whatif --device` from the parser to the cycles enters
each file at most twice".

    .venv/bin/python benchmarks/input_lookups.py [--files N] [-- whatif mqtt --device cortex-m4-80 ...]

What counts as entering a file: a call from a function of one secperf source file into a function
of another (the walk crossing from one file into the next). A call into secperf made by a library
or the interpreter -- pydantic running a validator defined in core/result_schema.py once per
object it validates, contextlib entering a context manager, importlib running the body of a module
imported inside a function -- is no step of the walk: the walk entered the library once, and how
often the library calls back depends on how many objects it holds, not on how the layers call each
other. Those calls are counted apart ("library callbacks") and printed beside the walk's entries;
the old figure (both together, which this script reported before) is printed too, so the two can
be compared with earlier runs.

Default command: `whatif mqtt --device cortex-m4-80 --network nb-iot --key se:iot-safe-sim:cold
--n 200 --host-costs shipped --no-report --json`. Run it once before (the device rows are then
counted on the emulator; the walk measured is the one with a warm counting cache). The counts come
from a profiler hook (sys.setprofile): a lookup is a call of one of the registries' readers by a
function outside the registry's own module, whatever the import spelling. Prints the lookups per
input and caller, then the N files entered most (the walk's entries, the library callbacks and
both); exit 0 when every lookup comes from the command's edge, no name is looked up twice and
the walk from the parser to the cycles enters no file more than twice (issue 44's target), 1
otherwise. tests/test_whatif_walk.py checks the same bound for the files that meet it.

Where the walk starts: at the parsed arguments (the CLI's `parse_args` returned). The issue's walk
is the path of the inputs, "from the parser to the cycles": what happens to `--device` once the
parser has made it an argument. Building the argument parser itself calls the option-type
factories of subcommands/argtypes.py once per option (a dozen for whatif's options) and happens
whatever the inputs are; it is printed as its own window (parser included), not judged. Until
this stop the CLI built the command's parser a second time after parsing (to settle its comma
lists); it now hands its one parser on (cli.command_level).

The command's edge is app/, subcommands/, cli.py and the system file's reader inputs/system.py.
That reader is called by the parser only, once per run (tests/test_inputs_resolved_once.py checks
it), and it hands what it resolved on (inputs/system.LoadedSystem: the link, the key's profile,
the device): its look-ups are the command layer's single read of the file's names, not a lower
layer asking again, so they count as the edge's.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import io
import sys
import tempfile
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

from secperf.cli import main
from secperf.inputs import devices, netspec, se_profiles, system
from secperf.model import network

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
# the command's edge: the parser, the app layer, and a system file's reader (inputs/system.py resolves
# the file's [network].link, [security].key and [device].core while the parser reads it, once per run,
# and hands the objects on in LoadedSystem: that read is the command layer's, not a layer below asking again)
EDGE = ("secperf/app/", "secperf/subcommands/", "secperf/cli.py", "secperf/inputs/system.py")
SRC = str(Path(devices.__file__).resolve().parent.parent) + "/"

# input -> the readers that look it up by name (a call from outside their own module counts)
READERS: dict[str, list[Any]] = {
    "core": [devices.core, devices.find_core, devices.choose_device],
    "link": [netspec.parse, netspec.parse_networks, *([network.parse] if hasattr(network, "parse") else [])],
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


@dataclasses.dataclass
class Entries:
    """How often each secperf file is entered: by the walk (a call from another secperf file) and by
    a library calling back (a caller outside secperf), over the whole command and up to the cycles."""

    walk: Counts = dataclasses.field(default_factory=collections.Counter)
    callbacks: Counts = dataclasses.field(default_factory=collections.Counter)
    walk_to_cycles: Counts = dataclasses.field(default_factory=collections.Counter)
    callbacks_to_cycles: Counts = dataclasses.field(default_factory=collections.Counter)
    # from the parsed arguments (the CLI's parse_args returned) to the cycles: the walk of the inputs
    walk_parsed: Counts = dataclasses.field(default_factory=collections.Counter)
    callbacks_parsed: Counts = dataclasses.field(default_factory=collections.Counter)

    @property
    def both(self) -> Counts:
        return self.walk + self.callbacks

    @property
    def both_to_cycles(self) -> Counts:
        return self.walk_to_cycles + self.callbacks_to_cycles


def over(counts: Counts, bound: int = 2) -> dict[str, int]:
    """The files entered more than `bound` times."""
    return {f: n for f, n in counts.items() if n > bound}


def run(argv: list[str], until: CodeType | None = None) -> tuple[int, dict[str, Counts], dict[str, Counts], Entries]:
    """The command's exit code, the lookups per input and caller, the lookups per input and name
    (the reader's first argument), and the file entries (Entries: up to the first return of `until`,
    the parser to the cycles: app/whatif.cost_table, and over the whole command)."""
    code_of: dict[CodeType, str] = {f.__code__: what for what, fs in READERS.items() for f in fs}
    lookups: dict[str, collections.Counter[str]] = {what: collections.Counter() for what in READERS}
    names: dict[str, collections.Counter[str]] = {what: collections.Counter() for what in READERS}
    e = Entries()
    to_cycles = [True]
    parsed = [False]
    parse_args = argparse.ArgumentParser.parse_args.__code__

    def hook(frame: FrameType, event: str, arg: object) -> None:
        code = frame.f_code
        if event == "return" and code is until:
            to_cycles[0] = False
        if event == "return" and code is parse_args and frame.f_back is not None:
            parsed[0] = parsed[0] or frame.f_back.f_code.co_filename == SRC + "cli.py"  # the CLI's own parse
        if event != "call":
            return
        callee = code.co_filename
        caller = frame.f_back
        if not callee.startswith(SRC) or caller is None:
            return
        from_file = caller.f_code.co_filename
        if from_file != callee:
            # the walk when a secperf function made the call; a library's (or importlib's) callback otherwise
            walk = from_file.startswith(SRC)
            (e.walk if walk else e.callbacks)[_rel(callee)] += 1
            if to_cycles[0]:
                (e.walk_to_cycles if walk else e.callbacks_to_cycles)[_rel(callee)] += 1
                if parsed[0]:
                    (e.walk_parsed if walk else e.callbacks_parsed)[_rel(callee)] += 1
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
    return rc, lookups, names, e


def main_() -> int:
    args = sys.argv[1:]
    files = 15
    if args[:1] == ["--files"]:
        files, args = int(args[1]), args[2:]
    args = args[1:] if args[:1] == ["--"] else args
    from secperf.app import whatif

    rc, lookups, names, e = run(args or DEFAULT, whatif.cost_table.__code__)
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
    for title, walk, cb in (
        ("the parsed arguments to the cycles (the walk judged)", e.walk_parsed, e.callbacks_parsed),
        (
            "building the parser, parsing, then to the cycles (app/whatif.cost_table returns)",
            e.walk_to_cycles,
            e.callbacks_to_cycles,
        ),
        ("whole command", e.walk, e.callbacks),
    ):
        both = walk + cb
        print(
            f"{title}: source files entered: {len(both)}; more than twice by the walk: {len(over(walk))}, "
            f"counting library callbacks too (the old figure): {len(over(both))}; the most (walk, callbacks, both):"
        )
        for f, n in both.most_common(files):
            print(f"  {walk[f]:6d} {cb[f]:6d} {n:6d}  {f}")
    argv = args or DEFAULT
    if argv[0] == "whatif" and "--device" in argv:  # issue 44's target: a walk of `whatif --device`
        for f, n in sorted(over(e.walk_parsed).items(), key=lambda x: -x[1]):
            bad.append(f"the walk from the parsed arguments to the cycles enters {f} {n} times (at most twice)")
    for b in bad:
        print(b)
    return 1 if bad or rc not in (0, 1) else 0


if __name__ == "__main__":
    sys.exit(main_())
