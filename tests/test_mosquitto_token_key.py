"""mosquitto with its TLS key on the lab token (SoftHSM2 behind the secure-element shim), loaded through
OpenSSL's pkcs11 engine: every full handshake signs on the token (the shim's own call log counts the
signatures), the PIN is in no process's command line and in no world-readable file, and what cannot
run (an unknown profile, a key the token lacks, no pkcs11 engine, an object the token does not hold)
is named."""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from conftest import proc_cmdlines, run_cli
from secperf.core.errors import InputError
from secperf.core.result_derived import ServerDerived
from secperf.inputs.se_profiles import get_profile
from secperf.lab.iot_services import Mosquitto
from secperf.lab.pki import LabPKI
from secperf.lab.services import ServiceError
from secperf.lab.token import LabToken
from secperf.measure import mqtt_load as M
from secperf.measure import server as S

SOURCE = "offload:atecc608:busy"


@pytest.fixture(scope="module")
def pki():
    return LabPKI().ensure()


@pytest.fixture(scope="module")
def pin():
    return LabToken().ensure().pin()


class PinScan(threading.Thread):
    """Reads every process's command line until stopped: `hits` holds those with the PIN, `brokers`
    counts the scans that saw a mosquitto running (a scan while none ran proves nothing)."""

    def __init__(self, pin: str):
        super().__init__(daemon=True)
        self.pin, self.hits, self.brokers, self.stop = pin, [], 0, threading.Event()

    def run(self):
        while not self.stop.is_set():
            lines = proc_cmdlines()
            self.brokers += any("mosquitto" in x and "mosquitto.conf" in x for x in lines)
            self.hits += [x[:300] for x in lines if self.pin in x]
            self.stop.wait(0.05)


def _exposed(root: Path, pin: str) -> list[str]:
    """Files under root that hold the PIN, and configurations (mosquitto's, OpenSSL's, the shim's own
    configuration excepted: it holds timings) that others may read."""
    files = [f for f in root.rglob("*") if f.is_file()]
    out = [str(f) for f in files if pin.encode() in f.read_bytes()]
    confs = [f for f in files if f.name in ("mosquitto.conf", "openssl.cnf")]
    return out + [str(f) for f in confs if stat.S_IMODE(f.stat().st_mode) & 0o077]


def test_mqtt_load_broker_key_on_the_token_signs_every_full_handshake_there(tmp_path, pin):
    scan = PinScan(pin)
    scan.start()
    try:
        p = run_cli(
            "mqtt-load",
            "--clients",
            "8",
            "--connect-rate",
            "40",
            "--hold",
            "0.5",
            "--publish-rate",
            "8",
            "--spread",
            "0.3",
            "--capacity-seconds",
            "0.5",
            "--timeout",
            "30",
            "--key-source",
            SOURCE,
            "--json",
            "--no-report",
            "--out",
            str(tmp_path / "res"),
            timeout=300,
        )
    finally:
        scan.stop.set()
        scan.join(5)
    assert p.returncode == 0, p.stderr[-2000:]
    assert scan.brokers > 0 and scan.hits == []  # the broker ran while scanned; the PIN on no command line
    assert pin not in p.stdout and pin not in p.stderr
    doc = json.loads(p.stdout)
    m = doc["analysis"]["mqtt_load"]
    assert m["broker"]["key"] == "token (OpenSSL pkcs11 engine)"
    bk = m["broker_key"]
    assert bk["source"] == SOURCE and bk["profile"] == "atecc608" and "?" not in bk["uri"]
    phases = {x["phase"]: x for x in m["phases"]}
    assert set(phases) == {"ramp", "hold", "storm"}
    assert all(x["failed"] == 0 and x["refused"] == 0 for x in phases.values())
    full = sum(x["connacks"] - x["resumed"] for x in phases.values())
    assert full == 16  # 8 in the ramp, 8 back after the storm
    signs = bk["token_signs"]
    # the shim's own count: one C_Sign on the token per full handshake of the load, none elsewhere
    assert signs["load"] == full
    for w in ("capacity_before", "capacity_after"):
        assert signs[w] >= m[w]["handshakes"] > 0
    assert bk["token_signs_total"] == sum(signs.values())
    # the terminal and the report say where the key was and what the token signed
    from secperf.report.views import mqtt_load as V

    assert any(f"atecc608 (busy): {full} signatures on it for {full} full handshakes" in x for x in V.facts(m))
    # nothing the run left behind holds the PIN; the broker's and OpenSSL's configurations are 0600
    confs = list((tmp_path / "res").rglob("mosquitto.conf"))
    assert confs and _exposed(tmp_path / "res", pin) == []


