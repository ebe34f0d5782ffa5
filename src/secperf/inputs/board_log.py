"""A board's own benchmark log, as a user captures it from the board's UART, read into rows that
name secperf operations: the input of `secperf device calibrate`.

Formats read (one log may mix them; each line is tried against all three):
- wolfCrypt's `benchmark` application: bulk lines ("AES-128-GCM-enc  9 MB took 1.000 seconds,
  8.789 MB/s", units KB/s and MB/s up to 5.5, KiB/s and MiB/s from 5.6: in both cases the
  benchmark divides by 1024 and 1024 x 1024) and public-key lines ("ECDSA [ SECP256R1] 256 sign
  78 ops took 1.007 sec, avg 12.910 ms, 77.458 ops/sec"; the avg ms column is the figure). The
  header's "block bytes N" is the bulk call size.
- Mbed TLS's `benchmark` program: "  SHA-256   :  1673 KiB/s,  70 cycles/byte" (throughput is the
  figure; cycles/byte come from its own hardclock), "  RSA-2048  :  28 ms/ public" (older) or
  "  RSA-2048  :  35  public/s" (newer).
- pqm4's `benchmarks`: the speed program's raw output ("keypair cycles:" then the number on the next
  line; the scheme from a line naming it, e.g. "crypto_kem/ml-kem-768/clean", or the `scheme`
  argument) and the speed table of benchmarks.md ("| ml-kem-768 (10 executions) | clean | AVG: ...").

Naming rules are data/boards.toml's: bulk rows are the encrypt direction and 128-bit keys, wolfCrypt
"ECDHE 256 agree" is p256-derive, "RSA 2048 public" rsa-2048-verify, "private" rsa-2048-sign; Mbed
TLS's ECDHE handshake is one key generation plus one shared secret, its ECDH (fixed key pair) handshake
one shared secret. A line that holds a figure but names nothing secperf counts, or that no format
knows, is kept as an unmapped line with the reason: nothing is dropped silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import InputError
from ..core.files import read_input

# published operation -> (secperf operations whose cycles add up to it, bytes per call for bulk ones)
BULK_BYTES = 1024
OPS: dict[str, tuple[tuple[str, ...], int | None]] = {
    "ecdsa-p256-sign": (("ecdsa-p256-sign",), None),
    "ecdsa-p256-verify": (("ecdsa-p256-verify",), None),
    "p256-keygen": (("p256-keygen",), None),
    "p256-derive": (("p256-derive",), None),
    "x25519-keygen": (("x25519-keygen",), None),
    "x25519-derive": (("x25519-derive",), None),
    "rsa-2048-verify": (("rsa-2048-verify",), None),
    "rsa-2048-sign": (("rsa-2048-sign",), None),
    "ecdhe-p256-handshake": (("p256-keygen", "p256-derive"), None),
    "ecdh-p256-handshake": (("p256-derive",), None),
    "ecdhe-x25519-handshake": (("x25519-keygen", "x25519-derive"), None),
    "ecdh-x25519-handshake": (("x25519-derive",), None),
    "aes-128-gcm": (("aes-128-gcm-1024",), BULK_BYTES),
    "aes-128-cbc": (("aes-128-cbc-1024",), BULK_BYTES),
    "aes-128-cmac": (("aes-128-cmac-1024",), BULK_BYTES),
    "chacha20-poly1305": (("chacha20-poly1305-1024",), BULK_BYTES),
    "chacha20": (("chacha20-1024",), BULK_BYTES),
    "poly1305": (("poly1305-1024",), BULK_BYTES),
    "sha256": (("sha256-1024",), BULK_BYTES),
    "hmac-sha256": (("hmac-sha256-1024",), BULK_BYTES),
}
for _k in (512, 768, 1024):
    for _o in ("keygen", "encaps", "decaps"):
        OPS[f"ml-kem-{_k}-{_o}"] = ((f"ml-kem-{_k}-{_o}",), None)
for _k in (44, 65, 87):
    for _o in ("keygen", "sign", "verify"):
        OPS[f"ml-dsa-{_k}-{_o}"] = ((f"ml-dsa-{_k}-{_o}",), None)

# wolfCrypt's benchmark times a hash as a stream (wolfcrypt/benchmark/benchmark.c, digest_stream = 1):
# wc_InitSha256 / wc_HmacSetKey once outside the timer, then per timed round NUM_BLOCKS updates of
# BENCH_SIZE bytes and one Final (BENCH_EMBEDDED, set by wolfSSL's STM32Cube and other embedded builds:
# 25 blocks of 1024 bytes). Our ops hash a whole message per call, so a streamed KiB is the difference of
# two message sizes of the same code (an HMAC's update is SHA-256's) plus a 25th of the rest (the Final):
#   per KiB = (c1024 - c256) * 1024 / 768;  streamed = per KiB + (c1024 - per KiB) / 25
#           = 1.32 c1024 - 1.28 c256
STREAMED = ("sha256", "hmac-sha256")
STREAM_OPS = ("hmac-sha256-1024", "hmac-sha256-256")
STREAM_BLOCKS = 25
_PER_KIB = 1024 / 768
STREAM_WEIGHTS = (_PER_KIB + (1 - _PER_KIB) / STREAM_BLOCKS, -_PER_KIB + _PER_KIB / STREAM_BLOCKS)

BYTES_PER = {"KB/s": 1024, "KiB/s": 1024, "Kb/s": 1024, "MB/s": 1048576, "MiB/s": 1048576}


class BoardLogError(InputError):
    """A log that cannot be read or holds no line secperf recognises (exit 2)."""


@dataclass(frozen=True)
class LogRow:
    """One figure of the log, named as secperf names the operation."""

    line_no: int
    text: str
    fmt: str  # wolfcrypt | mbedtls | pqm4
    operation: str  # published operation (data/boards.toml's names)
    value: float
    unit: str  # as printed: ms/op, ops/s, cycles, KiB/s, ...
    nbytes: int | None = None  # bulk rows: bytes per call the figure is turned into

    @property
    def streamed(self) -> bool:
        """A wolfCrypt benchmark hash: timed as a stream (STREAMED)."""
        return self.fmt == "wolfcrypt" and self.operation in STREAMED

    @property
    def ops(self) -> tuple[str, ...]:
        return STREAM_OPS if self.streamed else OPS[self.operation][0]

    @property
    def weights(self) -> tuple[float, ...]:
        """Each op's weight in the figure (empty: their plain sum)."""
        return STREAM_WEIGHTS if self.streamed else ()

    def cycles(self, clock_mhz: float) -> float:
        """The published figure as cycles per call at the board's clock."""
        hz = clock_mhz * 1e6
        if self.unit == "cycles":
            return self.value
        if self.unit == "ms/op":
            return self.value * 1e-3 * hz
        if self.unit == "ops/s":
            return hz / self.value
        per_s = BYTES_PER[self.unit]
        return (self.nbytes or BULK_BYTES) / (self.value * per_s) * hz


