"""Signal paths end with one line and no traceback: SIGTERM anywhere in a command is an
interruption (143) that says whether a partial Result exists; the server's CPU reader stops quietly
when the server is gone."""

import signal
import subprocess
import sys
import time

import pytest

from secperf.app.signals import Interrupted
from secperf.cli import main


@pytest.mark.parametrize("signum, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_interruption_before_any_run_directory_says_nothing_was_kept(monkeypatch, capsys, signum, code):
    from secperf.app import whatif
    from secperf.core import store

    monkeypatch.setattr(store, "_CREATED", [])  # this process's earlier runs (other tests) are not this command's

    def interrupted(o):
        raise Interrupted(signum)

    monkeypatch.setattr(whatif, "run", interrupted)
    assert main(["whatif", "https", "--n", "100"]) == code
    err = capsys.readouterr().err
    assert "partial results were kept" not in err and "nothing was kept" in err
    assert signal.Signals(signum).name in err and len(err.strip().splitlines()) == 1


def test_an_interruption_after_the_run_directory_names_the_partial_result(monkeypatch, capsys, tmp_path):
    from secperf.app import whatif
    from secperf.core import store
    from secperf.core.store import RunStore

    monkeypatch.setattr(store, "_CREATED", [])

    def interrupted(o):
        run = RunStore(tmp_path).create("whatif")
        from secperf.core import result as R

        run.save(R.new_result(kind="whatif", command=["secperf"], params={}, host={}, run_id=run.run_id))
        raise Interrupted(signal.SIGTERM)

    monkeypatch.setattr(whatif, "run", interrupted)
    assert main(["whatif", "https", "--n", "100"]) == 143
    err = capsys.readouterr().err
    assert "the partial result is in" in err and str(tmp_path) in err


def test_sigterm_on_a_whatif_ends_it_with_a_line_not_silently(tmp_path):
    """SIGTERM used to end `secperf whatif` without a word (the default action)."""
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "secperf",
            "whatif",
            "https",
            "--n",
            "100000000",
            "--max-draws",
            "1000000000",
            "--out",
            str(tmp_path),
        ],
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(4)  # past start-up, inside the simulation (it needs minutes)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 143, err
    assert "Traceback" not in err and "SIGTERM" in err


def test_the_cpu_of_a_server_that_is_gone_is_a_named_error_not_an_oserror():
    from secperf.core.errors import MeasurementError
    from secperf.measure.server import process_cpu_s

    gone = subprocess.Popen(["true"])
    gone.wait()
    with pytest.raises(MeasurementError, match="gone"):
        process_cpu_s(gone.pid)
