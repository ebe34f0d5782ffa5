"""secperf-probe: signatures it makes verify independently; CRT and non-CRT RSA agree; bad input
exits 2 with a message; every catalogued probe algorithm is known to the probe and vice versa."""

import json
import os
import stat
import subprocess

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, padding, rsa

from secperf.inputs.algorithms import catalog
from secperf.measure import probe

MSG = bytes(range(32))


def sign(alg, key_cache, hash_name="sha256", msg=MSG):
    return probe.probe_json(
        ["sign", "--alg", alg, "--hash", hash_name, "--msg-hex", msg.hex(), "--key-cache", str(key_cache)]
    )


OPENSSL_CLI_ONLY = {"ecdsa-secp160r1", "ecdsa-secp160k1", "ecdsa-secp160r2"}  # not in cryptography's OpenSSL


def verify_with_openssl_cli(out, hash_name, msg, tmp):
    (tmp / "pub.pem").write_text(out["public_key_pem"])
    (tmp / "sig").write_bytes(bytes.fromhex(out["signature_hex"]))
    (tmp / "msg").write_bytes(msg)
    p = subprocess.run(
        [
            "openssl",
            "dgst",
            f"-{hash_name}",
            "-verify",
            str(tmp / "pub.pem"),
            "-signature",
            str(tmp / "sig"),
            str(tmp / "msg"),
        ],
        capture_output=True,
        text=True,
    )
    if p.returncode != 0:
        raise InvalidSignature(p.stdout + p.stderr)


def verify(alg, out, hash_name="sha256", msg=MSG, tmp=None):
    if alg in OPENSSL_CLI_ONLY:
        return verify_with_openssl_cli(out, hash_name, msg, tmp)
    pub = serialization.load_pem_public_key(out["public_key_pem"].encode())
    sig = bytes.fromhex(out["signature_hex"])
    h = hashes.SHA256() if hash_name == "sha256" else hashes.SHA1()
    if alg.startswith("rsa-") and alg.endswith("-pss"):
        pub.verify(sig, msg, padding.PSS(padding.MGF1(h), padding.PSS.DIGEST_LENGTH), h)
    elif alg.startswith("rsa-"):
        pub.verify(sig, msg, padding.PKCS1v15(), h)
    elif alg.startswith("ecdsa-"):
        pub.verify(sig, msg, ec.ECDSA(h))
    else:
        pub.verify(sig, msg)
    return pub


@pytest.mark.parametrize(
    "alg",
    [
        "rsa-1024",
        "rsa-2048",
        "rsa-2048-pss",
        "rsa-2048-nocrt",
        "ecdsa-p256",
        "ecdsa-secp160r1",
        "ecdsa-secp160k1",
        "ecdsa-secp192r1",
        "ecdsa-secp224r1",
        "ecdsa-secp256k1",
        "ecdsa-brainpoolp256r1",
        "ecdsa-p521",
        "ed25519",
        "ed448",
    ],
)
def test_signatures_made_by_the_probe_verify_with_an_independent_library(alg, key_cache, tmp_path):
    """Verified by Python's cryptography, or by the openssl command for curves it lacks."""
    out = sign(alg, key_cache)
    pub = verify(alg, out, tmp=tmp_path)
    # and a tampered message must not verify
    with pytest.raises(InvalidSignature):
        verify(alg, out, msg=b"x" + MSG[1:], tmp=tmp_path)
    if alg.startswith("rsa-"):
        assert isinstance(pub, rsa.RSAPublicKey) and pub.key_size == int(alg.split("-")[1])
    if alg == "ed25519":
        assert isinstance(pub, ed25519.Ed25519PublicKey)
    if alg == "ed448":
        assert isinstance(pub, ed448.Ed448PublicKey)


def test_sha1_selectable_for_older_studies(key_cache):
    out = sign("ecdsa-p256", key_cache, hash_name="sha1")
    verify("ecdsa-p256", out, hash_name="sha1")
    with pytest.raises(InvalidSignature):
        verify("ecdsa-p256", out, hash_name="sha256")


@pytest.mark.parametrize("bits", [1024, 2048])
def test_nocrt_and_crt_rsa_produce_identical_signatures(bits, key_cache):
    crt = sign(f"rsa-{bits}", key_cache)
    nocrt = sign(f"rsa-{bits}-nocrt", key_cache)
    assert crt["signature_hex"] == nocrt["signature_hex"]
    assert crt["public_key_pem"] == nocrt["public_key_pem"]


def test_key_cache_is_private(key_cache):
    sign("ecdsa-p256", key_cache)
    assert stat.S_IMODE(os.stat(key_cache / "ecdsa-p256.pem").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(key_cache).st_mode) & 0o077 == 0


def test_probe_knows_exactly_the_catalogued_algorithms():
    listed = {a["alg"]: a for a in probe.probe_json(["list"])["algs"]}
    ours = {n: a for n, a in catalog().items() if a.engine == "probe"}
    assert set(listed) == set(ours)
    for name, a in ours.items():
        assert set(listed[name]["ops"]) == set(a.ops), name


def _probe(*args):
    return subprocess.run([str(probe.find_probe()), *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    "args,needle",
    [
        (["speed", "--alg", "rsa-999", "--op", "sign"], "rsa-999"),
        (["speed", "--alg", "x25519", "--op", "sign"], "sign"),
        (["speed", "--alg", "sha256", "--op", "hash", "--size", "0"], "size"),
        (["speed", "--alg", "sha256", "--op", "hash", "--n", "abc"], "abc"),
    ],
)
def test_probe_rejects_bad_input_with_exit_2_and_names_it(args, needle):
    p = _probe(*args)
    assert p.returncode == 2
    assert needle in p.stderr
    if "rsa-999" in args:
        assert "rsa-2048" in p.stderr  # lists the known ones


def test_speed_emits_meta_row_samples_end_with_batching():
    p = _probe(
        "speed",
        "--alg",
        "sha256",
        "--op",
        "hash",
        "--size",
        "64",
        "--n",
        "5",
        "--warmup",
        "1",
        "--min-sample-us",
        "500",
    )
    assert p.returncode == 0, p.stderr
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    kinds = [x["type"] for x in lines]
    assert kinds[0] == "meta" and kinds[1] == "row" and kinds[-1] == "end"
    samples = [x for x in lines if x["type"] == "sample"]
    assert len(samples) == 5
    batch = lines[1]["batch"]
    assert batch > 1  # a 64-byte hash is far below 500 µs: it must be batched
    assert all(s["ops"] == batch for s in samples)
    # each sample lasts at least the target, so timer overhead stays under 1%
    assert all(s["wall_ns"] >= 0.5 * 500_000 for s in samples)
    assert lines[0]["timer_overhead_ns"] / min(s["wall_ns"] for s in samples) < 0.01
