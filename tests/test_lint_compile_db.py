"""scripts/lint_compile_db.py: the compile database `make lint-c` gives clang-tidy for the sources built
at first use, taken from their Makefiles' rules (make -n), and the reason printed for each it leaves out."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _run(tmp_path: Path, env_home: Path) -> tuple[subprocess.CompletedProcess, list[dict]]:
    if not shutil.which("make"):
        pytest.fail("the compile database needs make (Debian: make; scripts/bootstrap installs it)")
    (tmp_path / "compile_commands.json").write_text("[]")
    # a home and an installation cache holding nothing fetched
    env = {**os.environ, "SECPERF_HOME": str(env_home), "SECPERF_DEVICE_CACHE": str(env_home / "cache")}
    p = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "lint_compile_db.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    db = json.loads((tmp_path / "all" / "compile_commands.json").read_text()) if p.returncode == 0 else []
    return p, db


def test_device_client_and_plugin_entries_carry_the_makefile_flags(tmp_path):
    p, db = _run(tmp_path, tmp_path / "home")
    assert p.returncode == 0, p.stderr
    by_file = {Path(e["file"]).relative_to(ROOT).as_posix(): e["arguments"] for e in db}
    for src in (
        "native/device/client.c",
        "native/device/crypto_wolfssl.c",
        "native/device/crypto_mbedtls.c",
        "native/device/marker_host.c",
        "native/device/plugin/insn_events.c",
    ):
        assert src in by_file, sorted(by_file)
        args = by_file[src]
        assert args[-2:] == ["-c", str(ROOT / src)]
        assert not any(a.startswith(("-l", "-Wl,", "-o", "-march", "-mcpu")) for a in args), args
    assert "-std=c11" in by_file["native/device/client.c"] and "-D_GNU_SOURCE" in by_file["native/device/client.c"]
    # the plugin's build stamp macro survives the shell quoting of the rule
    assert any(a.startswith("-DSECPERF_DECODE_STAMP=") for a in by_file["native/device/plugin/insn_events.c"])


def test_sources_without_their_headers_are_skipped_with_a_reason(tmp_path):
    p, db = _run(tmp_path, tmp_path / "home")
    assert p.returncode == 0, p.stderr
    skipped = [line for line in p.stdout.splitlines() if line.startswith("lint-c: skipped ")]
    for what in (
        "native/device/quic/client.c",
        "native/dtls13/dtls_pair.c",
        "native/device/edhoc_c over mbedtls3",
        "native/device/m0/mbedtls_port.c",  # Mbed TLS 3's headers come with its first build
    ):
        line = next((s for s in skipped if what in s), None)
        assert line is not None, p.stdout
        assert len(line.split(": ", 2)[-1]) > 20, line  # a reason, not just the name
    files = {e["file"] for e in db}
    assert str(ROOT / "native" / "device" / "quic" / "client.c") not in files
    assert str(ROOT / "native" / "dtls13" / "dtls_pair.c") not in files


def test_sources_built_by_commands_in_the_code_get_those_commands_flags(tmp_path):
    """The user-code harness and the instruction limiter are compiled by measure/device_user.py, not a
    Makefile: their entries carry that code's flags; the FIPS 202 check needs PQClean and says so."""
    p, db = _run(tmp_path, tmp_path / "home")
    assert p.returncode == 0, p.stderr
    by_file = {Path(e["file"]).relative_to(ROOT).as_posix(): e["arguments"] for e in db}
    harness = by_file["native/device/user/harness.c"]
    assert "-std=gnu11" in harness and "-D_GNU_SOURCE" in harness and f"-I{ROOT / 'native' / 'device'}" in harness
    assert {"-fPIC", "-fvisibility=hidden"} <= set(by_file["native/device/user/limit.c"])
    skipped = [line for line in p.stdout.splitlines() if line.startswith("lint-c: skipped ")]
    assert "native/device/pq/fips202_check.c" not in by_file  # PQClean's headers are not in an empty home
    assert any("native/device/pq/fips202_check.c" in s for s in skipped), p.stdout


def test_the_cortex_m0_layer_is_parsed_for_its_own_target_against_newlib(tmp_path):
    """m0/sys.c (newlib's system calls as Linux ones, inline assembly) exists only for ARMv6-M: its entry
    carries its rule's flags with clang's armv6m-none-eabi target, soft float, and newlib's headers."""
    newlib = Path("/usr/lib/arm-none-eabi/include")
    if not (newlib / "newlib.h").is_file():
        pytest.fail("newlib's headers are missing (Debian: libnewlib-arm-none-eabi; scripts/bootstrap installs it)")
    p, db = _run(tmp_path, tmp_path / "home")
    assert p.returncode == 0, p.stderr
    by_file = {Path(e["file"]).relative_to(ROOT).as_posix(): e["arguments"] for e in db}
    args = by_file["native/device/m0/sys.c"]
    assert args[0] == "clang" and args[-2:] == ["-c", str(ROOT / "native" / "device" / "m0" / "sys.c")]
    assert {"--target=armv6m-none-eabi", "-mthumb", "-mfloat-abi=soft", "-D_GNU_SOURCE"} <= set(args), args
    assert args[args.index("-isystem") + 1] == str(newlib)
    assert f"-I{ROOT / 'native' / 'device' / 'm0' / 'include'}" in args
