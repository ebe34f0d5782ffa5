"""Options several subcommands share (this module is no subcommand of its own: it is not in
MODULES), and the checks every command's parsed options pass before it runs (`check_outputs`)."""

from __future__ import annotations

import argparse
import os
from typing import Any

from .. import subcommands
from ..app.reporter import reporter
from ..core.errors import InputError, OutputError
from ..core.store import check_output_path
from . import argtypes


def target_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The user's own server: {} when --connect is not given."""
    if not getattr(args, "connect", None):
        for opt in ("ca", "servername", "client_cert", "client_key"):
            if getattr(args, opt, None):
                raise InputError(f"--{opt.replace('_', '-')} applies to your own server: give --connect HOST:PORT too")
        return {}
    return {
        "target": {
            "connect": args.connect,
            "ca": args.ca,
            "servername": args.servername,
            "client_cert": args.client_cert,
            "client_key": args.client_key,
        }
    }


# options naming a file or directory secperf writes; every other string option naming an existing
# path is an input, and no output may be one (nor a secperf Result, nor another output)
OUTPUT_FILES = {"output": "-o/--output", "csv": "--csv", "metrics": "--metrics", "cortexm_table": "--cortexm-table"}
OUTPUT_DIRS = {"out": "--out", "figures": "--figures"}


def input_paths(args: argparse.Namespace) -> list[str]:
    """Every string value of the parsed options that names an existing path, outputs excepted (a
    directory given as a Result stands for its result.json)."""

    out: list[str] = []
    for dest, value in vars(args).items():
        if dest in OUTPUT_FILES or dest in OUTPUT_DIRS:
            continue
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str) and v and len(v) < 4096 and "\0" not in v:
                try:
                    if os.path.isfile(v):
                        out.append(v)
                    elif os.path.isdir(v) and os.path.isfile(os.path.join(v, "result.json")):
                        out.append(os.path.join(v, "result.json"))
                except (OSError, ValueError):
                    pass
    return out


def settle_lists(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> None:
    """The command's comma lists as a whole (argtypes.settle_lists): repeats folded with a note,
    sizes and the grid bounded, before anything runs. `parser`: the command's parser the arguments
    were parsed with (the CLI hands it on, so it is not built a second time); built here otherwise."""

    if parser is None:
        module = subcommands.module_of(getattr(args, "command", None))
        if module is None:
            return
        mod = subcommands.parser(module)
        parser = argparse.ArgumentParser(prog=f"secperf {mod.NAME}")
        mod.add_arguments(parser)
    argtypes.settle_lists(parser, args, lambda line: reporter().note(line))


def check_outputs(args: argparse.Namespace, parser: argparse.ArgumentParser | None = None) -> None:
    """Before a command does anything: no output file is an input, a Result, or another output's
    file, and each can be written where it is named (core/store.check_output_path). `parser`: the
    command's own parser (cli.command_level), for its comma lists."""

    settle_lists(args, parser)
    inputs = input_paths(args)
    seen: dict[str, str] = {}
    for dest, option in OUTPUT_FILES.items():
        path = getattr(args, dest, None)
        if not isinstance(path, str) or not path:
            continue
        check_output_path(path, option, inputs)
        real = os.path.realpath(path)
        if real in seen and not os.path.exists(real) or real in seen and os.path.isfile(real):
            raise OutputError(
                f"{option} {path}: also named by {seen[real]}; one would overwrite the other: name two files"
            )
        seen[real] = option
    for dest, option in OUTPUT_DIRS.items():
        path = getattr(args, dest, None)
        if isinstance(path, str) and any(len(os.fsencode(part)) > 255 for part in path.split("/")):
            raise OutputError(f"{option} {path}: a name in the path is longer than 255 bytes; name a shorter one")
        if isinstance(path, str) and path and any(os.path.realpath(path) == os.path.realpath(i) for i in inputs):
            raise OutputError(f"{option} {path}: is also an input of this command; name a directory")


def check_device_build(device: object, stack: object, config: object) -> None:
    """--stack and --config choose the library of a core's counts: without a device they would act on
    nothing (exit 2 naming both)."""

    if (stack or config) and not device:
        raise InputError(
            f"--{'stack' if stack else 'config'}: picks the library of a device's counts; give it "
            f"with --device CORE (`secperf device list`)"
        )
