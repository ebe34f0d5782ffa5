"""The CAN bus load model: hand-computed cases (study S4's bus) and bad inputs."""

import pytest

from secperf.model.can import CanInputError, CanParams, canfd_frame_bits, evaluate, fd_defaults, sweep


def test_s4_bus_chaskey_on_rl78_by_hand():
    # S4 defaults: 216 kbps of frames the RL78 handles, 108-bit frames, 10 ms -> 20 frames/period.
    # k = 1: 20 tags, each over 8 bytes = one 16-byte block at 1357 cycles -> 27,140 cycles
    # of 32 MHz * 10 ms = 320,000 -> 8.48125 % CPU. 20 extra 108-bit frames = 2,160 bits of the
    # 10,000 bits per period -> 21.6 % extra, 43.2 % total (under the 50 % share).
    r = evaluate(CanParams(device="rl78", mac="chaskey", mac_every=1))
    assert r["frames_per_period"] == 20
    assert r["cycles_per_frame_budget"] == pytest.approx(16_000)  # S4: 16,000 cycles per frame
    assert r["mac_cycles_per_period"] == pytest.approx(27_140)
    assert r["cpu_load"] == pytest.approx(0.0848125)
    assert r["extra_bus_load"] == pytest.approx(0.216)
    assert r["bus_load"] == pytest.approx(0.432)
    assert r["fits_bus"] and r["fits_period"] and r["within_cpu_budget"]


def test_k_three_covers_24_bytes_in_two_blocks_by_hand():
    # k = 3: 20/3 tags per period, each over 24 bytes = 2 blocks of 3855 cycles (AES on RL78)
    # -> 20/3 * 7710 = 51,400 cycles -> 16.0625 % CPU; extra bus 20/3 * 108 / 10,000 = 7.2 %.
    r = evaluate(CanParams(device="rl78", mac="aes-128-cmac", mac_every=3))
    assert r["bytes_per_tag"] == 24
    assert r["mac_cycles_per_period"] == pytest.approx(51_400)
    assert r["cpu_load"] == pytest.approx(0.160625)
    assert r["extra_bus_load"] == pytest.approx(0.072)


def test_best_k_is_the_smallest_k_within_budget():
    # AES-CMAC on RL78 at k = 1: 20 * 3855 / 320,000 = 24.1 %; k = 2: 10 * 3855 -> 12.05 %;
    # k = 4: 5 tags * 2 blocks -> 12.05 %; k = 3: 16.06 %; k = 6: 20/6 * 3 blocks -> 12.05 %.
    s = sweep(CanParams(device="rl78", mac="aes-128-cmac", cpu_budget=0.13))
    assert s["best_k"] == 2
    assert sweep(CanParams(device="rl78", mac="aes-128-cmac", cpu_budget=0.05))["best_k"] is None
    assert sweep(CanParams(device="rl78", mac="chaskey", cpu_budget=0.10))["best_k"] == 1


def test_published_cycles_per_byte_apply_per_block_and_measured_counts_are_lower_bounds():
    r = evaluate(CanParams(device="cortex-m3", mac="chaskey", frames_per_period=10, clock_hz=1e6))
    assert r["cost_per_tag"] == pytest.approx(7.0 * 16)
    assert r["cpu_load"] == pytest.approx(10 * 112 / 10_000)
    q = evaluate(CanParams(device="cortex-m3-qemu", mac="chaskey"))
    assert q["lower_bound"] and q["cost_unit"] == "instructions"


def test_can_fd_carries_the_tag_in_frame():
    assert canfd_frame_bits(64) == 579  # 22 + 512 + 4 + 21 + 7 + 13
    r = evaluate(fd_defaults(device="rl78", mac="chaskey", frames_per_period=3))
    assert r["extra_bus_load"] == 0.0
    assert r["bytes_per_tag"] == 56
    assert r["mac_cycles_per_period"] == pytest.approx(3 * 4 * 1357)  # 56 bytes -> 4 blocks
    assert r["tag_payload_share"] == pytest.approx(8 / 64)


@pytest.mark.parametrize(
    "kwargs,needle",
    [
        ({"mac_every": 0}, "mac every (k): 0 is outside 1..8"),
        ({"mac_every": 9}, "outside 1..8"),
        ({"data_bytes": 12}, "more than classic CAN carries (8 bytes"),
        ({"fd": True, "data_bytes": 60, "frame_bits": 579}, "does not fit a 64-byte CAN FD frame"),
        ({"frame_bits": 20_000}, "the bus cannot carry it"),
        ({"device": "pdp-11"}, "unknown device 'pdp-11'; known: cortex-m3"),
        ({"device": "rl78", "mac": "hmac-sha256"}, "has no figure for MAC 'hmac-sha256'"),
        ({"tag_bytes": 17}, "tag bytes: 17 must be 1..16"),
    ],
)
def test_bad_inputs_fail_with_the_field_and_the_fix(kwargs, needle):
    with pytest.raises(CanInputError) as exc:
        evaluate(CanParams(**kwargs))
    assert needle in str(exc.value)


# --- the command ---------------------------------------------------------------------------------

import json  # noqa: E402

from conftest import run_cli  # noqa: E402


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--k", "0"], "--k 0: outside 1..8"),
        (["--data-bytes", "12"], "more than classic CAN carries"),
        (["--frame-bits", "20000"], "the bus cannot carry it"),
        (["--device", "pdp-11"], "unknown device 'pdp-11'"),
    ],
)
def test_cli_bad_inputs_exit_2_with_a_clear_message(tmp_path, args, needle):
    p = run_cli("can", "--out", str(tmp_path), *args)
    assert p.returncode == 2, p.stderr
    assert needle in p.stderr


def test_cli_writes_the_analysis_for_classic_can_and_can_fd(tmp_path):
    p = run_cli("can", "--out", str(tmp_path), "--json", "--device", "rl78,cortex-m3-qemu", "--mac", "chaskey")
    assert p.returncode == 0, p.stderr
    can = json.loads(p.stdout)["analysis"]["can"]
    assert [s["device"] for s in can["sweeps"]] == ["rl78", "cortex-m3-qemu"]
    assert [r["k"] for r in can["sweeps"][0]["rows"]] == list(range(1, 9))
    assert can["sweeps"][0]["rows"][0]["cpu_load"] == pytest.approx(0.0848125)
    assert can["fd"]["params"]["fd"] is True and can["fd"]["sweeps"][0]["rows"][0]["extra_bus_load"] == 0
    html = next(tmp_path.glob("*-can/report.html")).read_text()
    assert "CPU load of MAC computation against k" in html
