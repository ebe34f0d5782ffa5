"""Standard output is an output: every command that prints, run with stdout full (`> /dev/full`),
stdout closed (`>&-`) or stderr full, ends with one line on the stream that still works, a non-zero exit
and no traceback; a Result it wrote is whole. The commands come from the parser (build_parser): every
command's and sub-command's --help, every --list, every schema, and the commands that read a Result."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

from secperf.cli import build_parser
from secperf.core import result as R


def _subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            return dict(a.choices)
    return {}


def printing_commands(result: str, tmp: str) -> list[list[str]]:
    """What prints, generated from the parser; `result` is a Result file the reading commands read."""
    cases: list[list[str]] = [["--help"]]
    for name, p in _subparsers(build_parser()).items():
        cases.append([name, "--help"])
        for sub in _subparsers(p):
            cases.append([name, sub, "--help"])
        opts = {o for a in p._actions for o in a.option_strings}
        for listing in ("--list", "--list-devices"):
            if listing in opts:
                cases.append([name, listing])
        for a in p._actions:
            if not a.option_strings and a.choices and name == "schema":
                cases += [[name, c] for c in a.choices]
    subs = _subparsers(build_parser())
    for name in subs:
        pos = [a.dest for a in subs[name]._actions if not a.option_strings]
        if pos == ["result"]:
            cases.append([name, result])
        if pos == ["a", "b"]:
            cases.append([name, result, result])
    cases += [
        ["device", "list"],
        ["netem", "list"],
        ["clean", "--json", "--results", tmp],
        ["whatif", "tls1.3", "--n", "200", "--no-report", "--json", "--out", tmp],
        ["whatif", "mqtt", "--n", "200", "--no-report", "--out", tmp],
    ]
    return cases


def _run(argv, how, tmp):
    env = {**os.environ, "SECPERF_HOME": os.environ.get("SECPERF_HOME", ""), "COLUMNS": "120"}
    if not env["SECPERF_HOME"]:
        env.pop("SECPERF_HOME")
    cmd = [sys.executable, "-m", "secperf", *argv]
    with open("/dev/full", "w") as full:
        if how == "stdout-full":
            return subprocess.run(cmd, stdout=full, stderr=subprocess.PIPE, text=True, timeout=300, env=env)
        if how == "stdout-closed":
            return subprocess.run(
                cmd,
                stdout=None,
                stderr=subprocess.PIPE,
                text=True,
                timeout=300,
                env=env,
                preexec_fn=lambda: os.close(1),
            )
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=full, text=True, timeout=300, env=env)


@pytest.fixture(scope="module")
def a_result(tmp_path_factory):
    d = tmp_path_factory.mktemp("res")
    p = subprocess.run(
        [sys.executable, "-m", "secperf", "whatif", "tls1.3", "--n", "200", "--no-report", "--out", str(d)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    return str(next(x for x in d.iterdir() if x.name != "latest") / "result.json")


def _check(p, how, argv):
    stream = p.stderr if how.startswith("stdout") else p.stdout
    assert "Traceback" not in (p.stderr or "") + (p.stdout or ""), (argv, p.stderr)
    assert p.returncode == 2, (argv, how, p.returncode, p.stderr)
    lines = [x for x in stream.splitlines() if x.startswith("secperf")]
    failed = how.split("-")[0]
    assert len(lines) == 1 and failed in lines[0], (argv, stream)


def test_the_generated_list_covers_every_command(tmp_path):
    cases = printing_commands("r.json", str(tmp_path))
    names = {c[0] for c in cases if not c[0].startswith("-")}
    assert names == set(_subparsers(build_parser())), names
    assert ["schema", "system"] in cases and ["whatif", "--list"] in cases and ["compare", "r.json", "r.json"] in cases


@pytest.mark.parametrize("how", ["stdout-full", "stdout-closed"])
@pytest.mark.parametrize("argv", [["--help"], ["schema", "system"], ["netem", "list"], ["device", "list"]])
def test_a_printing_command_on_a_failed_stdout_says_so_in_one_line(argv, how, tmp_path):
    p = _run(argv, how, tmp_path)
    _check(p, how, argv)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["stdout-full", "stdout-closed"])
def test_every_printing_command_on_a_failed_stdout(how, tmp_path, a_result):
    bad, mode = [], how
    for argv in printing_commands(a_result, str(tmp_path)):
        how = mode
        p = _run(argv, how, tmp_path)
        if p.returncode == 0 and "Traceback" not in p.stderr:  # fine only if it prints nothing on stdout
            normal = subprocess.run(
                [sys.executable, "-m", "secperf", *argv], capture_output=True, text=True, timeout=300
            )
            if normal.stdout == "":  # `report` speaks on stderr only: that is the stream to fail
                p = _run(argv, "stderr-full", tmp_path)
                how = "stderr-full"
        try:
            _check(p, how, argv)
        except AssertionError as exc:
            bad.append(str(exc)[:300])
    assert not bad, "\n".join(bad)


def test_a_result_written_before_stdout_failed_is_whole_and_named(tmp_path):
    argv = ["whatif", "tls1.3", "--n", "200", "--no-report", "--json", "--out", str(tmp_path)]
    for how in ("stdout-full", "stdout-closed", "stderr-full"):
        if how == "stderr-full":  # the tables go to stdout; stderr's note ("result: ...") is lost
            p = _run([a for a in argv if a != "--json"], how, tmp_path)
            assert p.returncode == 2 and "stderr" in p.stdout.splitlines()[-1] and "kept in" in p.stdout
            continue
        p = _run(argv, how, tmp_path)
        _check(p, how, argv)
        assert "kept in" in p.stderr
    kept = [d for d in tmp_path.iterdir() if d.name != "latest"]
    assert len(kept) == 3 and all(R.load(d / "result.json").kind == "whatif" for d in kept)


def test_in_process_main_restores_the_callers_streams(capsys):
    from secperf.cli import main

    before = sys.stdout, sys.stderr
    assert main(["schema", "system"]) == 0
    assert (sys.stdout, sys.stderr) == before
    assert '"$defs"' in capsys.readouterr().out
