"""Inputs are never outputs, failed writes leave nothing half-written, and readers refuse a run
that is still running or was abandoned unless --allow-partial says otherwise."""

import errno
import json
import os
import subprocess

import pytest

from secperf.cli import main
from secperf.core import result as R
from secperf.core.errors import OutputError
from secperf.core.store import RunStore, atomic_write


def _complete(tmp_path, name="r.json", kind="can"):
    doc = R.finish(R.new_result(kind=kind, command=["secperf"], params={}, host={}, run_id="t"))
    p = tmp_path / name
    p.write_text(R.dumps(doc))
    return p


def _dead_owner() -> dict:
    """An owner record of a process that has exited (a run killed with kill -9)."""
    p = subprocess.Popen(["true"])
    p.wait()
    return {"pid": p.pid, "start_ticks": 1}


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "{r}", "-o", "{r}"],
        ["metrics", "{r}", "-o", "{r}"],
        ["report", "{d}", "-o", "{d}/result.json"],
        ["metrics", "{r}", "-o", "{d}/result.json"],
    ],
)
def test_an_output_naming_an_input_or_a_result_is_refused_and_the_input_kept(tmp_path, capsys, argv):
    r = _complete(tmp_path)
    d = tmp_path / "run"
    d.mkdir()
    _complete(d, "result.json")
    before = {p: p.read_bytes() for p in (r, d / "result.json")}
    args = [a.replace("{r}", str(r)).replace("{d}", str(d)) for a in argv]
    assert main(args) == 2
    assert "-o/--output" in _one_line_error(capsys)
    assert {p: p.read_bytes() for p in before} == before


def test_csv_naming_the_latest_runs_result_is_refused_before_measuring(tmp_path, capsys):
    store = tmp_path / "res"
    assert main(["can", "--out", str(store)]) == 0
    latest = store / "latest" / "result.json"
    before = latest.read_bytes()
    capsys.readouterr()
    assert (
        main(["crypto", "--alg", "sha256", "--size", "16", "--n", "1", "--out", str(store), "--csv", str(latest)]) == 2
    )
    assert "--csv" in _one_line_error(capsys)
    assert latest.read_bytes() == before
    assert (
        main(
            [
                "crypto",
                "--alg",
                "sha256",
                "--size",
                "16",
                "--n",
                "1",
                "--out",
                str(store),
                "--csv",
                str(tmp_path / "x"),
                "--metrics",
                str(tmp_path / "x"),
            ]
        )
        == 2
    )
    assert "--metrics" in _one_line_error(capsys)


@pytest.mark.parametrize(
    "target", ["/dev/full", "/sys/kernel/secperf-report.html", "{t}/" + "n" * 300, "{t}/missing-dir/r.html"]
)
def test_a_write_that_cannot_succeed_exits_2_with_one_line(tmp_path, capsys, target):
    r = _complete(tmp_path)
    out = target.replace("{t}", str(tmp_path))
    assert main(["report", str(r), "-o", out]) == 2
    assert "-o/--output" in _one_line_error(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]  # nothing half-written beside it


@pytest.mark.parametrize("device", ["/dev/full", "/dev/zero"])
def test_an_output_that_is_a_device_other_than_dev_null_is_refused(tmp_path, capsys, device):
    """Even an empty metrics text 'succeeded' on /dev/full; as root a disk device would be written."""
    r = _complete(tmp_path)
    doc = R.load(r)  # a Result with a number to export (an empty one is refused for that reason alone)
    doc.analysis.fleet = {"runs": [{"model": {"devices": 10, "policy": "none"}, "time_all_back_s": 1.0}]}
    r.write_text(R.dumps(doc))
    assert main(["metrics", str(r), "-o", device]) == 2
    assert "is a device" in _one_line_error(capsys)
    assert main(["metrics", str(r), "-o", "/dev/null"]) == 0


def test_report_with_a_figures_name_too_long_is_refused(tmp_path, capsys):
    r = _complete(tmp_path)
    assert main(["report", str(r), "--figures", str(tmp_path / ("f" * 300))]) == 2
    assert "--figures" in _one_line_error(capsys)
    assert not (tmp_path / "report.html").exists()


def test_report_with_unwritable_figures_writes_no_report(tmp_path, capsys):
    r = _complete(tmp_path)
    assert main(["report", str(r), "--figures", "/dev/full"]) == 2
    assert "--figures" in _one_line_error(capsys)
    assert not (tmp_path / "report.html").exists()


