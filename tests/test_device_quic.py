"""QUIC counted on the emulated A-profile cores: ngtcp2 + GnuTLS (Debian armhf) under qemu-arm against
aioquic on loopback (measure/quic_device.py, native/device/quic)."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import run_cli, skip
from secperf.core.errors import InputError, SetupError
from secperf.inputs.devices import resolve_core
from secperf.measure import device_attrib as A
from secperf.measure import quic_device as QD


def _marks(*rows: tuple[int, int, int]) -> list[A.Event]:
    return [A.Event(count, "M", kind, arg) for count, kind, arg in rows]


def test_marker_lines_become_the_handshake_messages_and_the_exchange():
    events = _marks(
        (100, A.HS_BEGIN, 0),
        (1100, A.STEP, QD.QM_FLIGHT),
        (1300, A.STEP, QD.QM_RECV | 2),
        (4000, A.STEP, QD.QM_RECV | 8),
        (4100, A.STEP, QD.QM_RECV | 20),
        (4300, A.STEP, QD.QM_SENT | 20),
        (5000, A.STEP, QD.QM_APP),
        (5200, A.STEP, QD.QM_RECV | 4),
        (5250, A.STEP, QD.QM_APP),
        (5600, A.HS_END, 1),
    )
    (c,) = QD.connections(events)
    got = {(m["dir"], m["message"]): m["instructions"] for m in c["messages"]}
    # the server's first datagram before GnuTLS takes the ServerHello is the ServerHello's
    assert got == {
        ("sent", "ClientHello"): 1000,
        ("received", "ServerHello"): 2900,
        ("received", "EncryptedExtensions"): 100,
        ("received", "Finished"): 200,
        ("sent", "Finished"): 700,
    }
    app = {m["message"]: m["instructions"] for m in c["app_parts"]}
    assert app == {"request → response": 550, "NewSessionTicket": 50}
    assert c["ok"] and sum(got.values()) + sum(app.values()) == c["total"] == 5500


def test_a_failed_connection_is_marked_as_such():
    (c,) = QD.connections(_marks((0, A.HS_BEGIN, 3), (10, A.STEP, QD.QM_FLIGHT), (50, A.HS_END, 0)))
    assert c["index"] == 3 and not c["ok"] and c["total"] == 50


def test_quic_on_a_microcontroller_core_exits_2_naming_why(tmp_path):
    p = run_cli("device", "handshake", "--tls", "quic", "--device", "cortex-m4-80", "--out", str(tmp_path), timeout=120)
    assert p.returncode == 2, p.stderr
    assert "A-profile cores only" in p.stderr and "bare-metal Cortex-M" in p.stderr
    assert "cortex-a7-800" in p.stderr  # the cores it is counted on are named
    assert "Traceback" not in p.stderr


def test_quic_plan_names_its_stack_and_its_modes():
    with pytest.raises(InputError, match="ngtcp2 only"):
        QD.plan(resolve_core("cortex-a9-400"), "wolfssl", "full", "x25519", "aes128gcm", "rsa-2048")
    with pytest.raises(InputError, match="full, resumed, 0rtt"):
        QD.plan(resolve_core("cortex-a9-400"), "ngtcp2", "psk", "x25519", "aes128gcm", "rsa-2048")
    got = QD.plan(resolve_core("cortex-a9-400"), "ngtcp2", "full,0-rtt", "x25519,p-256", "aes128gcm", "rsa-2048")
    assert [(c.mode, c.group) for c in got] == [
        ("full", "x25519"),
        ("full", "p-256"),
        ("0rtt", "x25519"),
        ("0rtt", "p-256"),
    ]


def test_quic_does_not_mix_with_the_tls_versions():
    from secperf.app.device import HandshakeOptions, handshake_phase

    with pytest.raises(InputError, match="run of its own"):
        handshake_phase(HandshakeOptions(device="cortex-a7-800", tls="quic,1.3"))


def _ready() -> None:
    for exe in ("arm-linux-gnueabihf-gcc", "qemu-arm"):
        if not shutil.which(exe):
            skip("needs-bootstrap", f"{exe} is not installed (scripts/bootstrap installs it)")
    try:
        QD.ensure_built()
    except SetupError as exc:
        skip("needs-bootstrap", f"the QUIC device client cannot be built: {exc}")


@pytest.mark.slow
def test_quic_counted_per_message_on_the_cortex_a7(tmp_path):
    """One run of the three handshakes: each series is a device row shaped like the TLS ones, its
    messages sum to the handshake's count, and the abbreviated handshakes count fewer instructions."""
    _ready()
    p = run_cli(
        "device",
        "handshake",
        "--tls",
        "quic",
        "--device",
        "cortex-a7-800",
        "--mode",
        "full,resumed,0rtt",
        "--group",
        "x25519",
        "--n",
        "2",
        "--warmup",
        "0",
        "--out",
        str(tmp_path),
        "--json",
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    series = {(s["labels"]["mode"], s["labels"]["phase"]): s for s in json.loads(p.stdout)["series"]}
    assert set(series) == {(m, ph) for m in ("full", "resumed", "0rtt") for ph in ("cold", "warm")}
    for (mode, _), s in series.items():
        assert s["kind"] == "device" and s["status"] == "ok", s["failures"]
        labels = s["labels"]
        assert (labels["tls"], labels["stack"], labels["group"]) == ("quic", "ngtcp2", "x25519")
        assert labels["library"].startswith("ngtcp2 0.12.1 + GnuTLS 3.7.")
        for smp in s["samples"]:
            assert sum(m["instructions"] for m in smp["messages"]) == smp["instructions"]
            assert smp["instructions"] + smp["app_instructions"] == smp["connection_instructions"]
            assert sum(m["instructions"] for m in smp["app_parts"]) == smp["app_instructions"]
            assert smp["resumed"] == (mode != "full")
            assert smp["early_data_accepted"] == (mode == "0rtt")
            assert smp["negotiated_group"] == "X25519"
            # the timing model's cycles are partitioned by the same rule
            assert sum(m["cycles"][1] for m in smp["messages"]) == pytest.approx(
                smp["cycles"][1], abs=len(smp["messages"])
            )
        d = s["derived"]
        assert d["instructions_median"] > 0 and d["time"]["ms_low"] <= d["time"]["ms"] <= d["time"]["ms_high"]
        names = {(m["dir"], m["message"]) for m in d["messages"]}
        assert {("sent", "ClientHello"), ("received", "ServerHello"), ("sent", "Finished")} <= names
        # a full handshake authenticates the server by its certificate; a resumed one by the ticket's key
        assert (("received", "CertificateVerify") in names) == (mode == "full")
    full = series[("full", "warm")]["derived"]["instructions_median"]
    for mode in ("resumed", "0rtt"):
        assert series[(mode, "warm")]["derived"]["instructions_median"] < full
    # the request leaves with the ClientHello in 0-RTT: less is left for the exchange after the handshake
    assert (
        series[("0rtt", "warm")]["derived"]["app_instructions_median"]
        < series[("resumed", "warm")]["derived"]["app_instructions_median"]
    )


def test_a_value_known_elsewhere_but_not_for_quic_is_refused_naming_quic():
    """chacha20 is a device suite for TLS, not for the QUIC client here: the refusal says it is QUIC's list."""
    a7 = resolve_core("cortex-a7-800")
    with pytest.raises(InputError) as e:
        QD.plan(a7, "ngtcp2", "full", "x25519", "chacha20", "ecdsa-p256")
    assert "--suite" in str(e.value) and "chacha20" in str(e.value) and "--tls quic" in str(e.value)