@dataclass(frozen=True)
class Unmapped:
    line_no: int
    text: str
    reason: str


@dataclass
class BoardLog:
    rows: list[LogRow] = field(default_factory=list)
    unmapped: list[Unmapped] = field(default_factory=list)
    formats: list[str] = field(default_factory=list)
    version: str | None = None  # wolfSSL's version line, when the log has one


# --- wolfCrypt ----------------------------------------------------------------------------------

_WC_BULK = re.compile(
    r"^(?P<name>\S.*?)\s+(?P<amount>[\d.]+)\s+(?:KB|MB|KiB|MiB|bytes)\s+took\s+(?P<secs>[\d.]+)\s+seconds?,\s*"
    r"(?P<rate>[\d.]+)\s+(?P<unit>KB/s|MB/s|KiB/s|MiB/s)\b"
)
_WC_ASYM = re.compile(
    r"^(?P<name>\S.*?)\s+(?P<count>\d+)\s+ops\s+took\s+(?P<secs>[\d.]+)\s+sec,\s*avg\s+(?P<ms>[\d.]+)\s+ms"
    r"(?:,\s*(?P<rate>[\d.]+)\s+ops/sec)?"
)
_WC_BULK_NAMES = {
    "aes-128-gcm-enc": "aes-128-gcm",
    "aes-128-cbc-enc": "aes-128-cbc",
    "aes-128-cmac": "aes-128-cmac",
    "aes-cmac": "aes-128-cmac",
    "cmac": "aes-128-cmac",
    "chacha": "chacha20",
    "cha-poly": "chacha20-poly1305",
    "poly1305": "poly1305",
    "sha-256": "sha256",
    "sha256": "sha256",
    "hmac-sha256": "hmac-sha256",
}
_WC_HEADER = re.compile(
    r"^(?:-{5,}|=+|wolfCrypt Benchmark.*|Benchmark complete|Benchmark Test:.*|wolfSSL version.*"
    r"|Math:.*|wolfCrypt_Init.*)$",
    re.I,
)


