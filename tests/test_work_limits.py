"""Bounds whose product matters: a what-if grid and a crypto run's time budget are refused before
anything runs when the product of their options is too large, naming the override option; and
terminal output survives a COLUMNS of 0."""

import os
import subprocess
import sys

import pytest

from secperf.cli import main


def _err(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize(
    "sweep, option", [("rtt=0..999:1,loss=0..99:0.1", "--max-cells"), ("rtt=0..400:1,loss=0..40:1", "--max-draws")]
)
def test_a_whatif_grid_over_the_limit_is_refused_naming_the_override(tmp_path, capsys, sweep, option):
    n = "1" if option == "--max-cells" else "100000"
    assert main(["whatif", "https", "--sweep", sweep, "--n", n, "--out", str(tmp_path)]) == 2
    assert option in _err(capsys)
    assert not list(tmp_path.iterdir())  # refused before a run directory was made


def test_the_override_lets_a_large_grid_through(tmp_path, capsys):
    argv = ["whatif", "https", "--sweep", "rtt=0..30:1", "--n", "100", "--out", str(tmp_path), "--no-report"]
    assert main(argv + ["--max-cells", "10"]) == 2
    assert main(argv + ["--max-cells", "31"]) == 0


@pytest.mark.parametrize("sweep", ["rtt=0..inf:1", "rtt=nan", "loss=0..1e12:1", "jitter=0..1e300:1e-300"])
def test_a_sweep_with_no_end_is_refused_not_cut(tmp_path, capsys, sweep):
    assert main(["whatif", "https", "--sweep", sweep, "--n", "100", "--out", str(tmp_path)]) == 2
    assert "--sweep" in _err(capsys)


def test_a_crypto_budget_over_max_hours_is_refused_naming_it(tmp_path, capsys):
    argv = [
        "crypto",
        "--alg",
        "sha256",
        "--size",
        "16,64",
        "--n",
        "1000000",
        "--min-sample-us",
        "10000000",
        "--duration",
        "86400",
        "--out",
        str(tmp_path),
    ]
    assert main(argv) == 2
    assert "--max-hours" in _err(capsys)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("columns", ["0", "-5", "abc", "3"])
def test_a_useless_columns_value_still_prints_the_result_path(tmp_path, columns):
    env = {**os.environ, "COLUMNS": columns}
    p = subprocess.run(
        [sys.executable, "-m", "secperf", "can", "--out", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert f"result: {tmp_path}" in p.stderr.replace("\n", "")
