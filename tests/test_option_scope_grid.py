"""Every option acts or is refused, for every command with kinds (issue 42): the options x kinds grid of
each command, generated from the parser (tests/option_grid.py), run through the CLI up to the step where
measuring or predicting would start. Each cell changes what the Result would record (its parameters or its
series) against the same kind without the option, or exits 2 naming the option and the kind (a refusal
that does not name the kind is one of the command as such: the same words whatever the kind)."""

from __future__ import annotations

from pathlib import Path

import pytest

import option_grid as G

ROOT = Path(__file__).resolve().parent.parent
FAST = ["crypto", "signer", "jwt", "mac", "server", "mqtt-load", "fleet", "device crypto"]
SLOW = ["handshake", "device handshake", "whatif", "plan"]
# NOT YET: cells known to be silent, by command and option (printed when met): plan's --max-hours bounds
# only --verify's run (its rows), and without --verify it is neither refused nor recorded; whatif's
# --max-cells is a limit a one-cell run never reaches, and the Result does not record it. --host-costs shipped
# gives the same figures as the default (measured) on this host, in whatif and plan: not settled whether this
# host's measured table is the shipped one's source or the option does not reach the figures
# --max-cells is recorded; a one-cell run cannot exceed it, so in this grid it neither refuses nor changes figures
KNOWN_SILENT = {("whatif", "--max-cells"), ("whatif", "--host-costs"), ("plan", "--host-costs")}


def _known(cell: str) -> tuple[str, str] | None:
    return next((k for k in KNOWN_SILENT if cell.startswith(k[0] + " [") and f"] {k[1]} " in cell), None)


@pytest.fixture
def grid(monkeypatch, tmp_path):
    rec = G.Recorder()
    rec.install(monkeypatch)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "f.pem").write_text("not read in this test\n")
    code, err = G.run(["can", "--no-report", "--out", str(tmp_path / "seed")])  # a Result secperf wrote (--from)
    assert code == 0, err
    result = next(p for p in (tmp_path / "seed").glob("*/result.json") if not p.parent.is_symlink())
    rec.seen.clear()
    files = {
        "file": str(tmp_path / "f.pem"),
        "result": str(result),
        "system": str(ROOT / "examples" / "stm32l4-nbiot-mqtt.toml"),
        "source": str(ROOT / "examples" / "user-code" / "crc32.c"),
    }
    return rec, files, str(tmp_path / "out")


def test_every_option_has_a_value_and_every_command_with_kinds_a_grid():
    missing = [f"{c} {o}" for c in G.KINDS for o in G.options(c) if G.value(c, o) is None]
    assert not missing, f"options without a cell value in tests/option_grid.py VALUES: {missing}"
    assert set(G.KINDS) == set(FAST) | set(SLOW)


def _judge(found: dict[str, list[str]], command: str) -> None:
    assert not found["base"], found["base"]
    assert not found["crash"], "\n".join(found["crash"])
    assert not found["failed"], "\n".join(found["failed"])
    known = {_known(c) for c in found["silent"]} - {None}
    silent = [c for c in found["silent"] if _known(c) is None]
    assert not silent, "options that neither act nor are refused:\n" + "\n".join(silent)
    if known:
        print("known silent cells (NOT YET):", sorted(known))
    idle = [c for c in found["idle"] if _known(c) is None]
    assert not idle, "options recorded whose figures do not change:\n" + "\n".join(idle)
    assert not found["nameless"], "refused without naming the option:\n" + "\n".join(found["nameless"])
    by_option: dict[str, set[str]] = {}
    for line in found["unnamed"]:
        where, message = line.split("\t", 1)
        by_option.setdefault(where, set()).add(message)
    varied = {k: v for k, v in by_option.items() if len(v) > 1}
    assert not varied, f"refusals that depend on the kind without naming it: {varied}"


@pytest.mark.parametrize("command", FAST)
def test_each_option_acts_or_is_refused(command, grid):
    _judge(G.walk(command, *grid), command)


@pytest.mark.slow
@pytest.mark.parametrize("command", SLOW)
def test_each_option_acts_or_is_refused_slow(command, grid):
    _judge(G.walk(command, *grid), command)


@pytest.mark.parametrize(
    "argv, option, kind",
    [
        (["handshake", "versions", "--duration", "2"], "--duration", "versions"),
        (["handshake", "psk", "--min-sample-us", "50"], "--min-sample-us", "psk"),
        (["signer", "--duration", "2"], "--duration", "signer"),
        (["server", "--protocol", "dtls", "--tls", "1.2"], "--tls", "dtls"),
        (["device", "handshake", "--tls", "edhoc", "--group", "p-256"], "--group", "edhoc"),
        (["device", "handshake", "--mode", "psk", "--server-cert", "ecdsa-p256"], "--server-cert", "psk"),
        (["whatif", "tls1.3,mqtt", "--coap-random-factor", "1.0"], "--coap-random-factor", "tls1.3,mqtt"),
        (
            ["device", "handshake", "--tls", "dtls1.2", "--mode", "psk", "--stack", "wolfssl59", "--group", "p-256"],
            "--group",
            "psk",
        ),
    ],
)
def test_the_found_idle_options_are_refused_naming_option_and_kind(argv, option, kind, grid):
    rec = grid[0]
    code, err = G.run([*argv, "--out", grid[2]])
    assert code == 2 and option in err and kind in err, err
    assert not rec.seen


def test_the_coap_timer_factor_is_kept_where_a_protocol_has_the_timer(grid):
    rec = grid[0]
    code, err = G.run(
        ["whatif", "tls1.3,dtls1.2", "--coap-random-factor", "1.0", "--n", "200", "--no-report", "--out", grid[2]]
    )
    assert code == 0, err
    assert rec.seen[-1]["params"]["coap_random_factor"] == 1.0


def test_netem_run_refuses_a_wait_timeout_without_a_server(grid):
    code, err = G.run(["netem", "run", "lte", "--wait-timeout", "5", "--", "true"])
    assert code == 2 and "--wait-timeout" in err and "--server" in err, err


def test_the_seed_of_a_handshake_acts_with_a_link_and_is_recorded(grid):
    rec = grid[0]
    code, err = G.run(["handshake", "versions", "--seed", "5", "--out", grid[2]])
    assert code == 2 and "--seed" in err and "--network" in err
    code, err = G.run(["handshake", "versions", "--seed", "5", "--network", "delay=5ms", "--out", grid[2]])
    assert code == 0, err
    assert rec.seen[-1]["params"]["seed"] == 5
