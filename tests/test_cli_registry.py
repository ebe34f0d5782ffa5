"""The command registry (subcommands/): one module per command, cli.py only assembles; the app
returns Results and prints nothing; one type parses every comma-list option."""

import re
from pathlib import Path

import pytest

from secperf import cli, subcommands

SRC = Path(cli.__file__).parent


def test_every_registered_command_declares_name_help_arguments_and_run_in_its_two_halves():
    mods = subcommands.load()
    assert len(mods) == len(subcommands.MODULES) >= 19
    for module, m in zip(subcommands.MODULES, mods, strict=True):
        assert isinstance(m.NAME, str) and m.NAME == module.replace("_", "-"), m.__name__
        assert isinstance(m.HELP, str) and m.HELP, m.__name__
        assert callable(m.add_arguments) and not hasattr(m, "run"), m.__name__  # the parser half
        run = subcommands.command(m.NAME)  # the run half
        assert callable(run.run) and not hasattr(run, "add_arguments"), run.__name__
    assert len({m.NAME for m in mods}) == len(mods)  # no command registered twice


def test_the_parser_has_exactly_the_registered_commands():
    ap = cli.build_parser()
    sub = next(a for a in ap._actions if a.__class__.__name__ == "_SubParsersAction")
    assert list(sub.choices) == [m.NAME for m in subcommands.load()]


def test_cli_py_stays_an_assembler_of_at_most_200_lines():
    assert len((SRC / "cli.py").read_text().splitlines()) <= 200


def test_the_app_layer_prints_nothing():
    calls = []
    for f in sorted((SRC / "app").glob("*.py")):
        for i, line in enumerate(f.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            if re.search(r"(?<![.\w])print\(", code):
                calls.append(f"{f.name}:{i}")
    assert calls == []


def test_the_app_returns_a_result_and_writes_nothing_on_the_terminal(tmp_path, capsys):
    from secperf.app import commands
    from secperf.app.can import CanOptions
    from secperf.app.runner import Output

    doc = commands.can(CanOptions(), Output(out=str(tmp_path), no_report=True))
    assert doc.kind == "can" and doc.analysis.can["sweeps"]
    assert (tmp_path / doc.run_id / "result.json").is_file()
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""


def test_a_repeated_comma_list_option_is_one_flat_list():
    args = cli.build_parser().parse_args(["signer", "--profile", "a,b", "--profile", " c ,,"])
    assert args.profile == ["a", "b", "c"]
    args = cli.build_parser().parse_args(["server", "--concurrency", "1,4", "--resume-ratio", "0,0.5"])
    assert args.concurrency == [1, 4] and args.resume_ratio == [0.0, 0.5]


@pytest.mark.parametrize(
    "argv, option, item",
    [
        (["server", "--client-auth", "on,maybe"], "--client-auth", "maybe"),
        (["server", "--concurrency", "1,x"], "--concurrency", "'x'"),
        (["fleet", "--devices", "10,0"], "--devices", "0"),
        (["crypto", "--alg", ","], "--alg", "names nothing"),
        (["connect", "https", "--key", ""], "--key", "names nothing"),
    ],
)
def test_a_bad_comma_list_item_exits_2_naming_the_option_and_the_item(argv, option, item, capsys):
    assert cli.main(argv) == 2  # argparse's exit, returned by main (its streams restored first)
    err = capsys.readouterr().err
    assert option in err and item in err, err


def _fake_crypto(monkeypatch, runner):
    """crypto's measuring step replaced by `runner(items, doc, run, progress)` (no native tool)."""
    from secperf.app import phases
    from secperf.app.runner import Phase

    monkeypatch.setattr(phases, "crypto_phase", lambda rows, params: Phase(rows, lambda r: r.alg.name, runner))


def test_an_interrupted_measurement_shows_its_partial_result_and_exits_143(monkeypatch, tmp_path, capsys):
    import signal

    from secperf.app.signals import Interrupted
    from secperf.core import result as R

    def runner(items, doc, run, progress):
        s = R.new_series("crypto/x", kind="test", labels={}, timer={"name": "op", "start": "-", "end": "-"})
        R.add_failure(s, "stopped")
        doc.series.append(s)
        run.save(doc)
        raise Interrupted(signal.SIGTERM)

    _fake_crypto(monkeypatch, runner)
    code = cli.main(["crypto", "--alg", "x25519", "--op", "derive", "--out", str(tmp_path), "--no-report"])
    assert code == 143
    err = capsys.readouterr().err
    assert "run interrupted" in err and "result.json" in err
    (run_dir,) = [d for d in tmp_path.iterdir() if d.is_dir() and not d.is_symlink()]
    assert R.load(run_dir / "result.json").status == "interrupted"


@pytest.mark.parametrize("share, code", [("0", 1), ("1", 0)])
def test_failed_series_beyond_the_allowed_share_exit_1_naming_the_first(monkeypatch, tmp_path, capsys, share, code):
    from secperf.core import result as R

    def runner(items, doc, run, progress):
        s = R.new_series("crypto/x", kind="test", labels={}, timer={"name": "op", "start": "-", "end": "-"})
        R.add_failure(s, "no such tool")
        doc.series.append(s)
        run.save(doc)

    _fake_crypto(monkeypatch, runner)
    argv = [
        "crypto",
        "--alg",
        "x25519",
        "--op",
        "derive",
        "--out",
        str(tmp_path),
        "--no-report",
        "--max-failure-share",
        share,
    ]
    assert cli.main(argv) == code
    err = capsys.readouterr().err
    assert ("crypto/x: no such tool" in err) == (code == 1)
