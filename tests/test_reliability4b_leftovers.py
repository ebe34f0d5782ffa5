"""Held-out leftovers of issue 42: a program missing from PATH is a named exit 2 (it was a
FileNotFoundError traceback); `whatif coap --s1` is refused (it computed TLS 1.3 rows under coap's name);
`connect vpn --tls 1.2` is refused (OpenVPN negotiates its own version: the Result said 1.2 over 1.3)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from secperf.cli import main


def test_a_program_missing_from_path_is_a_named_exit_2(tmp_path):
    env = {**os.environ, "PATH": str(tmp_path / "empty-bin")}
    p = subprocess.run(
        [sys.executable, "-m", "secperf", "signer", "--n", "1", "--out", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 2, p.stderr[-2000:]
    assert "Traceback" not in p.stderr and "'openssl'" in p.stderr and "bootstrap" in p.stderr, p.stderr[-2000:]


def test_a_missing_file_that_is_not_a_program_stays_secperfs_bug():
    from secperf.cli import missing_program

    assert missing_program(FileNotFoundError(2, "No such file", "/tmp/nope/x.pem")) is None
    assert missing_program(FileNotFoundError(2, "No such file", "python3")) is None  # on PATH: not that
    assert missing_program(FileNotFoundError(2, "No such file", "secperf-no-such-tool")) == "secperf-no-such-tool"


@pytest.mark.parametrize("protocols", ["coap", "dtls1.2", "tls1.3,mqtt", "edhoc"])
def test_whatif_s1_on_another_protocol_is_refused(protocols, tmp_path, capsys):
    assert main(["whatif", protocols, "--s1", "--n", "100", "--no-report", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--s1" in err and protocols in err


def test_whatif_s1_where_it_acts(tmp_path, capsys):
    assert main(["whatif", "mqtt", "--s1", "--n", "100", "--no-report", "--json", "--out", str(tmp_path)]) == 0
    assert '"s1": true' in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["whatif", "tls1.3", "--calibrate", "{long}"],
        ["fleet", "--from", "{long}"],
        ["run", "--scenario", "{long}"],
        ["report", "{long}"],
    ],
)
def test_a_path_the_user_typed_that_the_system_refuses_is_a_named_exit_2(argv, tmp_path, capsys):
    """A file name over 255 bytes (found by benchmarks/campaign.py: OSError ENAMETOOLONG tracebacks)."""
    long = "x" * 300
    code = main([a.replace("{long}", long) for a in argv] + ([] if argv[0] == "report" else ["--out", str(tmp_path)]))
    err = capsys.readouterr().err
    assert code == 2 and "x" * 40 in err and "Traceback" not in err, err
