"""Chaskey (native/mac through secperf.mac): the published vectors, truncation, incremental use."""

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chaskey_vectors import KEY_WORDS, VECTORS_8, VECTORS_12
from secperf.mac import Chaskey, chaskey

KEY = struct.pack("<4I", *KEY_WORDS)
MSG = bytes(range(64))


@pytest.mark.parametrize("rounds,table", [(8, VECTORS_8), (12, VECTORS_12)], ids=["chaskey", "chaskey-12"])
def test_all_published_vectors(rounds, table):
    assert len(table) == 64
    bad = [i for i, words in enumerate(table) if chaskey(KEY, MSG[:i], rounds=rounds) != struct.pack("<4I", *words)]
    assert bad == [], f"message lengths whose tag differs from the published vector: {bad}"


@pytest.mark.parametrize("tag_len", range(8, 17))
def test_short_tags_are_prefixes_of_the_full_tag(tag_len):
    for n in (0, 15, 16, 17, 63):
        assert chaskey(KEY, MSG[:n], tag_len=tag_len) == struct.pack("<4I", *VECTORS_8[n])[:tag_len]


@settings(max_examples=200, deadline=None)
@given(
    key=st.binary(min_size=16, max_size=16),
    msg=st.binary(max_size=200),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=8),
    rounds=st.sampled_from([8, 12]),
    tag_len=st.integers(min_value=8, max_value=16),
)
def test_incremental_equals_one_shot_for_any_split(key, msg, cuts, rounds, tag_len):
    points = sorted({min(c, len(msg)) for c in cuts})
    h = Chaskey(key, rounds=rounds, tag_len=tag_len)
    start = 0
    for p in points + [len(msg)]:
        h.update(msg[start:p])
        start = p
    assert h.digest() == chaskey(key, msg, rounds=rounds, tag_len=tag_len)


def test_rounds_change_the_tag_and_key_matters():
    assert chaskey(KEY, b"abc", rounds=8) != chaskey(KEY, b"abc", rounds=12)
    assert chaskey(KEY, b"abc") != chaskey(bytes(16), b"abc")


@pytest.mark.parametrize(
    "kwargs,needle",
    [
        ({"key": bytes(15)}, "16 bytes"),
        ({"rounds": 16}, "rounds must be 8"),
        ({"tag_len": 7}, "tag_len must be 8..16"),
        ({"tag_len": 17}, "tag_len must be 8..16"),
    ],
)
def test_bad_arguments_are_refused_with_the_reason(kwargs, needle):
    args = {"key": KEY, "msg": b"x", "rounds": 8, "tag_len": 16, **kwargs}
    with pytest.raises(ValueError, match=needle):
        chaskey(**args)


def test_digest_twice_is_refused():
    h = Chaskey(KEY)
    h.update(b"abc")
    h.digest()
    with pytest.raises(ValueError):
        h.digest()


def test_secperf_mac_times_chaskey_next_to_openssl_macs(tmp_path):
    import json as _json

    from conftest import run_cli

    p = run_cli(
        "mac",
        "--alg",
        "chaskey,aes-128-cmac",
        "--size",
        "16",
        "--cortexm",
        "none",
        "--n",
        "2",
        "--duration",
        "0.2",
        "--out",
        str(tmp_path),
        "--json",
        "--no-report",
    )
    assert p.returncode == 0, p.stderr
    doc = _json.loads(p.stdout)
    ids = {s["id"]: s for s in doc["series"]}
    assert set(ids) == {"crypto/chaskey/mac/16", "crypto/aes-128-cmac/mac/16"}
    assert all(s["status"] == "ok" and s["derived"]["ns_per_byte"] > 0 for s in ids.values())
    assert doc["analysis"]["can"]["sweeps"]


def test_secperf_mac_refuses_a_non_mac(tmp_path):
    from conftest import run_cli

    p = run_cli("mac", "--alg", "sha256", "--cortexm", "none", "--out", str(tmp_path))
    assert p.returncode == 2 and "not a MAC" in p.stderr
