"""The server side of a what-if or a plan: this host's costs, not another machine's.

Decision (issue 43, item 2). `--host-costs` picks where the host's operation costs come from:
- `measured` (the default): this host's own P50s from a short `secperf crypto` run of the operations
  a handshake's server (and a host client) performs -- key generation and derivation of the key
  exchanges, signing and verifying of the signatures (OpenSSL, classical algorithms; about 18 rows,
  a few seconds on an idle 2-core machine). The run is cached under
  $SECPERF_HOME/host-costs/<key>/result.json, the key made of the CPU model and the OpenSSL version, so
  it runs once per host and library; the Result keeps its provenance (date, command, host). A
  `--calibrate` Result of this host replaces it (it is the same kind of measurement).
- `shipped`: the table in the package (data/whatif_costs.toml `host-default`, measured on the
  development VM), named as such in the table's description and in a note.
What the short run does not measure (post-quantum rows, the libraries' per-handshake base work,
certificate parsing) stays the shipped figure, each with its own source line."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from ..core import host
from ..core import result as R
from ..core.errors import InputError, ResultError
from ..core.paths import secperf_home
from ..core.result_schema import Result, Series
from ..core.writes import atomic_write
from ..inputs import algorithms as A
from ..measure import crypto as MC
from ..model import costs as C
from .reporter import reporter

if TYPE_CHECKING:
    from ..inputs.algorithms import Row

CHOICES = ("measured", "shipped")
KEX = ("x25519", "ecdh-p256", "ecdh-p384", "x448")
SIGS = ("ecdsa-p256", "ecdsa-p384", "ed25519", "rsa-2048", "rsa-3072")
COMMAND = (
    f"secperf crypto --alg {','.join(KEX)} --op keygen,derive; secperf crypto --alg {','.join(SIGS)} "
    f"--op sign,verify (--n 5 --warmup 1 --duration 0.2)"
)


def openssl_version() -> str:
    try:
        out = subprocess.run(["openssl", "version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    return out or "unknown OpenSSL"


def cache_path() -> Path:
    key = hashlib.sha256(f"{host.cpu_model()}|{openssl_version()}".encode()).hexdigest()[:16]
    return secperf_home() / "host-costs" / key / "result.json"


def _measure(path: Path) -> Result:
    rows = A.select(algs=",".join(KEX), ops="keygen,derive") + A.select(algs=",".join(SIGS), ops="sign,verify")
    p = MC.CryptoParams(n=5, warmup=1, duration_s=0.2)
    doc = R.new_result(
        kind="crypto",
        command=["secperf", "(host costs)", COMMAND],
        params=p.as_dict(),
        host=host.collect(),
        run_id=f"host-costs-{path.parent.name}",
    )
    reporter().status(
        f"[bold]this host's costs[/bold]: measuring {len(rows)} operations once "
        f"(cached in {path.parent}; --host-costs shipped skips it)"
    )
    with reporter().progress(len(rows), "host costs") as update:

        def progress(event: str, row: Row, _i: int, _n: int, _series: Series | None) -> None:
            if event == "start":
                update(f"{row.alg.name} {row.op}")
            else:
                update(advance=1)

        MC.run_crypto(rows, p, doc, None, progress)
    R.finish(doc)

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, R.dumps(doc))
    return doc


def measured_doc() -> Result:
    """This host's cost run: from the cache, or measured now (a few seconds) and cached."""
    path = cache_path()
    if path.is_file():
        try:
            doc = R.load(path)
            if doc.kind == "crypto" and any(s.status == "ok" for s in doc.series):
                return doc
        except (OSError, ValueError, ResultError):
            pass  # a damaged cache entry is measured again
    return _measure(path)


def host_table(choice: str | None = None, calibrated: bool = False) -> C.CostTable:
    """The host's cost table for `--host-costs` (CHOICES; default measured, or $SECPERF_HOST_COSTS).
    `calibrated`: a --calibrate Result of this host follows and replaces the figures, so without an
    explicit choice nothing is measured now (the shipped table only fills what that Result lacks, each
    figure saying so)."""
    if calibrated and not choice:
        return C.load_table("host-default")
    asked = choice
    choice = choice or os.environ.get("SECPERF_HOST_COSTS") or "measured"
    if choice not in CHOICES:
        raise InputError(f"--host-costs {choice!r} (or SECPERF_HOST_COSTS): one of {', '.join(CHOICES)}")
    shipped = C.load_table("host-default")
    if choice == "shipped":
        if asked:  # said on the terminal when asked on the command line; the table's description always says it
            reporter().note(
                "note: host costs from the table shipped with secperf (host-default: "
                f"{shipped.source}), not measured on this host (--host-costs measured)"
            )
        shipped.description = f"shipped table host-default, not this host: {shipped.description}"
        return shipped
    doc = measured_doc()
    t = C.calibrate(doc, shipped, where="this host's cost run")
    when = (doc.host or {}).get("date") or doc.started
    t.source = f"secperf crypto on this host, {when} (cached: {cache_path()})"
    t.description = (
        f"this host ({host.cpu_model()}, {openssl_version()}), measured {when} by `{COMMAND}`; "
        f"operations it does not run from the shipped table host-default"
    )
    return t
