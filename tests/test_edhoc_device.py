"""EDHOC + OSCORE on the emulated devices: secperf's C initiator (native/device/edhoc_c) on the
crypto of the wolfssl59 and mbedtls3 builds, each checked against RFC 9529's trace 2 and RFC 8613's OSCORE test vectors,
counted per step under qemu-arm against the host's lakers responder (measure/edhoc_device.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from conftest import skip
from secperf.core.errors import SetupError
from secperf.inputs.devices import resolve_core
from secperf.measure import device_attrib as A
from secperf.measure import edhoc_device as E

# RFC 9529 Section 3 (trace 2: method 3, cipher suite 2 after SUITES_I = [6, 2], kid credentials)
TRACE2 = {
    "i": "fb13adeb6518cee5f88417660841142e830a81fe334380a953406a1305e8706b",
    "x": "368ec1f69aeb659ba37d5a8d45b21bdc0299dceaa8ef235f3ca42ce3530f9525",
    "cred_i": "a2027734322d35302d33312d46462d45462d33372d33322d333908a101a5010202412b2001215820ac75e9ece3e50bfc8ed6"
    "0399889522405c47bf16df96660a41298cb4307f7eb62258206e5de611388a4b8a8211334ac7d37ecb52a387d257e6db3c2a"
    "93df21ff3affc8",
    "cred_r": "a2026b6578616d706c652e65647508a101a501020241322001215820bbc34960526ea4d32e940cad2a234148ddc21791a12a"
    "fbcbac93622046dd44f02258204519e257236b2a0ce2023f0931f1f386ca7afda64fcde0108c224c51eabf6072",
    "suites": "820602",
    "c_i": "37",
}
TRACE2_M1 = "0382060258208af6f430ebe18d34184017a9a11bf511c8dff8f834730b96c1b7c8dbca2fc3b637"
TRACE2_M2 = "582b419701d7f00a26c2dc587a36dd752549f33763c893422c8ea0f955a13a4ff5d59862a1eef9e0e7e1886fcd"
TRACE2_M3 = "52e562097bc417dd5919485ac7891ffd90a9fc"
TRACE2_KEYS = {
    "th_2": "356efd53771425e008f3fe3a86c83ff4c6b16e57028ff39d5236c182b202084b",
    "prk_2e": "5aa0d69f3e3d1e0c479f0b8a486690c9802630c3466b1dc92371c982563170b5",
    "prk_3e2m": "0ca3d3398296b3c03900987620c11f6fce70781c1d1219720f9ec08c122d8434",
    "th_3": "adaf67a78a4bcc91e018f8882762a722000b2507039df0bc1bbf0c161bb3155c",
    "prk_4e3m": "81cc8a298e357044e3c466bb5c0a1e507e01d49238aeba138df94635407c0ff7",
    "th_4": "c902b1e3a4326c93c5551f5f3aa6c5ecc0246806765612e52b5d99e6059d6b6e",
    "prk_out": "2c71afc1a9338a940bb3529ca734b886f30d1aba0b4dc51beeaeabdfea9ecbf8",
    "master_secret": "f9868f6a3aca78a05d1485b35030b162",
    "master_salt": "ada24c7dbfc85eeb",
}
# RFC 8613 Appendix C.1.1 (client) and C.4 (GET coap://localhost/tv1, sequence number 20)
C4_IN = (
    "secret 0102030405060708090a0b0c0d0e0f10\nsalt 9e7ca92223786340\nsid \nrid 01\nseq 20\n"
    "request 44015d1f00003974396c6f63616c686f737483747631\n"
)
C4_OUT = {
    "sender_key": "f0910ed7295e6ad4b54fc793154302ff",
    "recipient_key": "ffb14e093c94c9cac9471648b4f98710",
    "common_iv": "4622d4dd6d944168eefb54987c",
    "protected": "44025d1f00003974396c6f63616c686f7374620914ff612f1092f1776f1c1668b3825e",
}


def _build(stack: str) -> E.EdhocBuild:
    """The initiator for the Cortex-M4 on the stack's crypto (built once, cached like every device build)."""
    for exe in ("arm-linux-gnueabihf-gcc", "qemu-arm", "make"):
        if not shutil.which(exe):
            skip("needs-bootstrap", f"{exe} is not installed (scripts/bootstrap installs it)")
    try:
        return E.build("cortex-m4", stack=stack)
    except SetupError as exc:
        if "sources" in str(exc) and "bootstrap" in str(exc):
            skip("needs-bootstrap", f"the {stack} sources are fetched by scripts/bootstrap: {exc}")
        raise


