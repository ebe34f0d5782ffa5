"""The protocols' own clients -- curl, mosquitto_pub, coap-client -- sign with the secure-element key
through the PKCS#11 shim (SoftHSM2 behind native/se_shim), next to the probe; the 1998 RSA card's
RSA-1024 key is measured at OpenSSL security level 1 on both sides (the default level 2 refuses it),
and the series say so."""

from __future__ import annotations

import os

import pytest

from secperf.core import result as R
from secperf.inputs import se_profiles as SE
from secperf.lab.pki import LabPKI
from secperf.measure import connect as C


@pytest.fixture(scope="module")
def pki():
    return LabPKI().ensure()  # the shared lab PKI: the token's client certificates come from it


def _run(pki, tmp_path, configs):
    doc = R.new_result(kind="connect", command=[], params={}, host={}, run_id="t")
    p = C.ConnectParams(n=2, warmup=1, workdir=tmp_path, timeout_ms=5000, profiles=SE.profiles_with())
    C.run_connect(configs, p, doc)
    return {s.id: s for s in doc.series}


@pytest.mark.parametrize("proto,client", [("https", "curl"), ("mqtt", "mosquitto_pub"), ("coap", "coap-client")])
def test_real_clients_sign_with_the_token_key_through_the_shim(pki, tmp_path, proto, client):
    cfg = C.ConnectConfig(proto, "se:rsa-card-1998", client=client)
    s = _run(pki, tmp_path, [cfg])[cfg.series_id]
    assert s.status == "ok", s.failures[:1]
    # a new client process per connection: it loads the token (open, log in, find) and signs each time
    calls = s.derived.se_calls
    assert calls["token_calls_per_op"] > 5
    assert any(c["fn"] == "C_Sign" for c in calls["calls"])
    assert s.labels["openssl_security_level"] == 1 and "RSA-1024" in s.labels["note"]


def test_mosquitto_pub_gets_the_pin_from_its_file_not_its_argv(pki, tmp_path):
    cfg = C.ConnectConfig("mqtt", "token", client="mosquitto_pub")
    km = C.KeyMaterial(cfg, pki, tmp_path, 1, SE.get_profile("softhsm"))
    d, key_id = C.engine_key_dir(km)
    assert key_id.startswith("pkcs11:") and key_id.endswith("?pin-source=file:user.pin")
    assert km.token.pin() not in key_id
    assert os.stat(d).st_mode & 0o777 == 0o700 and (d / key_id).is_file()
    assert (d / "user.pin").resolve() == km.token.pin_path.resolve()
    assert tmp_path not in d.parents  # never inside the run's directory (an archive would copy the PIN)


def test_a_token_run_with_mosquitto_pub_leaves_no_link_to_the_pin_in_results(tmp_path):
    """`connect mqtt --key token --client mosquitto_pub` left results/.../user.pin, a link to the
    token's PIN file: `tar -h` or `zip` of results/ copied the PIN."""
    from conftest import run_cli

    p = run_cli(
        "connect",
        "mqtt",
        "--key",
        "token",
        "--client",
        "mosquitto_pub",
        "--handshake",
        "full",
        "--n",
        "1",
        "--warmup",
        "0",
        "--out",
        str(tmp_path / "res"),
    )
    assert p.returncode == 0, p.stderr[-1500:]
    found = [q for q in (tmp_path / "res").rglob("*") if q.is_symlink() and q.name != "latest" or "pin" in q.name]
    assert found == []


def test_only_the_weak_card_lowers_the_security_level(pki, tmp_path):
    km = C.KeyMaterial(
        C.ConnectConfig("https", "se:iot-safe-sim", client="curl"),
        pki,
        tmp_path / "a",
        1,
        SE.get_profile("iot-safe-sim"),
    )
    assert km.security_level is None and "SECLEVEL" not in open(km.env["OPENSSL_CONF"]).read()
    km = C.KeyMaterial(
        C.ConnectConfig("https", "se:rsa-card-1998", client="curl"),
        pki,
        tmp_path / "b",
        1,
        SE.get_profile("rsa-card-1998"),
    )
    assert km.security_level == 1 and "DEFAULT@SECLEVEL=1" in open(km.env["OPENSSL_CONF"]).read()
