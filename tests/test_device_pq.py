"""`secperf device crypto --stack pqclean`: ML-KEM and ML-DSA (PQClean's portable C) counted on the
emulated cores. Structure only, never time: the guest's own checks pass (decapsulation gives the
encapsulated secret, signatures verify), counts are positive and repeat exactly, each scheme's code
size comes from the link map, unknown operations exit 2 naming the known ones."""

import json
import subprocess

import pytest

from conftest import device_build_or_skip, run_cli

KEM_OPS = [f"ml-kem-{k}-{op}" for k in (512, 768, 1024) for op in ("keygen", "encaps", "decaps")]
DSA_OPS = [f"ml-dsa-{k}-{op}" for k in (44, 65) for op in ("keygen", "sign", "verify")]


@pytest.mark.parametrize("target", ["cortex-m4", "armhf"])
def test_mlkem_round_trip_succeeds_inside_the_guest(target):
    """The guest encapsulates and decapsulates in every repetition and compares the shared secrets
    outside the markers; its crypto line reports how many round trips agreed."""
    b = device_build_or_skip("pqclean", target)
    assert set(b.crypto_ops) == set(KEM_OPS + DSA_OPS)
    for op in ("ml-kem-768-encaps", "ml-kem-768-decaps", "ml-kem-512-keygen"):
        cmd = [b.qemu, "-cpu", b.run_cpu or "cortex-a9", str(b.client), "--crypto", op, "--n", "3"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        line = json.loads(p.stdout.strip().splitlines()[-1])
        assert p.returncode == 0 and line["ok"] == 1, p.stdout + p.stderr
        scheme = op.rsplit("-", 1)[0]
        assert line["check"] == f"{scheme}: shared secrets equal in 3 of 3 round trips"
        assert line["stack_bytes"] > 1024
    p = subprocess.run(
        [b.qemu, "-cpu", b.run_cpu or "cortex-a9", str(b.client), "--crypto", "ml-dsa-44-sign", "--n", "2"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(p.stdout.strip().splitlines()[-1])["check"] == "ml-dsa-44: signatures verify in 2 of 2"


def _counts(tmp_path, device, ops):
    p = run_cli(
        "device",
        "crypto",
        "--device",
        device,
        "--stack",
        "pqclean",
        "--op",
        ",".join(ops),
        "--n",
        "2",
        "--out",
        str(tmp_path),
        "--json",
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    return {s["labels"]["op"]: s for s in json.loads(p.stdout)["series"]}


@pytest.mark.parametrize("device,target", [("cortex-m4-80", "cortex-m4"), ("cortex-a9-400", "armhf")])
def test_pq_operations_are_counted_and_repeat_exactly(tmp_path, device, target):
    device_build_or_skip("pqclean", target)
    ops = ["ml-kem-768-encaps", "ml-kem-768-decaps", "ml-dsa-44-verify"]
    first, second = _counts(tmp_path / "a", device, ops), _counts(tmp_path / "b", device, ops)
    assert set(first) == set(ops)
    for op in ops:
        s = first[op]
        assert s["status"] == "ok", s["failures"]
        counts = [x["instructions"] for x in s["samples"]]
        assert len(counts) == 3 and min(counts) > 100_000
        # a fixed-seed RNG: a second process draws the same keys and coins, so counts are equal
        assert counts == [x["instructions"] for x in second[op]["samples"]]
        assert s["derived"]["check"].endswith("in 3 of 3 round trips" if "kem" in op else "verify in 3 of 3")
        # the scheme's own code (and the shared Keccak), from the link map; painted stack
        fp = s["derived"]["footprint"]
        assert 2_000 < fp["text"] < 100_000 and fp["flash"] >= fp["text"]
        assert fp["rule"].startswith(op.rsplit("-", 1)[0])
        assert 4 * 1024 < s["derived"]["stack_bytes_max"] < 128 * 1024
    # decapsulation re-encrypts to check the ciphertext: more than encapsulation
    assert (
        first["ml-kem-768-decaps"]["derived"]["instructions_median"]
        > first["ml-kem-768-encaps"]["derived"]["instructions_median"]
    )


def test_unknown_pq_operation_exits_2_naming_the_known_ones(tmp_path):
    device_build_or_skip("pqclean", "cortex-m4")
    p = run_cli(
        "device",
        "crypto",
        "--device",
        "cortex-m4-80",
        "--stack",
        "pqclean",
        "--op",
        "ml-kem-999-encaps",
        "--out",
        str(tmp_path),
        timeout=300,
    )
    assert p.returncode == 2, p.stderr
    assert "ml-kem-999-encaps" in p.stderr and "ml-kem-768-encaps" in p.stderr and "ml-dsa-65-sign" in p.stderr


def test_pqclean_has_no_tls_and_says_so(tmp_path):
    device_build_or_skip("pqclean", "cortex-m4")
    p = run_cli(
        "device",
        "handshake",
        "--device",
        "cortex-m4-80",
        "--stack",
        "pqclean",
        "--group",
        "x25519",
        "--suite",
        "aes128gcm",
        "--out",
        str(tmp_path),
        timeout=300,
    )
    assert p.returncode == 2, p.stderr
    assert "pqclean" in p.stderr and "crypto" in p.stderr


def test_ops_are_routed_to_the_stack_that_counts_them(tmp_path):
    """`--stack wolfssl,pqclean --op ml-kem-768-keygen,ecdsa-p256-sign`: the KEM runs on PQClean, the
    signature on wolfSSL; neither is asked of the stack without it."""
    device_build_or_skip("pqclean", "cortex-m4")
    p = run_cli(
        "device",
        "crypto",
        "--device",
        "cortex-m4-80",
        "--stack",
        "wolfssl,pqclean",
        "--op",
        "ml-kem-768-keygen,ecdsa-p256-sign",
        "--n",
        "1",
        "--timing",
        "off",
        "--json",
        "--out",
        str(tmp_path),
        "--no-report",
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    ran = sorted((s["labels"]["stack"], s["labels"]["op"]) for s in doc["series"])
    assert ran == [("pqclean", "ml-kem-768-keygen"), ("wolfssl", "ecdsa-p256-sign")]
    assert all(s["status"] == "ok" for s in doc["series"])


def test_an_op_no_stack_counts_exits_2_naming_each_stacks_ops(tmp_path):
    device_build_or_skip("pqclean", "cortex-m4")
    p = run_cli(
        "device",
        "crypto",
        "--device",
        "cortex-m4-80",
        "--stack",
        "wolfssl,pqclean",
        "--op",
        "ml-kem-768-keygen,ml-kem-999-encaps",
        "--out",
        str(tmp_path),
        timeout=300,
    )
    assert p.returncode == 2, p.stderr
    assert "ml-kem-999-encaps" in p.stderr and "wolfssl:" in p.stderr and "pqclean:" in p.stderr
