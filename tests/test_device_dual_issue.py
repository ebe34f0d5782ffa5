"""The Cortex-A7's partial dual issue in the timing model (native/device/plugin/dual_issue.h): kernels of
16 instructions each (native/device/kernels/a7_pairs.S), the same length, alignment and markers, so
they differ only in how their instructions issue. Structure, never wall time."""

import dataclasses

import pytest

from secperf.inputs import devices as S
from secperf.measure import device_timing as T
from secperf.measure.device_build import _run, sources_dir, tool

PAIRS, CHAIN, REG_OPERANDS, FLAGS = 2, 3, 4, 5


@pytest.fixture(scope="module")
def a7_kernels(tmp_path_factory):
    work = tmp_path_factory.mktemp("a7-kernels")
    _m4, plugin = T.build_kernels(work)  # the counting plugin (and the M4 kernels beside it)
    exe = work / "a7_pairs"
    cc = tool("arm-linux-gnueabihf-gcc", "gcc-arm-linux-gnueabihf")
    src = sources_dir() / "kernels" / "a7_pairs.S"
    _run([cc, "-nostdlib", "-static", "-marm", "-mcpu=cortex-a7", "-o", str(exe), str(src)], "building a7_pairs", 120)
    return exe, plugin, work


def test_independent_pairs_take_half_the_cycles_of_a_dependent_chain(a7_kernels):
    """Eight independent ADD #imm pairs issue in 8 cycles, a chain of 16 dependent ADDs in 16; the high
    set charges the younger of a pair half a cycle (8 x 0.5 more)."""
    exe, plugin, work = a7_kernels
    a7 = S.core("cortex-a7-900")
    assert a7.timing.costs["alu"] == (1.0, 1.0, 1.0)
    assert a7.timing.costs["dual_issue"] == (0.0, 0.0, 0.5)
    got = T.run_kernels(a7, exe, plugin, work)
    diff = [c - p for p, c in zip(got[PAIRS], got[CHAIN])]
    assert diff == [8.0, 8.0, 4.0], (got[PAIRS], got[CHAIN])


def test_register_operands_and_flag_dependences_do_not_pair(a7_kernels):
    """A register operand cannot take the second slot; a conditional instruction after a compare reads
    the flags the compare writes, and a compare after a flag-setting instruction writes them again: both
    kernels issue one instruction a cycle, as the chain does."""
    exe, plugin, work = a7_kernels
    got = T.run_kernels(S.core("cortex-a7-900"), exe, plugin, work)
    assert got[REG_OPERANDS] == got[CHAIN]
    assert got[FLAGS] == got[CHAIN]


def test_a_model_without_dual_issue_pairs_nothing(a7_kernels):
    """The same kernels on the Cortex-A7 profile with the rule removed (no dual_issue cost), and on the
    Cortex-A9 model (which folds its dual issue into the class costs): pairs and chain cost the same."""
    exe, plugin, work = a7_kernels
    a7 = S.core("cortex-a7-900")
    costs = {k: v for k, v in a7.timing.costs.items() if k != "dual_issue"}
    off = dataclasses.replace(a7, timing=dataclasses.replace(a7.timing, costs=costs))
    got = T.run_kernels(off, exe, plugin, work)
    assert got[PAIRS] == got[CHAIN]
    a9 = T.run_kernels(S.core("cortex-a9-400"), exe, plugin, work)
    assert "dual_issue" not in S.core("cortex-a9-400").timing.costs
    assert a9[PAIRS] == pytest.approx(a9[CHAIN])
