"""Every `secperf ...` command that an error message, hint or help text names parses: the words
before its first option are a real subcommand path (`secperf <words> --help` exits 0), and where
that command needs a further subcommand the hint names one. A hint that names a command that does
not exist (or stops short of its subcommand) sends the user into a dead end."""

import re
from pathlib import Path

import pytest

from conftest import run_cli

SRC = Path(__file__).resolve().parents[1] / "src" / "secperf"
NAMED = re.compile(r"`secperf ([^`]+)`")
WORD = re.compile(r"[a-z][a-z0-9-]*$")


def _named_commands() -> list[tuple[str, ...]]:
    """The commands named in backticks anywhere in the package's source, as their words."""
    found = set()
    for path in SRC.rglob("*.py"):
        for m in NAMED.finditer(path.read_text(encoding="utf-8")):
            words = m.group(1).replace('"', " ").split()[:6]
            if not words:
                continue
            # "handshake|connect|jwt --network": each alternative is a command of its own
            for alt in words[0].split("|"):
                found.add((alt, *words[1:]))
    return sorted(found)


@pytest.fixture(scope="module")
def helps() -> dict:
    return {}


def _help(words: tuple[str, ...], cache: dict):
    if words not in cache:
        cache[words] = run_cli(*words, "--help")
    return cache[words]


def test_the_source_names_commands_in_hints():
    assert len(_named_commands()) >= 10


@pytest.mark.parametrize("words", _named_commands(), ids=" ".join)
def test_a_command_named_in_a_hint_parses(words, helps):
    path = []
    for w in words:
        if not WORD.match(w):
            break
        path.append(w)
    # the longest prefix of plain words that parses is the command; later words are its operands
    while path and _help(tuple(path), helps).returncode != 0:
        path.pop()
    assert path, f"`secperf {' '.join(words)}` is named in a message or hint but does not parse"
    rest = words[len(path) :]
    usage = _help(tuple(path), helps).stdout.split("\n\n")[0]
    # a subcommand group shows in the usage as "{a,b,c} ..." (an option's choices sit in brackets)
    needs_sub = re.search(r"\s\{[a-z0-9-]+(,[a-z0-9-]+)+\} \.\.\.", usage) is not None
    assert not (needs_sub and rest and rest[0].startswith("-")), (
        f"`secperf {' '.join(words)}`: `secperf {' '.join(path)}` needs a subcommand before {rest[0]}"
    )
