"""The what-if's and the plan's host side are this host's costs (issue 43, item 2): measured once by a
short `secperf crypto` run cached under SECPERF_HOME with its provenance, or the shipped table when
asked for, and then said."""

import os
import subprocess
import sys

import pytest

from secperf.app import host_costs as H
from secperf.app.reporter import Reporter, using
from secperf.core.errors import InputError


class Notes(Reporter):
    def __init__(self):
        self.notes = []

    def note(self, text):
        self.notes.append(text)


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SECPERF_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("SECPERF_HOST_COSTS", raising=False)
    return tmp_path / "home"


def test_the_shipped_table_only_when_asked_and_then_said(home):
    with using(Notes()) as r:
        t = H.host_table("shipped")
    assert t.description.startswith("shipped table host-default, not this host")
    assert any("not measured on this host" in n for n in r.notes)
    assert not (home / "host-costs").exists()


def test_a_calibration_result_needs_no_cost_run(home):
    t = H.host_table(None, calibrated=True)
    assert t.name == "host-default" and not (home / "host-costs").exists()


def test_an_unknown_choice_is_a_named_error(home, monkeypatch):
    with pytest.raises(InputError, match="--host-costs 'nope'"):
        H.host_table("nope")
    monkeypatch.setenv("SECPERF_HOST_COSTS", "fast")
    with pytest.raises(InputError, match="SECPERF_HOST_COSTS"):
        H.host_table()


def test_the_option_is_checked_at_the_command_line(tmp_path):
    p = subprocess.run(
        [sys.executable, "-m", "secperf", "whatif", "mqtt", "--host-costs", "vm", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        env={**os.environ, "SECPERF_HOME": str(tmp_path)},
    )
    assert p.returncode == 2 and "--host-costs" in p.stderr


def test_the_cache_is_keyed_by_cpu_and_openssl(home, monkeypatch):
    a = H.cache_path()
    monkeypatch.setattr(H, "openssl_version", lambda: "OpenSSL 9.9.9")
    assert H.cache_path() != a and H.cache_path().parent.parent == home / "host-costs"


@pytest.mark.slow
def test_this_hosts_costs_are_measured_once_and_kept_with_their_provenance(home):
    t = H.host_table("measured")
    path = H.cache_path()
    assert path.is_file()
    first = path.stat().st_mtime_ns
    from secperf.core import result as R

    doc = R.load(path)
    assert doc.kind == "crypto" and doc.host.get("cpu_model") and doc.host.get("date")
    ids = {s.id for s in doc.series if s.status == "ok"}
    assert "crypto/ecdsa-p256/sign/32" in ids or any(i.startswith("crypto/ecdsa-p256/sign") for i in ids), ids
    # the host's own rows replace the shipped figures; what the short run does not measure keeps its source
    assert doc.run_id in t.ops["sign:ecdsa-p256"].source
    assert doc.run_id in t.ops["derive:x25519"].source
    assert doc.run_id not in t.ops["encaps:ml-kem-768"].source
    assert "this host" in t.description and doc.run_id in t.name
    again = H.host_table()
    assert path.stat().st_mtime_ns == first  # from the cache, not measured again
    assert again.ops["sign:ecdsa-p256"].us == t.ops["sign:ecdsa-p256"].us
