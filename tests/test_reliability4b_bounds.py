"""Bounded runs: a measuring command of connections estimates its duration from the link, the protocol's
timers and --n before it starts, records it, and refuses (exit 2, naming the estimate and --max-hours) a
run over the limit; the measuring step is replaced by a recorder (nothing is measured here)."""

from __future__ import annotations

import contextlib
import io

import pytest

from conftest import patch_everywhere
from secperf import cli
from secperf.app import bounds
from secperf.inputs import netspec as NS


@pytest.fixture
def recorder(monkeypatch, tmp_path):
    from secperf.app import runner

    seen: list[dict] = []

    def record(kind, params, phases, output):
        seen.append(params)
        from secperf.subcommands.output import Exited

        return Exited(0)

    patch_everywhere(monkeypatch, runner, "measure_and_write", record)  # every command module's binding of it
    monkeypatch.chdir(tmp_path)
    return seen


def _run(argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    return code, err.getvalue()


@pytest.mark.parametrize(
    "argv",
    [
        ["connect", "dtls13", "--network", "delay=60s", "--n", "2"],
        ["connect", "quic", "--network", "delay=10ms,loss=50%", "--n", "100"],
        ["connect", "https", "--network", "delay=30s", "--n", "20"],
        ["connect", "edhoc", "--network", "delay=20s", "--n", "20"],
        ["handshake", "versions", "--network", "delay=60s", "--n", "2"],
    ],
)
def test_a_run_far_past_the_limit_is_refused_before_it_starts(argv, recorder, tmp_path):
    code, err = _run([*argv, "--out", str(tmp_path)])
    assert code == 2 and "estimated at" in err and "--max-hours" in err, err
    assert not recorder, "nothing may start"


def test_max_hours_raises_the_limit_and_the_estimate_is_recorded(recorder, tmp_path):
    argv = ["connect", "dtls13", "--network", "delay=60s", "--n", "2", "--out", str(tmp_path)]
    code, err = _run([*argv, "--max-hours", "10"])
    assert code == 0, err
    p = recorder[-1]
    assert p["max_hours"] == 10 and 3600 < p["estimate_s"] < 10 * 3600


def test_a_loopback_run_records_its_small_estimate(recorder, tmp_path):
    assert _run(["connect", "mqtt", "--n", "3", "--out", str(tmp_path)])[0] == 0
    p = recorder[-1]
    assert 0 < p["estimate_s"] < 60 and p["max_hours"] == pytest.approx(bounds.DEFAULT_HOURS)


@pytest.mark.parametrize("protocol", sorted(bounds.PROFILE))
def test_the_estimate_grows_with_delay_jitter_loss_and_falls_with_rate(protocol):
    def est(spec):
        return bounds.connection_s(protocol, NS.parse_networks([spec])[0])

    assert est("delay=100ms") > est("delay=10ms") > bounds.connection_s(protocol, None)
    assert est("delay=10ms,jitter=5ms") > est("delay=10ms")
    assert est("delay=10ms,loss=20%") > est("delay=10ms,loss=2%") > est("delay=10ms")
    assert est("delay=10ms,rate=10kbit") > est("delay=10ms,rate=10mbit")
