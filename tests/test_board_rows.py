"""The published board rows (data/boards.toml) and how benchmarks/device_boards.py counts them.

Structure only: every build configuration a row names exists for the row's library, a board whose
instruction cache is marked off says why, and such a board is counted on its profile without that
cache (everything else of the profile kept); the STM32Cube pack's builds keep the pack's small stack."""

from __future__ import annotations

import tomllib
from importlib import resources

import pytest

from conftest import load_benchmark
from secperf.inputs.devices import core


def _data(name: str) -> dict:
    return tomllib.loads(resources.files("secperf.data").joinpath(name).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def device_boards():
    yield from load_benchmark("device_boards.py")


def test_every_build_configuration_a_matched_row_names_exists_for_its_library(device_boards):
    configs = _data("device_builds.toml")["configs"]
    run, _skipped = device_boards.plan_rows(device_boards.load(), None)
    named = [r for r in run if r.get("config")]
    assert len(named) >= 50
    missing = [
        (r["board"], r["operation"], r["config"])
        for r in named
        if r["config"] not in configs or r["stack"] not in configs[r["config"]]["stacks"]
    ]
    assert missing == []


def test_a_board_marked_without_instruction_cache_or_with_its_prefetch_gives_its_evidence():
    boards = _data("boards.toml")["boards"]
    off = [k for k, b in boards.items() if b.get("icache") is False]
    assert off, "no board is marked icache = false"
    for k in off:
        assert len(boards[k].get("icache_source", "")) > 40, k
    for k in (k for k, b in boards.items() if "prefetch" in b):
        assert isinstance(boards[k]["prefetch"], bool) and len(boards[k].get("prefetch_source", "")) > 40, k


def test_the_stm32cube_pack_builds_keep_the_packs_small_stack(device_boards):
    # the pack's generated configuration defines WOLFSSL_SMALL_STACK for every build: a matched row of a
    # source marked so, built with a configuration sourced from the pack, is built with it too
    configs = _data("device_builds.toml")["configs"]
    sources = _data("boards.toml")["sources"]
    marked = {k for k, s in sources.items() if s.get("small_stack") is True}
    assert marked
    for k in marked:
        assert len(sources[k].get("small_stack_source", "")) > 40, k
    run, _skipped = device_boards.plan_rows(device_boards.load(), None)
    pack = {
        r["config"]
        for r in run
        if r["source"] in marked and r.get("config") and "default_conf.ftl" in configs[r["config"]]["source"]
    }
    assert {"bigint-os", "sp-c-small-os", "sp-small-os", "sp-int-small-os"} <= pack
    assert [c for c in sorted(pack) if "WOLFSSL_SMALL_STACK" not in configs[c]["define"]] == []


def test_such_a_board_is_counted_on_its_profile_without_the_cache(device_boards):
    dev = core("cortex-m33-110")
    assert dev.timing is not None and dev.timing.geometry["icache_entries"] > 0
    assert device_boards.board_core({"clock_mhz": 110}, dev) is None
    assert device_boards.board_core({"icache": True}, dev) is None
    off = device_boards.board_core({"icache": False}, dev)
    assert off is not None and off.name != dev.name
    assert off.timing.geometry["icache_entries"] == 0 and off.timing.geometry["icache_ways"] == 0
    # an M33 reads flash data through the same cache (C-AHB): that goes too; nothing else changes
    assert off.timing.geometry["dcache_entries"] == 0
    kept = ("icache_", "dcache_")
    rest = {k: v for k, v in off.timing.geometry.items() if not k.startswith(kept)}
    assert rest == {k: v for k, v in dev.timing.geometry.items() if not k.startswith(kept)}
    m4 = device_boards.board_core({"icache": False}, core("cortex-m4-80"))
    assert m4 is not None and m4.timing.geometry["icache_entries"] == 0
    assert m4.timing.geometry["dcache_entries"] == core("cortex-m4-80").timing.geometry["dcache_entries"]
    assert off.timing.costs == dev.timing.costs and off.clock_mhz == dev.clock_mhz
    # the prefetch as the board set it, with or without the cache
    pf = device_boards.board_core({"prefetch": True}, dev)
    assert pf is not None and pf.timing.costs["no_prefetch"] == (0.0, 0.0, 0.0)
    assert pf.timing.geometry == dev.timing.geometry
    both = device_boards.board_core({"icache": False, "prefetch": False}, core("cortex-m4-80"))
    assert both is not None and both.timing.costs["no_prefetch"] == (1.0, 1.0, 1.0)
    assert both.timing.geometry["icache_entries"] == 0 and both.name != off.name
    # an A-profile core has no flash cache to remove
    assert device_boards.board_core({"icache": False}, core("cortex-a7-900")) is None


def test_a_sources_own_a_profile_build_is_the_one_its_a_profile_rows_are_counted_with(device_boards):
    # p256-m's Raspberry Pi figures come from a benchmark built on the board (ARM state, its own
    # architecture), its Cortex-M figures from a Thumb build: a source that records the flags of its
    # A-profile build has those rows counted with a configuration built with exactly those flags, and its
    # M-profile rows with one that is not
    configs = _data("device_builds.toml")["configs"]
    data = _data("boards.toml")
    marked = {k: s for k, s in data["sources"].items() if "a_profile_flags" in s}
    assert marked
    for k, s in marked.items():
        assert len(s.get("a_profile_flags_source", "")) > 40, k
    run, _skipped = device_boards.plan_rows(device_boards.load(), None)
    by_profile: dict[str, set[str]] = {"A": set(), "M": set()}
    for r in run:
        if r["source"] in marked and r.get("config"):
            by_profile[core(data["boards"][r["board"]]["profile"]).profile].add(r["config"])
    assert by_profile["A"] and by_profile["M"]
    flags = {s["a_profile_flags"] for s in marked.values()}
    assert {configs[c]["opt"] for c in by_profile["A"]} <= flags
    assert [c for c in sorted(by_profile["M"]) if "-marm" in configs[c]["opt"]] == []
    assert by_profile["A"].isdisjoint(by_profile["M"])


def _crypto_series(cycles: list[tuple[float, float, float]] | None, ins: list[int]):
    """A made-up device-crypto series: a cold repetition then warm ones, as measure_crypto makes it."""
    from secperf.core import result as R
    from secperf.core.result_schema import DeviceCryptoDerived, DeviceTime

    s = R.new_series(
        "device-crypto/x/pqclean/ml-dsa-44-sign",
        kind="device_crypto",
        labels={"op": "ml-dsa-44-sign"},
        timer={"name": "guest instructions per operation", "start": "OP_BEGIN", "end": "OP_END"},
    )
    s.samples = [
        {
            "i": i,
            "instructions": c,
            "phase": "cold" if i == 0 else "warm",
            **({"cycles": list(cycles[i])} if cycles else {}),
        }
        for i, c in enumerate(ins)
    ]
    warm_ins = sorted(ins[1:])
    d = DeviceCryptoDerived(instructions_cold=ins[0], instructions_median=warm_ins[len(warm_ins) // 2])
    d.time = DeviceTime(cycles=1000.0, cycles_low=900.0, cycles_high=1100.0)
    s.derived = d
    return s


def test_a_rejection_loop_row_compares_the_mean_of_its_warm_repetitions(device_boards):
    # pqm4's ML-DSA sign rows are the rejection-loop ones, counted over MEAN_REPS signatures at least
    assert device_boards.rejection_loop("ml-dsa-44-sign") and device_boards.rejection_loop("ml-dsa-65-sign")
    assert not any(
        device_boards.rejection_loop(o) for o in ("ml-dsa-44-verify", "ml-kem-512-encaps", "ecdsa-p256-sign")
    )
    assert device_boards.MEAN_REPS >= 40
    run, _skipped = device_boards.plan_rows(device_boards.load(), None)
    assert [r for r in run if r["pqm4"] and device_boards.rejection_loop(r["op"])]

    # the cold repetition (index 0) is left out of the mean; each rep's (low, point, high) is averaged
    cyc = [(1e6, 2e6, 3e6), (10.0, 20.0, 30.0), (10.0, 20.0, 30.0), (40.0, 80.0, 120.0), (10.0, 20.0, 30.0)]
    s = _crypto_series(cyc, [500, 100, 100, 400, 100])
    med = device_boards.rep_figure(s, mean=False)
    assert med["statistic"] == "median" and med["cycles"] == (900.0, 1000.0, 1100.0) and "first_n" not in med
    m = device_boards.rep_figure(s, mean=True, first_n=3)
    assert m["statistic"] == "mean" and m["reps"] == 4
    assert m["cycles"] == (17.5, 35.0, 52.5) and m["instructions"] == 175.0
    assert m["first_n"] == {"reps": 3, "cycles": (10.0, 20.0, 30.0)}
    assert m["sem"] > 0 and "standard error" in m["note"]

    # no per-repetition cycles: the median scaled by the instructions' mean/median, and the note says so
    sc = device_boards.rep_figure(_crypto_series(None, [500, 100, 100, 400, 100]), mean=True)
    assert sc["statistic"] == "mean" and "scaled" in sc["note"]
    assert sc["cycles"] == (900.0 * 1.75, 1000.0 * 1.75, 1100.0 * 1.75)

    row = {"statistic": "mean", "reps": 4, "statistic_note": m["note"], "published_ms": 1.0}
    assert "mean of 4 signatures" in device_boards.compared_note(row)
    assert device_boards.compared_note({"statistic": "median"}) == ""


def test_a_row_whose_version_is_in_doubt_is_planned_and_listed_apart_from_the_targets(device_boards):
    run, _ = device_boards.plan_rows(device_boards.load(), "stm32l4a6-80")
    doubt = [r for r in run if r["version_match"] == "doubt"]
    assert doubt and all(r["version_doubt"] for r in doubt)  # each says why
    # the 5.6 series' rows are counted on the 5.6.6 build, in doubt or not
    assert {r["stack"] for r in run if str(r.get("version")).startswith("5.6")} == {"wolfssl56"}
    for r in run:  # pretend every row was predicted 5 % slow, the doubtful ones 50 %
        r.update(error=0.5 if r in doubt else 0.05, in_band=True, cpi_in_range=True, published_ms=1.0, cpi_high_ms=2.0)
    counted = device_boards.summary(run, None, ("exact", "nearest"), device_boards.KNOWN_CONFIG_BOARDS)
    apart = device_boards.summary(run, None, ("doubt",))
    assert counted["worst_abs_error"] == 0.05 and apart["rows"] == len(doubt) and apart["worst_abs_error"] == 0.5