def test_server_mosquitto_offloaded_counts_a_token_signature_per_handshake(pki, tmp_path):
    from secperf.app.server_plan import with_profiles

    [cfg] = with_profiles([S.ServerConfig("mosquitto", "ecdsa-p256", source=SOURCE)])  # as the command resolves it
    S.validate(cfg)
    p = S.LoadParams(concurrency=[2], duration_s=1.0, warmup_s=0.0, op_n=5, workdir=tmp_path)
    [s] = S.measure_config(cfg, p, pki)
    assert not s.failures, s.failures
    d = s.derived_as(ServerDerived)
    assert d.handshakes > 0 and d.full == d.handshakes
    # signatures from the level's start (no warm-up): each counted handshake's, plus those in flight at its end
    assert d.handshakes <= d.split["token_signs"] <= d.handshakes + 2 * 2
    assert s.labels["key_extractable"] is False and s.labels["profile"] == "atecc608"
    # at the token's one-at-a-time bound the token, not a CPU, is said to limit the rate
    bound = d.split["card_bound_per_s"]
    assert bound > 0 and (d.limited_by == "the token") == (d.handshakes_per_s >= S.TOKEN_BOUND * bound)
    conf = next(tmp_path.rglob("mosquitto.conf"), None)
    if conf is not None:  # the broker's directory may be gone with it; when kept, it is private
        assert stat.S_IMODE(conf.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--key-source", "offload:no-such-card:busy"], "no-such-card"),
        (["--key-source", "offload:atecc608:spin"], "--key-source"),
        (["--key", "rsa-3072", "--key-source", SOURCE], "the lab token holds"),
        (["--key-source", SOURCE, "--chain-depth", "2"], "--chain-depth"),
        (["--key-source", SOURCE, "--target", "127.0.0.1:1"], "--key-source"),
    ],
)
def test_mqtt_load_bad_key_source_exits_2_naming_it(args, needle, tmp_path):
    p = run_cli("mqtt-load", *args, "--out", str(tmp_path / "res"), timeout=60)
    assert p.returncode == 2, p.stderr[-800:]
    assert needle in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "res").exists()


@pytest.mark.parametrize("command", [["mqtt-load"], ["server", "--server", "mosquitto", "--key", "ecdsa-p256"]])
def test_without_the_pkcs11_engine_an_offloaded_key_exits_2_naming_it(command, tmp_path):
    # OpenSSL looks for its engines in OPENSSL_ENGINES when set: an empty directory has no pkcs11 engine
    (tmp_path / "engines").mkdir()
    env = dict(os.environ, OPENSSL_ENGINES=str(tmp_path / "engines"))
    p = run_cli(*command, "--key-source", SOURCE, "--out", str(tmp_path / "res"), timeout=60, env=env)
    assert p.returncode == 2, p.stderr[-800:]
    assert "pkcs11 engine" in p.stderr and "libengine-pkcs11-openssl" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "res").exists()


def test_validate_names_the_servers_that_take_a_token_key():
    S.validate(S.ServerConfig("mosquitto", "rsa-2048", source="offload:hsm-network-rsa2048:sleep"))
    with pytest.raises(InputError, match="nginx or mosquitto"):
        S.validate(S.ServerConfig("probe", "ecdsa-p256", source=SOURCE))
    with pytest.raises(InputError, match="the lab token holds"):
        M.validate(M.MqttLoadConfig(key="ecdsa-p384", key_source=SOURCE))


def test_a_key_the_token_does_not_hold_stops_mosquitto_with_the_engines_reason(pki, tmp_path):
    off = S.Offload(get_profile("atecc608"), "busy", "ecdsa-p256", tmp_path / "tok", 1)
    bad = off.uri.replace("object=device-p256", "object=no-such-key")
    mq = Mosquitto(
        SimpleNamespace(chain=off.cert, key=None), pki.client("ecdsa-p256").ca, workdir=tmp_path / "mq", engine_key=bad
    )
    mq.prefix = off.prefix()
    with pytest.raises(ServiceError, match="object not found|engine private key"):
        mq.start()
    # a URI that carries the PIN itself is refused before anything is written
    with pytest.raises(ServiceError, match="pin-source"):
        Mosquitto(off.cert, off.cert, workdir=tmp_path / "mq2", engine_key=off.uri + "&pin-value=x")
    assert not (tmp_path / "mq2" / "mosquitto.conf").exists()
