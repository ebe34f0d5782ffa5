"""The native tools' C unit tests (native/tests: option parsers, the shim's profile parser, netem's
specs and packet queue, the shared generator), and their command lines' bad-input contract: one
line on stderr naming the option, exit 2, never a crash.

The C tests are built with CMake into build/native-tests, or taken from $SECPERF_NATIVE_TESTS_BIN
(`make test-asan` points it at the sanitized build)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from secperf.measure.probe import find_native, find_probe

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "build" / "native-tests"
NAME = "secperf-native-tests"


def _native_tests() -> Path:
    if os.environ.get("SECPERF_NATIVE_TESTS_BIN"):
        p = Path(os.environ["SECPERF_NATIVE_TESTS_BIN"])
        assert p.is_file(), f"SECPERF_NATIVE_TESTS_BIN={p} is not a file"
        return p
    cmake, cc = shutil.which("cmake"), shutil.which(os.environ.get("CC", "cc"))
    if not cmake or not cc:
        pytest.fail(
            "the C unit tests need cmake and a C compiler (Debian: cmake, gcc; scripts/bootstrap installs them)"
        )
    for cmd in (
        [cmake, "-S", str(ROOT), "-B", str(BUILD), "-DSECPERF_NATIVE_TESTS=ON", "-DCMAKE_BUILD_TYPE=Release"],
        [cmake, "--build", str(BUILD), "--target", NAME, "-j2"],
    ):
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            pytest.fail(f"{' '.join(cmd)} failed:\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return BUILD / "native" / "tests" / NAME


@pytest.fixture(scope="module")
def c_results() -> tuple[subprocess.CompletedProcess, dict[str, str]]:
    p = subprocess.run([str(_native_tests())], capture_output=True, text=True, timeout=120)
    results = {}
    for line in p.stdout.splitlines():
        if line.startswith("ok - "):
            results[line[5:]] = "ok"
        elif line.startswith("not ok - "):
            name, _, where = line[9:].partition(": ")
            results[name] = where or "failed"
    return p, results


def test_every_c_unit_test_passes(c_results):
    p, results = c_results
    failed = {n: r for n, r in results.items() if r != "ok"}
    assert not failed, failed
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]


@pytest.mark.parametrize(
    "group",
    [
        "options",
        "probe speed",
        "probe sign",
        "probe client",
        "probe server",
        "shim profile",
        "netem relay",
        "netem flood",
        "netem link spec",
        "packet queue",
        "rng",
        "timing",
        "mac_op",
    ],
)
def test_c_unit_tests_cover_each_parser_the_queue_and_the_generator(c_results, group):
    _, results = c_results
    assert any(group in name for name in results), f"no C unit test about {group!r} ran: {sorted(results)}"


def _netem() -> Path:
    return find_native("secperf-netem", "bin", "SECPERF_NETEM", "native/netem")


@pytest.mark.parametrize(
    "tool,args,option",
    [
        ("probe", ["speed", "--alg", "sha256", "--op", "hash", "--n", "0"], "--n"),
        ("probe", ["speed", "--alg", "sha256", "--op", "hash", "--max-seconds", "inf"], "--max-seconds"),
        ("probe", ["speed", "--alg", "sha256", "--op", "hash", "--warmup"], "--warmup"),
        ("probe", ["speed", "--alg", "sha256", "--op", "hash", "--wa", "1"], "--wa"),
        ("probe", ["client", "--port", "99999"], "--port"),
        ("probe", ["client", "--port", "1", "--timeout-ms", "-5"], "--timeout-ms"),
        ("probe", ["server", "--port", "0", "--cert", "c", "--key", "k", "--session-cache", "yes"], "--session-cache"),
        ("netem", ["relay", "--dev-netns", "/d", "--srv-netns", "/s", "--seed", "x"], "--seed"),
        ("netem", ["relay", "--dev-netns", "/d", "--srv-netns", "/s", "--pool", "1"], "--pool"),
        ("netem", ["relay", "--dev-netns", "/d", "--srv-netns", "/s", "--up", "loss=2"], "--up"),
        ("netem", ["flood", "--dst", "127.0.0.1", "--pps", "fast"], "--pps"),
    ],
)
def test_bad_option_values_give_one_line_naming_the_option_and_exit_2(tool, args, option):
    exe = find_probe() if tool == "probe" else _netem()
    p = subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=30)
    assert p.returncode == 2, (p.returncode, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and option in lines[0], p.stderr
    assert p.stdout == ""
