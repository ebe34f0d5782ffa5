"""`secperf crypto`: primitive benchmarks. Rows run in secperf-probe (system libcrypto) or, for
post-quantum algorithms, through the `cryptography` package; with `--library`, in another
library's tool speaking the probe's protocol (measure/backends). Each becomes a Result series with
its raw batch samples, per-operation values, summaries and rates, written as soon as it is done."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import host
from ..core import result as R
from ..core.result_schema import CryptoDerived, Result, Series
from ..core.store import Run
from ..inputs.algorithms import Row
from . import Progress, backends, pq, probe

TIMER = {
    "name": "per operation",
    "start": "clock read before the first operation of a batch",
    "end": "clock read after the last operation of the batch",
    "value": "batch wall time / operations in the batch (thread CPU time likewise)",
    "clock": "CLOCK_MONOTONIC (wall), CLOCK_THREAD_CPUTIME_ID (CPU)",
}
MAX_TIMER_OVERHEAD_SHARE = 0.01


@dataclass
class CryptoParams:
    n: int = 30  # samples per row (each a batch of operations)
    warmup: int = 2  # samples discarded before counting
    duration_s: float = 10.0  # time budget per row; at least one sample is always taken
    min_sample_us: float = 1000.0
    hash: str = "sha256"
    seed: int = 1
    prehashed: bool = False
    key_cache: Path = field(default_factory=probe.default_key_cache)
    # JVM rows (JMH): forked JVMs per row (two, so a JVM that settled in a slower JIT state shows
    # as fork spread instead of passing for the library), iteration (= sample) length, JIT warm-up
    jmh_forks: int = 2
    jmh_iteration_ms: int = 100
    jmh_warmup_ms: int = 2000

    def as_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "warmup": self.warmup,
            "duration_s": self.duration_s,
            "min_sample_us": self.min_sample_us,
            "hash": self.hash,
            "seed": self.seed,
            "prehashed": self.prehashed,
            "jmh": {"forks": self.jmh_forks, "iteration_ms": self.jmh_iteration_ms, "warmup_ms": self.jmh_warmup_ms},
        }


OnSample = Callable[[dict[str, Any]], object]  # called with each sample line as it arrives


def _labels(row: Row, hash_name: str) -> dict[str, Any]:
    a = row.alg
    uses_hash = a.family in ("rsa", "ecdsa") and row.op in ("sign", "verify")
    return {
        "alg": a.name,
        "op": row.op,
        "family": a.family,
        "size_bytes": row.size_bytes,
        "hash": hash_name if uses_hash else None,
        "security_bits": a.security_bits,
        "key_bits": a.key_bits,
        "strength_note": a.note,
        "strength_source": a.source,
        "engine": a.engine,
    }


def _fill(
    series: Series, samples: list[dict[str, Any]], size_bytes: int, bulk: bool, timer_overhead_ns: float | None
) -> None:
    for s in samples:
        ops = max(1, int(s["ops"]))
        sample = {"wall_ns": s["wall_ns"], "cpu_ns": s["cpu_ns"], "ops": ops}
        if "fork" in s:  # JVM rows: which forked JVM made the sample
            sample["fork"] = s["fork"]
        series.samples.append(sample)
        series.values_us.append(s["wall_ns"] / ops / 1000.0)
        series.cpu_values_us.append(s["cpu_ns"] / ops / 1000.0)
    if not samples:
        return
    tot_ops = sum(max(1, int(s["ops"])) for s in samples)
    tot_ns = sum(s["wall_ns"] for s in samples)
    d = series.derived_as(CryptoDerived)
    d.ops_per_s = tot_ops / tot_ns * 1e9 if tot_ns > 0 else None
    # CPU-based rate: what `openssl speed` reports by default (it times user CPU, not wall time)
    tot_cpu = sum(s["cpu_ns"] for s in samples)
    d.cpu_ops_per_s = tot_ops / tot_cpu * 1e9 if tot_cpu > 0 else None
    if bulk:
        d.bytes_per_s = d.ops_per_s * size_bytes if d.ops_per_s else None
    if timer_overhead_ns is not None:
        sample_ns = sorted(s["wall_ns"] for s in samples)[len(samples) // 2]
        d.timer_overhead_ns = timer_overhead_ns
        d.timer_overhead_share = timer_overhead_ns / sample_ns if sample_ns else None


def _finish_rates(series: Series, size_bytes: int, bulk: bool) -> None:
    d = series.derived_as(CryptoDerived)
    if bulk and series.summary:
        d.ns_per_byte = series.summary.p50_us * 1000.0 / size_bytes
    share = d.timer_overhead_share
    if share is not None and share > MAX_TIMER_OVERHEAD_SHARE:
        series.warnings = [
            *(series.warnings or []),
            f"timer overhead is {share:.1%} of a sample (target < 1%): raise --min-sample-us",
        ]


def probe_args(row: Row, p: CryptoParams, duration_s: float | None = None) -> list[str]:
    args = [
        "--alg",
        row.alg.name,
        "--op",
        row.op,
        "--size",
        str(row.size_bytes),
        "--n",
        str(p.n),
        "--warmup",
        str(p.warmup),
        "--min-sample-us",
        str(p.min_sample_us),
        "--max-seconds",
        str(duration_s if duration_s is not None else p.duration_s),
        "--seed",
        str(p.seed),
    ]
    if row.alg.family in ("rsa", "ecdsa"):
        args += ["--hash", p.hash]
        if p.prehashed:
            args.append("--prehashed")
    if row.alg.family in ("rsa", "ecdsa", "eddsa"):
        args += ["--key-cache", str(probe.ensure_private_dir(p.key_cache))]
    return args


def _tool_args(row: Row, p: CryptoParams) -> list[str]:
    args = backends.tool_args(row.library) + probe_args(row, p)
    if row.library in ("jce", "bouncycastle"):
        args += [
            "--forks",
            str(p.jmh_forks),
            "--iteration-ms",
            str(p.jmh_iteration_ms),
            "--warmup-ms",
            str(p.jmh_warmup_ms),
        ]
    return args


def _measure_in_tool(
    row: Row, p: CryptoParams, series: Series, on_sample: OnSample | None
) -> tuple[dict[str, Any] | None, bool]:
    """A row in another library's tool; returns its meta line (library name and version) and
    whether the library said it lacks the row (unsupported)."""
    try:
        cmd = backends.command(row.library)
    except backends.LibraryUnavailable as exc:
        R.add_failure(series, str(exc))
        return None, False
    jvm = row.library in ("jce", "bouncycastle")
    budget = p.duration_s * 3 + 120 + (p.jmh_forks * (p.jmh_warmup_ms / 1000 + 5) if jvm else 0)
    run = probe.run_speed(
        _tool_args(row, p), setup_timeout_s=900, run_timeout_s=budget, on_sample=on_sample, command=cmd
    )
    meta = run.meta or {}
    series.labels["library"] = meta.get("library") or backends.TOOLS[row.library].title
    series.labels["version"] = meta.get("version") or backends.version_of(meta.get("library"))
    if run.unsupported:
        R.add_failure(series, run.unsupported)
        return meta, True
    if run.row:
        t = series.timer
        t.batch, t.detail, t.key_source, t.tool = (
            run.row.get("batch"),
            run.row.get("detail"),
            run.row.get("key_source"),
            meta.get("tool"),
        )
        if meta.get("clock"):
            t.clock = meta["clock"]
        if run.row.get("jmh"):
            t.jmh = run.row["jmh"]
        if run.row.get("key_bits"):
            series.labels["key_bits"] = run.row["key_bits"]
    if run.end:
        series.timer.stopped = run.end.get("stopped")
        if run.end.get("jmh_score_us") is not None:
            series.derived_as(CryptoDerived).jmh_score_us = run.end["jmh_score_us"]
            series.derived_as(CryptoDerived).jmh_error_us = run.end.get("jmh_error_us")
    _fill(series, run.samples, row.size_bytes, row.alg.bulk, meta.get("timer_overhead_ns"))
    if run.error:
        R.add_failure(series, run.error)
    return meta, False


def measure_row(row: Row, p: CryptoParams, on_sample: OnSample | None = None) -> tuple[Series, dict[str, Any] | None]:
    """Measure one row; returns (series, probe meta). Failures become series failures; a row its
    library lacks is "unsupported" with the library's reason, never measured elsewhere."""
    series, meta, _ = _measure_row(row, p, on_sample)
    return series, meta


