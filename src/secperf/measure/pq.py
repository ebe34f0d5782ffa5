"""Post-quantum rows (ML-KEM, ML-DSA) through the Python `cryptography` package.

`cryptography` links its own bundled OpenSSL, not the system libcrypto the probe uses, and these
operations are called from Python: each row is labelled with the library that actually ran it,
and the Python call overhead (~0.1 µs) is part of every operation.
Sampling follows the probe's rules: batches of at least `min_sample_us`, warm-up discarded,
wall (monotonic) and thread-CPU time per batch.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import cryptography
from cryptography.hazmat.backends.openssl.backend import backend
from cryptography.hazmat.primitives.asymmetric import mldsa, mlkem

from ..core.errors import SetupError

MESSAGE = bytes(range(32))


class PQUnavailable(SetupError):
    pass


def openssl_text() -> str:
    return backend.openssl_version_text()


def library_label() -> str:
    return f"cryptography {cryptography.__version__} ({backend.openssl_version_text()}, bundled)"


def _classes(alg: str) -> Any:  # the MLKEM*/MLDSA* private key class, looked up by its name

    if alg.startswith("ml-kem-"):
        cls = getattr(mlkem, f"MLKEM{alg.rsplit('-', 1)[1]}PrivateKey", None)
    else:
        cls = getattr(mldsa, f"MLDSA{alg.rsplit('-', 1)[1]}PrivateKey", None)
    if cls is None:
        raise PQUnavailable(
            f"cryptography {cryptography.__version__} does not offer {alg} "
            f"(no {alg.upper().replace('-', '')} class in its API)"
        )
    return cls


def make_op(alg: str, op: str) -> tuple[Callable[[], object], str]:
    """A zero-argument callable doing one operation, and a one-line description of it."""
    cls = _classes(alg)
    key = cls.generate()
    pub = key.public_key()
    if op == "keygen":
        return cls.generate, f"{cls.__name__}.generate()"
    if alg.startswith("ml-kem-"):
        if op == "encaps":
            return pub.encapsulate, "public_key.encapsulate() -> (shared secret, ciphertext)"
        if op == "decaps":
            _ss, ct = pub.encapsulate()
            return (lambda: key.decapsulate(ct)), "private_key.decapsulate(ciphertext)"
    else:
        if op == "sign":
            return (lambda: key.sign(MESSAGE)), "private_key.sign(32-byte message), pure ML-DSA"
        if op == "verify":
            sig = key.sign(MESSAGE)
            return (lambda: pub.verify(sig, MESSAGE)), "public_key.verify(signature, 32-byte message)"
    raise PQUnavailable(f"{alg} has no operation {op!r}")


def sample_batches(
    fn: Callable[[], object],
    *,
    n: int,
    warmup: int,
    min_sample_us: float,
    max_seconds: float,
    on_sample: Callable[[dict[str, Any]], object] | None = None,
) -> tuple[list[dict[str, Any]], int, str]:
    """Time `fn` in batches; returns (samples, batch, stopped) like the probe's JSON lines."""
    perf, tcpu = time.perf_counter_ns, time.thread_time_ns
    batch = 1
    while True:  # calibrate: double until a batch lasts min_sample_us
        t0 = perf()
        for _ in range(batch):
            fn()
        took = perf() - t0
        if took >= min_sample_us * 1000 or batch >= 1 << 24:
            break
        batch *= 2
    per_op = took / batch
    batch = max(1, int(min_sample_us * 1000 / per_op + 0.5)) if per_op < min_sample_us * 1000 else 1

    def one() -> dict[str, Any]:
        w0, c0 = perf(), tcpu()
        for _ in range(batch):
            fn()
        c1, w1 = tcpu(), perf()
        return {"type": "sample", "wall_ns": w1 - w0, "cpu_ns": c1 - c0, "ops": batch}

    for _ in range(warmup):
        one()
    samples: list[dict[str, Any]] = []
    start = time.monotonic()
    stopped = "n"
    while len(samples) < n:
        if samples and time.monotonic() - start >= max_seconds:
            stopped = "time"
            break
        s = one()
        samples.append(s)
        if on_sample:
            on_sample(s)
    return samples, batch, stopped
