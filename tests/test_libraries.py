"""`secperf crypto --library`: each library's tool makes the same rows by the same rules, rows a
library lacks are "unsupported" with its reason (never measured elsewhere), OpenSSL's series ids
stay as they were, and bad input names the option. Small runs (n = 3) keep this fast."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import skip
from secperf.core import result as R
from secperf.core.errors import InputError, SetupError
from secperf.inputs import scenario as SC
from secperf.inputs.algorithms import for_libraries, parse_libraries, select
from secperf.measure import backends
from secperf.measure.crypto import CryptoParams, measure_row
from secperf.model import crypto_questions as Q

FAST = dict(n=3, warmup=1, duration_s=5, min_sample_us=500)


def _require(lib: str) -> None:
    """The library's tool, built by `make build` (native/libs by CMake, the Go tool, the JMH jar)."""
    try:
        backends.command(lib)
    except SetupError as exc:
        skip("needs-build", f"the {lib} tool is not built: run `make build` ({exc})")


def _row(alg: str, op: str, lib: str, size: int | None = None):
    return for_libraries(select([alg], [op], [size] if size else None), [lib])[0]


def test_openssl_series_ids_unchanged_and_others_gain_the_library():
    r = select(["rsa-2048"], ["sign"])[0]
    assert r.series_id == "crypto/rsa-2048/sign/32"
    assert _row("rsa-2048", "sign", "wolfcrypt").series_id == "crypto/rsa-2048/sign/32@wolfcrypt"
    rows = for_libraries(select(["rsa-2048", "ecdsa-p256"], ["sign"]), ["openssl", "go"])
    assert [x.library for x in rows] == ["openssl", "go", "openssl", "go"]  # libraries adjacent per row


def test_unknown_library_is_an_input_error_naming_the_option_and_the_known_ones():
    with pytest.raises(InputError) as exc:
        parse_libraries(["openssl,nope"])
    assert "--library" in str(exc.value) and "wolfcrypt" in str(exc.value) and "bouncycastle" in str(exc.value)
    assert parse_libraries(None) == ["openssl"]
    assert parse_libraries(["all"]) == ["openssl", "wolfcrypt", "mbedtls", "jce", "bouncycastle", "go"]


def test_cli_unknown_library_exits_2(tmp_path):
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "secperf",
            "crypto",
            "--library",
            "libressl",
            "--alg",
            "rsa-2048",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
    )
    assert p.returncode == 2 and "--library" in p.stderr


def test_missing_tool_is_a_setup_error_naming_the_package(monkeypatch, tmp_path):
    monkeypatch.setenv("SECPERF_WOLFCRYPT", str(tmp_path / "absent"))
    with pytest.raises(SetupError) as exc:
        backends.check_available(["wolfcrypt"])
    assert "libwolfssl-dev" in str(exc.value)
    monkeypatch.setenv("SECPERF_JMH_JAR", str(tmp_path / "absent.jar"))
    with pytest.raises(SetupError) as exc:
        backends.command("jce")
    assert "maven" in str(exc.value) and "openjdk" in str(exc.value)


@pytest.mark.parametrize("lib", ["wolfcrypt", "mbedtls", "go"])
def test_native_and_go_rows_follow_the_timing_rules(lib):
    _require(lib)
    s, _ = measure_row(_row("ecdsa-p256", "sign", lib), CryptoParams(**FAST))
    assert s.status == "ok", s.failures
    lab = s.labels
    assert lab["backend"] == lib and lab["version"] and lab["library"] and lab["hash"] == "sha256"
    assert s.id == f"crypto/ecdsa-p256/sign/32@{lib}"
    assert len(s.samples) == 3 and all(x["wall_ns"] > 0 and x["cpu_ns"] > 0 for x in s.samples)
    assert "hash the message" in s.timer.detail
    # batches long enough for the clock: at least ~min_sample_us each
    assert min(x["wall_ns"] for x in s.samples) >= 0.5 * FAST["min_sample_us"] * 1000


