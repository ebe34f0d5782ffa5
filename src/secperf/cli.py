"""The `secperf` command: a thin layer over the library (measure → Result → report).

Exit codes: 0 done; 1 measurement failures beyond the allowed share; 2 bad input.
"""

# Decision (standard output is an output): stdout and stderr are GuardedStreams for the length of a
# command (subcommands/streams.py). A full (`> /dev/full`: ENOSPC), broken (EPIPE) or closed (`>&-`)
# stream never raises a traceback: the command ends as it would (a measurement's Result on disk stays
# whole), then one line on the stream that still works names the stream and where the Result is kept,
# and the exit code is 2 (like any output secperf cannot write), or the command's own non-zero code.

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from . import __version__, subcommands
from .core.errors import EXIT_BAD_INPUT, SecperfError
from .subcommands import streams


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command in the registry (subcommands.MODULES), in its order; when `argv`
    starts with a command's name, the parser with that command's sub-parser only (the others are not
    built: that command's help, usage lines and errors are the same, and no other command's argument
    types run). `--help`, an unknown command or none get the full tree."""

    ap = argparse.ArgumentParser(
        prog="secperf",
        description=__doc__.splitlines()[0],
        epilog="Exit codes: 0 done, 1 measurement failures, 2 bad input.",
    )
    ap.add_argument("--version", action="version", version=f"secperf {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")
    for mod in subcommands.load(argv[0] if argv else None):
        mod.add_arguments(sub.add_parser(mod.NAME, help=mod.HELP))
    return ap


def split_argv(argv: list[str]) -> tuple[list[str], list[str] | None]:
    """`netem run ... -- CMD`: everything after -- is the command, verbatim (argparse would read it)."""
    if argv[:2] == ["netem", "run"] and "--" in argv:
        i = argv.index("--")
        return argv[:i], argv[i + 1 :]
    return argv, None


def main(argv: list[str] | None = None) -> int:
    with streams.guarded_streams():
        streams.KEPT.clear()
        streams.SAID.clear()
        state: dict[str, str] = {}
        try:
            code = _main(argv, state)
        except SystemExit as exc:  # argparse: --help, --version or a usage error (its lines already written)
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_BAD_INPUT)
        sys.stdout.flush()
        sys.stderr.flush()
        return streams.stream_failures(state.get("command"), code)


def command_level(ap: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the command itself (its own options and its sub-commands), as the arguments
    were parsed with it: the one parser of the run, not built again."""
    subs = next((a.choices for a in ap._actions if isinstance(a, argparse._SubParsersAction)), None)
    if not subs or args.command not in subs:
        return ap
    p: argparse.ArgumentParser = subs[args.command]
    return p


def command_parser(ap: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of the command (and sub-command) the arguments were parsed with."""
    p = ap
    sub = {"device": "device_cmd", "netem": "netem_command"}.get(args.command)
    for word in (args.command, getattr(args, sub, None) if sub else None):
        subs = next((a.choices for a in p._actions if isinstance(a, argparse._SubParsersAction)), None)
        if not word or not subs or word not in subs:
            break
        p = subs[word]
    return p


def missing_program(exc: FileNotFoundError) -> str | None:
    """The program a subprocess could not start because PATH has no such name (`openssl` with a PATH
    that lacks /usr/bin), or None for any other missing file (that one is secperf's bug: a traceback)."""

    name = exc.filename
    if not isinstance(name, str) or not name or "/" in name or shutil.which(name) is not None:
        return None
    return name


def users_path(exc: OSError, argv: list[str]) -> str | None:
    """The path of an OSError when the user typed it (a name too long, a loop of links, ...): their input,
    shortened for the message; None when secperf made the path (then it is secperf's bug)."""
    name = exc.filename
    if not isinstance(name, (str, Path)) or not str(name):
        return None
    name = str(name)
    if not any(name == a or (len(name) > 8 and name in a) for a in argv):
        return None
    return name if len(name) <= 80 else name[:60] + f"... ({len(name)} characters)"


def _main(argv: list[str] | None, state: dict[str, str]) -> int:
    for stream in (sys.stdout, sys.stderr):  # a non-UTF-8 terminal gets escapes, not a crash on "µs"
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")

    argv, tail = split_argv(list(sys.argv[1:] if argv is None else argv))
    ap = build_parser(argv)
    args = ap.parse_args(argv)
    if tail is not None:
        args.cmd = tail
    if not args.command:
        ap.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    state["command"] = args.command
    # the app layer only now, once the arguments parsed: --help and a usage error import none of it
    from .app.option_scope import check_args  # reason: at dispatch: --help stays light
    from .app.reporter import using  # reason: at dispatch: --help stays light
    from .app.signals import Interrupted, interruption_note, on_sigterm_raise  # reason: at dispatch: --help stays light
    from .subcommands import output, shared  # reason: at dispatch: --help stays light

    mod = subcommands.command(args.command)  # its run half: imported now, after its arguments parsed
    try:
        with on_sigterm_raise(), using(output.TerminalReporter()):  # SIGTERM ends the command like Ctrl-C: 143
            # no output overwrites an input, a Result or another output; the command's lists settled
            shared.check_outputs(args, command_level(ap, args))
            check_args(args, command_parser(ap, args))  # every option acts on a chosen kind or is refused
            return output.show(mod.run(args), args, getattr(mod, "JUDGES_FAILURES", True))
    except SecperfError as exc:  # anticipated: one line naming what was wrong and what to do
        streams.say(f"secperf {args.command}: error: {exc}")
        return exc.exit_code
    except OSError as exc:
        missing = missing_program(exc) if isinstance(exc, FileNotFoundError) else None
        if missing is not None:
            streams.say(
                f"secperf {args.command}: error: the program {missing!r} is not on PATH "
                f"({os.environ.get('PATH', '')!r}): run scripts/bootstrap to install what secperf needs, "
                "or put its directory on PATH"
            )
            return EXIT_BAD_INPUT
        given = users_path(exc, argv)
        if given is None:
            raise
        streams.say(f"secperf {args.command}: error: {given}: {exc.strerror or exc} (a path given on the command line)")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt as exc:
        if isinstance(exc, Interrupted) and exc.result is not None:  # a measurement interrupted: its partial Result
            return output.show_interrupted(exc, args)
        code, note = interruption_note(exc)
        streams.say(f"secperf {args.command}: {note}")
        return code


if __name__ == "__main__":
    sys.exit(main())
