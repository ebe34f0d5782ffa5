"""S5 answers are computed from the Result's own medians (synthetic data pins the arithmetic)."""

import pytest

from secperf.core import result as R
from secperf.core.result_schema import Result
from secperf.inputs.algorithms import catalog
from secperf.model import crypto_questions as Q


def doc_with(p50: dict[tuple[str, str], float]) -> Result:
    doc = R.new_result(kind="crypto", command=[], params={}, host={}, run_id="x")
    cat = catalog()
    for (alg, op), v in p50.items():
        a = cat[alg]
        s = R.new_series(
            f"crypto/{alg}/{op}/32",
            kind="crypto",
            labels={
                "alg": alg,
                "op": op,
                "family": a.family,
                "size_bytes": 32,
                "security_bits": a.security_bits,
                "key_bits": a.key_bits,
            },
            timer={"name": "t", "start": "a", "end": "b"},
        )
        s.values_us = [v * 0.99, v, v * 1.01]
        R.finalize_series(s)
        doc.series.append(s)
    return doc


def test_loglog_slope_recovers_a_power_law():
    assert Q.loglog_slope([(1024, 1.0), (2048, 8.0), (4096, 64.0)]) == pytest.approx(3.0)
    assert Q.loglog_slope([(1024, 1.0)]) is None


def test_answers_from_synthetic_medians():
    doc = doc_with(
        {
            ("rsa-1024", "sign"): 100.0,
            ("rsa-1024", "verify"): 10.0,
            ("rsa-2048", "sign"): 800.0,
            ("rsa-2048", "verify"): 40.0,
            ("rsa-2048-nocrt", "sign"): 2800.0,
            ("ecdsa-p256", "sign"): 20.0,
            ("ecdsa-p256", "verify"): 60.0,
            ("ecdsa-secp224r1", "sign"): 50.0,
            ("ecdsa-secp224r1", "verify"): 100.0,
            ("ecdsa-secp192r1", "sign"): 40.0,
            ("ecdsa-secp192r1", "verify"): 80.0,
            ("rsa-3072", "sign"): 2700.0,
            ("rsa-3072", "verify"): 90.0,
        }
    )
    a = {x["id"]: x for x in Q.answers(doc)}
    assert [e["sign_over_verify"] for e in a["rsa-sign-vs-verify"]["evidence"]] == pytest.approx([10, 20, 30])
    assert a["rsa-sign-vs-verify"]["answer"].startswith("Verifying is faster")
    assert a["ecdsa-sign-vs-verify"]["answer"].startswith("Signing is faster on every curve")
    assert a["rsa-growth-sign"]["exponent"] == pytest.approx(Q.loglog_slope([(1024, 100), (2048, 800), (3072, 2700)]))
    assert "ecdsa-p256 is faster than the smaller ecdsa-secp224r1" in a["ecdsa-growth"]["answer"]
    eq = {r["security_bits"]: r for r in a["rsa-vs-ecdsa-equal-strength"]["evidence"]}
    assert eq[128]["rsa"] == "rsa-3072" and eq[128]["ecdsa"] == "ecdsa-p256"
    assert eq[128]["sign_rsa_over_ecdsa"] == pytest.approx(135.0)
    assert eq[112]["sign_rsa_over_ecdsa"] == pytest.approx(16.0)
    assert a["rsa-crt-speedup"]["evidence"][0]["nocrt_over_crt"] == pytest.approx(3.5)


def test_strength_table_lists_only_that_strength_fastest_first():
    doc = doc_with(
        {
            ("rsa-3072", "sign"): 2700.0,
            ("ecdsa-p256", "sign"): 20.0,
            ("ed25519", "sign"): 30.0,
            ("rsa-2048", "sign"): 800.0,
        }
    )
    rows = Q.strength_table(doc, 128)
    assert [r["alg"] for r in rows] == ["ecdsa-p256", "ed25519", "rsa-3072"]