@pytest.fixture(scope="module", params=list(E.CRYPTO))
def m4_build(request) -> E.EdhocBuild:
    return _build(request.param)


def _guest(eb: E.EdhocBuild, args: list[str], stdin: str) -> dict[str, str]:
    """The guest's "name HEX" lines as a dict (trace lines by their name); its JSON result line as "result"."""
    p = subprocess.run(
        [eb.lib.qemu, "-cpu", "max", str(eb.binary), *args], input=stdin, capture_output=True, text=True, timeout=120
    )
    out = {}
    for line in p.stdout.splitlines():
        if line.startswith("{"):
            out["result"] = line
            continue
        name, _, value = line.removeprefix("trace ").partition(" ")
        out[name] = value
    return out


def _trace_run(eb: E.EdhocBuild, tmp_path, m2: str) -> dict[str, str]:
    keys = tmp_path / "trace2.keys"
    keys.write_text("".join(f"{k} {v}\n" for k, v in TRACE2.items()) + "trace 1\n")
    keys.chmod(0o600)
    return _guest(eb, ["run", str(keys), "1"], f"m2 {m2}\nstop\n")


@pytest.mark.slow
def test_rfc9529_trace_2_messages_and_key_schedule_on_the_cortex_m4(m4_build, tmp_path):
    got = _trace_run(m4_build, tmp_path, TRACE2_M2)
    assert got["m1"] == TRACE2_M1
    assert got["m3"] == TRACE2_M3
    assert {k: got.get(k) for k in TRACE2_KEYS} == TRACE2_KEYS


@pytest.mark.slow
def test_a_tampered_message_2_fails_the_mac_check(m4_build, tmp_path):
    bad = TRACE2_M2[:-2] + f"{int(TRACE2_M2[-2:], 16) ^ 1:02x}"  # one bit of CIPHERTEXT_2
    got = _trace_run(m4_build, tmp_path, bad)
    line = json.loads(got["result"])
    assert line["ok"] is False and line["stage"] == "message_2"
    assert got["m3"] == ""  # no message_3 leaves


@pytest.mark.slow
def test_rfc8613_c4_request_protection(m4_build):
    assert _guest(m4_build, ["oscore-vector"], C4_IN) == C4_OUT


def _check_counted(series, variant: str, stack: str, sizes: dict) -> None:
    assert [s.labels["phase"] for s in series] == ["cold", "warm"]
    for s in series:
        assert s.status == "ok", [f.reason for f in s.failures]
        assert (s.labels["tls"], s.labels["mode"], s.labels["stack"]) == ("edhoc", variant, stack)
        assert "secperf EDHOC initiator (C)" in s.labels["library"]
        d = s.derived
        rows = {r["message"]: r["instructions"] for r in d.messages}
        app = {r["message"]: r["instructions"] for r in d.app_messages}
        assert list(rows) == list(E.HANDSHAKE_STEPS) and list(app) == list(E.APP_STEPS)
        for sample in s.samples:  # the steps partition the handshake exactly; the I/O glue is outside
            assert sample["instructions"] == sum(m["instructions"] for m in sample["messages"])
            assert sample["process_instructions"] > sample["instructions"] + sample["app_instructions"]
            assert {k: sample["sizes"][k] for k in sizes} == sizes
            assert sample["sizes"]["request"] > 0 and sample["sizes"]["response"] > 0
        # two ECDHs while processing message_2, one for message_3, a key pair for message_1, no
        # public-key operation in the export or in OSCORE
        assert rows["message_2"] > rows["message_3"] > app["oscore_protect"]
        assert rows["message_1"] > rows["oscore_export"] > app["oscore_unprotect"] > 0
        assert d.time is not None and d.time.ms > 0 and all("time" in r for r in d.messages)


