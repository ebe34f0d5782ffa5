"""A link reaches measure/ and lab/ as the object the command resolved (a NetSpec, an open Link), never as
its text parsed again there: plan --verify's rows carry their NetSpec into the connections they run (a kept
MQTT session and the before/after rows alike), a link built from a resolved spec is not parsed again, and
measure_vpn refuses a link's text (tests/test_vpn.py)."""

from __future__ import annotations

import sys

import pytest

from conftest import CAPABLE, LINK_PROBLEM, patch_everywhere, skip
from secperf.app import plan as A
from secperf.app import plan_verify as PV
from secperf.core import result as R
from secperf.inputs import netspec as NS
from secperf.lab import netns
from secperf.measure import connect as MC
from secperf.measure import kept as K


def _job(pattern: str, measure: str) -> tuple[dict, A.PlanOptions]:
    o = A.PlanOptions(patterns=[pattern], n=300)
    js = {(j["pattern"], j["measure"]): j for j in PV.jobs(A.plan_all(o))}
    return js[(pattern, measure)], o


def _parses_in_lab(monkeypatch) -> list[str]:
    """Every NS.parse called from a module of lab/ or measure/, recorded (the real parse still runs)."""
    real = NS.parse
    calls: list[str] = []

    def parse(text, *a, **k):
        where = sys._getframe(1).f_code.co_filename
        if "/secperf/lab/" in where or "/secperf/measure/" in where:
            calls.append(f"{where.rsplit('/secperf/', 1)[1]}: {text}")
        return real(text, *a, **k)

    patch_everywhere(monkeypatch, NS, "parse", parse)
    return calls


def test_a_kept_row_of_plan_verify_runs_over_the_runs_resolved_link(monkeypatch):
    job, o = _job("periodic-collection", "keepalive")
    row = next(r for r in job["rows"] if r.kept)
    seen = []
    patch_everywhere(monkeypatch, K, "measure_kept_mqtt", lambda network, cp, *a, **k: seen.append((network, cp)))
    inputs = PV.RowInputs()
    doc = R.new_result(kind="plan", command=[], params={}, host={}, run_id="t")
    PV._run_row(job, row, o, doc, None, inputs)
    ((network, cp),) = seen
    assert network == job["network"] != "loopback"
    assert cp.links == (inputs.spec(network),) and cp.links[0].name == network
    assert inputs.link(network) is inputs.link(network)  # the link model made once, from the same spec


def test_a_before_after_row_of_plan_verify_runs_over_the_runs_resolved_link(monkeypatch):
    job, o = _job("event-driven", "psk")
    seen = []
    monkeypatch.setattr(MC, "run_connect", lambda cfgs, cp, doc, run: seen.append((cfgs, cp)))
    monkeypatch.setattr(PV, "predicted_p50_ms", lambda *a, **k: 1.0)  # the model's side is not judged here
    inputs = PV.RowInputs()
    doc = R.new_result(kind="plan", command=[], params={}, host={}, run_id="t")
    PV._run_row(job, job["rows"][0], o, doc, None, inputs)
    ((cfgs, cp),) = seen
    assert {c.network for c in cfgs} == {job["network"]}
    assert [s.name for s in cp.links] == [job["network"]] and cp.links[0] is inputs.spec(job["network"])


def test_a_link_built_from_a_resolved_spec_is_not_parsed_again(monkeypatch):
    if not CAPABLE or LINK_PROBLEM is not None:
        skip("needs-links", f"a root-mode link cannot be built here: {LINK_PROBLEM or 'not root or no /dev/net/tun'}")
    spec = NS.parse("delay=2ms")
    calls = _parses_in_lab(monkeypatch)
    with netns.LinkPerNetwork(1, [spec]) as links:
        link, err = links.get(spec.name)
        assert err is None and link is not None and link.spec is spec
    assert calls == []
    # a caller that resolved nothing (a library user's text) still gets its link, parsed where it is built
    with netns.LinkPerNetwork(1) as links:
        link, err = links.get("delay=3ms")
        assert err is None and link is not None and link.spec.up.delay_ms == pytest.approx(3)
    assert calls == ["lab/netns.py: delay=3ms"]
