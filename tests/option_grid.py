"""The options x commands x kinds grid (issue 42: every option acts or is refused), generated from the
parser: for each command with kinds (handshake's experiments, device handshake's --tls and --mode, whatif's
protocols, server's --protocol, mqtt-load's storm, crypto's families, ...), every option of the command is
given a value other than its default, and the run is recorded at the step where secperf would start
measuring or predicting (the validation and the parameters are real; nothing is measured). A cell either
changes what the Result would record (its parameters, or the labels of its series) against the same kind
without the option, or exits 2 naming both the option and the kind.

Used by tests/test_option_scope_grid.py; connect's own grid is tests/test_reliability4b_options_table.py."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
from types import SimpleNamespace
from typing import Any

from secperf import cli
from secperf.measure.handshake_config import EXPERIMENTS

# a measurement's output, how it is shown and where it goes: no parameter of the measurement
OUTPUT = {
    "--help",
    "--out",
    "--json",
    "--csv",
    "--metrics",
    "--no-report",
    "--figures",
    "--max-failure-share",
    "--cortexm-table",
    "--allow-partial",
    "--sources",
    "--list",
    "--list-devices",
    "--cluster",
}

# what each option is given in its cell (a value other than its default; for a limit, --max-hours,
# --max-draws, --max-cells, one the kind's run exceeds, so that acting is refusing): "OPTION" for every command,
# "COMMAND OPTION" where the commands differ. A new option without one fails test_every_option_has_a_value.
VALUES: dict[str, list[str]] = {
    "--n": ["3"],
    "--warmup": ["1"],
    "--seed": ["7"],
    "--duration": ["2"],
    "--min-sample-us": ["50"],
    "--max-hours": ["0.0001"],
    "--network": ["delay=5ms"],
    "--timeout-ms": ["1234"],
    "--connect": ["127.0.0.1:5999"],
    "--ca": ["{file}"],
    "--servername": ["example.org"],
    "--client-cert": ["{file}"],
    "--client-key": ["{file}"],
    "handshake --server": ["s_server"],
    "--mtls": [],
    "handshake --stack": ["wolfssl"],
    # crypto
    "--alg": ["x25519"],
    "--op": ["sign"],
    "--size": ["64"],
    "--strength": ["128"],
    "--hash": ["sha1"],
    "--prehashed": [],
    "--library": ["openssl,wolfcrypt"],
    # signer, jwt
    "--profile": ["atecc608"],
    "signer --key": ["rsa-2048"],
    "jwt --key": ["rsa-2048"],
    "--mode": ["total"],
    "--lifetime": ["60"],
    "--requests-per-hour": ["10"],
    "--key-session": ["cold"],
    # mac, can
    "mac --alg": ["aes-128-cmac"],
    "--cortexm": ["m4"],
    "--cortexm-only": [],
    "--device": ["rl78"],
    "--mac": ["chaskey"],
    "--bitrate-kbps": ["500"],
    "--usable-share": ["0.4"],
    "--frame-bits": ["120"],
    "--data-bytes": ["4"],
    "--period-ms": ["20"],
    "--clock-mhz": ["16"],
    "--frames": ["5"],
    "--frame-limit-kbps": ["100"],
    "--tag-bytes": ["4"],
    "--k": ["2"],
    "--cpu-budget": ["0.2"],
    "--cycles-per-block": ["900"],
    "--fd": [],
    # whatif, plan
    "whatif --network": ["nb-iot"],
    "whatif --key": ["se:iot-safe-sim"],
    "--group": ["p-256"],
    "--server-cert": ["rsa-2048:2"],
    "--cert": ["rsa-2048:2"],
    "whatif --handshake": ["resumed"],
    "whatif --device": ["cortex-m4-80"],
    "whatif --stack": ["mbedtls3"],
    "whatif --config": ["default"],
    "--sweep": ["rtt=0,100"],
    "--calibrate": ["{result}"],
    "--host-costs": ["shipped"],
    "--s1": [],
    "--coap-random-factor": ["1.0"],
    "--path-floor": ["0.2"],
    "--host-scheduling": ["5"],
    "--baseline": [],
    "--until": ["handshake"],
    "whatif --n": ["300"],
    "--max-draws": ["1"],
    "--max-cells": ["1"],
    "--system": ["{system}"],
    "plan --pattern": ["event-driven"],
    "plan --device": ["cortex-m4-80"],
    "plan --stack": ["mbedtls3"],
    "plan --config": ["default"],
    "plan --key": ["se:iot-safe-sim"],
    "plan --se": ["iot-safe-sim"],
    "plan --network": ["nb-iot"],
    "--radio": ["nb-iot"],
    "plan --n": ["300"],
    "--verify": [],
    "--verify-n": ["3"],
    # device handshake / crypto
    "device --device": ["cortex-m4-80"],
    "device --stack": ["wolfssl59"],
    "device --tls": ["1.2"],
    "device --group": ["p-256"],
    "--suite": ["chacha20"],
    "device --mode": ["resumed"],
    "device --server-cert": ["ecdsa-p256"],
    "device --client-cert": ["ecdsa-p256"],
    "device --config": ["small"],
    "device --n": ["4"],
    "--timing": ["off"],
    "device --warmup": ["1"],
    "device --op": ["sign"],
    "--source": ["{source}"],
    "--entry": ["f"],
    "--harness": ["{file}"],
    "--name": ["myop"],
    # server, fleet, mqtt-load
    "--protocol": ["dtls"],
    "server --server": ["s_server"],
    "server --key": ["ecdsa-p256"],
    "--key-source": ["se:iot-safe-sim"],
    "server --client-auth": ["on"],
    "server --resume-ratio": ["0.5"],
    "server --chain-depth": ["2"],
    "server --tls": ["1.2"],
    "--concurrency": ["2"],
    "--rates": ["10"],
    "--matrix": [],
    "server --duration": ["2"],
    "server --warmup": ["0.2"],
    "server --core": ["1"],
    "--procs": ["2"],
    "--target": ["127.0.0.1:5999"],
    "--target-app": ["none"],
    "--groups": ["P-256"],
    "--ciphersuites": ["TLS_AES_256_GCM_SHA384"],
    "--ciphers": ["ECDHE-ECDSA-AES128-GCM-SHA256"],
    "--devices": ["1000"],
    "fleet --policy": ["fixed"],
    "--capacity": ["50"],
    "--resumed-capacity": ["200"],
    "--from": ["{result}"],
    "--resumed-share": ["0.5"],
    "fleet --base": ["2"],
    "fleet --cap": ["30"],
    "fleet --timeout": ["5"],
    "--backlog": ["100"],
    "fleet --spread": ["1"],
    "--device-handshake": ["10"],
    "--horizon": ["600"],
    "fleet --server": ["s_server"],
    "fleet --key": ["ecdsa-p256"],
    "--measure-seconds": ["1"],
    "--abandoned-work": [],
    "--replay": ["100"],
    "--clients": ["10"],
    "--connect-rate": ["50"],
    "--hold": ["2"],
    "--publish-rate": ["10"],
    "--qos": ["0"],
    "--payload": ["64"],
    "--keepalive": ["30"],
    "mqtt-load --timeout": ["5"],
    "mqtt-load --policy": ["fixed"],
    "mqtt-load --base": ["1"],
    "mqtt-load --cap": ["4"],
    "--max-attempts": ["5"],
    "mqtt-load --spread": ["1"],
    "--storm-max": ["60"],
    "mqtt-load --key": ["rsa-2048"],
    "mqtt-load --client-auth": ["off"],
    "mqtt-load --resume-ratio": ["0.5"],
    "mqtt-load --chain-depth": ["2"],
    "mqtt-load --tls": ["1.2"],
    "--se": ["iot-safe-sim"],
    "mqtt-load --core": ["1"],
    "--capacity-seconds": ["1"],
    "--storm": ["off"],
    "run --scenario": ["quick"],
}

# the kinds of each command: (command words, a kind's name and the arguments that select it)
KINDS: dict[str, list[tuple[str, list[str]]]] = {
    "handshake": [(e, ["handshake", e]) for e in EXPERIMENTS],
    "crypto": [
        ("signature", ["crypto", "--alg", "ecdsa-p256"]),
        ("aead", ["crypto", "--alg", "aes-128-gcm"]),
        ("kex", ["crypto", "--alg", "x25519"]),
        ("hash", ["crypto", "--alg", "sha256"]),
    ],
    "signer": [("signer", ["signer"])],
    "jwt": [("jwt", ["jwt"])],
    "mac": [("host", ["mac", "--cortexm", "none"]), ("cortexm", ["mac", "--cortexm-only"])],
    "whatif": [
        (p, ["whatif", p, "--n", "200", "--network", "delay=20ms,loss=2%"])
        for p in ("tls1.3", "tls1.2", "dtls1.2", "https", "mqtt", "coap", "openvpn", "jwt", "edhoc", "quic", "dtls1.3")
    ],
    "device handshake": [
        (f"tls {t}", ["device", "handshake", "--tls", t]) for t in ("1.3", "1.2", "dtls1.2", "quic", "edhoc")
    ]
    + [("tls dtls1.3", ["device", "handshake", "--tls", "dtls1.3", "--stack", "wolfssl59"])]
    + [
        (f"tls {t} mode {m}", ["device", "handshake", "--tls", t, "--mode", m])
        for t, m in (("1.3", "psk"), ("1.2", "resumed"), ("quic", "0rtt"), ("edhoc", "m3-value"))
    ]
    + [("tls dtls1.2 mode psk", ["device", "handshake", "--tls", "dtls1.2", "--mode", "psk", "--stack", "wolfssl59"])],
    "device crypto": [("library", ["device", "crypto"])],
    "server": [(p, ["server", "--protocol", p]) for p in ("tls", "dtls")],
    "mqtt-load": [("storm on", ["mqtt-load"]), ("storm off", ["mqtt-load", "--storm", "off"])],
    "fleet": [("model", ["fleet"])],
    "plan": [("pattern", ["plan", "--pattern", "periodic-collection"])],
}


def subparsers(p: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            return dict(a.choices)
    return {}


def command_parser(command: str) -> argparse.ArgumentParser:
    words = command.split()
    p = subparsers(cli.build_parser())[words[0]]
    return subparsers(p)[words[1]] if len(words) > 1 else p


def options(command: str) -> list[str]:
    return [
        a.option_strings[-1]
        for a in command_parser(command)._actions
        if a.option_strings and a.option_strings[-1] not in OUTPUT
    ]


def value(command: str, opt: str) -> list[str] | None:
    for key in (f"{command} {opt}", f"{command.split()[0]} {opt}", opt):
        if key in VALUES:
            return VALUES[key]
    return None


def recorded(result: Any) -> dict[str, Any]:
    return json.loads(json.dumps(result, default=str))


class _Analysis(SimpleNamespace):
    """What an analysis phase stores (by attribute, or by key as before)."""

    def __setitem__(self, key: str, value: Any) -> None:
        setattr(self, key, value)


class Recorder:
    """Replaces the step where a command starts measuring (runner.measure_and_write, wherever it is
    imported) or, for what is computed (whatif, plan), the step that shows the written Result: records the
    parameters and the series labels the Result would hold."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def install(self, monkeypatch: Any) -> None:
        from secperf.app import cluster_load, cluster_target, commands, device, mqtt_load, runner, scenario, server
        from secperf.subcommands import output

        def measure_and_write(kind: str, params: dict[str, Any], phases: list[Any], out: Any) -> Any:
            labels = [re.sub(r" at 0x[0-9a-f]+", "", f"{ph.label(it)} {it!r}") for ph in phases for it in ph.items]
            analysis = _Analysis()
            for ph in phases:  # a computed analysis (the CAN model) is what its phase stores in the Result
                if ph.runner.__qualname__.startswith("analysis_phase"):
                    ph.runner(ph.items, SimpleNamespace(analysis=analysis), None, lambda *a: None)
            self.seen.append(recorded({"params": params, "series": labels, "analysis": vars(analysis)}))
            return output.Exited(0)

        for mod in (runner, commands, device, mqtt_load, scenario, server, cluster_load, cluster_target):
            if hasattr(mod, "measure_and_write"):
                monkeypatch.setattr(mod, "measure_and_write", measure_and_write)
        real_show = output.show

        def show(result: Any, args: Any, judges: bool = True) -> int:
            if hasattr(result, "params") and hasattr(result, "series"):
                self.seen.append(
                    recorded(
                        {
                            "params": result.params,
                            "series": sorted(s.id for s in result.series),
                            "analysis": result.analysis,
                            "figures": {s.id: hash(tuple(s.values_us)) for s in result.series},
                        }
                    )
                )
                return 0
            return real_show(result, args, judges)

        monkeypatch.setattr(output, "show", show)


