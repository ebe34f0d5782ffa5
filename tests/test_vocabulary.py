"""One vocabulary and no silent no-ops across subcommands (issue 29): `--key se:PROFILE[:cold]`
wherever a key is chosen (plan's old `--se` accepted with a note), one certificate option name
(`--server-cert`; whatif's old `--cert` with a note), one spelling of group names (old ones mapped
with a note), `fleet --from` never taking another key's capacity, a client key on a protocol
without client authentication refused, and the keep-alive measure saying it assumes no NAT time-out."""

import json

import pytest

from conftest import run_cli
from secperf.cli import build_parser
from secperf.core.result_schema import ServerDerived


def _args(*argv):
    return build_parser().parse_args(list(argv))


# --- keys --------------------------------------------------------------------------------------
def test_plan_takes_key_in_the_whatif_vocabulary():
    from secperf.subcommands import plan

    o = plan.options(_args("plan", "--key", "se:iot-safe-sim:cold", "--pattern", "periodic-collection"))
    assert o.se == "se:iot-safe-sim:cold"
    o = plan.options(_args("plan", "--key", "software"))
    assert o.se == "software"


def test_plan_old_se_option_still_works_with_a_note(capsys):
    from secperf.subcommands import plan

    o = plan.options(_args("plan", "--se", "atecc608"))
    assert o.se == "se:atecc608"
    err = capsys.readouterr().err
    assert "--se is renamed --key se:PROFILE" in err and "accepted for this release" in err


@pytest.mark.parametrize(
    "argv,words",
    [
        (("--key", "se:no-such-element"), ("--key", "no-such-element", "known")),
        (("--key", "hsm"), ("--key", "software", "se:PROFILE:cold")),
        (("--key", "se:iot-safe-sim:warm"), ("--key", "se:PROFILE:cold")),
        (("--se", "iot-safe-sim", "--key", "software"), ("--se", "--key")),
    ],
)
def test_plan_bad_key_exits_2_naming_it(tmp_path, argv, words):
    p = run_cli("plan", *argv, "--pattern", "periodic-collection", "--n", "100", "--out", str(tmp_path), "--no-report")
    assert p.returncode == 2, p.stderr
    assert "Traceback" not in p.stderr
    for w in words:
        assert w in p.stderr


def test_plan_with_the_old_se_option_runs_and_records_the_key(tmp_path):
    p = run_cli(
        "plan",
        "--se",
        "iot-safe-sim",
        "--pattern",
        "periodic-collection",
        "--n",
        "200",
        "--json",
        "--out",
        str(tmp_path),
        "--no-report",
    )
    assert p.returncode == 0, p.stderr
    assert "--se is renamed" in p.stderr
    doc = json.loads(p.stdout)
    assert doc["analysis"]["plan"]["patterns"][0]["inputs"]["key"] == "se:iot-safe-sim"


# --- certificate option, group names ------------------------------------------------------------
def test_whatif_server_cert_is_the_certificate_option_and_cert_is_mapped_with_a_note(capsys):
    from secperf.subcommands import whatif

    o = whatif.options(_args("whatif", "tls1.3", "--server-cert", "ecdsa-p256"))
    assert o.certs == ["ecdsa-p256"]
    assert "renamed" not in capsys.readouterr().err
    o = whatif.options(_args("whatif", "tls1.3", "--cert", "rsa-2048:2"))
    assert o.certs == ["rsa-2048:2"]
    assert "--cert is renamed --server-cert" in capsys.readouterr().err