def _wolf_asym(name: str) -> str | None:
    n = " ".join(name.replace("[", " ").replace("]", " ").lower().split())
    w = n.split()
    if w[:2] == ["rsa", "2048"]:
        return {"public": "rsa-2048-verify", "private": "rsa-2048-sign"}.get(" ".join(w[2:]))
    curve = (
        "secp256r1"
        if "256" in w and not any(x.startswith("secp") or x.startswith("brainpool") for x in w)
        else next((x for x in w if x.startswith("secp") or x.startswith("brainpool")), "")
    )
    what = " ".join(x for x in w[1:] if x not in (curve, "256", "25519"))
    if w[0] in ("ecc", "ecdhe", "ecdsa") and curve == "secp256r1":
        return {
            "key gen": "p256-keygen",
            "agree": "p256-derive",
            "sign": "ecdsa-p256-sign",
            "verify": "ecdsa-p256-verify",
        }.get(what)
    if w[0] == "curve" and "25519" in w:
        return {"key gen": "x25519-keygen", "agree": "x25519-derive"}.get(what)
    return None


def _wolfcrypt(line: str, block: int) -> tuple[str, LogRow | str] | None:
    """("row", LogRow-to-be) or ("unmapped", reason), or None when the line is no wolfCrypt result."""
    m = _WC_BULK.match(line)
    if m:
        name = m["name"].strip().lower()
        op = _WC_BULK_NAMES.get(name)
        if op is None:
            why = (
                "the decrypt direction (secperf compares the encrypt direction)"
                if name.endswith("-dec")
                else "192/256-bit AES (secperf counts AES-128)"
                if re.match(r"aes-(192|256)", name)
                else "no secperf operation for it"
            )
            return "unmapped", f"wolfCrypt {m['name'].strip()}: {why}"
        return "row", LogRow(0, line, "wolfcrypt", op, float(m["rate"]), m["unit"], block)
    m = _WC_ASYM.match(line)
    if m:
        op = _wolf_asym(m["name"])
        if op is None:
            return "unmapped", f"wolfCrypt {' '.join(m['name'].split())}: no secperf operation for it"
        return "row", LogRow(0, line, "wolfcrypt", op, float(m["ms"]), "ms/op")
    return None


# --- Mbed TLS -----------------------------------------------------------------------------------

_MB = re.compile(r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9_\-()/ ]*?)\s*:\s*(?P<rest>.+)$")
_MB_BULK = re.compile(r"^(?P<rate>[\d.]+)\s*(?P<unit>KiB/s|Kb/s|KB/s)\b")
_MB_MS = re.compile(r"^(?P<ms>[\d.]+)\s*ms/\s*(?P<what>public|private|sign|verify|handshake)\b")
_MB_RATE = re.compile(r"^(?P<rate>[\d.]+)\s+(?P<what>public|private|sign|verify|handshake)/s\b")
_MB_BULK_NAMES = {
    "sha-256": "sha256",
    "aes-cbc-128": "aes-128-cbc",
    "aes-gcm-128": "aes-128-gcm",
    "aes-cmac-128": "aes-128-cmac",
    "chacha20": "chacha20",
    "chacha20-poly1305": "chacha20-poly1305",
    "poly1305": "poly1305",
    "hmac-sha256": "hmac-sha256",
}


def _mbed_asym(name: str, what: str) -> str | None:
    n = name.lower()
    if n == "rsa-2048":
        return {"public": "rsa-2048-verify", "private": "rsa-2048-sign"}.get(what)
    if n == "ecdsa-secp256r1":
        return {"sign": "ecdsa-p256-sign", "verify": "ecdsa-p256-verify"}.get(what)
    if what == "handshake":
        return {
            "ecdhe-secp256r1": "ecdhe-p256-handshake",
            "ecdh-secp256r1": "ecdh-p256-handshake",
            "ecdhe-curve25519": "ecdhe-x25519-handshake",
            "ecdh-curve25519": "ecdh-x25519-handshake",
            "ecdhe-x25519": "ecdhe-x25519-handshake",
            "ecdh-x25519": "ecdh-x25519-handshake",
        }.get(n)
    return None


