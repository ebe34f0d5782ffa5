"""Issue 42, part A: the held-out leftovers, each its own test: `connect all,https`, a server name
with a newline or 100,000 characters, `crypto --prehashed` on an AEAD, `fleet --base 100 --cap 1`,
a report of a handshake Result holding crypto series, and `plan --verify` with a cold-key secure
element (a combination secperf derived itself)."""

import os

import pytest

from conftest import skip_if
from secperf import cli
from secperf.core import result as R
from secperf.core.errors import InputError, InternalError


def _err(capsys) -> str:
    return capsys.readouterr().err


def test_connect_all_with_a_protocol_it_already_holds_is_every_protocol_once():
    from secperf.app.connect import connect_configs

    alone = connect_configs(["all"], ["software"], ["full"], None, ["mtls"])
    both = connect_configs(["all", "https"], ["software"], ["full"], None, ["mtls"])  # a KeyError before
    assert [c.series_id for c in both] == [c.series_id for c in alone]
    assert len({c.series_id for c in both}) == len(both)


@pytest.mark.parametrize("host", ["local\nhost", "a" * 100_000, "a b", "x\x00y"])
def test_a_server_name_that_cannot_be_one_is_bad_input(host, capsys):
    from secperf.measure.target import parse_target

    with pytest.raises(InputError, match="--connect"):
        parse_target(f"{host}:8443")
    assert cli.main(["handshake", "versions", "--connect", f"{host}:8443", "--n", "1"]) == 2
    assert "--connect" in _err(capsys)


@pytest.mark.parametrize("name", ["a\nb", "n" * 300, "x" * 64 + ".example"])
def test_a_servername_that_cannot_be_one_is_named(name):
    from secperf.measure.target import parse_target

    with pytest.raises(InputError, match="--servername"):
        parse_target("127.0.0.1:8443", servername=name)


def test_crypto_prehashed_on_an_aead_is_refused_naming_the_option(tmp_path, capsys):
    assert cli.main(["crypto", "--alg", "aes-128-gcm", "--prehashed", "--n", "1", "--out", str(tmp_path)]) == 2
    err = _err(capsys)
    assert "--prehashed" in err and "aes-128-gcm" in err
    assert not any(tmp_path.iterdir())  # refused before a run directory exists


@pytest.mark.parametrize("policy", ["exponential", "decorrelated"])
def test_fleet_cap_below_base_is_refused_before_any_measurement(tmp_path, capsys, policy):
    assert cli.main(["fleet", "--base", "100", "--cap", "1", "--policy", policy, "--out", str(tmp_path)]) == 2
    err = _err(capsys)
    assert "--cap" in err and "--base" in err
    assert not any(tmp_path.iterdir())


def test_fleet_model_refuses_a_cap_below_its_base():
    from secperf.model.fleet import FleetModel

    with pytest.raises(InputError, match="--cap"):
        FleetModel(devices=10, policy="decorrelated", base_s=100.0, cap_s=1.0).check()


def test_a_handshake_result_holding_crypto_series_is_rendered_by_kind(tmp_path, capsys):
    doc = R.new_result(kind="handshake", command=["secperf"], params={}, host={}, run_id="r")
    s = R.new_series(
        "crypto/x25519/derive/32",
        kind="crypto",
        labels={"alg": "x25519", "op": "derive", "family": "kex", "size_bytes": 32, "security_bits": 128},
        timer={"name": "per operation", "start": "a", "end": "b"},
    )
    s.values_us = [10.0, 11.0, 12.0]
    s.cpu_values_us = [10.0, 11.0, 12.0]
    s.samples = [{"wall_ns": 10_000, "cpu_ns": 10_000, "ops": 1}] * 3
    doc.series.append(R.finalize_series(s))
    p = tmp_path / "result.json"
    p.write_text(R.dumps(R.finish(doc)))
    assert cli.main(["report", str(p), "-o", str(tmp_path / "r.html")]) == 0
    assert "x25519" in (tmp_path / "r.html").read_text()
    assert cli.main(["metrics", str(p)]) == 0


def test_a_row_plan_verify_derived_that_its_checks_refuse_is_internal():
    from secperf.app import plan_verify as V
    from secperf.app.plan import PlanOptions

    row = V.Row("x", "coap", "full", "mtls", "pki", "coap", "full", "no-such-server")
    job = {
        "pattern": "p",
        "measure": "psk",
        "network": "loopback",
        "key": "software",
        "device": "host-default",
        "payload_up_bytes": 64,
        "kept_p50_ms": None,
        "rows": [row],
    }
    with pytest.raises(InternalError) as exc:
        V._derived_row(job, row, PlanOptions(patterns=["study"]), None, None, V.RowInputs())
    msg = str(exc.value)
    assert msg.startswith("internal: plan --verify derived the row") and exc.value.exit_code == 1


@pytest.mark.slow
@skip_if(os.geteuid() != 0, "needs-root", "plan --verify runs the real servers over an emulated link (root)")
def test_plan_verify_with_a_cold_key_runs_its_resumed_rows_with_the_warm_key(tmp_path, capsys):
    out = tmp_path / "res"
    code = cli.main(
        [
            "plan",
            "--key",
            "se:iot-safe-sim:cold",
            "--verify",
            "--verify-n",
            "3",
            "--pattern",
            "periodic-collection",
            "--n",
            "500",
            "--no-report",
            "--out",
            str(out),
        ]
    )
    err = _err(capsys)
    assert code == 0, err
    assert "--key-session" not in err
    doc = R.load(out / "latest")
    assert doc.status == "complete"
    rows = doc.analysis.plan.verify
    resumed = [r for r in rows if r.row == "resumed"]  # VerifyRow records: read by attribute
    assert resumed and all(not r.key.endswith(":cold") and "cold applies to full" in r.note for r in resumed)
    assert any(r.row == "full" and r.key == "se:iot-safe-sim:cold" for r in rows)
