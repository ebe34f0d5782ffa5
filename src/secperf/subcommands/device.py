"""`secperf device handshake|crypto|list|build`: real embedded TLS stacks on emulated ARM cores,
instructions per handshake message and per primitive (docs/how-to/devices.md).

The list options are comma lists (`argtypes.comma_list`, repeatable); a list not given is None here
and the app's default applies. The names themselves are checked by the measure layer
(measure/device.py), which knows the aliases and says what each build offers."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from ..app import device as app
from ..app.device_calibrate import CalibrateOptions
from ..app.device_calibrate import run as calibrate
from ..core.errors import InputError
from ..inputs.vocabulary import groups
from .measuring import output
from .output import Exited, Text

if TYPE_CHECKING:
    from ..app.runner import Output
    from ..core.result_schema import Result


def _output(args: argparse.Namespace) -> Output:
    return output(args, "device", args.device_cmd)


def run(args: argparse.Namespace) -> Result | Text | Exited:
    d = app.DEFAULTS
    if args.device_cmd == "handshake":
        opts = app.HandshakeOptions(
            device=args.device,
            stack=args.stack or d["stack"],
            tls=args.tls or d["tls"],
            group=groups(args.group) if args.group else d["group"],  # one spelling
            suite=args.suite or d["suite"],
            mode=args.mode or d["mode"],
            server_cert=args.server_cert,
            client_cert=args.client_cert,
            n=args.n,
            warmup=args.warmup,
            config=args.config,
            timing=args.timing == "on",
            max_hours=args.max_hours,
        )
        return app.run_handshakes(opts, _output(args))
    if args.device_cmd == "crypto" and (args.source or args.entry or args.harness or args.name):
        if not args.source or not args.entry:
            raise InputError(
                "--source FILES and --entry FUNCTION go together (your own code); --harness and --name need them"
            )
        for opt, v in (("--stack", args.stack), ("--op", args.op), ("--config", args.config)):
            if v:
                raise InputError(f"{opt}: picks a library's primitives; your own code (--source) is counted alone")
        return app.run_user_code(
            args.device,
            args.source,
            args.entry,
            _output(args),
            args.harness,
            args.name,
            timing=args.timing == "on",
            calls=args.n,
            max_hours=args.max_hours,
        )
    if args.device_cmd == "crypto":
        return app.run_crypto(
            args.device,
            args.stack or d["stack"],
            args.op,
            args.n or 3,
            _output(args),
            args.config,
            timing=args.timing == "on",
            max_hours=args.max_hours,
        )
    if args.device_cmd == "calibrate":
        out, code = calibrate(
            CalibrateOptions(
                args.log,
                args.board_clock,
                args.wait_states,
                args.name,
                args.core,
                args.stack,
                args.config,
                args.scheme,
                args.tolerance,
                None if args.icache is None else args.icache == "on",
                None if args.prefetch is None else args.prefetch == "on",
            ),
            args.json,
        )
        return Text(out, exit_code=code)
    if args.device_cmd == "list":
        return Text(app.list_devices(verbose=args.verbose))
    if args.device_cmd == "show":
        return Text(app.show_device(args.name))
    if args.device_cmd == "build":
        app.build(args.stack or app.BUILD_DEFAULTS["stack"], args.target or app.BUILD_DEFAULTS["target"], args.config)
        return Exited(0)
    return Text(
        "secperf device: choose handshake, crypto, calibrate, list, show or build (secperf device -h)\n",
        stream="stderr",
        exit_code=2,
    )
