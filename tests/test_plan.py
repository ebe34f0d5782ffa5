"""secperf plan: measures as transformations of what-if inputs, the energy model's arithmetic, the
verdict rule on constructed inputs, bad pattern files, the Prometheus export. Structure, not wall time."""

from __future__ import annotations

import json
import tomllib
from importlib import resources

import pytest

from conftest import needs_links
from secperf.app.plan import resolved  # the command's edge: the link and key profile the planner takes
from secperf.cli import main
from secperf.core import result as R
from secperf.inputs import patterns as PS
from secperf.model import energy as E
from secperf.plan import design as D
from secperf.plan import measures as MS
from secperf.plan import planner as PL
from secperf.plan import verdict as V
from secperf.plan.evaluate import Outcome, evaluate

N = 4000


def _doc(name: str) -> dict:
    return tomllib.loads(resources.files("secperf.data").joinpath("patterns", f"{name}.toml").read_text())


def _pattern(name: str, **changes) -> PS.Pattern:
    d = _doc(name)
    for path, value in changes.items():
        section, key = path.split("__")
        d[section][key] = value
    return PS.validate_pattern(d)


def _eval(p: PS.Pattern, *measures: str, network: str | None = None):
    ov = PL.Overrides(network=network, radio="lte-m" if network else None, n=N, seed=3)
    ctx = PL.context(p, resolved(p, ov))
    d = D.baseline(p, PL.key_of(p, ov))
    for m in measures:
        d = MS.CATALOGUE[m].apply(d)
    return evaluate(ctx, d), ctx


def _dump(d: dict) -> str:
    """TOML of a pattern document (top-level scalars, then one table per section)."""

    def val(v):
        return json.dumps(v) if not isinstance(v, bool) else str(v).lower()

    top = [f"{k} = {val(v)}" for k, v in d.items() if not isinstance(v, dict)]
    tables = [
        f"[{k}]\n" + "\n".join(f"{kk} = {val(vv)}" for kk, vv in v.items()) for k, v in d.items() if isinstance(v, dict)
    ]
    return "\n".join(top) + "\n\n" + "\n\n".join(tables) + "\n"


# --- patterns ----------------------------------------------------------------------------------
def test_the_six_study_patterns_load_in_study_order_with_sources():
    ps = PS.load_patterns(["study"])
    assert [p.name for p in ps] == list(PS.STUDY_ORDER)
    for p in ps:
        for sec in (p.traffic, p.connection, p.requirements, p.stack):
            assert sec.source.strip()
        assert p.latency_s > 0


@pytest.mark.parametrize(
    "mutate, key, allowed",
    [
        (lambda d: d["traffic"].update(colour="red"), "[traffic]", "allowed: batches_per_day"),
        (
            lambda d: d["traffic"].update(interval_s=0.0),
            "[traffic].interval_s",
            "greater than or equal to 0.001",
        ),  # at least 1 ms between messages
        (lambda d: d["requirements"].update(latency=100), "[requirements].latency", "units: us"),
        (lambda d: d["requirements"].update(energy_per_day="9"), "[requirements].energy_per_day", "units: mJ, J"),
        (lambda d: d["stack"].update(protocol="amqp"), "[stack].protocol", "allowed: mqtt, coap, https, vpn"),
        (lambda d: d["stack"].update(protocol="vpn", measures=["psk"]), "[stack].measures", "allowed here:"),
    ],
)
def test_bad_pattern_files_exit_2_naming_the_key_and_the_allowed_values(tmp_path, capsys, mutate, key, allowed):
    d = _doc("periodic-collection")
    mutate(d)
    f = tmp_path / "bad.toml"
    f.write_text(_dump(d))
    assert main(["plan", "--pattern", str(f), "--out", str(tmp_path / "r"), "--n", "500"]) == 2
    err = capsys.readouterr().err
    assert key in err and allowed in err
    assert not (tmp_path / "r").exists()  # bad input leaves no run directory behind


