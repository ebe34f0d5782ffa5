"""Every option acts or is refused: a table of `connect`'s options (generated from the parser) x its
protocols, each run with the measuring step replaced by a recorder (the command's validation and the
parameters it would write are real). Each cell either changes the Result's parameters against the same
protocol without the option, or exits 2 naming both the option and the protocol."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from conftest import patch_everywhere
from secperf import cli

PROTOCOLS = ["https", "mqtt", "coap", "vpn", "quic", "dtls13", "dtls12", "edhoc"]
# what each option is given in its cell (a value other than its default); a new option of `connect`
# without one here fails test_every_option_has_a_cell
VALUES = {
    "--key": ["token"],
    "--handshake": ["resumed"],
    "--lost": ["client-hello"],
    "--cid": ["on"],
    "--client": ["curl"],
    "--auth": ["jwt_fresh"],
    "--coap-security": ["psk"],
    "--tls": ["1.2"],
    "--nagle": [],
    "--timeout-ms": ["1234"],
    "--edhoc-method": ["0"],
    "--edhoc-suite": ["0"],
    "--edhoc-cred": ["value"],
    "--edhoc-flow": ["combined"],
    "--oscore-requests": ["3"],
    "--key-session": ["cold"],
    "--coap-server": ["californium"],
    "--n": ["3"],
    "--warmup": ["1"],
    "--seed": ["7"],
    "--network": ["delay=5ms"],
    "--duration": ["2"],
    "--min-sample-us": ["50"],
    "--max-hours": ["0.5"],
    "--connect": ["127.0.0.1:5999"],
    "--ca": ["{ca}"],
    "--servername": ["example.org"],
    "--client-cert": ["{ca}"],
    "--client-key": ["{ca}"],
}
# where the Result goes and how it is shown: no parameter of the measurement
OUTPUT = {"--help", "--out", "--json", "--csv", "--metrics", "--no-report", "--figures", "--max-failure-share"}


def connect_options() -> list[str]:
    ap = cli.build_parser()
    sub = next(a for a in ap._actions if a.__class__.__name__ == "_SubParsersAction").choices["connect"]
    return [a.option_strings[-1] for a in sub._actions if a.option_strings and a.option_strings[-1] not in OUTPUT]


@pytest.fixture
def recorder(monkeypatch, tmp_path):
    from secperf.app import runner

    seen: list[dict] = []

    def record(kind, params, phases, output):
        seen.append(json.loads(json.dumps(params, default=str)))
        from secperf.subcommands.output import Exited

        return Exited(0)

    patch_everywhere(monkeypatch, runner, "measure_and_write", record)  # every command module's binding of it
    monkeypatch.chdir(tmp_path)
    (tmp_path / "ca.pem").write_text("not read in this test\n")
    return seen


def _run(argv):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 2
    return code, err.getvalue()


def test_every_option_has_a_cell():
    missing = [o for o in connect_options() if o not in VALUES]
    assert not missing, f"options of connect without a cell value: {missing}"


def test_each_option_acts_or_is_refused(recorder, tmp_path):
    """Refused: exit 2 naming the option and the protocol, or (an option about the command, not the
    protocol: --ca without --connect) the same message for every protocol."""
    silent, unnamed = [], {}
    for protocol in PROTOCOLS:
        base_argv = ["connect", protocol, "--out", str(tmp_path / "out")]
        code, err = _run(base_argv)
        assert code == 0 and recorder, (protocol, err)
        base = recorder[-1]
        for opt in connect_options():
            vals = [v.format(ca=tmp_path / "ca.pem") for v in VALUES[opt]]
            n = len(recorder)
            code, err = _run(base_argv + [opt, *vals])
            assert "Traceback" not in err, (protocol, opt, err)
            if code == 2:
                name = opt.lstrip("-")
                words = (name, name.replace("-", " "), name.removeprefix(protocol + "-"))
                assert any(w.lower() in err.lower() for w in words), (protocol, opt, err)
                if protocol not in err.lower():
                    unnamed.setdefault(opt, {})[protocol] = err.strip().splitlines()[-1]
                continue
            if code == 0 and len(recorder) > n and recorder[-1] != base:
                continue
            silent.append(
                f"{protocol} {opt} {' '.join(vals)}: exit {code}, parameters unchanged ({err.strip()[-200:]})"
            )
    assert not silent, "\n".join(silent)
    for opt, by_protocol in unnamed.items():  # not naming the protocol: a refusal of the command as such,
        assert len(set(by_protocol.values())) == 1, (opt, by_protocol)  # the same whatever the protocol


@pytest.mark.parametrize(
    "argv",
    [
        ["connect", "edhoc", "--tls", "1.2"],
        ["connect", "edhoc", "--key-session", "cold"],
        ["connect", "edhoc", "--coap-server", "californium"],
        ["connect", "edhoc", "--connect", "127.0.0.1:5683"],
        ["connect", "quic", "--coap-security", "psk"],
        ["connect", "quic", "--auth", "jwt_fresh"],
        ["connect", "quic", "--coap-server", "libcoap"],
        ["connect", "quic", "--key-session", "cold"],
        ["connect", "vpn", "--tls", "1.2"],
        ["connect", "dtls13", "--edhoc-flow", "combined"],
    ],
)
def test_the_reported_idle_options_are_refused_naming_option_and_protocol(argv, recorder):
    code, err = _run(argv)
    assert code == 2 and argv[3] in err and argv[1] in err, err
    assert not recorder