@pytest.mark.parametrize(
    "lib,alg,op,needle",
    [
        ("wolfcrypt", "rsa-7680", "sign", "SP_INT_BITS"),
        ("mbedtls", "ecdsa-secp160r1", "sign", "no 160-bit curves"),
        ("mbedtls", "ed25519", "sign", "no EdDSA"),
        ("go", "chacha20-poly1305", "encrypt", "golang.org/x/crypto"),
    ],
)
def test_an_algorithm_the_library_lacks_is_an_unsupported_row_with_its_reason(lib, alg, op, needle):
    _require(lib)
    s, _ = measure_row(_row(alg, op, lib, 64 if op == "encrypt" else None), CryptoParams(**FAST))
    assert s.status == "unsupported" and not s.samples
    reason = s.failures[-1].reason
    assert reason.startswith("unsupported by ") and needle in reason and s.labels["version"] in reason


def test_aead_rows_and_prehashed_and_sha1():
    _require("wolfcrypt")
    _require("mbedtls")
    s, _ = measure_row(_row("chacha20-poly1305", "decrypt", "wolfcrypt", 256), CryptoParams(**FAST))
    assert s.status == "ok" and s.derived.ns_per_byte > 0
    s, _ = measure_row(_row("rsa-1024", "verify", "mbedtls"), CryptoParams(**FAST, hash="sha1", prehashed=True))
    assert s.status == "ok" and s.labels["hash"] == "sha1" and "digest prepared (SHA-1)" in s.timer.detail


def test_cross_library_table_ratios_and_answers():
    def series(lib, alg, op, p50, status="ok"):
        s = R.new_series(
            f"crypto/{alg}/{op}/32@{lib}",
            kind="crypto",
            timer={"name": "t", "start": "a", "end": "b"},
            labels={
                "alg": alg,
                "op": op,
                "family": alg.split("-")[0],
                "size_bytes": 32,
                "security_bits": 128,
                "key_bits": 256,
                "backend": lib,
                "library": lib,
                "version": "1",
            },
        )
        if p50:
            s.values_us = [p50 * f for f in (0.9, 0.95, 1.0, 1.05, 1.1)]
            s.cpu_values_us = [v * (0.5 if lib == "go" else 1.0) for v in s.values_us]
        else:
            R.add_failure(s, f"unsupported by {lib}")
        R.finalize_series(s)
        s.status = status
        return s

    def result(*series):
        doc = R.new_result(kind="crypto", command=[], params={}, host={}, run_id="t")
        doc.series.extend(series)
        return doc

    doc = result(
        series("openssl", "ecdsa-p256", "sign", 20.0),
        series("go", "ecdsa-p256", "sign", 30.0),
        series("mbedtls", "ecdsa-p256", "sign", None, "unsupported"),
        series("openssl", "ecdsa-p256", "verify", 60.0),
        series("go", "ecdsa-p256", "verify", 45.0),
    )
    an = Q.libraries_analysis(doc)
    row = next(r for r in an["table"] if r["op"] == "sign")
    assert row["fastest"] == "openssl" and row["cells"]["go"]["ratio_to_fastest"] == pytest.approx(1.5)
    assert row["cells"]["mbedtls"]["status"] == "unsupported"
    # the ratio's bootstrap interval brackets it; the fastest library has none (its ratio is 1 by definition)
    lo, hi = row["cells"]["go"]["ratio_ci95"]
    assert lo < 1.5 < hi and lo > 1.0 and "ratio_ci95" not in row["cells"]["openssl"]
    # CPU per operation beside the wall time: go's thread was on a CPU half the time (a busy machine)
    assert row["cells"]["go"]["cpu_share"] == pytest.approx(0.5) and row["fastest_cpu"] == "go"
    assert row["cells"]["openssl"]["cpu_ratio_to_fastest"] == pytest.approx(20.0 / 15.0)
    by_id = {a["id"]: a for a in an["answers"]}
    assert "openssl" in by_id["libraries-sign-128"]["answer"] and "go 1.5×" in by_id["libraries-sign-128"]["answer"]
    assert by_id["libraries-verify-128"]["evidence"][0]["fastest"] == "go"
    assert "not offered by mbedtls" in by_id["libraries-sign-128"]["answer"]
    # S5's single-library answers use OpenSSL's rows only
    assert Q.p50_table(doc) == {("ecdsa-p256", "sign"): 20.0, ("ecdsa-p256", "verify"): 60.0}
    assert Q.libraries_analysis(result(series("openssl", "ecdsa-p256", "sign", 1.0))) is None