def _mbedtls(line: str) -> tuple[str, LogRow | str] | None:
    m = _MB.match(line)
    if not m:
        return None
    name, rest = m["name"].strip(), m["rest"].strip()
    b, t, r = _MB_BULK.match(rest), _MB_MS.match(rest), _MB_RATE.match(rest)
    if not (b or t or r):
        return None
    if b:
        op = _MB_BULK_NAMES.get(name.lower())
        if op is None:
            return "unmapped", f"Mbed TLS {name}: no secperf operation for it"
        return "row", LogRow(0, line, "mbedtls", op, float(b["rate"]), b["unit"], BULK_BYTES)
    what = (t or r)["what"]  # type: ignore[index]
    op = _mbed_asym(name, what)
    if op is None:
        return "unmapped", f"Mbed TLS {name} {what}: no secperf operation for it"
    if t:
        return "row", LogRow(0, line, "mbedtls", op, float(t["ms"]), "ms/op")
    return "row", LogRow(0, line, "mbedtls", op, float(r["rate"]), "ops/s")  # type: ignore[index]


# --- pqm4 ---------------------------------------------------------------------------------------

_PQ_SCHEME = re.compile(r"\b(ml-kem-(?:512|768|1024)|ml-dsa-(?:44|65|87)|kyber\d+|dilithium\d|[a-z][a-z0-9-]*\d)\b")
_PQ_RAW = re.compile(r"^(?P<what>keypair|encaps|decaps|sign|verify) cycles:\s*(?P<n>\d+)?\s*$")
_PQ_TABLE = re.compile(
    r"^\|\s*(?P<scheme>[a-z0-9-]+)(?:\s*\(\d+ executions\))?\s*\|\s*(?P<impl>[a-z0-9_-]+)\s*\|"
    r"(?P<cols>.+)\|\s*$"
)
_PQ_HEADER = re.compile(r"^\|\s*scheme\s*\|\s*implementation\s*\|(?P<cols>.+)\|\s*$", re.I)
_PQ_AVG = re.compile(r"AVG:\s*([\d,]+)")
_PQ_OPS = {
    "keypair": "keygen",
    "key generation": "keygen",
    "encaps": "encaps",
    "encapsulation": "encaps",
    "decaps": "decaps",
    "decapsulation": "decaps",
    "sign": "sign",
    "verify": "verify",
}


def _pq_op(scheme: str, impl: str, what: str) -> tuple[str, LogRow | str]:
    op = f"{scheme}-{_PQ_OPS[what]}"
    if op not in OPS:
        return "unmapped", f"pqm4 {scheme} {what}: no secperf operation for it (secperf counts ML-KEM and ML-DSA)"
    if impl not in ("clean", ""):
        return "unmapped", (
            f"pqm4 {scheme} {impl}: pqm4's own implementation; secperf builds PQClean's clean "
            f"code (compare like builds only)"
        )
    return "row", LogRow(0, "", "pqm4", op, 0.0, "cycles")


