"""Results written by secperf before the derived fields and the analysis became models (the files in
tests/data/old_results: `crypto --n 3`, `handshake resumption --n 3`, `handshake breakdown --network lte-m`,
`connect mqtt --n 3`, `signer --n 3`, `mac ... --cortexm m3`, and device, what-if, server, plan and
fleet runs) still read, hold every series' derived fields as their kind's model, and write back as
the same JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from secperf.core import result as R
from secperf.core.result_schema import (
    DERIVED_BY_KIND,
    Analysis,
    ConnectDerived,
    CortexmDerived,
    CryptoDerived,
    DeviceCryptoDerived,
    DeviceDerived,
    HandshakeDerived,
    LinkCounts,
    ServerDerived,
    SignerDerived,
    WhatifDerived,
)

DATA = Path(__file__).parent / "data" / "old_results"
FILES = sorted(DATA.glob("*.json"))


def test_every_kind_has_a_fixture():
    # a kind new in this release has its Result written by this release in tests/data/saved_results
    now = sorted((DATA.parent / "saved_results").glob("*.json"))
    kinds = {s.kind for f in FILES + now for s in R.load(f).series}
    assert set(DERIVED_BY_KIND) - kinds <= {"jwt"}, "a series kind without a Result written by secperf"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_an_old_result_reads_typed_and_writes_back_the_same(path):
    raw = json.loads(path.read_text())
    doc = R.load(path)
    assert isinstance(doc.analysis, Analysis)
    assert doc.series or doc.analysis.model_fields_set, "a fixture with nothing to read"
    for s in doc.series:
        assert isinstance(s.derived, DERIVED_BY_KIND[s.kind]), (s.id, type(s.derived))
    # the same JSON: keys, values and whole numbers kept whole
    assert json.dumps(R.to_json(doc), sort_keys=True) == json.dumps(raw, sort_keys=True)


def _ok(name, kind):
    return [s for s in R.load(DATA / f"{name}.json").series if s.kind == kind and s.status == "ok"]


def test_handshake_fields_read_as_attributes():
    rows = _ok("handshake", "handshake")
    assert rows
    for s in rows:
        d = s.derived_as(HandshakeDerived)
        assert d.breakdown and d.negotiated and d.flights_first_conn
        assert d.tcp_connect_p50_us is not None and d.tcp_connect_p50_us > 0
    assert any(s.derived_as(HandshakeDerived).resumed for s in rows)  # resumption rows count their resumptions


def test_an_emulated_link_is_counted_per_series():
    rows = _ok("netem", "handshake")
    assert rows
    for s in rows:
        link = s.derived_as(HandshakeDerived).link
        assert isinstance(link, LinkCounts)
        assert link.up and link.down and link.device_Tcp_OutSegs


def test_connect_crypto_signer_cortexm_device_server_whatif_fields():
    for s in _ok("connect", "connect"):
        d = s.derived_as(ConnectDerived)
        assert d.phases_p50_us and d.resumed is not None
    crypto = _ok("crypto", "crypto")
    assert crypto and all((s.derived_as(CryptoDerived).ops_per_s or 0) > 0 for s in crypto)
    signer = _ok("signer", "signer")
    assert signer and any(s.derived_as(SignerDerived).per_call for s in signer)  # the token's rows
    cm = _ok("mac", "cortexm")
    assert cm and all((s.derived_as(CortexmDerived).instructions or 0) > 0 for s in cm)
    assert all(s.derived_as(CortexmDerived).tag_ok for s in cm if s.labels["op"] == "mac")  # setup rows have no tag
    dev = _ok("device", "device")
    assert dev and all(s.derived_as(DeviceDerived).messages for s in dev)
    dc = _ok("device_crypto", "device_crypto")
    assert dc and all(isinstance(s.derived_as(DeviceCryptoDerived).instructions_cold, int) for s in dc)
    srv = _ok("server", "server")
    assert srv and all((s.derived_as(ServerDerived).handshakes or 0) > 0 for s in srv)
    wi = _ok("whatif", "whatif")
    assert wi and all(s.derived_as(WhatifDerived).usable is not None for s in wi)


def test_analyses_read_as_attributes():
    assert R.load(DATA / "plan.json").analysis.plan
    assert R.load(DATA / "fleet.json").analysis.fleet
    assert R.load(DATA / "mac.json").analysis.can
    assert R.load(DATA / "whatif.json").analysis.whatif


def test_a_derived_field_of_the_wrong_type_is_refused_where_it_is_set():
    s = _ok("handshake", "handshake")[0]
    with pytest.raises(R.ResultError, match="tcp_connect_p50_us"):
        s.derived_as(HandshakeDerived).tcp_connect_p50_us = -1.0
    raw = json.loads((DATA / "crypto.json").read_text())
    raw["series"][0]["derived"]["ops_per_s"] = "fast"
    with pytest.raises(R.ResultError, match="ops_per_s"):
        R.validate(raw)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_every_key_the_release_wrote_is_declared(path):
    """No derived key, analysis or run field of these Results is left to the open extras: each is a
    declared field of its model (a key a measurement adds must be declared where its kind's model is)."""
    doc = R.load(path)
    assert not doc.model_extra and not doc.analysis.model_extra
    for s in doc.series:
        assert not s.model_extra and not s.timer.model_extra, s.id
        assert not s.derived.model_extra, (s.id, sorted(s.derived.model_extra or {}))


def test_the_readers_take_attributes_not_keys():
    """The terminal tables, the HTML report, the observations and the metrics of every fixture read the
    Result through attributes: a record answers no mapping protocol (tests/test_attributes_only.py), so
    a reader that still took a key would fail here with a TypeError or AttributeError."""
    import io

    from rich.console import Console

    from secperf.app.runner import result_tables
    from secperf.core.observations import observations
    from secperf.report import html
    from secperf.report.export_metrics import exposition

    for doc in (R.load(f) for f in FILES):
        console = Console(file=io.StringIO(), width=200)
        tables = result_tables(doc, doc.params)
        for t in tables:
            console.print(t)
        assert observations(doc) is not None and exposition(doc)
        assert "<html" in html.render(doc).lower()
