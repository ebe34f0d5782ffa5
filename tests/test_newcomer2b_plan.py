"""plan: a pattern's description follows the protocol and key judged (a CoAP system that starts from
an MQTT pattern is not described as MQTT), and no exported alert has a threshold its metric can
never cross (issue 43, item 6)."""

from __future__ import annotations

import pytest

from secperf.app.plan import resolved  # the command's edge: the link and key profile the planner takes
from secperf.core import result as R
from secperf.inputs import patterns as PS
from secperf.inputs.system import load_system, pattern
from secperf.model.opmetrics import RANGE, can_fire, predicted
from secperf.plan.describe import describe
from secperf.plan.planner import Overrides, plan_pattern

SYSTEM = """
name = "coap-meter"
source = "test"
[device]
core = "cortex-m4-80"
stack = "wolfssl"
[security]
key = "se:iot-safe-sim"
[network]
link = "nb-iot"
[protocol]
name = "{proto}"
[pattern]
use = "periodic-collection"
"""


def test_a_coap_system_from_an_mqtt_pattern_is_described_as_coap_dtls(tmp_path):
    f = tmp_path / "coap.toml"
    f.write_text(SYSTEM.format(proto="coap"))
    p = pattern(load_system(f))
    assert p.stack.protocol == "coap"
    text = describe(p, p.stack.key)
    assert "CoAP/DTLS" in text and "MQTT" not in text and "QoS" not in text, text
    assert text.startswith("a battery meter reports a reading every 15 minutes")  # the traffic is kept


def test_a_description_names_the_key_the_plan_judges():
    p = PS.load_pattern("periodic-collection")
    assert describe(p, p.stack.key) == p.description  # agrees with itself: unchanged
    text = describe(p, "software")
    assert "SIM" not in text and "key in software" in text, text
    every = {n: PS.load_pattern(n) for n in PS.builtin_names()}
    assert all(describe(q, q.stack.key) == q.description for q in every.values())


@pytest.fixture(scope="module")
def six():
    """The six built-in patterns planned once (about 10 s together)."""
    pats = {n: PS.load_pattern(n) for n in PS.builtin_names()}
    return {n: plan_pattern(p, resolved(p, Overrides())) for n, p in pats.items()}


@pytest.mark.slow
def test_no_alert_of_a_plan_has_a_threshold_outside_its_metrics_range(six):
    for name in PS.builtin_names():
        plan = six[name]
        assert plan["alerts"], name
        for a in plan["alerts"]:
            lo, hi = RANGE[a["metric"]]
            if "alert_below" in a:
                assert a["alert_below"] > lo, (name, a)
            else:
                assert a["alert_above"] < hi, (name, a)
    # periodic collection reuses no session: its reuse alert (below 0) was the one that could not fire
    metrics = {a["metric"] for a in six["periodic-collection"]["alerts"]}
    assert "secperf_session_reuse_ratio" not in metrics


def test_an_older_plan_results_unfireable_alert_is_not_exported():
    dead = {"metric": "secperf_session_reuse_ratio", "assumed": 0.0, "alert_below": 0.0, "why": "x"}
    live = {"metric": "secperf_auth_timeout_ratio", "assumed": 0.0, "alert_above": 0.001, "why": "y"}
    assert not can_fire(dead) and can_fire(live)
    assert not can_fire({"metric": "secperf_signing_success_ratio", "alert_above": 1.0})
    doc = R.new_result(kind="plan", command=["secperf", "plan"], params={}, host={"cpu_model": "test"}, run_id="p")
    doc.analysis = {"plan": {"patterns": [{"pattern": "p", "alerts": [dead, live]}]}}
    rows = [r for r in predicted(doc) if r["metric"] == "secperf_alert_threshold"]
    assert [r["labels"]["metric"] for r in rows] == ["secperf_auth_timeout_ratio"]


@pytest.mark.slow
def test_the_suitability_matrix_of_six_patterns_fits_80_columns_in_one_part(six):
    import io

    from rich.console import Console

    from secperf.core.analysis_schema import PlanPattern
    from secperf.report.fit import print_table
    from secperf.report.terminal_plan import matrix_table

    ps = [PlanPattern.model_validate(p) for p in six.values()]  # the rows as a plan Result holds them
    assert len(ps) == 6
    buf = io.StringIO()
    print_table(Console(file=buf, width=80, color_system=None), matrix_table(ps))
    out = buf.getvalue()
    assert "(part" not in out, out  # one table, not four parts
    assert max(len(line.rstrip()) for line in out.splitlines()) <= 80
    header = next(line for line in out.splitlines() if line.split()[:1] == ["design"])
    assert header.split()[1:] == [f"P{i}" for i in range(1, 7)], header
    for i, p in enumerate(ps, 1):  # the legend names each column's pattern
        assert f"P{i} {p.pattern}" in " ".join(out.split())