# --- measures ------------------------------------------------------------------------------------
def test_a_measure_that_removes_a_round_trip_lowers_p50_by_about_one_rtt():
    # CoAP/DTLS 1.2: resumption drops the ServerKeyExchange...ServerHelloDone exchange (4 -> 3 exchanges)
    p = _pattern(
        "event-driven", stack__key="software", requirements__energy_per_day="1000 J", connection__mode="per-message"
    )
    before, ctx = _eval(p, network="delay=100ms")
    after, _ = _eval(p, "resumption", network="delay=100ms")
    rtt_ms = ctx.link.rtt_s * 1e3
    drop = before.numbers["latency_p50_ms"] - after.numbers["latency_p50_ms"]
    assert drop == pytest.approx(rtt_ms, rel=0.1)


def test_psk_removes_the_secure_element_signature():
    p = _pattern("periodic-collection")
    before, ctx = _eval(p)
    psk, _ = _eval(p, "psk")
    assert before.numbers["signatures_per_day"] > 0 and before.numbers["energy_se_j"] > 0
    assert psk.numbers["signatures_per_day"] == 0 and psk.numbers["energy_se_j"] == 0
    assert ctx.key_profile is not None and ctx.key_profile.name == "iot-safe-sim"  # resolved by the command's edge
    sign_ms = PL.profile_sign_ms("se:iot-safe-sim", ctx.key_profile)
    assert before.numbers["setup_p50_ms"] - psk.numbers["setup_p50_ms"] >= 0.9 * sign_ms


def test_keepalive_trades_set_ups_for_pings_and_preauth_moves_set_ups_off_the_request_path():
    p = _pattern("periodic-collection")
    before, _ = _eval(p)
    ka, _ = _eval(p, "keepalive")
    pre, _ = _eval(p, "preauth")
    assert before.numbers["setups_per_day"] > 0 and ka.numbers["setups_per_day"] == 0
    assert ka.numbers["keepalives_per_day"] > 0
    assert pre.numbers["setup_on_path_share"] == 0
    assert pre.numbers["energy_per_day_j"] == pytest.approx(before.numbers["energy_per_day_j"])
    assert pre.numbers["latency_pq_ms"] < before.numbers["latency_pq_ms"]


def test_jwt_caching_signs_once_per_lifetime_and_pooling_once_per_batch():
    p = _pattern("batch-collection")
    before, _ = _eval(p)
    cached, _ = _eval(p, "token-cache")
    pooled, _ = _eval(p, "pooling")
    assert before.numbers["signatures_per_day"] == pytest.approx(before.numbers["setups_per_day"])
    assert cached.numbers["signatures_per_day"] < before.numbers["signatures_per_day"]
    assert pooled.numbers["setups_per_day"] == pytest.approx(p.traffic.batches_per_day)


def test_jwt_with_resumption_rides_the_resumed_session_and_signs_only_fresh_tokens():
    from secperf.model import flights as F
    from secperf.model import predict as P
    from secperf.plan.evaluate import jwt_resumed_plan

    p = _pattern("batch-collection")
    ctx = PL.context(p, resolved(p, PL.Overrides(n=N, seed=3)))
    d = D.baseline(p)
    cached = jwt_resumed_plan(ctx, d, fresh=False)
    fresh = jwt_resumed_plan(ctx, d, fresh=True)
    full = P.plan(F.Scenario(protocol="jwt", handshake="cached", key=d.key), ctx.table, ctx.link, se=ctx.key_profile)
    https = P.plan(
        F.Scenario(protocol="https", handshake="resumed", key=d.key), ctx.table, ctx.link, se=ctx.key_profile
    )
    down = lambda pl: sum(f.wire_bytes for f in pl.flights if f is not None and f.sender == "server")  # noqa: E731
    assert down(cached) < down(full)  # no server certificate on a resumed session
    assert cached.flights[-2].wire_bytes - https.flights[-2].wire_bytes == F.JWT_REQ - F.HTTP_REQ
    assert not any(f.se for f in cached.flights if f is not None)
    assert sum(1 for f in fresh.flights if f is not None and f.se) == 1  # a fresh token: one signature
    # as a combination: token cached + session resumed; the set-ups resume, the signatures stay one per token
    both, _ = _eval(p, "resumption", "token-cache")
    cache_only, _ = _eval(p, "token-cache")
    assert both.numbers["setup_mix"].get("resumed+cached", 0) > 0.9
    assert both.numbers["signatures_per_day"] == pytest.approx(cache_only.numbers["signatures_per_day"])
    assert both.numbers["bytes_per_day"] < cache_only.numbers["bytes_per_day"]
    plan = PL.plan_pattern(p, resolved(p, PL.Overrides(n=N, seed=3)))
    combo = next(c for c in plan["combinations"] if sorted(c["measures"]) == ["resumption", "token-cache"])
    assert combo["energy_per_day_j"] < plan["before"]["numbers"]["energy_per_day_j"]
    assert combo["signatures_per_day"] < plan["before"]["numbers"]["signatures_per_day"]


