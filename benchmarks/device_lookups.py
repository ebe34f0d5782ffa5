"""Issue 44's "inputs resolved once": how many times one command looks an emulated core up by its
name (inputs.devices.core), and from where. The --device name is meant to be resolved once, at the
command's edge (app/), and handed down as the Core object; a lookup below app/ is a regression
(tests/test_inputs_resolved_once.py checks the source, this counts a real run).

    .venv/bin/python benchmarks/device_lookups.py [-- whatif mqtt --device cortex-m4-80 --n 200 ...]

Default command: `whatif mqtt --device cortex-m4-80 --n 200 --host-costs shipped --no-report --json`
(the device rows come from the counting cache when it holds them, else they are counted first: then
the count includes the counting's own lookups). Prints the total and the lookups per calling
function; exit 0 when every lookup comes from app/ (or subcommands/, cli), 1 otherwise.
"""

from __future__ import annotations

import collections
import contextlib
import io
import sys
import tempfile
import traceback

from secperf.cli import main
from secperf.inputs import devices

DEFAULT = [
    "whatif",
    "mqtt",
    "--device",
    "cortex-m4-80",
    "--n",
    "200",
    "--host-costs",
    "shipped",
    "--no-report",
    "--json",
]
EDGE = ("secperf/app/", "secperf/subcommands/", "secperf/cli.py")


def run(argv: list[str]) -> tuple[int, collections.Counter[str]]:
    calls: collections.Counter[str] = collections.Counter()
    reader = devices.core

    def counted(name: str) -> devices.Core:
        # the first caller outside the registry (its resolvers, resolve_core, are called from the edge)
        stack = traceback.extract_stack()[:-1]
        caller = next(f for f in reversed(stack) if not f.filename.endswith("secperf/inputs/devices.py"))
        where = caller.filename.split("src/")[-1] if "src/" in caller.filename else caller.filename
        calls[f"{where}:{caller.name}"] += 1
        return reader(name)

    devices.core = counted  # every module reads it as devices.core / D.core at call time
    try:
        with tempfile.TemporaryDirectory(prefix="secperf-lookups-") as out, contextlib.redirect_stdout(io.StringIO()):
            rc = main([*argv, "--out", out])
    finally:
        devices.core = reader
    return rc, calls


def main_() -> int:
    argv = sys.argv[1:]
    argv = argv[1:] if argv[:1] == ["--"] else argv
    rc, calls = run(argv or DEFAULT)
    print(f"command exit {rc}; core looked up by name {sum(calls.values())} time(s)")
    for where, n in calls.most_common():
        print(f"  {n:3d}  {where}")
    below = [w for w in calls if not w.startswith(EDGE)]
    if below:
        print("below the command's edge: " + ", ".join(below))
    return 1 if below or rc not in (0, 1) else 0


if __name__ == "__main__":
    sys.exit(main_())
