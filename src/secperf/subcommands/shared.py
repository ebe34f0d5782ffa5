"""Options several subcommands share (this module is no subcommand of its own: it is not in
MODULES), and the checks every command's parsed options pass before it runs (`check_outputs`)."""

from __future__ import annotations

import argparse
from typing import Any

from . import argtypes
from .argtypes import count, positive


def key_session_option(p: argparse.ArgumentParser) -> None:
    """--key-session of `connect` and `jwt`."""
    p.add_argument(
        "--key-session",
        action="extend",
        type=argtypes.comma_list(),
        metavar="KINDS",
        help="token key session per connection: warm (default: one PKCS#11 session and login for all), "
        "cold (a device waking for each connection: open a session, log in, find the key every "
        "time); comma-separated for both",
    )


def own_server_options(p: argparse.ArgumentParser) -> None:
    """The user's own server instead of one secperf starts (`connect`, `handshake`)."""
    g = p.add_argument_group("your own server (instead of one secperf starts)")
    g.add_argument("--connect", metavar="HOST:PORT", help="measure the server at HOST:PORT")
    g.add_argument("--ca", metavar="FILE", help="CA certificate(s) that verify the server (PEM)")
    g.add_argument(
        "--servername", metavar="NAME", help="SNI and the name checked in the server's certificate (default: HOST)"
    )
    g.add_argument("--client-cert", metavar="FILE", help="client certificate (PEM) for mutual TLS")
    g.add_argument("--client-key", metavar="FILE|URI", help="its key: a PEM file or a pkcs11: URI")


def wait_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--wait-port",
        type=count(65535),
        metavar="PORT",
        help="with --server: wait until the server accepts TCP on PORT (of $SECPERF_SERVER_ADDR) before "
        "starting CMD (default: until the server listens on any TCP port)",
    )
    p.add_argument(
        "--wait-timeout",
        type=positive(3600),
        default=10.0,
        metavar="S",
        help="how long to wait for the server (default 10 s)",
    )


def target_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The user's own server: {} when --connect is not given."""
    if not getattr(args, "connect", None):
        for opt in ("ca", "servername", "client_cert", "client_key"):
            if getattr(args, opt, None):
                from ..core.errors import InputError

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


def allow_partial_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--allow-partial",
        action="store_true",
        help="read a Result whose run is still running or was abandoned (killed before it finished); "
        "a note says its figures are partial",
    )


# options naming a file or directory secperf writes; every other string option naming an existing
# path is an input, and no output may be one (nor a secperf Result, nor another output)
OUTPUT_FILES = {"output": "-o/--output", "csv": "--csv", "metrics": "--metrics", "cortexm_table": "--cortexm-table"}
OUTPUT_DIRS = {"out": "--out", "figures": "--figures"}


def input_paths(args: argparse.Namespace) -> list[str]:
    """Every string value of the parsed options that names an existing path, outputs excepted (a
    directory given as a Result stands for its result.json)."""
    import os

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


def settle_lists(args: argparse.Namespace) -> None:
    """The command's comma lists as a whole (argtypes.settle_lists): repeats folded with a note,
    sizes and the grid bounded, before anything runs."""
    from .. import subcommands
    from ..app.reporter import reporter

    mod = next((m for m in subcommands.load() if m.NAME == getattr(args, "command", None)), None)
    if mod is None:
        return
    p = argparse.ArgumentParser(prog=f"secperf {mod.NAME}")
    mod.add_arguments(p)
    argtypes.settle_lists(p, args, lambda line: reporter().note(line))


def check_outputs(args: argparse.Namespace) -> None:
    """Before a command does anything: no output file is an input, a Result, or another output's
    file, and each can be written where it is named (core/store.check_output_path)."""
    import os

    from ..core.errors import OutputError
    from ..core.store import check_output_path

    settle_lists(args)
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


def add_device_options(p: argparse.ArgumentParser, device_help: str, stack_help: str = "") -> None:
    """--device CORE with its library choices (--stack, --config), as `whatif` and `plan` take them."""
    p.add_argument(
        "--device",
        type=argtypes.name,
        metavar="CORE",
        help="the client's device: an emulated core of `secperf device list` "
        f"(cortex-m4-80, cortex-m33-128, cortex-a9-400, ...): {device_help}; or the cost table host-default",
    )
    p.add_argument(
        "--stack",
        type=argtypes.name_list,
        metavar="STACK",
        help="with --device CORE: the libraries counted, in order of preference (comma list: wolfssl, "
        "wolfssl59, mbedtls3, mbedtls, openssl, ngtcp2); each protocol takes the first that runs it, one "
        "none runs exits 2 naming those that do (default: one library for as many of the protocols as it "
        f"runs, another where it lacks one, said){stack_help}",
    )
    p.add_argument(
        "--config",
        metavar="CONFIG",
        help="with --device CORE: the library's build configuration (default: the stack's; "
        "`secperf device list` shows them, e.g. sp-asm, sp-c, sp-small for wolfSSL)",
    )


def check_device_build(device: object, stack: object, config: object) -> None:
    """--stack and --config choose the library of a core's counts: without a device they would act on
    nothing (exit 2 naming both)."""
    from ..core.errors import InputError

    if (stack or config) and not device:
        raise InputError(
            f"--{'stack' if stack else 'config'}: picks the library of a device's counts; give it "
            f"with --device CORE (`secperf device list`)"
        )


def cluster_option(p: argparse.ArgumentParser, what: str) -> None:
    """--cluster auto|local|ADDRESS (app/cluster.py; Ray is the optional extra secperf[cluster])."""
    p.add_argument(
        "--cluster",
        metavar="auto|local|ADDRESS",
        help=f"run on a Ray cluster: {what}; auto: the cluster this machine joined (`ray start`), "
        "local: a private Ray on this machine, HOST:PORT: a head's address (needs "
        "`pip install 'secperf[cluster]'`; docs/how-to/cluster.md)",
    )
