"""Issue 42, part A: numbers that overflow are "too large" and never become inf downstream; TOML
depth counts tables and arrays, not brackets in strings; a system file's lists fold repeats and its
errors name the file's key path; a jitter far past the delay is refused; `clean` goes on past a
result it cannot write."""

import argparse
import json
import subprocess

import pytest

from secperf import cli
from secperf.core import result as R
from secperf.core.errors import InputError, OutputError
from secperf.core.files import MAX_TOML_DEPTH, parse_toml
from secperf.core.store import RunStore
from secperf.inputs import netspec as NS
from secperf.inputs.patterns import ENERGY_UNITS, TIME_UNITS, parse_quantity
from secperf.inputs.system import validate_system
from secperf.subcommands import argtypes

SYSTEM = """
name = "t"
description = "DESC"
[device]
core = "host-default"
[security]
key = "software"
[network]
link = "nb-iot"
radio = "nb-iot"
[protocol]
name = "mqtt"
handshakes = HANDSHAKES
EXTRA
[pattern]
use = "periodic-collection"
[budgets]
latency = "LATENCY"
"""


def _system(tmp_path, desc="x", handshakes='["full"]', extra="", latency="3 s"):
    p = tmp_path / "sys.toml"
    p.write_text(
        SYSTEM.replace("DESC", desc)
        .replace("HANDSHAKES", handshakes)
        .replace("EXTRA", extra)
        .replace("LATENCY", latency)
    )
    return p


# --- numbers -------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "parse",
    [argtypes.positive(1e6), argtypes.nonneg(1e6), argtypes.count(10**9), argtypes.share, argtypes.open_probability],
)
def test_an_overflowing_number_is_too_large_on_the_command_line(parse):
    with pytest.raises(argparse.ArgumentTypeError, match="too large"):
        parse("1e999")


@pytest.mark.parametrize("text", ["1e999 s", "1e308 s", "1e308 ms", "2e9 s"])
def test_a_budget_past_the_bound_is_too_large_not_not_positive(text):
    with pytest.raises(InputError, match="too large") as exc:
        parse_quantity(text, TIME_UNITS, "time")
    assert "greater than 0" not in str(exc.value)


def test_an_energy_that_overflows_is_too_large():
    with pytest.raises(InputError, match="too large"):
        parse_quantity("1e308 kJ", ENERGY_UNITS, "energy")
    assert parse_quantity("9 J", ENERGY_UNITS, "energy") == 9.0


@pytest.mark.parametrize(
    "spec,why", [("delay=1e999ms", "too large"), ("rate=1e999kbit", "too large"), ("loss=nan%", "not a probability")]
)
def test_network_numbers_say_the_right_reason(spec, why):
    with pytest.raises(NS.NetSpecError, match=why):
        NS.parse(spec)


def test_a_plan_with_a_huge_budget_is_refused_before_any_work(tmp_path, capsys):
    p = _system(tmp_path, latency="1e308 s")
    assert cli.main(["plan", "--system", str(p), "--out", str(tmp_path / "res"), "--n", "100"]) == 2
    err = capsys.readouterr().err
    assert "[budgets].latency" in err and "too large" in err
    assert not (tmp_path / "res").exists()


# --- TOML depth ----------------------------------------------------------------------------------
def test_brackets_inside_strings_and_comments_are_not_nesting(tmp_path):
    text = (
        'description = "' + "[" * 200 + '"\nlit = \'' + "{" * 100 + "'\n"
        'ml = """\n' + "[" * 80 + '\\"""\n"""\n# ' + "[" * 90 + "\nv = [[1], [2]]\n"
    )
    doc = parse_toml(text, "t")
    assert doc["description"] == "[" * 200 and doc["v"] == [[1], [2]]
    with pytest.raises(InputError, match="nested more than"):
        parse_toml("v = " + "[" * (MAX_TOML_DEPTH + 5) + "]" * (MAX_TOML_DEPTH + 5), "t")


def test_a_system_file_whose_description_holds_200_brackets_loads(tmp_path):
    from secperf.inputs.system import load_system

    assert load_system(_system(tmp_path, desc="[" * 200)).system.description == "[" * 200


# --- system files --------------------------------------------------------------------------------
def test_a_system_files_repeated_handshakes_are_used_once_with_a_note(tmp_path, capsys):
    import tomllib

    raw = tomllib.loads(_system(tmp_path, handshakes='["full", "full", "resumed", "full"]').read_text())
    s = validate_system(raw)
    assert s.protocol.handshakes == ["full", "resumed"]
    assert "[protocol].handshakes" in capsys.readouterr().err