def test_a_measure_that_does_not_apply_says_why():
    p = _pattern("real-time-control", stack__protocol="vpn")
    usable, why = MS.applicable(p, D.baseline(p))
    assert "psk" in why and "resumption" in why
    assert "psk" not in [m.name for m in usable]


# --- energy ---------------------------------------------------------------------------------------
def _radio(**kw) -> E.Radio:
    base = dict(
        name="t",
        description="",
        tx_mw=100.0,
        rx_mw=50.0,
        active_mw=10.0,
        tail_mw=5.0,
        tail_s=4.0,
        promotion_s=0.5,
        promotion_mw=20.0,
        idle_mw=1.0,
        psm_mw=0.1,
        sources={},
    )
    base.update(kw)
    return E.Radio(**base)


def test_activity_energy_is_the_sum_of_its_radio_cpu_and_se_parts():
    r = _radio()
    a = E.Activity(on_s=2.0, tx_s=0.2, rx_s=0.3, cpu_s=0.1, se_s=0.4, bytes=1000)
    cpu, se = E.Power("c", 30.0, "x"), E.Power("s", 20.0, "y")
    got = E.activity_energy(a, r, cpu, se, gap_s=100.0)
    radio_mj = 0.5 * 20 + 0.2 * 100 + 0.3 * 50 + (2.0 - 0.5) * 10 + 4.0 * 5
    assert got.radio_j == pytest.approx(radio_mj / 1e3)
    assert got.cpu_j == pytest.approx(0.1 * 30 / 1e3) and got.se_j == pytest.approx(0.4 * 20 / 1e3)
    assert got.total_j == pytest.approx(got.radio_j + got.cpu_j + got.se_j)
    # the next activity inside the tail: no promotion, the tail cut at the gap
    near = E.activity_energy(a, r, cpu, se, gap_s=1.0)
    assert near.radio_j == pytest.approx((radio_mj - 0.5 * 20 - 3.0 * 5) / 1e3)


def test_energy_per_day_is_radio_plus_cpu_plus_se_and_battery_life_follows():
    o, _ = _eval(_pattern("periodic-collection"))
    x = o.numbers
    assert x["energy_per_day_j"] == pytest.approx(x["energy_radio_j"] + x["energy_cpu_j"] + x["energy_se_j"])
    assert x["energy_radio_floor_j"] < x["energy_radio_j"]
    cap = E.battery_j(2600, 3.6)
    assert x["battery_days"] == pytest.approx(cap / x["energy_per_day_j"])


def test_every_radio_profile_has_a_source_per_figure():
    for name in E.radio_names():
        r = E.radio(name)
        assert r.sources, name
        for f in E.RADIO_FIELDS:
            src = r.sources.get(f) or r.sources.get("all")
            assert src and len(src) > 10, f"{name}.{f} has no source"
    with pytest.raises(E.EnergyError, match="known: "):
        E.radio("carrier-pigeon")


# --- verdicts -------------------------------------------------------------------------------------
def _outcome(measures: tuple[str, ...], *values: tuple[float, float], energy: float = 1.0) -> Outcome:
    checks = [
        {"check": f"c{i}", "value": v, "limit": lim, "unit": "ms", "ok": v <= lim} for i, (v, lim) in enumerate(values)
    ]
    d = D.Design("mqtt", "mtls", "software", measures=measures)
    return Outcome(d, {"energy_per_day_j": energy, "latency_pq_ms": values[0][0]}, checks)


