"""`whatif --sources` lists each figure's source in the terminal (issue 43, item 3): the cost table,
every operation the flights used with its own source, the secure-element and network profiles."""

import json
import os
import subprocess
import sys


def _whatif(tmp_path, *extra):
    env = {**os.environ, "SECPERF_HOME": str(tmp_path / "home"), "SECPERF_HOST_COSTS": "shipped", "COLUMNS": "80"}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "secperf",
            "whatif",
            "mqtt",
            "--network",
            "nb-iot",
            "--key",
            "se:iot-safe-sim",
            "--n",
            "300",
            "--no-report",
            "--out",
            str(tmp_path / "out"),
            *extra,
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def test_sources_list_every_operation_the_flights_used_with_the_results_own_source(tmp_path):
    p = _whatif(tmp_path, "--sources")
    assert p.returncode == 0, p.stderr[-800:]
    text = p.stdout[p.stdout.index("Sources of the figures used") :]
    doc = json.loads(next((tmp_path / "out").glob("*/result.json")).read_text())
    used = {(c["party"], c["op"]) for s in doc["series"] for c in s["derived"]["costs"]}
    assert used and all(f"{party} {op}:" in text for party, op in used), text
    assert doc["analysis"]["whatif"]["cost_table"]["name"] in text
    assert "shipped table host-default, not this host" in text  # the table says what it is
    assert "secure element iot-safe-sim" in text and "network nb-iot" in text
    assert all(len(line) <= 80 for line in text.splitlines()), max(text.splitlines(), key=len)


def test_without_the_option_the_output_is_as_before(tmp_path):
    p = _whatif(tmp_path)
    assert p.returncode == 0, p.stderr[-800:]
    assert "Sources of the figures used" not in p.stdout


def test_plan_sources_name_each_patterns_table_and_profiles(tmp_path):
    env = {**os.environ, "SECPERF_HOME": str(tmp_path / "home"), "SECPERF_HOST_COSTS": "shipped", "COLUMNS": "80"}
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "secperf",
            "plan",
            "--pattern",
            "study",
            "--n",
            "200",
            "--no-report",
            "--out",
            str(tmp_path / "out"),
            "--sources",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-800:]
    text = p.stdout[p.stdout.index("Sources of the figures used") :]
    doc = json.loads(next((tmp_path / "out").glob("*/result.json")).read_text())
    pats = doc["analysis"]["plan"]["patterns"]
    assert all(f"pattern {x['pattern']}: {x['inputs']['cost_table']}" in text for x in pats), text[:2000]
    radios = {x["power"]["radio"]["profile"] for x in pats if x.get("power")}
    assert all(text.count(f"radio {r} tx_mw:") == 1 for r in radios), radios