@pytest.mark.parametrize(
    "extra,key",
    [
        ('server_cert = "ecdsa-p999"', "[protocol].server_cert"),
        ('server_cert = "rsa-2048:9"', "[protocol].server_cert"),
    ],
)
def test_an_error_in_a_system_files_value_names_its_key_not_an_option(tmp_path, capsys, extra, key):
    p = _system(tmp_path, extra=extra)
    assert cli.main(["whatif", "--system", str(p), "--n", "100", "--no-report", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert key in err and str(p) in err
    assert "--server-cert" not in err and "--cert" not in err


def test_the_same_value_on_the_command_line_keeps_the_options_name(tmp_path, capsys):
    p = _system(tmp_path)
    assert (
        cli.main(
            [
                "whatif",
                "--system",
                str(p),
                "--server-cert",
                "ecdsa-p999",
                "--n",
                "100",
                "--no-report",
                "--out",
                str(tmp_path / "r"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "--server-cert" in err and "[protocol].server_cert:" not in err


# --- jitter --------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", ["delay=1ms,jitter=500ms", "delay=1ms,jitter=60s", "nb-iot,delay=1ms"])
def test_a_jitter_far_past_the_delay_is_refused_with_the_reason(spec):
    with pytest.raises(NS.NetSpecError, match="neither"):
        NS.parse(spec)


@pytest.mark.parametrize("spec", ["delay=50ms,jitter=25ms", "delay=0ms,jitter=5ms", "delay=1ms,jitter=100ms"])
def test_a_jitter_within_reason_is_kept(spec):
    assert NS.parse(spec).up.jitter_ms > 0


# --- clean ---------------------------------------------------------------------------------------
def _dead_owner() -> dict:
    p = subprocess.Popen(["true"])
    p.wait()
    return {"pid": p.pid, "start_ticks": 1}


def test_clean_goes_on_past_a_result_it_cannot_write(tmp_path, monkeypatch):
    monkeypatch.setenv("SECPERF_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    runs = []
    for name in ("a-full", "b-ok"):
        run = RunStore(tmp_path / name).create("crypto")
        doc = R.new_result(kind="crypto", command=["secperf"], params={}, host={}, run_id=run.run_id)
        doc.owner = _dead_owner()  # killed hard
        run.save(doc)
        runs.append(run)
    bad = runs[0].result_path
    from secperf.core import store

    real = store.atomic_write

    def full_disk(path, data, mode=0o644, *, what=None):  # the file system of the first root is full
        if str(path) == str(bad) or str(path).startswith(str(bad.parent.parent)):
            raise OutputError(f"{path}: cannot write (no space left on the device)")
        return real(path, data, mode, what=what)

    monkeypatch.setattr(store, "atomic_write", full_disk)
    from secperf.app.clean import clean

    out = json.loads(clean(as_json=True, results=[str(tmp_path / "a-full"), str(tmp_path / "b-ok")]))
    assert [u["path"] for u in out["results_unwritable"]] == [str(bad.resolve())]
    assert "no space" in out["results_unwritable"][0]["reason"]
    assert str(runs[1].result_path.resolve()) in out["results_abandoned"]  # the next root was marked
    assert json.loads(runs[1].result_path.read_text())["status"] == "abandoned"
    text = clean(results=[str(tmp_path / "a-full")])
    assert "dead runs cleaned" in text and "not writable" in text


def test_clean_on_the_command_line_prints_its_summary_past_an_unwritable_root(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SECPERF_HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)

    def boom(self):
        raise OutputError("results: cannot write (read-only file system)")

    monkeypatch.setattr(RunStore, "abandoned", boom)
    (tmp_path / "results").mkdir()
    assert cli.main(["clean"]) == 0
    out = capsys.readouterr().out
    assert "dead runs cleaned" in out and "read-only file system" in out


@pytest.mark.parametrize(
    "line,key",
    [
        ("interval_s = 1e-300", "[traffic].interval_s"),
        ("interval_s = 1e308", "[traffic].interval_s"),
        ("sleep_s = 60.0\ndrops_per_day = 1e308", "[connection].drops_per_day"),
    ],
)
def test_a_pattern_figure_that_would_overflow_downstream_is_refused(tmp_path, line, key):
    """1e-300 s between messages made 1e304 messages and 1e307 bytes a day: finite, past any meaning,
    one multiplication from inf; the pattern's figures are bounded where they are read."""
    from importlib import resources

    from secperf.inputs.patterns import load_pattern

    text = resources.files("secperf.data").joinpath("patterns/periodic-collection.toml").read_text()
    text = text.replace("interval_s = 900.0", line if line.startswith("interval") else "interval_s = 900.0")
    text = text.replace("sleep_s = 60.0", line) if not line.startswith("interval") else text
    p = tmp_path / "p.toml"
    p.write_text(text)
    with pytest.raises(InputError, match=key.replace("[", r"\[").replace("]", r"\]")):
        load_pattern(str(p))


def test_a_server_tables_missing_file_is_named_by_its_key(tmp_path, capsys):
    p = tmp_path / "srv.toml"
    p.write_text(
        'name = "t"\n[device]\ncore = "host-default"\n[security]\nkey = "software"\n[network]\n'
        'link = "loopback"\n[protocol]\nname = "tls1.3"\n[server]\ntarget = "127.0.0.1:8443"\n'
        'client_cert = "nope.pem"\nclient_key = "nope.key"\n'
    )
    assert cli.main(["server", "--system", str(p), "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "[server].client_cert" in err and "--client-cert" not in err


@pytest.mark.parametrize(
    "argv,option",
    [
        (["whatif", "mqtt", "--sweep", "rtt=0..1e999:25"], "--sweep"),
        (["whatif", "mqtt", "--host-scheduling", "1e999"], "--host-scheduling"),
        (["server", "--rates", "1e999"], "--rates"),
        (["server", "--resume-ratio", "1,1e999"], "--resume-ratio"),
        (["server", "--chain-depth", "1e999"], "--chain-depth"),
    ],
)
def test_every_number_that_overflows_says_too_large(tmp_path, capsys, argv, option):
    assert cli.main([*argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert option in err and "too large" in err


def test_a_pattern_files_repeated_measures_are_used_once_with_a_note(tmp_path, capsys):
    from importlib import resources

    from secperf.inputs.patterns import load_pattern

    text = resources.files("secperf.data").joinpath("patterns/periodic-collection.toml").read_text()
    text = text.replace(
        'source = "study S2: MQTT over TLS',
        'measures = ["resumption", "psk", "resumption"]\nsource = "study S2: MQTT over TLS',
    )
    p = tmp_path / "p.toml"
    p.write_text(text)
    assert load_pattern(str(p)).stack.measures == ["resumption", "psk"]
    assert "[stack].measures" in capsys.readouterr().err