def test_verdict_rule_on_constructed_inputs():
    ok_before = _outcome((), (50, 100))
    bad_before = _outcome((), (150, 100))
    fixed = _outcome(("psk",), (80, 100))
    still_bad = _outcome(("psk",), (120, 100))
    assert V.verdict(ok_before, None) == V.AS_IS
    assert V.verdict(bad_before, fixed) == V.WITH_MEASURES
    assert V.verdict(bad_before, still_bad) == V.HARD
    assert V.verdict(bad_before, None) == V.HARD


def test_best_combination_prefers_fewest_measures_then_least_energy():
    a = _outcome(("psk", "preauth"), (10, 100), energy=1.0)
    b = _outcome(("psk",), (90, 100), energy=5.0)
    c = _outcome(("preauth",), (80, 100), energy=4.0)
    assert V.best_of([a, b, c]) is c
    none_ok = [_outcome(("psk",), (300, 100)), _outcome(("preauth",), (200, 100))]
    assert V.best_of(none_ok).design.measures == ("preauth",)


def test_the_six_pattern_plan_gives_a_verdict_each_with_its_deciding_numbers(tmp_path, capsys):
    assert main(["plan", "--n", "2000", "--out", str(tmp_path), "--json", "--metrics", str(tmp_path / "m.prom")]) == 0
    doc = json.loads(capsys.readouterr().out)
    R.validate(doc)
    ps = doc["analysis"]["plan"]["patterns"]
    assert [p["pattern"] for p in ps] == list(PS.STUDY_ORDER)
    for p in ps:
        assert p["verdict"] in (V.AS_IS, V.WITH_MEASURES, V.HARD)
        assert p["deciding"] and all({"value", "limit", "ok"} <= set(c) for c in p["deciding"])
        assert p["before"]["numbers"]["energy_per_day_j"] > 0
        assert p["alerts"]
        if p["verdict"] == V.WITH_MEASURES:
            assert p["best"]["passes"] and not p["before"]["passes"]
    html = (tmp_path / "latest" / "report.html").read_text()
    assert "Communication patterns: verdicts" in html and 'data-plot="plan-energy"' in html


# --- metrics --------------------------------------------------------------------------------------
def test_metrics_export_is_prometheus_text_written_by_the_client_library(tmp_path):
    from prometheus_client.parser import text_string_to_metric_families

    from secperf.report.export_metrics import exposition

    doc = R.new_result(kind="signer", command=["secperf"], params={}, host={}, run_id="t1")
    s = R.new_series(
        "signer/iot-safe-sim/sign_only",
        kind="signer",
        labels={"profile": "iot-safe-sim", "mode": "sign_only"},
        timer={"name": "x", "start": "a", "end": "b"},
    )
    s.values_us = [470_000.0, 480_000.0, 490_000.0]
    R.add_failure(s, "C_Sign: CKR_DEVICE_ERROR")
    R.add_failure(s, "token call timed out after 5 s")
    R.finalize_series(s)
    doc.series.append(s)
    fams = {f.name: f for f in text_string_to_metric_families(exposition(doc))}
    ok = [x for x in fams["secperf_signing_success_ratio"].samples if x.labels["series"] == s.id][0]
    assert ok.value == pytest.approx(3 / 5)
    mean = [x for x in fams["secperf_signing_mean_seconds"].samples if x.labels["series"] == s.id][0]
    assert mean.value == pytest.approx(0.48)
    assert [x.value for x in fams["secperf_se_error_ratio"].samples if x.labels["series"] == s.id] == [0.2]
    assert [x.value for x in fams["secperf_se_timeout_ratio"].samples if x.labels["series"] == s.id] == [0.2]
    f = tmp_path / "r.json"
    f.write_text(R.dumps(R.finish(doc)))
    assert main(["metrics", str(f), "-o", str(tmp_path / "out.prom")]) == 0
    assert "# TYPE secperf_signing_success_ratio gauge" in (tmp_path / "out.prom").read_text()