def test_no_space_mid_write_leaves_no_partial_file(tmp_path, monkeypatch):
    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    target = tmp_path / "out.csv"
    target.write_text("the old content\n")
    with pytest.raises(OutputError, match="--csv .*no space left"):
        atomic_write(target, "x" * 100_000, what="--csv")
    assert target.read_text() == "the old content\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.csv"]


def test_a_fifo_without_a_reader_is_refused_not_waited_on(tmp_path):
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    with pytest.raises(OutputError, match="no reader"):
        atomic_write(fifo, "x")


def _running_result(tmp_path, owner):
    doc = R.new_result(kind="can", command=["secperf"], params={}, host={}, run_id="t")
    doc.owner = owner
    p = tmp_path / "partial.json"
    p.write_text(R.dumps(doc))
    return p


@pytest.mark.parametrize(
    "argv",
    [
        ["report", "{p}", "-o", "{t}/o.html"],
        ["compare", "{p}", "{p}"],
        ["metrics", "{p}"],
        ["whatif", "https", "--calibrate", "{p}", "--n", "100", "--out", "{t}/res", "--no-report"],
        ["fleet", "--from", "{p}", "--devices", "100", "--out", "{t}/res"],
    ],
)
def test_readers_refuse_an_abandoned_run_unless_allow_partial(tmp_path, capsys, argv):
    p = _running_result(tmp_path, _dead_owner())
    args = [a.replace("{p}", str(p)).replace("{t}", str(tmp_path)) for a in argv]
    assert main(args) == 2
    line = _one_line_error(capsys)
    assert "abandoned" in line and "--allow-partial" in line
    rc = main(args + ["--allow-partial"])
    err = capsys.readouterr().err
    assert "note:" in err and "abandoned" in err and "partial" in err
    assert rc in (0, 2)  # with the note, the reader goes on (a calibration without rows is its own error)
    assert json.loads(p.read_text())["status"] == "running"  # a reader never rewrites its input


def test_readers_refuse_a_run_still_being_written(tmp_path, capsys):
    from secperf.core.store import owner_stamp

    p = _running_result(tmp_path, owner_stamp())  # this process: alive
    assert main(["metrics", str(p)]) == 2
    assert "still being written" in _one_line_error(capsys)


def test_clean_lists_abandoned_runs_after_the_registry_is_gone(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SECPERF_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    run = RunStore(tmp_path / "elsewhere").create("crypto")  # the store notes its directory in SECPERF_HOME
    doc = R.new_result(kind="crypto", command=["secperf"], params={}, host={}, run_id=run.run_id)
    doc.owner = _dead_owner()  # killed hard; no registry file lists it
    run.save(doc)
    from secperf.app.clean import clean

    out = json.loads(clean(as_json=True))  # the app returns what was removed; the CLI prints it
    assert str(run.result_path.resolve()) in out["results_abandoned"]
    assert json.loads(run.result_path.read_text())["status"] == "abandoned"
    # listed again on the next clean, not only when first marked
    assert str(run.result_path.resolve()) in json.loads(clean(as_json=True))["results_abandoned"]


def test_a_home_that_cannot_hold_secperf_state_is_an_input_error(tmp_path):
    env = {**os.environ, "HOME": "/dev/null", "XDG_CACHE_HOME": ""}
    env.pop("SECPERF_HOME", None)
    import sys

    p = subprocess.run(
        [sys.executable, "-m", "secperf", "signer", "--n", "1", "--out", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 2 and "HOME" in p.stderr and "Traceback" not in p.stderr, p.stderr


@pytest.mark.parametrize("stdout", ["full", "closed"])
def test_json_on_a_full_or_closed_stdout_exits_2_and_keeps_the_result(tmp_path, stdout):
    """`--json > /dev/full` or with stdout closed: exit 2 naming stdout and where the Result was kept,
    no traceback; the Result on disk is whole."""
    import shutil
    import sys

    exe = shutil.which("secperf", path=os.path.dirname(sys.executable)) or "secperf"
    argv = [exe, "whatif", "tls1.3", "--n", "1000", "--no-report", "--json", "--out", str(tmp_path)]
    with open("/dev/full", "w") as full:
        p = subprocess.run(
            argv,
            stdout=full if stdout == "full" else None,
            stderr=subprocess.PIPE,
            text=True,
            pass_fds=(),
            close_fds=True,
            timeout=300,
            **({} if stdout == "full" else {"preexec_fn": lambda: os.close(1)}),
        )
    assert p.returncode == 2, p.stderr
    assert "stdout" in p.stderr and "Traceback" not in p.stderr
    kept = [d for d in tmp_path.iterdir() if d.name != "latest"]
    assert len(kept) == 1 and R.load(kept[0] / "result.json").kind == "whatif"
