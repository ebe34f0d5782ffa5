"""The planner's measure "EDHOC + OSCORE instead of DTLS" (plan/measures.py: edhoc-oscore)."""

from __future__ import annotations

import tomllib
from importlib import resources

import pytest

from secperf.app.plan import resolved  # the command's edge: the link and key profile the planner takes
from secperf.inputs import patterns as PS
from secperf.plan import design as D
from secperf.plan import measures as MS
from secperf.plan import planner as PL
from secperf.plan.evaluate import evaluate


def _pattern(name: str, **changes) -> PS.Pattern:
    d = tomllib.loads(resources.files("secperf.data").joinpath("patterns", f"{name}.toml").read_text())
    for path, value in changes.items():
        section, key = path.split("__")
        d[section][key] = value
    return PS.validate_pattern(d)


def _eval(p, *measures, network="delay=100ms"):
    ov = PL.Overrides(network=network, radio="lte-m", n=4000, seed=3)
    ctx = PL.context(p, resolved(p, ov))
    d = D.baseline(p, PL.key_of(p, ov))
    for m in measures:
        d = MS.CATALOGUE[m].apply(d)
    return evaluate(ctx, d), ctx


def test_edhoc_instead_of_dtls_saves_a_round_trip_and_bytes_keeps_the_signature():
    # CoAP over DTLS 1.2 with a cookie: 4 exchanges to the response; EDHOC (separate message_3) + OSCORE: 3
    p = _pattern(
        "event-driven", stack__key="software", requirements__energy_per_day="1000 J", connection__mode="per-message"
    )
    dtls, ctx = _eval(p)
    edhoc, _ = _eval(p, "edhoc-oscore")
    drop = dtls.numbers["latency_p50_ms"] - edhoc.numbers["latency_p50_ms"]
    assert drop == pytest.approx(ctx.link.rtt_s * 1e3, rel=0.15)
    assert edhoc.numbers["signatures_per_day"] == dtls.numbers["signatures_per_day"] > 0
    assert edhoc.numbers["bytes_per_day"] < dtls.numbers["bytes_per_day"]


def test_edhoc_oscore_applies_to_coap_only():
    p = _pattern("periodic-collection")
    d = D.baseline(p)
    why = MS.CATALOGUE["edhoc-oscore"].not_applicable(p, d)
    assert (why is None) == (d.protocol == "coap")
    if d.protocol != "coap":
        assert "CoAP" in why
