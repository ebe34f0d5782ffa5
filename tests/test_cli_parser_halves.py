"""Building the parser stays light (subcommands/__init__.py): `secperf --help`, a command's help and
a usage error import the commands' parser halves only, never the layers that run them; a command
line naming a command builds that command's parser alone; a command's run half is imported once its
arguments parsed. Checked in a fresh interpreter (sys.modules), not by timing."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from secperf import cli, subcommands

SRC = Path(cli.__file__).parent.parent
HEAVY = ("secperf.app", "secperf.measure", "secperf.lab", "secperf.model", "secperf.sim", "secperf.report")


def _modules_after(code: str) -> tuple[list[str], str]:
    """The secperf modules a fresh interpreter holds after `code` (cli.main's exit code printed too)."""
    script = (
        "import json, sys\n"
        "from secperf import cli\n"
        f"{code}\n"
        "sys.__stdout__.write('\\nMODULES ' + json.dumps(sorted(m for m in sys.modules if m.startswith('secperf'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin", "COLUMNS": "100"},
        timeout=120,
    )
    assert "MODULES " in out.stdout, out.stderr
    text, _, mods = out.stdout.rpartition("\nMODULES ")
    return json.loads(mods), text + out.stderr


def _heavy(mods: list[str]) -> list[str]:
    return [m for m in mods if m.startswith(HEAVY)]


@pytest.mark.parametrize(
    "argv",
    [["--help"], ["whatif", "--help"], ["device", "handshake", "--help"], ["jwt", "--lifetime", "x"], ["nosuch"]],
)
def test_help_and_usage_errors_import_no_layer_that_runs_a_command(argv):
    mods, text = _modules_after(f"print('EXIT', cli.main({argv!r}))")
    assert "EXIT 0" in text or "EXIT 2" in text, text
    assert _heavy(mods) == [], _heavy(mods)
    assert "secperf.subcommands.parsers" in mods  # the parser was built from the parser halves
    assert [m for m in mods if m.split(".")[-1] in subcommands.MODULES and ".parsers." not in m] == []  # no run half


def test_a_named_command_builds_its_parser_alone_and_the_help_the_full_tree():
    mods, _ = _modules_after("cli.build_parser(['jwt', '--n', '3'])")
    assert [m for m in mods if m.startswith("secperf.subcommands.parsers.") and not m.endswith(".common")] == [
        "secperf.subcommands.parsers.jwt"
    ]
    assert _heavy(mods) == []
    sub = next(a for a in cli.build_parser(["jwt"])._actions if a.__class__.__name__ == "_SubParsersAction")
    assert list(sub.choices) == ["jwt"]
    for argv in (None, [], ["--help"], ["-h", "jwt"], ["nosuch"], ["mqtt_load"]):  # no command named first: all
        sub = next(a for a in cli.build_parser(argv)._actions if a.__class__.__name__ == "_SubParsersAction")
        assert len(sub.choices) == len(subcommands.MODULES), argv


def test_the_named_commands_parser_is_the_one_of_the_full_tree():
    def helps(ap, name):
        sub = next(a for a in ap._actions if a.__class__.__name__ == "_SubParsersAction")
        return sub.choices[name].format_help()

    full = cli.build_parser()
    for m in subcommands.MODULES:
        name = subcommands.parser(m).NAME
        assert helps(cli.build_parser([name]), name) == helps(full, name), name


def test_a_command_imports_its_run_half_only_once_its_arguments_parsed(tmp_path):
    mods, text = _modules_after("print('EXIT', cli.main(['schema', 'result']))")
    assert "EXIT 0" in text, text[-500:]
    assert "secperf.subcommands.schema" in mods
    assert [
        m
        for m in mods
        if m.startswith("secperf.subcommands.") and m.split(".")[-1] in subcommands.MODULES and ".parsers." not in m
    ] == ["secperf.subcommands.schema"]