def test_bootstrap_interval_of_a_ratio_of_medians():
    from secperf.core import stats

    fast, slow = [10.0, 10.2, 9.9, 10.1, 10.0, 10.3], [20.0, 21.0, 19.5, 20.4, 20.1, 19.9]
    lo, hi = stats.bootstrap_ratio_ci(slow, fast)
    assert lo <= 20.05 / 10.05 <= hi and 1.85 < lo < hi < 2.2
    assert stats.bootstrap_ratio_ci(slow, fast) == (lo, hi)  # deterministic for a seed
    with pytest.raises(stats.StatsError):
        stats.bootstrap_ratio_ci(slow, [0.0, 1.0])


def test_s5_libraries_scenario_selects_s5_rows_in_every_library():
    scn = SC.load("s5-libraries")
    rows = SC.crypto_rows(scn)
    libs = {r.library for r in rows}
    assert libs == {"openssl", "wolfcrypt", "mbedtls", "jce", "bouncycastle", "go"}
    assert all(r.size_bytes == 3 and r.op in ("sign", "verify") for r in rows)
    assert "crypto/rsa-2048/sign/3" in {r.series_id for r in rows}


def test_crypto_command_with_two_libraries_writes_rows_and_the_cross_library_view(tmp_path):
    _require("go")
    p = subprocess.run(
        [
            sys.executable,
            "-m",
            "secperf",
            "crypto",
            "--library",
            "openssl,go",
            "--alg",
            "x25519",
            "--op",
            "derive",
            "--n",
            "3",
            "--out",
            str(tmp_path),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    ids = {s["id"] for s in doc["series"]}
    assert ids == {"crypto/x25519/derive/32", "crypto/x25519/derive/32@go"}
    assert doc["analysis"]["libraries"]["libraries"] == ["openssl", "go"]
    assert "go" in doc["host"]["libraries"]
    html = next(tmp_path.glob("*/report.html")).read_text()
    assert "Libraries side by side" in html


@pytest.mark.slow
@pytest.mark.parametrize("lib", ["jce", "bouncycastle"])
def test_jvm_rows_come_from_jmh_measurement_iterations(lib):
    _require(lib)
    p = CryptoParams(**{**FAST, "n": 4}, jmh_iteration_ms=50, jmh_warmup_ms=300)  # two forks by default
    s, _ = measure_row(_row("ecdsa-p256", "verify", lib), p)
    assert s.status == "ok", s.failures
    assert s.timer.jmh["forks"] == 2 and s.timer.jmh["measurement_iterations"] == 2  # per fork
    assert len(s.samples) == 4 and s.derived.jmh_score_us > 0
    assert [x["fork"] for x in s.samples] == [0, 0, 1, 1]  # which forked JVM made each sample
    assert "secp256r1" in s.timer.detail and "SHA256withECDSA" in s.timer.detail
    # SunJCE refuses the same ChaCha20-Poly1305 key and nonce twice in a row, decryption included
    s, _ = measure_row(_row("chacha20-poly1305", "decrypt", lib, 256), p)
    assert s.status == "ok", s.failures
    s, _ = measure_row(_row("ecdsa-secp160r1", "sign", lib), p)
    if lib == "jce":  # JDK 16+ dropped the legacy curves; Bouncy Castle has them
        assert s.status == "unsupported" and "Curve not supported" in s.failures[-1].reason
    else:
        assert s.status == "ok"
