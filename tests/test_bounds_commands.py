"""Bounded runs for every measuring command: the parser's commands each have a run-time estimate or a
reason they need none (app/bounds.COMMANDS); a run far past the limit is refused before anything starts
(exit 2, naming the estimate and --max-hours); the defaults and the documented examples are not refused.
The measuring step is replaced by a recorder: nothing is measured here."""

from __future__ import annotations

import argparse
import contextlib
import io
import re
from pathlib import Path

import pytest

from secperf import cli
from secperf.app import bounds

ROOT = Path(__file__).resolve().parents[1]


def _leaves(p: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> dict[str, argparse.ArgumentParser]:
    subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return {" ".join(path): p}
    out: dict[str, argparse.ArgumentParser] = {}
    for name, sp in subs[0].choices.items():
        out.update(_leaves(sp, (*path, name)))
    return out


def test_every_command_of_the_parser_has_an_estimate_or_the_reason_it_needs_none():
    leaves = _leaves(cli.build_parser())
    assert set(leaves) == set(bounds.COMMANDS), "app/bounds.COMMANDS must name every command of the parser"
    for name, p in leaves.items():
        says = bounds.COMMANDS[name]
        opts = {o for a in p._actions for o in a.option_strings}
        if says == "estimate":
            assert "--max-hours" in opts, f"{name}: estimated, so its limit must be an option"
        else:
            assert len(says) > 10 and says != "estimate", name


@pytest.fixture
def recorder(monkeypatch, tmp_path):
    from secperf.app import commands, device, mqtt_load, runner, scenario, server

    seen: list[dict] = []

    def record(kind, params, phases, output):
        seen.append(params)
        from secperf.subcommands.output import Exited

        return Exited(0)

    for mod in (runner, commands, device, mqtt_load, scenario, server):
        monkeypatch.setattr(mod, "measure_and_write", record)
    monkeypatch.chdir(tmp_path)
    return seen


def _run(argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    return code, err.getvalue()


FAR_PAST = [
    ["connect", "dtls13", "--network", "delay=60s", "--n", "2"],
    ["handshake", "versions", "--network", "delay=1ms,jitter=60s", "--n", "1"],
    ["crypto", "--alg", "ecdsa-p256", "--duration", "86000", "--n", "1000000"],
    ["mac", "--n", "100000", "--duration", "3000", "--cortexm", "none"],
    ["signer", "--n", "100000"],
    ["jwt", "--n", "3000", "--network", "delay=300ms"],
    ["device", "handshake", "--n", "1000", "--mode", "full,resumed", "--group", "x25519,p-256,p-384"],
    ["device", "handshake", "--tls", "quic", "--n", "1000", "--group", "x25519,p-256,p-384", "--mode", "full,resumed"],
    [
        "device",
        "handshake",
        "--tls",
        "edhoc",
        "--mode",
        "m3-kid,m3-value",
        "--n",
        "1000",
        "--warmup",
        "100",
        "--stack",
        "mbedtls3,wolfssl59",
        "--max-hours",
        "0.5",
    ],
    ["device", "crypto", "--n", "1000"],
    ["device", "crypto", "--source", "x.c", "--entry", "f", "--n", "1000", "--max-hours", "0.01"],
    ["server", "--duration", "3600", "--concurrency", "1,2,4"],
    [
        "fleet",
        "--replay",
        "5000",
        "--cap",
        "300",
        "--policy",
        "exponential,decorrelated,fixed",
        "--measure-seconds",
        "100",
        "--max-hours",
        "0.5",
    ],
    ["mqtt-load", "--clients", "500", "--connect-rate", "0.1"],
    ["plan", "--pattern", "periodic-collection", "--verify", "--verify-n", "1000", "--max-hours", "0.2"],
    ["run", "--n", "100000"],
]


def test_every_estimated_command_has_a_far_past_example_here():
    estimated = {c for c, v in bounds.COMMANDS.items() if v == "estimate"}
    covered = {" ".join(a[:2]) if " ".join(a[:2]) in estimated else a[0] for a in FAR_PAST}
    assert estimated <= covered, f"no refusal example for {sorted(estimated - covered)}"


@pytest.mark.parametrize("argv", FAR_PAST, ids=lambda a: " ".join(a[:3]))
def test_a_run_far_past_the_limit_is_refused_before_anything_starts(argv, recorder, tmp_path):
    out = tmp_path / "out"
    code, err = _run([*argv, "--out", str(out)])
    assert code == 2, err
    if any("jitter=60s" in a for a in argv):  # refused for its jitter before its length: still at once, exit 2
        assert "jitter" in err
    else:
        assert "estimated at" in err and "--max-hours" in err, err
    assert not recorder, "nothing may start"
    assert not out.exists() or not any(out.iterdir()), "no run directory for a refused run"


def test_max_hours_lets_a_long_run_through_and_the_estimate_is_recorded(recorder, tmp_path):
    code, err = _run(["signer", "--n", "100000", "--max-hours", "100", "--out", str(tmp_path)])
    assert code == 0, err
    assert recorder[-1]["max_hours"] == 100 and recorder[-1]["estimate_s"] > 3600


@pytest.mark.parametrize(
    "argv",
    [
        ["run"],
        ["crypto", "--alg", "ecdsa-p256"],
        ["signer"],
        ["jwt"],
        ["mac", "--cortexm", "none"],
        ["connect", "mqtt"],
    ],
    ids=lambda a: " ".join(a),
)
def test_a_default_run_is_not_refused_and_records_its_estimate(argv, recorder, tmp_path):
    code, err = _run([*argv, "--out", str(tmp_path)])
    assert code == 0, err
    p = recorder[-1]
    assert 0 < p["estimate_s"] < bounds.DEFAULT_HOURS * 3600 and p["max_hours"] == bounds.DEFAULT_HOURS


def test_the_defaults_of_the_device_server_fleet_and_mqtt_load_estimates_are_within_the_limit():
    from secperf.app import device_bounds
    from secperf.app.device import HandshakeOptions
    from secperf.app.server import _fleet_estimate, estimate
    from secperf.app.server_plan import FleetOptions, ServerOptions
    from secperf.measure.mqtt_load import MqttLoadConfig

    lim = bounds.DEFAULT_HOURS * 3600
    assert device_bounds.check_handshakes(HandshakeOptions(), None)["estimate_s"] < lim
    assert device_bounds.check_crypto("wolfssl", None, 3, None, None)["estimate_s"] < lim
    assert estimate(ServerOptions())["estimate_s"] < lim
    assert _fleet_estimate(FleetOptions(key="rsa-2048"))["estimate_s"] < lim
    assert _fleet_estimate(FleetOptions(key="rsa-2048", replay=1000))["estimate_s"] < lim
    c = MqttLoadConfig()
    assert (
        bounds.mqtt_load_s(c.clients, c.connect_rate, c.hold_s, c.capacity_s, c.storm, c.storm_max_s, c.spread_s) < lim
    )


def test_the_estimates_grow_with_what_the_run_is_asked_to_do():
    from secperf.app import device_bounds
    from secperf.app.device import HandshakeOptions
    from secperf.app.server import estimate
    from secperf.app.server_plan import ServerOptions

    hs = device_bounds.handshake_rows
    assert hs(HandshakeOptions(group="x25519,p-256,p-384")) > hs(HandshakeOptions(group="x25519"))
    assert hs(HandshakeOptions(tls="1.3,edhoc", mode="full,m3-value")) > hs(HandshakeOptions(tls="1.3"))
    assert (
        bounds.device_handshakes_s(2, 10, 2) > bounds.device_handshakes_s(2, 5, 2) > bounds.device_handshakes_s(1, 5, 2)
    )
    assert (
        estimate(ServerOptions(duration_s=10))["estimate_s"]
        > estimate(ServerOptions())["estimate_s"]
        > estimate(ServerOptions(concurrency=[1]))["estimate_s"]
    )
    assert bounds.mqtt_load_s(1000, 10, 10, 2, True, 300, 0) > bounds.mqtt_load_s(100, 10, 10, 2, True, 300, 0)


COMMANDS = "|".join(
    sorted((c for c, v in bounds.COMMANDS.items() if v == "estimate" and " " not in c), key=len, reverse=True)
)


def _documented() -> list[list[str]]:
    """Every one-line `secperf COMMAND ...` example of README and docs for an estimated command that runs
    here on secperf's own servers (no placeholders, no --connect/--target/--cluster/--from)."""
    out: set[str] = set()
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for m in re.finditer(rf"secperf ((?:{COMMANDS})(?: [^#`\\|\n<>]*)?)", page.read_text()):
            line = m.group(1).strip()
            if re.search(r"--(connect|target|cluster|from|list)\b|\.\.\.|\[|[A-Z]{3,}|: |, |'|--[a-z-]+$", line):
                continue
            out.add(line)
    return [s.split() for s in sorted(out)]


@pytest.mark.slow
def test_no_documented_example_is_refused_for_its_length(recorder, tmp_path):
    examples = _documented()
    assert len(examples) > 30
    refused = []
    for argv in examples:
        code, err = _run([*argv, "--out", str(tmp_path / "out")])
        if "estimated at" in err and code == 2:
            refused.append((" ".join(argv), err.strip().splitlines()[-1]))
    assert not refused, refused


@pytest.mark.slow
def test_device_counts_missing_from_the_cache_are_estimated_and_refused_past_the_limit(monkeypatch, tmp_path):
    """plan on an emulated core with an empty device-count cache: the rows to count are estimated (a cached
    row costs nothing) and a limit below them refuses the run before the emulator counts one."""
    from secperf.app import device_counts

    monkeypatch.setattr(
        device_counts, "_cache_file", lambda core, stack, config, home=None: tmp_path / f"{core}-{stack}.json"
    )
    monkeypatch.chdir(tmp_path)
    code, err = _run(
        [
            "plan",
            "--pattern",
            "periodic-collection",
            "--device",
            "cortex-m4-80",
            "--max-hours",
            "0.0001",
            "--out",
            str(tmp_path / "out"),
        ]
    )
    assert code == 2 and "counting on cortex-m4-80" in err and "not in the device-count cache" in err, err
    assert "--max-hours" in err and not list(tmp_path.glob("*.json")), "nothing counted, nothing cached"