def test_every_subcommand_names_the_server_certificate_option_the_same():
    """No subcommand offers --cert for the server's certificate except as the deprecated alias."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, p in sub.choices.items():
        for a in p._actions:
            if "--cert" in a.option_strings:
                assert "old name of --server-cert" in (a.help or ""), name


@pytest.mark.parametrize(
    "old,new",
    [
        ("ecdh-p256", "p-256"),
        ("secp256r1", "p-256"),
        ("prime256v1", "p-256"),
        ("p256", "p-256"),
        ("P-384", "p-384"),
        ("ecdh-p384", "p-384"),
        ("x25519", "x25519"),
        ("p-256", "p-256"),
    ],
)
def test_group_spellings_map_to_one_name(old, new, capsys):
    from secperf.inputs.vocabulary import group

    assert group(old) == new
    err = capsys.readouterr().err
    assert (old == new) == (err == "")


def test_whatif_group_old_spelling_is_mapped_with_a_note(capsys):
    from secperf.subcommands import whatif

    o = whatif.options(_args("whatif", "tls1.3", "--group", "ecdh-p256,x25519"))
    assert o.groups == ["p-256", "x25519"]
    assert "the group is named p-256" in capsys.readouterr().err


def test_whatif_old_group_spelling_runs(tmp_path):
    p = run_cli(
        "whatif", "tls1.3", "--group", "secp256r1", "--n", "200", "--json", "--out", str(tmp_path), "--no-report"
    )
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["series"][0]["labels"]["group"] == "p-256"


# --- a client key where the protocol has no client authentication -------------------------------
@pytest.mark.parametrize("proto", ["tls1.3", "tls1.2", "dtls1.2"])
def test_whatif_se_key_without_client_authentication_exits_2_naming_both(tmp_path, proto):
    p = run_cli("whatif", proto, "--key", "se:iot-safe-sim:cold", "--n", "100", "--out", str(tmp_path))
    assert p.returncode == 2, p.stderr
    assert "se:iot-safe-sim:cold" in p.stderr and proto in p.stderr and "no client certificate" in p.stderr
    assert "mqtt" in p.stderr and "jwt" in p.stderr  # where the key would act
    assert not list(tmp_path.glob("*/result.json"))


def test_whatif_se_key_next_to_a_protocol_that_uses_it_drops_it_for_the_other_with_a_note():
    from secperf.app import whatif as W
    from secperf.app.reporter import Reporter, using

    class Notes(Reporter):  # the app says its notes to the reporter installed (the CLI's: stderr)
        said: list[str] = []

        def note(self, text):
            self.said.append(text)

    o = W.WhatifOptions(protocols=["tls1.3", "mqtt"], keys=["se:iot-safe-sim"])
    with using(Notes()) as r:
        scs = W.scenarios(o)
    assert {(s.protocol, s.key) for s in scs} == {("tls1.3", "software"), ("mqtt", "se:iot-safe-sim")}
    assert any("tls1.3 has no client certificate" in n for n in r.said)


def test_whatif_se_key_on_mutual_tls_and_jwt_is_accepted():
    from secperf.app import whatif as W

    for proto in ("mqtt", "https", "coap", "jwt"):
        scs = W.scenarios(W.WhatifOptions(protocols=[proto], keys=["se:iot-safe-sim:cold"]))
        assert {s.key for s in scs} == {"se:iot-safe-sim:cold"}


# --- connect: the same key vocabulary -------------------------------------------------------------
def test_connect_accepts_a_cold_se_key_as_its_key_session():
    from secperf.app.connect import connect_configs

    cf = connect_configs(["mqtt"], ["se:iot-safe-sim:cold"], ["full"], None, ["mtls"])
    assert {(c.key_source, c.key_session) for c in cf} == {("se:iot-safe-sim", "cold")}
    cf = connect_configs(["mqtt"], ["se:iot-safe-sim", "se:iot-safe-sim:cold"], ["full"], None, ["mtls"])
    assert {(c.key_source, c.key_session) for c in cf} == {("se:iot-safe-sim", "warm"), ("se:iot-safe-sim", "cold")}


# --- fleet --from never takes another key's capacity ---------------------------------------------
def _server_result(path, rows):
    from secperf.core import result as R

    doc = R.new_result(kind="server", command=["secperf", "server"], params={}, host={}, run_id="r1")
    for key, ratio, rate in rows:
        s = R.new_series(
            f"server/nginx/{key}/{ratio}",
            kind="server",
            labels={"server": "nginx", "key": key, "key_source": "software", "resume_ratio": ratio},
            timer={"name": "handshake", "start": "connect", "end": "done"},
        )
        s.derived = ServerDerived(handshakes_per_s=rate)
        s.status = "ok"
        doc.series.append(s)
    R.finish(doc)
    path.write_text(R.dumps(doc))
    return path


def test_fleet_from_refuses_a_key_the_result_does_not_hold(tmp_path):
    f = _server_result(tmp_path / "server.json", [("ecdsa-p256", 0.0, 5000.0), ("ecdsa-p256", 1.0, 9000.0)])
    p = run_cli(
        "fleet", "--from", str(f), "--key", "rsa-2048", "--devices", "100", "--out", str(tmp_path / "o"), "--no-report"
    )
    assert p.returncode == 2, p.stderr
    assert "rsa-2048" in p.stderr and "ecdsa-p256" in p.stderr and "Traceback" not in p.stderr


def test_fleet_from_takes_the_named_keys_capacity_and_asks_when_several(tmp_path):
    f = _server_result(tmp_path / "server.json", [("ecdsa-p256", 0.0, 5000.0), ("rsa-2048", 0.0, 700.0)])
    p = run_cli("fleet", "--from", str(f), "--devices", "100", "--out", str(tmp_path / "o"), "--no-report")
    assert p.returncode == 2 and "--key" in p.stderr and "rsa-2048" in p.stderr and "ecdsa-p256" in p.stderr
    p = run_cli(
        "fleet",
        "--from",
        str(f),
        "--key",
        "rsa-2048",
        "--devices",
        "100",
        "--json",
        "--out",
        str(tmp_path / "o"),
        "--no-report",
    )
    assert p.returncode == 0, p.stderr
    fleet = json.loads(p.stdout)["analysis"]["fleet"]
    assert "rsa-2048" in fleet["capacity_source"]
    assert fleet["runs"][0]["model"]["capacity_full_per_s"] == pytest.approx(700.0)  # not ecdsa-p256's 5000


def test_fleet_capacity_model_filters_by_key():
    from secperf.core import result as R
    from secperf.model.fleet import capacity_from_result, server_keys

    doc = R.new_result(kind="server", command=[], params={}, host={}, run_id="t")
    for k, v in (("rsa-2048", 700.0), ("ecdsa-p256", 5000.0)):
        s = R.new_series(
            f"server/{k}",
            kind="server",
            timer={"name": "t", "start": "a", "end": "b"},
            labels={"server": "nginx", "key": k, "key_source": "software", "resume_ratio": 0.0},
        )
        s.derived = ServerDerived(handshakes_per_s=v)
        doc.series.append(s)
    assert server_keys(doc) == ["rsa-2048", "ecdsa-p256"]
    assert list(capacity_from_result(doc, "rsa-2048").values()) == [700.0]


def test_fleet_key_with_a_given_capacity_exits_2(tmp_path):
    p = run_cli("fleet", "--capacity", "400", "--key", "ecdsa-p256", "--devices", "100", "--out", str(tmp_path))
    assert p.returncode == 2 and "--key" in p.stderr and "--capacity" in p.stderr


# --- plan's keep-alive and NAT time-outs ----------------------------------------------------------
def test_keepalive_says_it_assumes_no_nat_time_out():
    from secperf.inputs.patterns import load_pattern
    from secperf.plan import design as D
    from secperf.plan import measures as MS

    rt = load_pattern("real-time-control")  # always-on, no nat_timeout_s
    assert rt.connection.nat_timeout_s is None
    _, why = MS.applicable(rt, D.baseline(rt))
    assert "NAT" in why["keepalive"] and "nat_timeout_s" in why["keepalive"]
    assert MS.nat_assumption(rt) and "RFC 4787" in MS.nat_assumption(rt)
    pc = load_pattern("periodic-collection")  # states its NAT time-out
    assert MS.nat_assumption(pc) is None


def test_keepalive_without_a_ping_interval_is_not_free():
    from secperf.inputs.patterns import load_pattern
    from secperf.plan import design as D
    from secperf.plan import measures as MS

    p = load_pattern("batch-collection")  # per-message, neither keepalive_s nor nat_timeout_s
    assert p.connection.keepalive_s is None and p.connection.nat_timeout_s is None
    usable, why = MS.applicable(p, D.baseline(p))
    assert "keepalive" not in [m.name for m in usable]
    assert "ping interval" in why["keepalive"]


def test_a_swept_group_takes_the_same_spellings_as_group(capsys):
    from secperf.sim import sweep as SW

    assert SW.parse("group=secp256r1,x25519,ECDH-P384") == {"group": ["p-256", "x25519", "p-384"]}
    err = capsys.readouterr().err
    assert "--sweep group secp256r1" in err and "p-256" in err