def run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    return code, err.getvalue()


def names(err: str, opt: str, kind_words: list[str]) -> bool:
    low = err.lower()
    name = opt.lstrip("-")
    return any(w in low for w in (name, name.replace("-", " "))) and any(w.lower() in low for w in kind_words)


def walk(command: str, rec: Recorder, files: dict[str, str], out: str) -> dict[str, list[str]]:
    """Every kind x option of `command`: {"silent": [...], "unnamed": [...], "nameless": [...], "crash": [...],
    "base": [...], "failed": [...]} ("failed": exit 1, a count or build that failed: neither silent nor refused). "unnamed": refusals naming the option but not the kind, as "COMMAND OPTION\tmessage" (a
    refusal of the command as such, whatever the kind, says the same for every kind)."""
    found: dict[str, list[str]] = {
        "silent": [],
        "unnamed": [],
        "nameless": [],
        "crash": [],
        "base": [],
        "failed": [],
        "idle": [],
    }
    for kind, base_argv in KINDS[command]:
        base_argv = [*base_argv, "--out", out]
        code, err = run(base_argv)
        if code != 0 or not rec.seen:
            found["base"].append(f"{command} [{kind}]: exit {code}: {err.strip()[-300:]}")
            continue
        base = rec.seen[-1]
        for opt in options(command):
            given = [v.format(**files) for v in value(command, opt) or []]
            if opt in base_argv:
                continue
            n = len(rec.seen)
            code, err = run([*base_argv, opt, *given])
            cell = f"{command} [{kind}] {opt} {' '.join(given)}"
            if "Traceback" in err:
                found["crash"].append(f"{cell}: {err.strip().splitlines()[-1]}")
            elif code == 2:
                line = err.strip().splitlines()[-1] if err.strip() else ""
                if not names(err, opt, [opt]):
                    found["nameless"].append(f"{cell}: {line[:300]}")
                elif given and any(f"{opt} {g}" in err or f"{opt} {g!r}" in err for g in given[:1]):
                    continue  # refused for the value given (a server that is not there): the option acts
                elif not names(err, opt, kind.split() + base_argv[1:2] + base_argv[3:4]):
                    found["unnamed"].append(f"{command} {opt}\t{line}")
            elif code == 0 and len(rec.seen) > n and rec.seen[-1] != base:
                new = rec.seen[-1]
                if base.get("figures") and {k: v for k, v in new.items() if k != "params"} == {
                    k: v for k, v in base.items() if k != "params"
                }:
                    found["idle"].append(f"{cell}: recorded in the parameters, the figures unchanged")
                continue
            elif code not in (0, 2):
                found["failed"].append(f"{cell}: exit {code} {err.strip()[-300:]}")
            else:
                found["silent"].append(f"{cell}: exit {code} {err.strip()[-200:]}")
    return found