def _measure_row(
    row: Row, p: CryptoParams, on_sample: OnSample | None = None
) -> tuple[Series, dict[str, Any] | None, dict[str, Any] | None]:
    """measure_row, also returning another library's tool meta line (None for the probe's rows)."""
    series = R.new_series(row.series_id, kind="crypto", labels=_labels(row, p.hash), timer=TIMER)
    series.labels["backend"] = row.library
    meta = None
    if row.library != "openssl":
        tool_meta, unsupported = _measure_in_tool(row, p, series, on_sample)
        R.finalize_series(series)
        if unsupported:
            series.status = "unsupported"
            return series, None, None
        _finish_rates(series, row.size_bytes, row.alg.bulk)
        return series, None, tool_meta
    if row.alg.engine == "cryptography":
        try:
            series.labels["library"] = pq.library_label()
            series.labels["version"] = backends.version_of(pq.openssl_text())
            fn, detail = pq.make_op(row.alg.name, row.op)
            samples, batch, stopped = pq.sample_batches(
                fn, n=p.n, warmup=p.warmup, min_sample_us=p.min_sample_us, max_seconds=p.duration_s, on_sample=on_sample
            )
            t = series.timer
            t.batch, t.detail, t.stopped = batch, detail, stopped
            t.clock = "time.perf_counter_ns (wall), time.thread_time_ns (CPU)"
            _fill(series, samples, row.size_bytes, False, None)
        except pq.PQUnavailable as exc:
            R.add_failure(series, str(exc))
            R.finalize_series(series)
            series.status = "unsupported"
            return series, None, None
        except Exception as exc:  # a failing library call is a failed sample, not a crash
            R.add_failure(series, f"{type(exc).__name__}: {exc}")
    else:
        run = probe.run_speed(
            probe_args(row, p), setup_timeout_s=900, run_timeout_s=p.duration_s * 3 + 120, on_sample=on_sample
        )
        meta = run.meta
        if meta:
            series.labels["library"] = f"{meta.get('openssl_version')} (system libcrypto)"
            series.labels["version"] = backends.version_of(meta.get("openssl_version"))
        if run.row:
            t = series.timer
            t.batch, t.detail, t.key_source = run.row.get("batch"), run.row.get("detail"), run.row.get("key_source")
            if run.row.get("key_bits"):
                series.labels["key_bits"] = run.row["key_bits"]
        if run.end:
            series.timer.stopped = run.end.get("stopped")
        _fill(series, run.samples, row.size_bytes, row.alg.bulk, meta.get("timer_overhead_ns") if meta else None)
        if run.error:
            R.add_failure(series, run.error)
    R.finalize_series(series)
    _finish_rates(series, row.size_bytes, row.alg.bulk)
    return series, meta, None


def run_crypto(
    rows: list[Row], p: CryptoParams, doc: Result, run: Run | None = None, progress: Progress | None = None
) -> Result:
    """Measure every row in order, saving the Result after each one.

    progress(event, row, index, total, series) is called with event 'start' and 'done'.
    """
    total = len(rows)
    for i, row in enumerate(rows):
        if progress:
            progress("start", row, i, total, None)
        series, meta, tool_meta = _measure_row(row, p)
        host.record_probe_meta(doc.host, meta)
        if tool_meta:
            doc.host.setdefault("libraries", {})[row.library] = {
                k: tool_meta.get(k) for k in ("tool", "library", "version", "clock", "timer_overhead_ns")
            }
        doc.series.append(series)
        if run is not None:
            run.save(doc)
        if progress:
            progress("done", row, i, total, series)
    return doc


def measurement_failures(doc: Result) -> list[Series]:
    return [s for s in doc.series if s.status in ("failed", "partial")]
