"""`secperf jwt --network`: the verifying endpoint in the link's server namespace, the requests
(software loop in-process, token worker as its own process) from the device namespace, over the
kernel's TCP through the emulated link. Every request opens a new connection, so it pays three
round trips: TCP connect, the TLS 1.3 handshake, and the HTTP request/response."""

import os

import pytest

from conftest import needs_links
from secperf.core import result as R
from secperf.inputs import scenario as SC
from secperf.inputs import se_profiles as SE
from secperf.lab import netns
from secperf.measure import signer as S

ONE_WAY_MS = 20.0
RTT_US = 2 * ONE_WAY_MS * 1000
TRIPS = 3  # TCP SYN/SYN-ACK; TLS 1.3 ClientHello → server Finished; request → response


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    """A private SECPERF_HOME with the lab PKI and token (run_jwt uses the default locations)."""
    from secperf.lab.pki import LabPKI
    from secperf.lab.token import LabToken

    root = tmp_path_factory.mktemp("jwt-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SECPERF_HOME", str(root))
        pki = LabPKI().ensure()
        LabToken(pki=pki).ensure()
        yield root


def _ours() -> list[str]:
    return [n for n in netns.list_namespaces() if n.startswith(f"{netns.PREFIX}{os.getpid()}-")]


def _left_by_dead_owners(before: set[str]) -> list[str]:
    """Link namespaces that appeared since `before` and whose owning process has exited."""
    out = []
    for n in set(netns.list_namespaces()) - before:
        m = netns.NAME_RE.match(n)
        if m and not os.path.exists(f"/proc/{m.group(1)}"):
            out.append(n)
    return out


