"""The CLI end to end: a small crypto run writes a Result and a report; bad input is exit 2 with a
clear message; report and compare read Results and reject malformed ones."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import run_cli
from secperf.core import result as R


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    p = run_cli(
        "crypto",
        "--alg",
        "ecdsa-p256,rsa-1024,rsa-2048,x25519,sha256,ml-kem-512,ml-dsa-44",
        "--op",
        "sign,verify,derive,hash",
        "--size",
        "16,1024",
        "--n",
        "5",
        "--duration",
        "1",
        "--warmup",
        "1",
        "--out",
        str(out),
        "--json",
        "--max-failure-share",
        "1",
    )
    return out, p


def test_crypto_json_is_the_result_and_nothing_else(small_run):
    out, p = small_run
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert R.validate(doc).status == doc["status"] == "complete"
    ids = {s["id"] for s in doc["series"]}
    assert "crypto/ecdsa-p256/sign/32" in ids and "crypto/sha256/hash/1024" in ids
    ok = [s for s in doc["series"] if s["status"] == "ok"]
    assert len(ok) >= 8
    for s in ok:
        assert s["summary"]["n"] == len(s["values_us"]) == len(s["samples"]) >= 1
        assert s["timer"]["start"] and s["timer"]["end"]
        assert s["labels"]["security_bits"] in (80, 112, 128, 192, 256)
        assert s["derived"]["ops_per_s"] > 0
    assert doc["host"]["openssl"].startswith("OpenSSL 3")
    pq = next(s for s in doc["series"] if s["labels"]["alg"] == "ml-dsa-44")
    assert "cryptography" in pq["labels"]["library"]


def test_run_directory_holds_result_and_report(small_run):
    out, p = small_run
    run_dir = (out / "latest").resolve()
    doc = R.load(run_dir / "result.json")
    assert R.to_json(doc) == json.loads(p.stdout)
    html = (run_dir / "report.html").read_text()
    assert "<svg" in html and "<script" not in html


def test_s5_answers_come_from_the_run(small_run):
    doc = json.loads(small_run[1].stdout)
    answers = {a["id"]: a for a in doc["analysis"]["s5"]}
    assert "rsa-sign-vs-verify" in answers and "ecdsa-sign-vs-verify" in answers
    ev = answers["rsa-sign-vs-verify"]["evidence"]
    assert all(e["sign_p50_us"] > e["verify_p50_us"] for e in ev)  # RSA verifies faster than it signs


def test_unsupported_pq_row_is_reported_not_crashing(small_run):
    doc = json.loads(small_run[1].stdout)
    kem = [s for s in doc["series"] if s["labels"]["alg"] == "ml-kem-512"]
    # the cryptography package does not expose ML-KEM-512; the op filter keeps none of its ops anyway
    assert all(s["status"] in ("unsupported", "ok") for s in kem)


@pytest.mark.parametrize(
    "args,needle",
    [
        (["crypto", "--alg", "rsa-999"], "unknown algorithm 'rsa-999'; known: rsa-1024"),
        (["crypto", "--alg", "sha256", "--size", "0"], "--size 0 is not valid"),
        (["crypto", "--op", "fly"], "unknown operation 'fly'"),
        (["crypto", "--strength", "100"], "not an SP 800-57 strength row"),
        (["crypto", "--n", "0"], "must be at least 1"),
        (["run", "--scenario", "nope"], "unknown scenario 'nope'"),
        (["crypto", "--alg", "sha256", "--network", "lte"], "send nothing over a network"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(args, needle, tmp_path):
    p = run_cli(*args, "--out", str(tmp_path))
    assert p.returncode == 2
    assert needle in p.stderr
    assert not any(tmp_path.iterdir())  # nothing measured, nothing written


def test_report_and_compare_reject_malformed_json(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "secperf.result", ')
    for args in (["report", str(bad)], ["compare", str(bad), str(bad)]):
        p = run_cli(*args)
        assert p.returncode == 2
        assert "malformed JSON at line 1" in p.stderr
    p = run_cli("report", str(tmp_path / "missing.json"))
    assert p.returncode == 2 and "no such file" in p.stderr


def test_report_rerenders_and_compare_judges_two_runs(small_run, tmp_path):
    out, _ = small_run
    res = (out / "latest" / "result.json").resolve()
    p = run_cli("report", str(res), "-o", str(tmp_path / "r.html"))
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "r.html").read_text().count("data-plot=") >= 3
    p = run_cli("compare", str(res), str(res), "--json")
    assert p.returncode == 0, p.stderr
    cmp = json.loads(p.stdout)
    assert cmp["rows"] and all(r["verdict"] == "no significant difference" for r in cmp["rows"] if "p_value" in r)


def test_csv_export_is_tidy_and_covers_every_series(small_run, tmp_path):
    import csv
    import io

    from secperf.report.export import to_csv

    doc = json.loads(small_run[1].stdout)
    rows = list(csv.DictReader(io.StringIO(to_csv(R.validate(doc)))))
    assert {r["id"] for r in rows} == {s["id"] for s in doc["series"]}
    p50 = {r["id"]: float(r["value"]) for r in rows if r["metric"] == "time_per_op" and r["statistic"] == "p50"}
    assert p50 == {s["id"]: pytest.approx(s["summary"]["p50_us"]) for s in doc["series"] if s["summary"]}


def test_failing_probe_becomes_failed_series_run_goes_on_and_exit_1(tmp_path):
    """A broken native tool must not crash the run: each series records why, the Result is
    complete and kept, and the exit code says measurements failed."""
    broken = tmp_path / "broken-probe"
    broken.write_text("#!/bin/sh\necho 'simulated crash: libcrypto missing' >&2\nexit 1\n")
    broken.chmod(0o755)
    exe = shutil.which("secperf", path=str(os.path.dirname(sys.executable)))
    env = dict(os.environ, SECPERF_PROBE=str(broken))
    p = subprocess.run(
        [
            exe,
            "crypto",
            "--alg",
            "sha256,ml-dsa-44",
            "--op",
            "hash,sign",
            "--size",
            "16",
            "--n",
            "3",
            "--duration",
            "0.3",
            "--out",
            str(tmp_path / "r"),
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 1, p.stderr
    doc = json.loads(p.stdout)
    assert doc["status"] == "complete"
    by_alg = {s["labels"]["alg"]: s for s in doc["series"]}
    assert by_alg["sha256"]["status"] == "failed"
    assert "simulated crash" in by_alg["sha256"]["failures"][0]["reason"]
    assert by_alg["ml-dsa-44"]["status"] == "ok"  # the run went on past the failure
    assert R.load(tmp_path / "r" / "latest" / "result.json").series[0].status == "failed"


def test_run_with_a_scenario_file_measures_crypto_and_handshakes(tmp_path):
    scn = tmp_path / "tiny.toml"
    scn.write_text(
        'name = "tiny"\n[crypto]\nn = 3\nwarmup = 0\nduration_s = 0.3\n'
        '[[crypto.select]]\nalg = ["x25519"]\nop = ["derive"]\n'
        '[handshake]\nexperiments = ["versions"]\nn = 3\nwarmup = 1\n'
    )
    p = run_cli("run", "--scenario", str(scn), "--out", str(tmp_path / "r"), "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    kinds = [s["kind"] for s in doc["series"]]
    assert kinds == ["crypto", "handshake", "handshake"]
    assert all(s["status"] == "ok" for s in doc["series"])
    assert doc["params"]["scenario"] == "tiny"


def test_scenario_with_unknown_keys_is_bad_input(tmp_path):
    scn = tmp_path / "bad.toml"
    scn.write_text('[crypto]\n[[crypto.select]]\nalgo = ["x25519"]\n')
    p = run_cli("run", "--scenario", str(scn), "--out", str(tmp_path / "r"))
    assert p.returncode == 2 and "unknown keys ['algo']" in p.stderr


def test_piped_tables_are_wide_unless_columns_says_otherwise():
    """Piped output (a log, CI) gets PIPED_WIDTH columns instead of rich's 80, so a ten-column
    table does not wrap every cell; COLUMNS still decides when set."""
    from conftest import run_cli
    from secperf.report.terminal import PIPED_WIDTH

    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    wide = run_cli("crypto", "--list", env=env)
    assert wide.returncode == 0, wide.stderr
    assert 80 < max(len(line) for line in wide.stdout.splitlines()) <= PIPED_WIDTH
    narrow = run_cli("crypto", "--list", env={**env, "COLUMNS": "80"})
    assert narrow.returncode == 0 and max(len(line) for line in narrow.stdout.splitlines()) <= 80


@pytest.mark.parametrize(
    "body,named",
    [
        ('[crypto]\nn = "three"\n', "[crypto].n"),
        ('crypto = "yes"\n', "[crypto]: must be a table"),
        ('[crypto]\nduration_s = inf\n', "[crypto].duration_s"),
        ('[crypto]\n[cryptoo]\n', "unknown keys ['cryptoo']"),
        ('[handshake]\nn = 100000000000000000\n', "[handshake].n"),
        ('name = "empty"\n', "nothing to run"),
        ('[connect]\nwarmup = -1\n', "[connect].warmup"),
    ],
)
def test_scenario_schema_errors_name_the_key_path(tmp_path, body, named):
    scn = tmp_path / "s.toml"
    scn.write_text(body)
    p = run_cli("run", "--scenario", str(scn), "--out", str(tmp_path / "r"))
    assert p.returncode == 2, p.stderr
    assert named in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "r").exists() or not any((tmp_path / "r").iterdir())


def test_scenario_with_only_a_handshake_table_runs(tmp_path):
    scn = tmp_path / "hs.toml"
    scn.write_text('name = "hs"\n[handshake]\nexperiments = ["versions"]\nn = 2\nwarmup = 0\n')
    p = run_cli("run", "--scenario", str(scn), "--out", str(tmp_path / "r"), "--json", "--no-report")
    assert p.returncode == 0, p.stderr
    assert [s["kind"] for s in json.loads(p.stdout)["series"]] == ["handshake", "handshake"]


def test_schema_command_prints_the_result_schema():
    p = run_cli("schema", "result")
    assert p.returncode == 0
    assert json.loads(p.stdout)["title"] == "secperf Result"


@pytest.mark.parametrize("flag", ["--duration", "--min-sample-us"])
def test_float_options_refuse_infinity(flag, tmp_path):
    p = run_cli("crypto", "--alg", "sha256", flag, "inf", "--out", str(tmp_path))
    assert p.returncode == 2 and flag in p.stderr and "Traceback" not in p.stderr


def test_every_builtin_scenario_matches_the_schema():
    from secperf.inputs import scenario as SC

    names = SC.builtin_names()
    assert {"quick", "s5"} <= set(names)
    for name in names:
        assert SC.load(name)  # raises ScenarioError naming the key path otherwise


def test_measuring_commands_write_operational_metrics_as_prometheus_text(tmp_path):
    from prometheus_client.parser import text_string_to_metric_families

    out = tmp_path / "m.prom"
    p = run_cli(
        "signer",
        "--mode",
        "sign_only",
        "--n",
        "2",
        "--warmup",
        "0",
        "--out",
        str(tmp_path / "r"),
        "--no-report",
        "--metrics",
        str(out),
    )
    assert p.returncode == 0, p.stderr
    names = {f.name for f in text_string_to_metric_families(out.read_text())}
    assert any("sign" in n for n in names), names
    bad = run_cli("crypto", "--alg", "sha256", "--metrics", str(tmp_path), "--out", str(tmp_path / "r"))
    assert bad.returncode == 2 and "--metrics" in bad.stderr
