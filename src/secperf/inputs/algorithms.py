"""The catalogue of measurable algorithms (from data/algorithms.toml): names, operations, family,
engine and NIST SP 800-57 security strength. Selection by name, glob, op, size and strength."""

from __future__ import annotations

import fnmatch
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import Any

from ..core.errors import InputError

STRENGTH_ROWS = (80, 112, 128, 192, 256)


class SelectionError(InputError):
    """Bad --alg/--op/--size/--strength input; the message lists what is known."""


@dataclass(frozen=True)
class Alg:
    name: str
    family: str  # rsa, ecdsa, eddsa, kex, aead, mac, hash, pq-kem, pq-sig
    ops: tuple[str, ...]
    security_bits: int
    engine: str  # "probe" (system libcrypto) or "cryptography" (PyPI package)
    key_bits: int = 0
    note: str = ""
    source: str = ""

    @property
    def bulk(self) -> bool:
        return self.family in ("aead", "mac", "hash")


@lru_cache(maxsize=1)
def raw_table() -> dict[str, Any]:
    text = resources.files("secperf.data").joinpath("algorithms.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


@lru_cache(maxsize=1)
def catalog() -> dict[str, Alg]:
    t = raw_table()
    src = t["sources"]
    algs: list[Alg] = []
    rsa = t["rsa"]
    for bits in rsa["sizes"]:
        strength = rsa["strength"][str(bits)]
        for variant in rsa["variants"]:
            ops = rsa["nocrt_ops"] if variant == "-nocrt" else rsa["ops"]
            note = "private key holds only n, e, d: no CRT" if variant == "-nocrt" else ""
            algs.append(
                Alg(f"rsa-{bits}{variant}", "rsa", tuple(ops), strength, "probe", bits, note, src[rsa["source"]])
            )
    ec = t["ecdsa"]
    for curve, (_group, bits, strength) in ec["curves"].items():
        algs.append(Alg(f"ecdsa-{curve}", "ecdsa", tuple(ec["ops"]), strength, "probe", bits, "", src[ec["source"]]))
    ed = t["eddsa"]
    for name, strength in ed["strength"].items():
        algs.append(
            Alg(
                name,
                "eddsa",
                tuple(ed["ops"]),
                strength,
                "probe",
                255 if name == "ed25519" else 448,
                ed["note"].get(name, ""),
                src[ed["source"]],
            )
        )
    for fam in ("kex", "aead", "mac", "hash"):
        sec = t[fam]
        for name, strength in sec["strength"].items():
            algs.append(
                Alg(
                    name,
                    fam,
                    tuple(sec["ops"]),
                    strength,
                    "probe",
                    0,
                    sec.get("note", {}).get(name, ""),
                    src[sec["source"]],
                )
            )
    pq = t["pq"]
    for name, strength in pq["strength"].items():
        kem = name.startswith("ml-kem")
        algs.append(
            Alg(
                name,
                "pq-kem" if kem else "pq-sig",
                tuple(pq["kem_ops"] if kem else pq["sig_ops"]),
                strength,
                "cryptography",
                0,
                pq["note"].get(name, ""),
                src["fips203" if kem else "fips204"],
            )
        )
    return {a.name: a for a in algs}


def bulk_sizes() -> list[int]:
    return list(raw_table()["bulk"]["sizes"])


def all_ops() -> list[str]:
    seen: dict[str, None] = {}
    for a in catalog().values():
        for op in a.ops:
            seen.setdefault(op, None)
    return list(seen)


# The libraries `secperf crypto --library` measures with (measure/backends knows their tools).
# openssl: the system OpenSSL 3 through secperf-probe, and post-quantum rows through the
# `cryptography` package's bundled OpenSSL, exactly as without --library.
LIBRARIES = {
    "openssl": "OpenSSL 3 (system libcrypto, secperf-probe; PQ rows: the cryptography package's OpenSSL)",
    "wolfcrypt": "wolfCrypt (Debian libwolfssl, secperf-wolfcrypt)",
    "mbedtls": "Mbed TLS (Debian libmbedcrypto, secperf-mbedtls)",
    "jce": "Java JCE: SunEC, SunRsaSign, SunJCE on the machine's JDK (JMH)",
    "bouncycastle": "Bouncy Castle provider from Maven Central on the machine's JDK (JMH)",
    "go": "Go standard library crypto (secperf-go)",
}
DEFAULT_LIBRARY = "openssl"


def parse_libraries(values: Values) -> list[str]:
    """--library values (comma lists, repeatable) in order, checked; default: openssl only."""
    names = [v.lower() for v in _split(values)] or [DEFAULT_LIBRARY]
    out: list[str] = []
    for n in names:
        if n == "all":
            out += [x for x in LIBRARIES if x not in out]
            continue
        if n not in LIBRARIES:
            raise SelectionError(f"--library {n!r} is not known; known: {', '.join(LIBRARIES)} (or all)")
        if n not in out:
            out.append(n)
    return out


@dataclass(frozen=True)
class Row:
    """One thing to measure: an algorithm, an operation, (bulk only) a message size, and the
    library that runs it."""

    alg: Alg
    op: str
    size_bytes: int
    library: str = DEFAULT_LIBRARY

    @property
    def series_id(self) -> str:
        """OpenSSL rows keep the ids they always had (results and `compare` depend on them);
        another library's row gains `@LIBRARY`."""
        base = f"crypto/{self.alg.name}/{self.op}/{self.size_bytes}"
        return base if self.library == DEFAULT_LIBRARY else f"{base}@{self.library}"


def for_libraries(rows: list[Row], libraries: list[str]) -> list[Row]:
    """Every row once per library, libraries adjacent per row (so drift on a shared machine
    touches all libraries of a row alike)."""
    return [replace(r, library=lib) for r in rows for lib in libraries]


SIGNED_MESSAGE_BYTES = 32  # the message signed per operation (S2 signed 32 bytes)


# option values as they arrive: None, one value (a TOML scalar too) or a list of comma lists
Values = str | int | Iterable[str | int] | None


def _split(values: Values) -> list[str]:
    """Comma lists, given once or repeated: "a,b" or ["a,b", "c"] (also a scalar from TOML)."""
    if values is None:
        return []
    if isinstance(values, (str, int)):
        values = [values]
    out: list[str] = []
    for v in values:
        out += [x.strip() for x in str(v).split(",") if x.strip()]
    return out


def parse_sizes(values: Values) -> list[int]:
    sizes = []
    for s in _split(values):
        try:
            n = int(s)
        except ValueError:
            raise SelectionError(f"--size {s!r} is not a whole number of bytes") from None
        if n <= 0:
            raise SelectionError(f"--size {n} is not valid: message sizes must be at least 1 byte")
        if n > 64 * 1024 * 1024:
            raise SelectionError(f"--size {n} is larger than the 64 MiB limit")
        sizes.append(n)
    return sizes


def select(
    algs: Values = None,
    ops: Values = None,
    sizes: Values = None,
    strength: int | None = None,
    exclude_slow: bool = True,
) -> list[Row]:
    """Rows for the given filters. Names may be globs (`rsa-*`, `ecdsa-p*`).

    exclude_slow drops key generation of RSA-7680 and RSA-15360 (minutes per key) unless an
    algorithm was named explicitly without a glob.
    """
    cat = catalog()
    names = _split(algs)
    chosen: list[str] = []
    explicit: set[str] = set()
    if names:
        for pat in names:
            pat_l = pat.lower()
            hits = [n for n in cat if fnmatch.fnmatchcase(n, pat_l)]
            if not hits:
                raise SelectionError(f"unknown algorithm {pat!r}; known: {', '.join(cat)}")
            if not any(c in pat_l for c in "*?["):
                explicit.update(hits)
            chosen += [h for h in hits if h not in chosen]
    else:
        chosen = list(cat)
    want_ops = [o.lower() for o in _split(ops)]
    known_ops = all_ops()
    for o in want_ops:
        if o not in known_ops:
            raise SelectionError(f"unknown operation {o!r}; known: {', '.join(known_ops)}")
    want_sizes = parse_sizes(sizes)
    if strength is not None and strength not in STRENGTH_ROWS:
        raise SelectionError(
            f"--strength {strength} is not an SP 800-57 strength row; use one of {', '.join(map(str, STRENGTH_ROWS))}"
        )
    rows: list[Row] = []
    for name in chosen:
        a = cat[name]
        if strength is not None and a.security_bits != strength:
            continue
        for op in a.ops:
            if want_ops and op not in want_ops:
                continue
            if exclude_slow and op == "keygen" and a.family == "rsa" and a.key_bits >= 7680 and name not in explicit:
                continue
            if a.bulk:
                for size in want_sizes or bulk_sizes():
                    rows.append(Row(a, op, size))
            else:
                rows.append(Row(a, op, SIGNED_MESSAGE_BYTES))
    if not rows:
        raise SelectionError(
            "the filters select nothing to measure (check --alg, --op, --strength); "
            "`secperf crypto --list` shows every algorithm with its operations"
        )
    return rows
