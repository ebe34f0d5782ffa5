"""Cortex-M instruction counts under QEMU (cross-compiled kernels + our TCG plugin)."""

import json

import pytest

from secperf.measure import cortexm as C


@pytest.fixture(scope="module")
def table():
    return C.measure(("m0", "m3"))


def test_every_firmware_tag_matches_the_host_implementation(table):
    rows = [r for t in table["targets"].values() for r in t["rows"] if r["op"] == "mac"]
    assert len(rows) == 2 * len(C.MACS) * len(C.SIZES)
    assert [r for r in rows if not r["tag_ok"]] == []


def test_table_is_identical_across_two_runs(table):
    again = C.measure(("m0", "m3"))
    assert json.dumps(again, sort_keys=True) == json.dumps(table, sort_keys=True)


def test_counts_grow_with_length_and_chaskey_is_cheaper_than_aes_cmac(table):
    for tname, t in table["targets"].items():
        by = {(r["mac"], r["bytes"]): r["instructions"] for r in t["rows"] if r["op"] == "mac"}
        for mac in C.MACS:
            counts = [by[(mac, n)] for n in C.SIZES]
            assert counts[-1] > counts[0], (tname, mac, counts)
        for n in C.SIZES:  # study S4's finding, here as instruction counts
            assert by[("chaskey", n)] < by[("aes-128-cmac", n)], (tname, n)


def test_each_mac_has_its_code_size_and_painted_stack(table):
    """Footprint next to speed: every MAC row carries the stack its tag computation wrote (painted,
    the empty region's depth subtracted) and every MAC its code size; Chaskey's state is four words,
    SHA-256's message schedule alone is 64, so HMAC-SHA256 goes deeper than Chaskey."""
    for tname, t in table["targets"].items():
        rows = [r for r in t["rows"] if r["op"] == "mac"]
        assert all(0 < r["stack_bytes"] < 3 * 1024 for r in rows), (tname, rows)
        deepest = {mac: max(r["stack_bytes"] for r in rows if r["mac"] == mac) for mac in C.MACS}
        assert deepest["hmac-sha256"] > deepest["chaskey"] + 64 * 4 // 2, (tname, deepest)
        assert set(t["code"]) == set(C.MACS)
        assert all(c["text"] > 0 for c in t["code"].values())
        assert t["code"]["chaskey"] == t["code"]["chaskey-12"]  # one source, two round counts


def test_m0_needs_more_instructions_than_m3_for_the_same_code(table):
    m0 = {(r["mac"], r["bytes"]): r["instructions"] for r in table["targets"]["m0"]["rows"] if r["op"] == "mac"}
    m3 = {(r["mac"], r["bytes"]): r["instructions"] for r in table["targets"]["m3"]["rows"] if r["op"] == "mac"}
    assert all(m0[k] > m3[k] for k in m3)


def test_unknown_target_is_refused_naming_the_known_ones():
    with pytest.raises(C.CortexMError, match="known: m0, m3, m4"):
        C.measure(("m7",))


def test_series_carry_the_lower_bound_label(table):
    series = C.to_series(table)
    assert series and all(s.kind == "cortexm" and "lower bound" in s.labels["note"] for s in series)
    assert all(s.status == "ok" for s in series)


def test_device_profiles_hold_the_counts_this_toolchain_measures(table):
    """data/devices.toml's *-qemu profiles must be what `secperf mac --cortexm-only` measures now."""
    from secperf.inputs.devices import devices

    for tname in ("m0", "m3"):
        prof = devices()[f"cortex-{tname}-qemu"]["macs"]
        for mac in C.MACS:
            measured = {
                r["bytes"]: r["instructions"]
                for r in table["targets"][tname]["rows"]
                if r["mac"] == mac and r["op"] == "mac"
            }
            stored = {int(k): v for k, v in prof[mac]["instructions"].items()}
            assert stored == measured, (tname, mac)


@pytest.mark.slow  # > 10 s: runs in `make test-slow` (CI runs it after `make test`)
def test_one_command_writes_the_same_table_twice(tmp_path):
    from conftest import run_cli

    files = []
    for i in range(2):
        f = tmp_path / f"table{i}.json"
        p = run_cli("mac", "--cortexm-only", "--cortexm-table", str(f), "--out", str(tmp_path / "r"), "--no-report")
        assert p.returncode == 0, p.stderr
        files.append(f.read_bytes())
    assert files[0] == files[1]
    assert json.loads(files[0])["targets"].keys() == {"m0", "m3"}
