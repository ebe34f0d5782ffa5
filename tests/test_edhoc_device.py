"""EDHOC (lakers) cross-built for the Cortex-M4F and counted under qemu-arm (measure/edhoc_device.py)."""

from __future__ import annotations

import shutil

import pytest

from conftest import skip
from secperf.core.errors import SetupError
from secperf.measure import edhoc_device as D


def _ready() -> None:
    """Cargo, the cross-compiler and qemu-arm (scripts/bootstrap installs them) and the counting plugin,
    built through the device lab's own build when missing."""
    for exe in ("cargo", "arm-linux-gnueabihf-gcc", "qemu-arm"):
        if not shutil.which(exe):
            skip("needs-bootstrap", f"{exe} is not installed (scripts/bootstrap installs it)")
    try:
        D.plugin()
    except D.EdhocDeviceError:
        from secperf.measure.device_build import STACKS, ensure_built
        try:
            ensure_built(next(iter(STACKS)))   # any device build makes the plugin too
        except SetupError as exc:
            skip("needs-bootstrap", f"the device lab cannot build the counting plugin: {exc}")


def test_plugin_marker_lines_become_per_step_counts():
    text = "\n".join(["# insn_events v1", "100 M 1 0", "150 M 9 1", "1150 M 10 1", "2000 M 9 2", "5000 M 10 2",
                      "5001 M 9 3", "5101 M 10 3", "5102 M 9 4", "5112 M 10 4", "6000 M 2 1"])
    (hs,) = D.parse_events(text)
    assert hs["ok"] and hs["handshake_total"] == 5900
    assert hs["steps"] == {"message_1": 1000, "message_2": 3000, "message_3": 100, "oscore_export": 10}


@pytest.mark.slow
def test_edhoc_counted_on_the_cortex_m4_with_the_rfc_sizes():
    _ready()
    try:
        got = D.count("cortex-m4-80", 2)
    except D.EdhocDeviceError as exc:
        if "rustup target add" in str(exc):
            skip("optional-toolchain", str(exc))
        if "crates" in str(exc):
            skip("needs-bootstrap", f"scripts/bootstrap fetches the crates with cargo: {exc}")
        raise
    assert got["sizes"] == {"message_1": 37, "message_2": 45, "message_3": 19}
    i = got["instructions"]
    # message_2 holds three P-256 scalar multiplications, message_1 one (the ephemeral key), message_3 none
    assert i["message_2"] > 2 * i["message_1"] > 20 * i["message_3"] > 0
    assert got["initiator_total"] == sum(i.values()) < got["process_total_per_handshake"]


def test_edhoc_device_refuses_a_core_it_has_no_build_for():
    with pytest.raises(D.EdhocDeviceError, match="cortex-m0plus-64"):
        D.count("cortex-m0plus-64", 2)