@pytest.mark.slow
def test_m3_kid_counted_per_step_against_lakers_with_an_oscore_round_trip(m4_build):
    series = E.measure(resolve_core("cortex-m4-80"), "m3-kid", n=1, warmup=0, eb=m4_build)
    # RFC 9529 trace 2's sizes, less its negotiated suite list (SUITES_I = 2 here: 2 bytes fewer)
    _check_counted(series, "m3-kid", m4_build.lib.stack, {"message_1": 37, "message_2": 45, "message_3": 19})


@pytest.mark.slow
def test_m3_value_interoperates_with_credentials_by_value(m4_build):
    series = E.measure(resolve_core("cortex-m4-80"), "m3-value", n=1, warmup=0, eb=m4_build, timed=False)
    s = series[1]
    assert s.status == "ok", [f.reason for f in s.failures]
    sizes = s.samples[0]["sizes"]
    assert sizes["message_1"] == 37 and sizes["message_2"] > 100 and sizes["message_3"] > 90


def _event(count: int, kind: int, arg: int) -> A.Event:
    return A.Event(count, "M", kind, arg)


def test_plugin_events_become_per_step_counts():
    ev = [_event(100, A.HS_BEGIN, 0)]
    at = 150
    for step, cost in zip(range(1, 7), (1000, 3000, 2000, 100, 10, 9)):
        ev += [_event(at, A.OP_BEGIN, step), _event(at + cost, A.OP_END, step)]
        at += cost + 500  # the host's answer and the hex I/O between steps
    ev.append(_event(at, A.HS_END, 1))
    (hs,) = E.handshakes(ev)
    assert hs["ok"] and hs["index"] == 0
    assert hs["steps"] == {
        "message_1": 1000,
        "message_2": 3000,
        "message_3": 2000,
        "oscore_export": 100,
        "oscore_protect": 10,
        "oscore_unprotect": 9,
    }
    assert hs["process_instructions"] == at - 100
    # a handshake whose guest gave up after message_2 is not a sample
    (cut,) = E.handshakes(
        [_event(0, A.HS_BEGIN, 1), _event(5, A.OP_BEGIN, 1), _event(9, A.OP_END, 1), _event(20, A.HS_END, 0)]
    )
    assert not cut["ok"]


def test_a_variant_the_initiator_lacks_exits_2_naming_the_ones_it_has():
    with pytest.raises(E.EdhocDeviceError, match="m3-kid, m3-value"):
        E.check_variants(["m0-x5chain"])
    with pytest.raises(E.EdhocDeviceError, match="no EDHOC handshake 'resumed'"):
        E.check_variants("resumed")
    assert E.check_variants("full,m3-value") == ["m3-kid", "m3-value"]


def test_an_explicit_stack_without_the_crypto_is_refused():
    with pytest.raises(E.EdhocDeviceError, match="wolfssl59 or mbedtls3"):
        E.check_stacks(["wolfssl", "mbedtls"], explicit=True)
    assert E.check_stacks("wolfssl,mbedtls3", explicit=True) == ["mbedtls3"]
    assert E.check_stacks("wolfssl", explicit=False) == ["mbedtls3"]


def test_cli_names_the_variants_it_has():
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "secperf",
            "device",
            "handshake",
            "--tls",
            "edhoc",
            "--device",
            "cortex-m4-80",
            "--mode",
            "m1-x5chain",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 2 and "m3-kid, m3-value" in p.stderr and p.stdout == ""
