"""The documentation: a short README, a site that builds strictly, a generated CLI reference that
names every option of every subcommand, and links that lead somewhere."""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _hook():
    spec = importlib.util.spec_from_file_location("docs_reference_hook", DOCS / "hooks" / "reference.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


HOOK = _hook()


def _strip_code(text: str) -> str:
    """Markdown without fenced code blocks and inline code (links there are examples, not links)."""
    text = re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def _links(path: Path) -> list[str]:
    return LINK.findall(_strip_code(path.read_text()))


def test_the_readme_is_short_and_keeps_the_two_commands():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    assert "make demo" in text and "make test" in text
    assert "--device" in text  # the device question in one command


def test_the_docs_home_page_starts_with_at_a_glance():
    headings = [line for line in (DOCS / "index.md").read_text().splitlines() if line.startswith("## ")]
    assert headings and headings[0] == "## At a glance"


def test_every_option_of_every_subcommand_is_in_the_cli_reference():
    page = HOOK.cli_page()
    sections = {}
    for block in re.split(r"^## ", page, flags=re.M)[1:]:
        title = block.splitlines()[0]
        m = re.match(r"`([^`]+)`", title)
        if m:
            sections[m.group(1)] = block
    commands = list(HOOK.subparsers(HOOK.build_parser()))
    assert len(commands) > 20  # the walk reached the subcommands and their actions
    missing = []
    for command, parser, _ in commands:
        assert command in sections, f"{command} has no section in the CLI reference"
        section = sections[command]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
                continue
            names = action.option_strings or [action.metavar or action.dest]
            for name in names:
                if f"`{name}" not in section and f" {name}" not in section:
                    missing.append(f"{command} {name}")
            if action.help and action.help != argparse.SUPPRESS and "%(" not in action.help:
                first_words = " ".join(action.help.split()[:4]).replace("|", "\\|")
                if first_words not in " ".join(section.split()):
                    missing.append(f"{command} {names[0]}: its help text")
    assert not missing, "not in the generated CLI reference: " + ", ".join(missing)


def test_the_reference_pages_are_generated_from_the_code(tmp_path):
    written = HOOK.write_pages(tmp_path)
    assert sorted(p.name for p in written) == ["cli.md", "data.md", "schemas.md"]
    data = (tmp_path / "data.md").read_text()
    for name in ("nb-iot", "iot-safe-sim", "cortex-m4-80", "periodic-collection"):
        assert f"`{name}`" in data
    schemas = (tmp_path / "schemas.md").read_text()
    assert "secperf schema result" in schemas and '"properties"' in schemas


def _markdown_files() -> list[Path]:
    return [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted(DOCS.rglob("*.md"))]


def test_every_internal_link_leads_to_a_file():
    generated = {DOCS / "reference" / name for name in HOOK.PAGES}
    broken = []
    for page in _markdown_files():
        for target in _links(page):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                continue  # another site, mail, or an anchor on the same page
            path = (page.parent / target.split("#", 1)[0]).resolve()
            if not (path.exists() or path in generated):
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, "links to missing files: " + ", ".join(broken)


def test_the_documentation_builds_strictly(tmp_path):
    env = dict(
        os.environ,
        NO_MKDOCS_2_WARNING="1",
        PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]),
    )
    r = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "cli" / "index.html").exists()
    home = (tmp_path / "site" / "index.html").read_text()
    assert "At a glance" in home


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_the_device_question_command_parses(page):
    """The one command a reader copies first must be a valid command line."""
    text = (ROOT / page).read_text()
    line = next(line for line in text.splitlines() if line.startswith(".venv/bin/secperf whatif mqtt --device"))
    argv = line.split("#")[0].split()[1:]
    args = HOOK.build_parser().parse_args(argv)
    assert args.command == "whatif" and args.device == "cortex-m4-80"


PLACEHOLDERS = ("|", "[", "...", ";", "PROTOCOLS", "CORE", "NET", "FILE", "PROFILE", "NAME", "DIR", "CMD", "A/", "B/")


def _documented_commands() -> list[tuple[str, str]]:
    found = []
    for page in _markdown_files():
        fence = False
        for line in page.read_text().splitlines():
            if line.lstrip().startswith("```"):
                fence = not fence
                continue
            if fence and line.startswith(".venv/bin/secperf "):
                command = line.split(" #")[0].strip()
                if not any(p in command for p in PLACEHOLDERS) and not command.endswith("\\"):
                    found.append((str(page.relative_to(ROOT)), command))
    return found


def test_every_documented_command_line_parses():
    """A reader copies these: each must be accepted by the parser (options, choices, value types)."""
    commands = _documented_commands()
    assert len(commands) > 50
    parser = HOOK.build_parser()
    rejected = []
    for page, command in commands:
        argv = shlex.split(command)[1:]
        for i, token in enumerate(argv):
            if token in (">", ">>", "2>", "<", "&&"):  # the shell's, not secperf's
                argv = argv[:i]
                break
        if argv[:2] == ["netem", "run"] and "--" in argv:  # the CLI hands what follows -- to the command
            argv = argv[: argv.index("--")]
        try:
            parser.parse_args(argv)
        except SystemExit:
            rejected.append(f"{page}: {command}")
    assert not rejected, "rejected by the parser: " + "; ".join(rejected)
