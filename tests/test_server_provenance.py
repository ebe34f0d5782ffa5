"""What a server run records besides its rate: each server's software (version, TLS library), what a
handshake negotiated, both sides' CPU, which side limited the rate (with the warning line in the
terminal and the report), where the load generator ran, and one stable order of configurations."""

import os
import re
import subprocess

import pytest

from secperf.app import server as app
from secperf.core import host
from secperf.core import result as R
from secperf.lab.pki import LabPKI
from secperf.lab.server_software import server_software
from secperf.measure import server as S
from secperf.report import terminal_server
from secperf.report.html import render


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return LabPKI(tmp_path_factory.mktemp("pki")).ensure()


@pytest.fixture(scope="module")
def nginx_series(pki, tmp_path_factory):
    cfg = S.ServerConfig("nginx", "ecdsa-p256")
    p = S.LoadParams(concurrency=[2], duration_s=0.6, warmup_s=0.2, op_n=5, workdir=tmp_path_factory.mktemp("w"))
    [s] = S.measure_config(cfg, p, pki)
    return s


# --- which side limited the rate ----------------------------------------------------------------------
def test_a_busy_server_limits_the_rate():
    assert S.rate_limit({"server_utilisation": 0.97, "loadgen_busy": 0.99})["limited_by"] == "server"


def test_a_saturated_generator_with_an_idle_server_is_named_with_its_figures():
    got = S.rate_limit(
        {"server_utilisation": 0.44, "loadgen_busy": 0.98, "loadgen_cores_n": 1, "loadgen_cpu_us_per_handshake": 546.0}
    )
    assert got["limited_by"] == "load generator"
    assert "44%" in got["limit_note"] and "98%" in got["limit_note"] and "546 µs" in got["limit_note"]


def test_cores_busy_with_other_work_are_not_passed_off_as_capacity():
    got = S.rate_limit(
        {"server_utilisation": 0.30, "loadgen_busy": 0.40, "server_core_busy": 0.99, "loadgen_cores_busy": 0.5}
    )
    assert got["limited_by"] == "other work on this machine" and "server's core was 99%" in got["limit_note"]
    shared = S.rate_limit(
        {"server_utilisation": 0.59, "loadgen_busy": 0.45, "server_core_busy": 0.89, "loadgen_cores_busy": 0.86}
    )  # under 90%, but others took 30-40% of both sides
    assert shared["limited_by"] == "other work on this machine" and "generator's cores were 86%" in shared["limit_note"]
    calm = S.rate_limit(
        {"server_utilisation": 0.30, "loadgen_busy": 0.40, "server_core_busy": 0.35, "loadgen_cores_busy": 0.45}
    )
    assert calm["limited_by"] == "neither" and calm["limited_by_why"] == "too few clients in flight"


def test_generator_busy_share_is_its_cpu_over_its_cores_in_the_window():
    end = {"type": "end", "handshakes": 900, "full": 900, "elapsed_s": 3.0, "cpu_s": 2.7}
    run = {
        "lines": [{"type": "meta", "library": "OpenSSL 3"}, end, {**end, "cpu_s": 1.5}],
        "start": (0.0, 0.0),
        "end": (3.0, 1.5),
        "stderr": "",
        "cores": [1, 2, 3],
    }
    lv = S.summarize_level(run)
    assert lv["loadgen_busy"] == pytest.approx((2.7 + 1.5) / (3.0 * 2))  # two processes on two of three cores
    assert lv["loadgen_cpu_us_per_handshake"] == pytest.approx(4.2e6 / 1800)
    assert lv["loadgen"]["procs"] == 2 and lv["loadgen"]["library"] == "OpenSSL 3"


def test_core_busy_shares_come_from_the_kernels_counters():
    before = {0: (100, 1000), 1: (500, 1000)}
    after = {0: (190, 1100), 1: (510, 1100)}
    assert S.cores_busy(before, after, [0]) == pytest.approx(0.9)
    assert S.cores_busy(before, after, [0, 1]) == pytest.approx(0.5)
    assert S.cores_busy(before, after, [7]) is None
    live = S.core_times()
    assert set(live) >= set(os.sched_getaffinity(0))


# --- where the generator runs ------------------------------------------------------------------------
def test_the_generator_never_shares_the_servers_core():
    usable = sorted(os.sched_getaffinity(0))
    cores = S.generator_cores(usable[0])
    if len(usable) > 1:
        assert usable[0] not in cores and cores == usable[1:]
    else:
        assert cores == usable
    assert S.generator_procs(S.LoadParams(core=usable[0])) == min(S.MAX_AUTO_PROCS, len(cores))
    assert S.generator_procs(S.LoadParams(core=usable[0], loadgen_procs=3)) == 3


def test_configurations_come_in_one_order_whatever_order_the_keys_were_given():
    a = app.plan(app.ServerOptions(keys=["rsa-2048", "ecdsa-p256"]))
    b = app.plan(app.ServerOptions(keys=["ecdsa-p256", "rsa-2048", "ecdsa-p256"]))
    assert [c.key for c in a] == [c.key for c in b] == ["rsa-2048", "ecdsa-p256"]


# --- provenance on a real nginx --------------------------------------------------------------------------
def test_server_software_is_what_the_program_reports():
    sw = server_software("nginx")
    out = subprocess.run(["nginx", "-v"], capture_output=True, text=True).stderr
    assert sw["version"] and f"nginx/{sw['version']}" in out
    assert sw["tls_library"].startswith("OpenSSL")
    assert (
        server_software("mosquitto")["version"]
        in subprocess.run(["mosquitto", "-h"], capture_output=True, text=True).stdout
    )


def test_a_server_run_records_software_negotiation_and_both_sides_cpu(nginx_series):
    s = nginx_series
    assert s.status == "ok", s.failures
    assert s.labels["server_software"]["server"] == "nginx" and s.labels["server_software"]["version"]
    neg = s.derived.negotiated
    assert neg["version"] == "TLSv1.3" and neg["cipher"].startswith("TLS_") and neg["group"]
    d = s.derived
    assert d.loadgen_cpu_us_per_handshake > 0 and 0 < d.loadgen_busy <= 1.5
    assert d.limited_by in ("server", "load generator", "other work on this machine", "neither")
    assert s.labels["core"] not in s.labels["loadgen_cores"] or len(os.sched_getaffinity(0)) == 1


def test_a_generator_limited_capacity_is_said_in_the_terminal_and_the_report(nginx_series):
    s = nginx_series.model_copy(deep=True)
    d = s.derived
    d.server_utilisation, d.loadgen_busy, d.loadgen_cpu_us_per_handshake = 0.44, 0.97, 546.0
    for key, value in S.rate_limit(d.model_dump(exclude_unset=True)).items():
        setattr(d, key, value)
    doc = R.new_result(kind="server", command=["test"], params={}, host=host.collect(), run_id="t")
    doc.series = [s]
    R.finish(doc)
    lines = terminal_server.limit_warnings(doc)
    assert len(lines) == 1 and "load generator limited the rate" in lines[0] and "nginx, ecdsa-p256" in lines[0]
    page = render(doc)
    assert "load generator limited the rate" in page
    assert re.search(r"server: nginx</th><td[^>]*>nginx \d", page)  # the header names the software
    assert "TLSv1.3" in page and "certificate verification off" in page
