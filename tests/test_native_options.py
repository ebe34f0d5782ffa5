"""The other libraries' speed tools (native/libs: secperf-wolfcrypt, secperf-mbedtls) and the device
client (native/device, here its host build) read their options through native/common/opts and write
JSON through native/common/json: a bad value is one message naming the option and exit 2, and what
they print parses as JSON whatever the strings hold."""

from __future__ import annotations

import json
import subprocess

import pytest

from secperf.core.native import find_native
from secperf.measure import stack_host

SPEED_TOOLS = ("secperf-wolfcrypt", "secperf-mbedtls")


def _run(args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, check=False, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("tool", SPEED_TOOLS)
@pytest.mark.parametrize(
    "args,option",
    [
        (["--n", "0"], "--n"),
        (["--n", "12x"], "--n"),
        (["--warmup", "-1"], "--warmup"),
        (["--size", "0"], "--size"),
        (["--size", "99999999999"], "--size"),
        (["--max-seconds", "inf"], "--max-seconds"),
        (["--min-sample-us", "fast"], "--min-sample-us"),
        (["--hash", "md5"], "--hash"),
        (["--seed", "1.5"], "--seed"),
        (["--wa", "1"], "--wa"),
        (["--n"], "--n"),
    ],
)
def test_speed_tool_rejects_a_bad_option_naming_it(tool, args, option):
    p = _run([str(find_native(tool, "bin", None, "native/libs")), "speed", "--alg", "sha256", "--op", "hash", *args])
    assert p.returncode == 2, p.stdout + p.stderr
    first = p.stderr.splitlines()[0]
    assert option in first and first.startswith(f"{tool}: ")
    assert p.stdout == "" and "Traceback" not in p.stderr


@pytest.mark.parametrize("tool", SPEED_TOOLS)
def test_speed_tool_rows_are_json_lines_through_the_common_writer(tool):
    exe = str(find_native(tool, "bin", None, "native/libs"))
    p = _run(
        [
            exe,
            "speed",
            "--alg",
            "sha256",
            "--op",
            "hash",
            "--n",
            "2",
            "--warmup",
            "0",
            "--size",
            "64",
            "--min-sample-us",
            "50",
        ]
    )
    assert p.returncode == 0, p.stderr
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    assert [x["type"] for x in lines] == ["meta", "row", "sample", "sample", "end"]
    assert lines[1]["size_bytes"] == 64 and lines[1]["hash"] is None and lines[1]["bulk"] is True
    assert all(s["ops"] == lines[1]["batch"] for s in lines[2:4])
    assert lines[-1]["samples"] == 2 and lines[-1]["stopped"] == "n"
    v = json.loads(_run([exe, "--version"]).stdout)
    assert v["type"] == "version" and v["tool"] == tool


@pytest.mark.parametrize("tool", SPEED_TOOLS)
def test_speed_tool_escapes_strings_in_its_json(tool):
    """An algorithm name with a quote, a backslash and a control character comes back intact in the
    unsupported line (the common escaper)."""
    name = 'no"such\\alg\x01'
    p = _run([str(find_native(tool, "bin", None, "native/libs")), "speed", "--alg", name, "--op", "hash"])
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    assert lines[-1]["type"] in ("unsupported", "error")
    assert name in lines[-1]["reason"]


@pytest.fixture(scope="module")
def host_client():
    return str(stack_host.ensure_host_built("wolfssl")[0])


@pytest.mark.parametrize(
    "args,option",
    [
        (["--port", "99999", "--ca", "ca.pem"], "--port"),
        (["--port", "0", "--ca", "ca.pem"], "--port"),
        (["--port", "443x", "--ca", "ca.pem"], "--port"),
        (["--port", "1", "--ca", "ca.pem", "--n", "0"], "--n"),
        (["--port", "1", "--ca", "ca.pem", "--timeout", "-3"], "--timeout"),
        (["--port", "1", "--ca", "ca.pem", "--tls", "11"], "--tls"),
        (["--port", "1", "--ca", "ca.pem", "--bogus"], "--bogus"),
        (["--port", "1", "--ca", "ca.pem", "--offers=1"], "--offers"),
        (["--ca", "ca.pem"], "--port"),
        (["--port", "1"], "--ca"),
        (["--crypto", "sha256-1024", "--n", "-1"], "--n"),
    ],
)
def test_device_client_rejects_a_bad_option_naming_it(host_client, args, option):
    p = _run([host_client, *args])
    assert p.returncode == 2, p.stdout + p.stderr
    err = json.loads(p.stdout.splitlines()[0])["error"]
    assert option in err
    assert "usage:" in p.stderr


def test_device_client_offers_is_json(host_client):
    p = _run([host_client, "--offers"])
    assert p.returncode == 0, p.stderr
    o = json.loads(p.stdout)
    assert o["backend"] == "wolfssl" and "tls" in o["offers"]
