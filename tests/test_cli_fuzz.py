"""CLI fuzz: every subcommand's options and scenario files, with hostile values, must end in exit
0, 1 or 2 with no traceback; exit 2 names what was wrong; no run leaves an empty run directory.

The measuring step itself is replaced by a recorder (this test is about input handling, and a
valid random selection could otherwise start an hour of measurement); everything before it —
parsing, validation, catalogues, profiles, link specs, the run store — is the real code. Bounded:
a few dozen examples per subcommand (`HYPOTHESIS_PROFILE=ci` runs more)."""

import contextlib
import io
import json
import math
import os
import traceback
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import patch_everywhere
from secperf import cli

settings.register_profile(
    "default",
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.register_profile(
    "ci",
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

NASTY = [
    "",
    " ",
    ",",
    ",,",
    "0",
    "-1",
    "1",
    "3",
    "inf",
    "-inf",
    "nan",
    "1e12",
    "99999999999999999999",
    "x",
    "é",
    "../x",
    "/dev/null",
    "/proc/nope/x",
    "a,b",
    "rsa-*",
    "list",
    "all",
    "none",
    "loopback",
    "lte",
    "delay=-5ms",
    "loss=150%",
    "delay=10ms,loss=1%",
    "1.5",
    "sha256",
    "ecdsa-p256",
    "se:nope",
    "se:iot-safe-sim",
    "software",
    "https",
    "mqtt",
    "md5",
    "chaskey",
    "rl78",
    "m3",
    "full",
    "resumed",
    "mtls",
    "psk",
    "nginx",
    "probe",
    "curl",
    "versions",
    "dtls",
    "iot-safe-sim",
    "sign",
    "verify",
    "16",
    "1000000000",
]
SKIP_OPTIONS = {"-h", "--help", "--version"}


def _subparsers():
    ap = cli.build_parser()
    sub = next(a for a in ap._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices


def _options(cmd: str):
    """(flags, takes a value, choices) of each optional argument; positional names."""
    opts, pos = [], []
    for a in _subparsers()[cmd]._actions:
        if not a.option_strings:
            if a.dest != "help":
                pos.append(a)
            continue
        if set(a.option_strings) & SKIP_OPTIONS:
            continue
        opts.append((a.option_strings[-1], a.nargs != 0, a.choices))
    return opts, pos


@pytest.fixture
def recorded(monkeypatch, tmp_path):
    """Replace only the measuring step: the phases are built (all validation done), then recorded."""
    from secperf.app import netem

    calls = []

    def record(kind, params, phases, output):
        json.dumps(params, default=str)  # parameters must be serialisable into the Result
        calls.append((kind, sum(len(p.items) for p in phases)))
        from secperf.subcommands.output import Exited

        return Exited(0)  # a command's run returns what the CLI shows; here nothing

    from secperf.app import runner

    # every command's measuring step (server, fleet, mqtt-load and device would load real servers or QEMU)
    patch_everywhere(monkeypatch, runner, "measure_and_write", record)
    monkeypatch.setattr(netem, "run", lambda *a, **k: 0)
    from secperf.app import plan as plan_app

    # plan: every input is checked, nothing is simulated or measured (--verify runs real servers)
    monkeypatch.setattr(plan_app, "plan_all", lambda o: (plan_app.check(o), [])[1])
    monkeypatch.chdir(tmp_path)
    return calls


def _run(argv):
    err, out = io.StringIO(), io.StringIO()
    code, tb = None, None
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        try:
            code = cli.main([str(a) for a in argv])
        except SystemExit as exc:  # argparse's own errors
            code = exc.code if isinstance(exc.code, int) else 2
        except BaseException:  # noqa: BLE001 - anything else is the traceback the user would see
            tb = traceback.format_exc()
    return code, err.getvalue(), tb


def _check(argv, code, err, tb, out_dir: Path):
    assert tb is None, f"traceback for {argv}:\n{tb}"
    assert code in (0, 1, 2), (argv, code, err)
    assert "Traceback" not in err, (argv, err)
    if code == 2:
        words = [str(a).lstrip("-") for a in argv[1:] if str(a).startswith("-")] + [str(a) for a in argv]
        assert err.strip(), (argv, "exit 2 without a message")
        assert any(w and w in err for w in words) or "argument" in err or "scenario" in err, (argv, err)
    for d in out_dir.glob("*"):
        if d.is_dir() and not d.is_symlink():
            assert any(d.iterdir()), f"{argv} left an empty run directory {d}"


def _argv_strategy(cmd: str):
    opts, pos = _options(cmd)
    value = st.sampled_from(NASTY)

    def one_option(o):
        flag, takes, choices = o
        if not takes:
            return st.just([flag])
        vals = st.sampled_from(list(choices)) | value if choices else value
        return vals.map(lambda v: [flag, v])

    positional = [
        st.sampled_from(list(p.choices)) | value if p.choices else value
        for p in pos
        if p.nargs not in ("*", "...", "A...")
    ]
    chosen = (
        st.lists(st.sampled_from(opts), max_size=4).flatmap(
            lambda os_: st.tuples(*[one_option(o) for o in os_]) if os_ else st.just(())
        )
        if opts
        else st.just(())
    )
    return st.tuples(st.tuples(*positional) if positional else st.just(()), chosen)


COMMANDS = [c for c in sorted(_subparsers()) if c != "netem"]


@pytest.mark.parametrize("cmd", COMMANDS)
def test_every_option_value_ends_in_a_named_outcome(cmd, recorded, tmp_path):
    out_dir = tmp_path / "out"

    @given(_argv_strategy(cmd))
    def check(args):
        positionals, options = args
        argv = [cmd, *positionals]
        if any(o[0] == "--out" for o in _options(cmd)[0]):
            argv += ["--out", str(out_dir)]
        for o in options:
            argv += o
        code, err, tb = _run(argv)
        _check(argv, code, err, tb, out_dir)

    check()


@pytest.mark.parametrize("action", ["list", "check", "run"])
def test_netem_actions_with_hostile_values(action, recorded, tmp_path):
    @given(st.lists(st.sampled_from(NASTY), max_size=3))
    def check(vals):
        argv = ["netem", action, *vals] + (["--", "true"] if action == "run" else [])
        code, err, tb = _run(argv)
        _check(argv, code, err, tb, tmp_path / "none")

    check()


# --- scenario files -------------------------------------------------------------------------------


def _toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return "inf" if v == math.inf else "-inf" if v == -math.inf else "nan" if v != v else repr(v)
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)
    if isinstance(v, list):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(v)


def _toml(doc: dict) -> str:
    lines = [f"{k} = {_toml_value(v)}" for k, v in doc.items() if not isinstance(v, dict)]
    for name, table in doc.items():
        if isinstance(table, dict):
            lines.append(f"[{name}]")
            lines += [f"{k} = {_toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


SECTION_KEYS = {
    "crypto": ["n", "warmup", "duration_s", "nope"],
    "handshake": ["experiments", "servers", "networks", "n", "warmup", "timeout_ms", "typo"],
    "signer": ["profiles", "keys", "modes", "n", "warmup"],
    "jwt": ["profiles", "keys", "n", "warmup", "lifetime_s", "networks"],
    "connect": ["protocols", "keys", "handshakes", "n", "warmup", "networks"],
    "cryptoo": ["n"],
}
scalar = st.one_of(
    st.integers(-3, 10**20), st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.sampled_from(NASTY)
)
value = st.one_of(scalar, st.lists(st.sampled_from(NASTY), max_size=3), st.lists(st.integers(-1, 3), max_size=2))
section = st.sampled_from(sorted(SECTION_KEYS)).flatmap(
    lambda name: st.dictionaries(st.sampled_from(SECTION_KEYS[name]), value, max_size=4).map(lambda d: (name, d))
)
scenario_doc = st.tuples(st.lists(section, max_size=3), st.sampled_from([None, "fuzz", 3])).map(
    lambda t: {**({"name": t[1]} if t[1] is not None else {}), **dict(t[0])}
)


def test_hostile_scenario_files_end_in_a_named_outcome(recorded, tmp_path):
    @given(scenario_doc)
    def check(doc):
        path = tmp_path / "s.toml"
        path.write_text(_toml(doc), encoding="utf-8")
        argv = ["run", "--scenario", str(path), "--out", str(tmp_path / "out")]
        code, err, tb = _run(argv)
        assert tb is None, f"traceback for {doc}:\n{tb}"
        assert code in (0, 2), (doc, code, err)
        if code == 2:
            assert "scenario" in err, (doc, err)

    check()


# --- what the adversarial sweep (benchmarks/bad_inputs.py) found, kept as regressions ----------------

SWEEP_FINDINGS = [
    (["crypto", "--alg", "sha256", "--out", ""], "--out"),
    (["connect", "https", "--csv", ""], "--csv"),
    (["report", "{T}/r.json", "-o", ""], "--output"),
    (["jwt", "--key-session", ""], "--key-session"),
    (["connect", "https", "--coap-server", "californium"], "--coap-server"),
    (["connect", "https", "--client", "curl", "--handshake", "resumed"], "--client curl"),
    (["handshake", "dtls", "--server", "nginx"], "nginx"),
    (["handshake", "psk", "--server", "nginx"], "nginx"),
    (["handshake", "versions", "--connect", "127.0.0.1:443", "--ca", "{T}/plain.txt"], "--ca"),
    (
        [
            "connect",
            "https",
            "--connect",
            "127.0.0.1:443",
            "--client-cert",
            "{T}/plain.txt",
            "--client-key",
            "{T}/plain.txt",
        ],
        "--client-cert",
    ),
    (["mac", "--alg", ""], "--alg"),
    (["mac", "--cortexm-table", "{T}"], "--cortexm-table"),
    (["whatif", "https", "--key", ""], "--key"),
    (["whatif", "https", "--group", ","], "--group"),
    (["plan", "--pattern", ""], "--pattern"),
    (["plan", "--metrics", "{T}"], "--metrics"),
    (["run", "--scenario", "{T}/binary.toml"], "scenario"),
    (["plan", "--pattern", "{T}/binary.toml"], "--pattern"),
    (["report", "{T}/deep.json"], "deep"),
]


@pytest.mark.parametrize("argv,named", SWEEP_FINDINGS, ids=[" ".join(a) for a, _ in SWEEP_FINDINGS])
def test_what_the_sweep_found_is_a_named_exit_2(argv, named, recorded, tmp_path):
    (tmp_path / "plain.txt").write_text("not a certificate\n")
    (tmp_path / "binary.toml").write_bytes(b"\xff\xfe[crypto]\x00")
    (tmp_path / "deep.json").write_text("[" * 100000 + "]" * 100000)
    (tmp_path / "r.json").write_text("{}")
    argv = [a.replace("{T}", str(tmp_path)) for a in argv]
    if argv[0] not in ("report", "plan") and "--out" not in argv:
        argv += ["--out", str(tmp_path / "out")]
    code, err, tb = _run(argv)
    assert tb is None, tb
    assert code == 2 and named in err, (argv, code, err)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_an_uncreatable_secperf_home_is_a_named_exit_2(recorded, tmp_path, monkeypatch):
    monkeypatch.setenv("SECPERF_HOME", "/proc/secperf-nope/home")
    code, err, tb = _run(["crypto", "--alg", "sha256", "--n", "1", "--out", str(tmp_path / "out")])
    assert tb is None and code == 2 and "SECPERF_HOME" in err, err
