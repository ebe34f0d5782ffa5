"""Issue 44's target for `whatif --device`: the walk from the parser (its parsed arguments) to the
cycles (app/whatif.cost_table returning) enters each secperf file at most twice -- the device input is resolved once into an object
and passed down, the layers below are asked for a table in one call, not once per row.

The walk is counted by benchmarks/input_lookups.py's hook (sys.setprofile): a call from a function of
one secperf file into a function of another. A library calling back into secperf (pydantic running a
validator per object, importlib running a lazily imported module) is no step of the walk and is
counted apart there. The run is the benchmark's default command with a warm device-count cache (a
first run in the same SECPERF_HOME counts the rows on the emulator and caches them).
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import sys
from pathlib import Path

import pytest

from secperf.app import whatif
from secperf.cli import main

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "input_lookups.py"

# files the walk entered more than twice before this change, now at most twice
FIXED = {
    "secperf/app/device_stacks.py",  # one StackPlan per prediction (device_stacks.plan), one unrunnable() check
    "secperf/app/device_counts.py",
    "secperf/core/result.py",  # the cache's rows validated in one call; the counts Result made whole in one
    "secperf/core/record.py",  # no per-series assignment to the counts Result (not entered at all now)
    "secperf/inputs/devices.py",  # --device resolved once (app/whatif.device_input)
    "secperf/inputs/core_profiles.py",
    "secperf/inputs/device_profiles.py",
    "secperf/measure/device_plan.py",  # the core's build target worked out once and passed down
    "secperf/model/device_ops.py",  # the counted primitives set in one call (set_device_ops)
    "secperf/model/flights/__init__.py",  # each distinct scenario variant built once
    "secperf/model/flights/tls13.py",
    "secperf/app/reporter.py",
    "secperf/measure/device_build.py",
    "secperf/measure/device_sources.py",
    "secperf/core/paths.py",  # $SECPERF_HOME/device read once by the counting and passed to the build
    "secperf/core/result_schema.py",  # the cached series checked for undeclared keys in one call
    # the model's vocabulary asked once (flights.context: the tables, the resolved scenarios and their
    # flight models, handed to the counting and the cost table); the TLS 1.3 exchanges carry the tickets
    "secperf/model/flights/base.py",
    # --device chosen once at the inputs layer (inputs.devices.choose_device: a cost table first, else a
    # core), not asked of the cost tables again: the host's table and the device's table are left
    "secperf/model/costs.py",
}
# still entered more than twice from the parsed arguments to the cycles, each with why (none now;
# the test fails when a file joins them)
NOT_YET: dict[str, str] = {}


def _bench():
    spec = importlib.util.spec_from_file_location("input_lookups_under_test", BENCH)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow  # the first run counts the device rows on the emulator (and builds the client once per home)
def test_a_walk_of_whatif_device_enters_each_file_at_most_twice(tmp_path, monkeypatch):
    monkeypatch.setenv("SECPERF_HOME", str(tmp_path / "home"))
    il = _bench()
    with contextlib.redirect_stdout(io.StringIO()):  # warm the device-count cache
        assert main([*il.DEFAULT, "--out", str(tmp_path / "warm")]) == 0
    rc, _lookups, _names, e = il.run(il.DEFAULT, whatif.cost_table.__code__)
    assert rc == 0
    walk = e.walk_parsed  # from the parsed arguments (the benchmark's docstring: where the walk starts)
    over = il.over(walk)
    grown = sorted(set(over) - set(NOT_YET))
    assert not grown, (
        f"entered more than twice by the walk (at most twice, or say why in NOT_YET): { {f: over[f] for f in grown} }"
    )
    for f in sorted(FIXED):
        assert walk[f] <= 2, f"{f}: entered {walk[f]} times (at most twice)"
    # the walk did reach the device's counting (a walk that stopped early would meet any bound)
    for f in ("secperf/inputs/devices.py", "secperf/app/device_counts.py", "secperf/app/device_stacks.py"):
        assert walk[f] >= 1, f"{f}: the walk never entered it"
    gone = sorted(f for f in NOT_YET if f not in over)
    assert not gone, f"no longer entered more than twice, take it off NOT_YET: {gone}"
    # the library's callbacks are counted apart, not lost: pydantic validated the device rows
    assert e.callbacks_to_cycles["secperf/core/result_schema.py"] > 0
    # the command's parser is built once per run: after parsing, the walk never builds its options again
    assert e.walk_parsed["secperf/subcommands/parsers/whatif.py"] == 0
    assert e.walk_parsed["secperf/subcommands/argtypes.py"] <= 2