def test_verify_runs_the_before_after_pairs_the_emulator_can_run():
    from secperf.app import plan as A
    from secperf.app.plan_verify import jobs

    plans = A.plan_all(A.PlanOptions(patterns=["study"], n=1000))
    js = {(j["pattern"], j["measure"]): j for j in jobs(plans)}
    assert ("remote-management", "resumption") in js
    assert ("batch-collection", "token-cache") in js
    assert ("event-driven", "psk") in js
    assert [(r.auth, r.security) for r in js[("event-driven", "psk")]["rows"]] == [("mtls", "pki"), ("mtls", "psk")]
    # CoAP resumption: both rows against the server that resumes, so they differ only by the measure
    cf = js[("event-driven", "resumption")]["rows"]
    assert [r.whatif_handshake for r in cf] == ["full", "resumed"] and {r.coap_server for r in cf} == {"californium"}
    # Californium resumes on the first ClientHello: the prediction drops the cookie round trip
    from secperf.app.plan_verify import predicted_p50_ms

    args = ("coap", "resumed", "software", "delay=100ms", 4000, 1, "host-default")
    assert predicted_p50_ms(*args) - predicted_p50_ms(*args, no_cookie=True) == pytest.approx(200.0, rel=0.1)
    # keep-alive: MQTT runs a kept-session row against the per-message prediction; others say why not
    kept = js[("periodic-collection", "keepalive")]
    assert [r.kept for r in kept["rows"]] == [False, True] and kept["kept_p50_ms"] > 0
    assert js[("event-driven", "keepalive")]["note"] and not js[("event-driven", "keepalive")]["rows"]
    # JWT + resumption is planned but cannot be measured by the JWT client: a note, no rows
    assert "resumption" in {m["measure"] for p in plans if p["pattern"] == "batch-collection" for m in p["measures"]}
    assert js[("batch-collection", "resumption")]["note"] and not js[("batch-collection", "resumption")]["rows"]


# --- keep-alive rows of --verify: messages on a kept MQTT/TLS session (real mosquitto and paho-mqtt) ---
@needs_links
def test_a_kept_session_times_each_message_as_one_round_trip(tmp_path, monkeypatch):
    from secperf.lab.pki import LabPKI
    from secperf.measure import connect as MC
    from secperf.measure.kept import kept_series_id, measure_kept_mqtt

    monkeypatch.setenv("SECPERF_HOME", str(tmp_path / "home"))
    LabPKI(tmp_path / "pki").ensure()
    doc = R.new_result(kind="plan", command=[], params={}, host={}, run_id="t")
    p = MC.ConnectParams(n=2, warmup=1, workdir=tmp_path / "w", pki_root=tmp_path / "pki", timeout_ms=3000)
    s = measure_kept_mqtt("delay=20ms", p, doc, None, messages=3, payload_bytes=64, gap_ms=50)
    assert s.id == kept_series_id("delay=20ms") and s in doc.series
    assert s.status == "ok", s.failures[:2]
    assert len(s.values_us) == 2 * 3  # warm-up connection's messages not counted
    rtt_us = 40_000
    assert min(s.values_us) >= rtt_us - 500  # the link never delivers early
    assert sorted(s.values_us)[len(s.values_us) // 2] < 2.5 * rtt_us  # one round trip, no handshake
    from secperf.model.opmetrics import measured

    reuse = [r for r in measured(doc) if r["metric"] == "secperf_session_reuse_ratio" and r["labels"]["series"] == s.id]
    assert [r["value"] for r in reuse] == [1.0]  # every message reused the kept session


def test_a_measure_the_cost_table_cannot_price_is_set_aside_with_the_tables_reason(monkeypatch):
    """A device's counted table has no rows for a protocol a measure switches to (EDHOC on a Cortex-M):
    the plan judges the other measures and names why that one was left out, instead of stopping."""
    from secperf.model import costs as C

    p = PS.load_pattern("event-driven")
    real = PL.evaluate

    def evaluate_without_edhoc(ctx, d):
        if "edhoc-oscore" in d.measures:
            raise C.MissingCost("cost table 'device:test' counted no client cost for 'base:edhoc:m0-x5t:se:client'")
        return real(ctx, d)

    monkeypatch.setattr(PL, "evaluate", evaluate_without_edhoc)
    out = PL.plan_pattern(p, resolved(p, PL.Overrides(n=300)))
    assert "base:edhoc" in out["not_applicable"]["edhoc-oscore"]
    assert out["not_applicable"]["edhoc-oscore"].startswith("not costed on this table")
    judged = {m["measure"] for m in out["measures"]}
    assert "edhoc-oscore" not in judged and "resumption" in judged
    assert all("edhoc-oscore" not in c["measures"] for c in out["combinations"])