def parse(text: str, scheme: str | None = None) -> BoardLog:
    """Every line of a benchmark log: rows secperf can count, and the lines it cannot with the reason."""
    out = BoardLog()
    block, pq_scheme, pq_impl, pq_cols = BULK_BYTES, scheme, "clean", []
    pending: tuple[int, str, str] | None = None  # pqm4 "keypair cycles:" waiting for its number
    seen: set[str] = set()

    def add(no: int, raw: str, got: tuple[str, LogRow | str]) -> None:
        kind, what = got
        if kind == "row":
            assert isinstance(what, LogRow)
            out.rows.append(LogRow(no, raw.rstrip(), what.fmt, what.operation, what.value, what.unit, what.nbytes))
            seen.add(what.fmt)
        else:
            out.unmapped.append(Unmapped(no, raw.rstrip(), str(what)))

    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("```"):
            continue
        if pending is not None and line.isdigit():
            pno, ptext, what = pending
            pending = None
            if pq_scheme is None:
                out.unmapped.append(
                    Unmapped(
                        pno,
                        ptext,
                        "pqm4 figure without a scheme: give the scheme (--scheme "
                        "ml-kem-768) or keep the line naming it",
                    )
                )
                continue
            got = _pq_op(pq_scheme, pq_impl, what)
            if got[0] == "row":
                got = ("row", LogRow(0, "", "pqm4", got[1].operation, float(line), "cycles"))  # type: ignore[union-attr]
            add(pno, f"{ptext} {line}", got)
            continue
        if pending is not None:
            out.unmapped.append(Unmapped(pending[0], pending[1], "pqm4 cycles line without its number"))
            pending = None
        if m := re.search(r"block bytes (\d+)", line):
            block = int(m[1])
        if m := re.match(r"^wolfSSL version\s+(\S+)", line, re.I):
            out.version = m[1]
        if (wc := _wolfcrypt(line, block)) is not None:
            add(no, raw, wc)
            continue
        if (mb := _mbedtls(line)) is not None:
            add(no, raw, mb)
            continue
        if m := _PQ_HEADER.match(line):
            pq_cols = [c.strip().lower().removesuffix("[cycles]").strip() for c in m["cols"].split("|")]
            continue
        if m := _PQ_TABLE.match(line):
            cols = [c.strip() for c in m["cols"].split("|")]
            names = pq_cols or (
                ["key generation", "encapsulation", "decapsulation"]
                if "kem" in m["scheme"]
                else ["key generation", "sign", "verify"]
            )
            for what, cell in zip(names, cols):
                avg = _PQ_AVG.search(cell)
                if avg is None or what not in _PQ_OPS:
                    continue
                got = _pq_op(m["scheme"], m["impl"], what)
                if got[0] == "row":
                    got = (
                        "row",
                        LogRow(
                            0,
                            "",
                            "pqm4",
                            got[1].operation,  # type: ignore[union-attr]
                            float(avg[1].replace(",", "")),
                            "cycles",
                        ),
                    )
                add(no, f"{raw.rstrip()} [{what}]", got)
            continue
        if m := _PQ_RAW.match(line):
            if m["n"]:  # the number on the same line
                if pq_scheme is None:
                    out.unmapped.append(Unmapped(no, raw.rstrip(), "pqm4 figure without a scheme"))
                    continue
                got = _pq_op(pq_scheme, pq_impl, m["what"])
                if got[0] == "row":
                    got = ("row", LogRow(0, "", "pqm4", got[1].operation, float(m["n"]), "cycles"))  # type: ignore[union-attr]
                add(no, raw, got)
            else:
                pending = (no, raw.rstrip(), m["what"])
            continue
        if re.fullmatch(r"[-=#| ]*|DONE|OK KEYS|OK SIG|ERROR KEYS|ERROR SIG|\|[ -|]+\|", line) or _WC_HEADER.match(
            line
        ):
            continue
        if m := re.search(r"crypto_(?:kem|sign)/([a-z0-9-]+)/([a-z0-9_-]+)", line):
            pq_scheme, pq_impl = m[1], m[2]
            continue
        if scheme is None and (m := _PQ_SCHEME.fullmatch(line.lower())):
            pq_scheme, pq_impl = m[1], "clean"
            continue
        out.unmapped.append(
            Unmapped(no, raw.rstrip(), "not a result line of wolfCrypt's, Mbed TLS's or pqm4's benchmark")
        )
    if pending is not None:
        out.unmapped.append(Unmapped(pending[0], pending[1], "pqm4 cycles line without its number"))
    out.formats = sorted(seen)
    return out


def read(path: str | Path, scheme: str | None = None) -> tuple[BoardLog, bytes]:
    """The log at `path` parsed, and its bytes (for the profile's source hash); BoardLogError when it
    cannot be read or has no line secperf can count."""

    try:  # a regular file only (a FIFO would block forever), of a sane size
        data = read_input(path, "board log", f"LOG {path}")
    except InputError as exc:
        raise BoardLogError(f"LOG {path}: cannot read it ({str(exc).removeprefix(f'LOG {path}: ')})") from None
    text = data.decode("utf-8", errors="replace")
    log = parse(text, scheme)
    if not log.rows:
        why = "; ".join(f"line {u.line_no}: {u.reason}" for u in log.unmapped[:3]) or "the file is empty"
        raise BoardLogError(
            f"LOG {path}: no line of wolfCrypt's, Mbed TLS's or pqm4's benchmark that secperf counts ({why})"
        )
    return log, data
