"""`secperf crypto`: primitive benchmarks (signatures, key agreement, AEAD, MACs, hashes, PQC)."""

from __future__ import annotations

import argparse

from ..argtypes import comma_list
from .common import add_measure_options

NAME = "crypto"

HELP = "primitive benchmarks: signatures, key agreement, AEAD, MACs, hashes, PQC"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--alg",
        action="extend",
        type=comma_list(),
        metavar="NAMES",
        help="algorithms, comma-separated; globs allowed (rsa-*, ecdsa-p*)",
    )
    p.add_argument(
        "--op",
        action="extend",
        type=comma_list(),
        metavar="OPS",
        help="operations: keygen, sign, verify, derive, encrypt, decrypt, mac, hash, encaps, decaps",
    )
    p.add_argument(
        "--size", action="extend", type=comma_list(), metavar="BYTES", help="message sizes for AEAD/MAC/hash"
    )
    p.add_argument(
        "--strength",
        type=int,
        help="only algorithms at this SP 800-57 strength (80, 112, 128, 192, 256), compared side by side",
    )
    p.add_argument(
        "--hash",
        choices=("sha256", "sha1"),
        default="sha256",
        help="hash for RSA/ECDSA signatures (sha1 reproduces older studies)",
    )
    p.add_argument(
        "--prehashed",
        action="store_true",
        help="sign a precomputed digest (matches `openssl speed`); default hashes in each operation",
    )
    p.add_argument(
        "--library",
        action="extend",
        type=comma_list(),
        metavar="LIBS",
        help="libraries, "
        "comma-separated: openssl (default), wolfcrypt, mbedtls, jce, bouncycastle, go, or all; one row "
        "per library, compared side by side",
    )
    p.add_argument("--list", action="store_true", help="list algorithms, operations and strengths, then exit")
    add_measure_options(p)