def _p50(vals):
    vals = sorted(vals)
    return vals[len(vals) // 2]


@needs_links
def test_jwt_over_a_link_pays_three_round_trips_per_request(home, tmp_path):
    doc = R.new_result(kind="jwt", command=[], params={}, host={}, run_id="x")
    net = f"delay={ONE_WAY_MS:g}ms"
    S.run_jwt(
        [SE.get_profile("softhsm")],
        ["ecdsa-p256"],
        S.SignerParams(n=4, warmup=1, workdir=tmp_path),
        doc,
        networks=["loopback", net],
    )
    by = {s.id: s for s in doc.series}
    assert len(by) == 8, list(by)
    assert all(s.status == "ok" for s in doc.series), [(s.id, s.failures[:1]) for s in doc.series]
    for signer in ("software", "softhsm"):
        for mode in ("jwt_fresh", "jwt_cached"):
            lo, ln = by[f"jwt/{signer}/ecdsa-p256/{mode}"], by[f"jwt/{signer}/ecdsa-p256/{mode}@{net}"]
            # every row records its network
            assert lo.labels["network"] == "loopback" and "network_rtt_ms" not in lo.labels
            assert ln.labels["network"] == net and ln.labels["network_rtt_ms"] == 2 * ONE_WAY_MS
            assert ln.labels["network_spec"].startswith(f"up.delay={ONE_WAY_MS:g}ms")
            req = [x["request_ns"] / 1000 for x in ln.samples]
            assert len(req) == 4
            # no request can beat its round trips (the relay never releases a packet early) ...
            assert min(req) >= TRIPS * RTT_US - 200, (ln.id, req)
            # ... and they take no further one: the rest is computation (a few ms, as over loopback);
            # judged on the fastest, as a further round trip would slow every request while host
            # contention slows some
            lo_req = _p50([x["request_ns"] / 1000 for x in lo.samples])
            assert min(req) < (TRIPS + 1) * RTT_US, (ln.id, req, lo_req)
            # the traffic went through the link (the client was in the device namespace)
            link = ln.derived.link
            assert link.up["delayed"] >= 4 * 3 and link.down["delayed"] >= 4 * 3, link
            assert (link.device_Tcp_RetransSegs or 0) == 0
    # the token signs inside the timed section of fresh rows only, wherever the request goes
    assert by[f"jwt/softhsm/ecdsa-p256/jwt_fresh@{net}"].derived.per_call["token_calls_per_op"] > 0
    assert by[f"jwt/softhsm/ecdsa-p256/jwt_cached@{net}"].derived.per_call["token_calls_per_op"] == 0
    assert _ours() == []  # the link's namespaces are gone


@needs_links
def test_cli_jwt_over_a_link_labels_rows_and_reports_the_network(home, tmp_path, monkeypatch):
    from conftest import run_cli

    monkeypatch.setenv("COLUMNS", "200")
    before = set(netns.list_namespaces())
    p = run_cli(
        "jwt",
        "--profile",
        "softhsm",
        "--n",
        "2",
        "--warmup",
        "0",
        "--network",
        "delay=5ms",
        "--network",
        "loopback",
        "--out",
        str(tmp_path),
        timeout=300,
    )
    assert p.returncode == 0, p.stderr[-800:]
    doc = R.load(tmp_path / "latest")
    assert [n["rtt_ms"] for n in doc.params["networks"]] == [10.0, 0.0]
    nets = [s.labels["network"] for s in doc.series]
    assert nets == ["delay=5ms"] * 4 + ["loopback"] * 4
    assert all(s.status == "ok" for s in doc.series), [s.failures[:1] for s in doc.series]
    assert "network" in p.stdout and "delay=5ms" in p.stdout  # the terminal table's network column
    html = (tmp_path / "latest" / "report.html").read_text()
    assert "<th class='l'>network</th>" in html and "delay=5ms" in html
    assert _left_by_dead_owners(before) == []  # the finished command left no namespace


@pytest.mark.parametrize(
    "spec,field", [("delay=20", "delay"), ("delay=20ms,loss=abc", "loss"), ("delay=1ms,bandwidth=1mbit", "bandwidth")]
)
def test_cli_jwt_bad_network_names_the_field(spec, field, tmp_path):
    from conftest import run_cli

    p = run_cli("jwt", "--n", "1", "--network", spec, "--out", str(tmp_path))
    assert p.returncode == 2, p.stderr
    assert f"'{field}'" in p.stderr and "--network" in p.stderr
    assert not list(tmp_path.iterdir())  # bad input: nothing measured, no run directory


def test_cli_signer_network_says_it_has_no_network_path(tmp_path):
    from conftest import run_cli

    p = run_cli("signer", "--network", "lte", "--out", str(tmp_path))
    assert p.returncode == 2
    assert "no network path" in p.stderr and "secperf jwt --network" in p.stderr
    assert "secperf connect --network" in p.stderr and "not built" not in p.stderr
    assert run_cli("signer", "--network", "loopback", "--profile", "list").returncode == 0


def test_scenario_jwt_and_connect_sections_take_networks(tmp_path):
    base = {"name": "t", "crypto": {}}
    jw = SC.signer_settings({**base, "jwt": {"networks": ["loopback", "delay=50ms,loss=1%", "wifi,lte"]}}, "jwt")
    assert jw["networks"] == ["loopback", "delay=50ms,loss=1%", "wifi", "lte"]
    assert SC.signer_settings({**base, "jwt": {"n": 3}}, "jwt")["networks"] == ["loopback"]
    assert SC.connect_settings({**base, "connect": {"networks": ["lte-m"]}})["networks"] == ["lte-m"]
    with pytest.raises(SC.ScenarioError, match=r"\[jwt\] networks: .*'loss'"):
        SC.signer_settings({**base, "jwt": {"networks": ["delay=5ms,loss=lots"]}}, "jwt")
    with pytest.raises(SC.ScenarioError, match=r"\[connect\] networks: unknown network profile 'lte-x'"):
        SC.connect_settings({**base, "connect": {"networks": ["lte-x"]}})
    with pytest.raises(SC.ScenarioError, match=r"\[signer\] has unknown keys \['networks'\]"):
        SC.signer_settings({**base, "signer": {"networks": ["lte"]}}, "signer")


def test_cli_run_scenario_with_a_bad_jwt_network_exits_2(tmp_path):
    from conftest import run_cli

    scn = tmp_path / "s.toml"
    scn.write_text(
        'name = "s"\n[crypto]\n[[crypto.select]]\nalg = ["sha256"]\nsize = [16]\n'
        '[jwt]\nnetworks = ["delay=5ms,rate=fast"]\n'
    )
    p = run_cli("run", "--scenario", str(scn), "--out", str(tmp_path / "out"))
    assert p.returncode == 2, p.stderr
    assert "[jwt] networks" in p.stderr and "'rate'" in p.stderr


def test_a_short_lived_token_from_a_slow_signer_arrives_valid(monkeypatch):
    """--lifetime 1 with a 0.6 s signature: exp was int(start) + 1, so a token signed at x.95 was
    expired when the signature ended. Now it is valid for the lifetime from the signature's end."""
    from cryptography.hazmat.primitives.asymmetric import ec

    from secperf.lab.jwt_server import verify_jwt
    from secperf.measure import jwt as J

    clock = [1000.95]
    monkeypatch.setattr(J.time, "time", lambda: clock[0])
    key = ec.generate_private_key(ec.SECP256R1())
    alg, real_sign = J.software_signer(key)

    def slow_sign(data):
        clock[0] += 0.6  # a secure element's signature
        return real_sign(data)

    for i in range(3):
        token = J.make_jwt(alg, slow_sign, "dev", 1)
        claims = verify_jwt(token, [key.public_key()], now=clock[0])  # raises "token expired" on the old code
        if i:  # once the signer's time is known, the whole lifetime is left at the signature's end
            assert claims["exp"] - clock[0] >= 1
        clock[0] += 0.3
