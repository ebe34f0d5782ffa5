"""The HTML report: one self-contained file (inline CSS and SVG, no scripts, no network) with
plots and tables. This module and the html_* modules compute each section's view (plain values);
the Jinja2 templates in ``templates/`` (autoescaping, html_env.ENV) make the markup, so every piece
of text from a Result is escaped where it reaches the page."""

from __future__ import annotations

import contextlib
import json
import logging
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ..core.result import reading
from ..core.result_schema import CryptoDerived, Result, Series
from . import (
    html_connect,
    html_device,
    html_handshake,
    html_libraries,
    html_mac,
    html_mqtt_load,
    html_netem,
    html_plan,
    html_server,
    html_signer,
    html_whatif,
)
from .html_env import cell, figure_view, hcell, render_page
from .html_libraries import view as libraries_view
from .html_server import provenance_rows
from .plots import Plot, slug
from .units import fmt_bytes_per_s, fmt_rate, fmt_time_us
from .views.answers import key_findings
from .views.series import cpu_p50_us, failure_reason

BULK = ("aead", "mac", "hash")
SIG_FAMILIES = ("rsa", "ecdsa", "eddsa", "pq-sig")


def _crypto(doc: Result) -> list[Series]:
    return [s for s in doc.series if s.kind == "crypto"]


def _openssl(series: Sequence[Series]) -> list[Series]:
    """The series measured with OpenSSL (one library per plot: the others are in the cross-library section)."""
    return [s for s in series if (s.labels.get("backend") or "openssl") == "openssl"]


def header(doc: Result) -> list[tuple[str, object]]:
    """The run's metadata lines (name, value). A line is shown only where it applies to this Result: the probe's
    libcrypto only when the probe ran, the post-quantum library only with post-quantum rows, the
    servers' software and the load generator only for server runs."""
    h = doc.host
    probe = h.get("probe") or {}
    crypto_lib = h.get("cryptography") or {}
    rows = [
        ("run", doc.run_id),
        ("command", " ".join(doc.command)),
        ("status", doc.status),
        ("started", doc.started),
        ("finished", doc.finished),
        (
            "CPU",
            f"{h.get('cpu_model')} — {h.get('cpu_count')} cores ({h.get('cpu_affinity')} usable), "
            f"governor {h.get('cpu_governor') or 'n/a'}",
        ),
        ("system", f"{h.get('os')}, kernel {h.get('kernel')}, {h.get('machine')}"),
    ]
    if h.get("openssl"):
        rows.append(
            (
                "libcrypto (probe)",
                f"{h['openssl']}; timer overhead {probe.get('timer_overhead_ns', 'n/a')} ns per sample boundary",
            )
        )
    pq = any(s.kind == "crypto" and str(s.labels.get("family", "")).startswith("pq-") for s in doc.series)
    if pq and crypto_lib:
        rows.append(
            ("post-quantum library", f"cryptography {crypto_lib.get('version')} with {crypto_lib.get('openssl')}")
        )

    rows += provenance_rows(doc)
    rows += [
        ("secperf", f"{h.get('secperf_version')} (git {h.get('secperf_git') or 'unknown'}), Python {h.get('python')}"),
        ("load average at start", ", ".join(f"{x:.2f}" for x in h.get("loadavg_at_start") or []) or "n/a"),
        ("parameters", json.dumps(doc.params, sort_keys=True)),
    ]
    skipped = doc.params.get("skipped_links")
    if skipped:  # a scenario's link rows left out because links cannot be built on this machine
        rows.append(("emulated links skipped", f"{', '.join(skipped['networks'])}: {skipped['reason']}"))
    return rows


def answers(doc: Result) -> list[dict[str, Any]]:
    """Study S5's questions and answers computed from this run (analysis.s5)."""
    return [{"question": a["question"], "answer": a["answer"]} for a in doc.analysis.s5 or []]


def strength_plots(series: Sequence[Series]) -> list[Plot]:
    out = []
    for ops, title in (
        (("sign",), "Signing time by security strength"),
        (("verify",), "Verification time by security strength"),
        (("derive", "encaps"), "Key agreement / encapsulation by security strength"),
    ):
        groups: dict[int, list[tuple[str, float, float, float]]] = {}
        for s in series:
            lab, sm = s.labels, s.summary
            if lab["family"] in BULK or lab["op"] not in ops or sm is None:
                continue
            lo, hi = sm.median_ci95_us
            groups.setdefault(lab["security_bits"], []).append((f"{lab['alg']} {lab['op']}", sm.p50_us, lo, hi))
        if not groups:
            continue
        g = [(f"{bits}-bit security", sorted(bars, key=lambda b: b[1])) for bits, bars in sorted(groups.items())]
        out.append(
            Plot(
                slug("crypto-strength", ops[0]),
                "bars",
                title,
                g,
                "Bars: P50 per operation (log scale); whiskers: bootstrap 95% interval of the median. "
                "Groups are NIST SP 800-57 strength rows.",
                {"unit": "µs", "log": True},
            )
        )
    return out


def distribution_plots(series: Sequence[Series]) -> list[Plot]:
    out = []
    fams: dict[str, list[tuple[str, list[float]]]] = {}
    for s in series:
        lab = s.labels
        if lab["family"] in BULK:
            continue
        fams.setdefault(lab["family"], []).append((f"{lab['alg']} {lab['op']}", s.values_us))
    titles = {
        "rsa": "RSA",
        "ecdsa": "ECDSA",
        "eddsa": "EdDSA",
        "kex": "Key agreement",
        "pq-kem": "ML-KEM",
        "pq-sig": "ML-DSA",
    }
    for fam, groups in fams.items():
        out.append(
            Plot(
                slug("crypto-distribution", fam),
                "box",
                f"{titles.get(fam, fam)}: time per operation",
                groups,
                "Each dot is one sample (a batch's time per operation); box: P25–P75, line: median, whiskers: 1.5 IQR.",
                {"unit": "µs"},
            )
        )
    bulk: dict[str, list[tuple[str, list[float]]]] = {}
    for s in series:
        lab = s.labels
        if lab["family"] in BULK and s.values_us:
            bulk.setdefault(f"{lab['size_bytes']} bytes", []).append((f"{lab['alg']} {lab['op']}", s.values_us))
    for size, groups in sorted(bulk.items(), key=lambda kv: int(kv[0].split()[0])):
        out.append(
            Plot(
                slug("crypto-bulk", size),
                "box",
                f"AEAD, MAC and hash on {size}",
                groups,
                "Per-message time including set-up (IV, key schedule re-use, tag).",
                {"unit": "µs"},
            )
        )
    return out


def growth_plots(series: Sequence[Series]) -> list[Plot]:
    out = []
    rsa: dict[str, list[tuple[int, float]]] = {}
    for s in series:
        lab, p50 = s.labels, s.p50_us
        if (
            lab["family"] == "rsa"
            and lab["alg"].removeprefix("rsa-").isascii()
            and lab["alg"].removeprefix("rsa-").isdigit()
            and p50 is not None
            and lab["op"] in ("sign", "verify")
        ):
            rsa.setdefault(f"RSA {lab['op']}", []).append((lab["key_bits"], p50))
    ec: dict[str, list[tuple[int, float]]] = {}
    for s in series:
        lab, p50 = s.labels, s.p50_us
        if lab["family"] == "ecdsa" and p50 is not None and lab["op"] in ("sign", "verify"):
            ec.setdefault(f"ECDSA {lab['op']}", []).append((lab["key_bits"], p50))
    lines = [(k, sorted(v)) for k, v in list(rsa.items()) + list(ec.items()) if len(v) >= 2]
    if lines:
        out.append(
            Plot(
                "crypto-growth-key-size",
                "line",
                "Cost against key size",
                lines,
                "RSA modulus bits and EC field bits on the same axis; log-log, so a straight line is a power law.",
                {"x_label": "key size (bits)", "y_label": "P50 per operation (µs)", "log_x": True, "log_y": True},
            )
        )
    bulk: dict[str, list[tuple[int, float]]] = {}
    for s in series:
        lab, nb = s.labels, s.derived_as(CryptoDerived).ns_per_byte
        if lab["family"] in BULK and nb:
            bulk.setdefault(f"{lab['alg']} {lab['op']}", []).append((lab["size_bytes"], nb))
    blines = [(k, sorted(v)) for k, v in bulk.items() if len(v) >= 2]
    if blines:
        out.append(
            Plot(
                "crypto-growth-message-size",
                "line",
                "Bulk cost per byte against message size",
                blines,
                "Small messages pay the fixed per-message cost: that is what CAN frames and sensor readings see.",
                {"x_label": "message size (bytes)", "y_label": "ns per byte (P50)", "log_x": True, "log_y": True},
            )
        )
    return out


def series_head() -> list[Any]:
    return [
        "algorithm",
        "op",
        "bytes",
        "bits",
        "n",
        "mean",
        "sd",
        "min",
        "P50",
        "95% CI of P50",
        "P90",
        "P99",
        "max",
        "CPU P50",
        "ops/s",
        "throughput",
        "ns/byte",
        hcell("library"),
    ]


def series_rows(series: Sequence[Series]) -> list[list[Any]]:
    """The table of every crypto series: times per operation, or the reason a row has none."""
    rows = []
    for s in series:
        lab, sm, d = s.labels, s.summary, s.derived_as(CryptoDerived)
        size = lab["size_bytes"] if lab["family"] in BULK else ""
        if sm is None:
            rows.append(
                [
                    lab["alg"],
                    lab["op"],
                    size,
                    lab["security_bits"],
                    0,
                    cell(f"{s.status}: {failure_reason(s)}", cls="l fail", colspan=13),
                ]
            )
            continue
        lo, hi = sm.median_ci95_us
        cells = [fmt_time_us(v) for v in (sm.mean_us, sm.sd_us, sm.min_us, sm.p50_us)]
        cells += [f"{fmt_time_us(lo)}–{fmt_time_us(hi)}"]
        cells += [fmt_time_us(v) for v in (sm.p90_us, sm.p99_us, sm.max_us)]
        cells += [
            fmt_time_us(cpu_p50_us(s)),
            fmt_rate(d.ops_per_s),
            fmt_bytes_per_s(d.bytes_per_s) if d.bytes_per_s else "",
            f"{d.ns_per_byte:.2f}" if d.ns_per_byte else "",
        ]
        rows.append(
            [lab["alg"], lab["op"], size, lab["security_bits"], sm.n, *cells, cell(lab.get("library"), cls="l muted")]
        )
    return rows


def failures_view(doc: Result) -> dict[str, Any] | None:
    """Every failure of every series with its reason."""
    rows = [[s.id, s.status, cell(f.reason, cls="fail")] for s in doc.series for f in s.failures]
    if not rows:
        return None
    return {
        "template": "failures.html.j2",
        "title": "Failures and unsupported rows",
        "head": ["series", "status", "reason"],
        "rows": rows,
    }


def strength_view(doc: Result) -> dict[str, Any] | None:
    st = doc.analysis.strength
    if not st or not st.get("rows"):
        return None
    ops = sorted({k for r in st["rows"] for k in r if k.endswith("_p50_us")})
    return {
        "bits": st["security_bits"],
        "head": ["algorithm", "family", *(f"{o.removesuffix('_p50_us')} P50" for o in ops)],
        "rows": [[r["alg"], r["family"], *(fmt_time_us(r.get(o)) for o in ops)] for r in st["rows"]],
    }


def crypto_view(doc: Result) -> dict[str, Any] | None:
    """The crypto primitives' part: S5's answers, the strength table, the plots, the libraries side
    by side and every series."""

    series_all = _crypto(doc)
    if not series_all:
        return None
    series = _openssl(series_all)
    groups = [
        (title, [figure_view(p) for p in make(series)])
        for title, make in (
            ("Cost at equal security strength", strength_plots),
            ("Distributions", distribution_plots),
            ("Growth with key and message size", growth_plots),
        )
    ]
    return {
        "template": "crypto.html.j2",
        "title": "Crypto primitives: what this report shows",
        "answers": answers(doc),
        "strength": strength_view(doc),
        "plot_groups": [(t, figs) for t, figs in groups if figs],
        "libraries": libraries_view(doc),
        "series_head": series_head(),
        "series_rows": series_rows(series_all),
    }


def _of_kind(doc: Result, kind: str) -> list[Series]:
    return [s for s in doc.series if s.kind == kind]


def plots_of(doc: Result) -> list[Plot]:
    """Every plot of the report, in the report's order (what `--figures` writes)."""

    series = _openssl(_crypto(doc))
    out = strength_plots(series) + distribution_plots(series) + growth_plots(series) if series else []
    out += html_libraries.plots(doc)
    handshakes = _of_kind(doc, "handshake")
    if handshakes:
        out += html_handshake.plots(handshakes) + html_netem.sweep_plots(handshakes)
    out += html_signer.plots(_of_kind(doc, "signer"))
    out += html_connect.plots(doc) + html_mac.plots(doc) + html_whatif.plots(doc) + html_device.plots(doc)

    out += html_server.plots(doc)
    out += html_plan.plots(doc) + html_mqtt_load.plots(doc)
    return out


LOG = logging.getLogger("secperf.report")


@contextlib.contextmanager
def library_warnings(log: Path | None) -> Iterator[None]:
    """Warnings that matplotlib and other libraries raise while the report is drawn (e.g.
    constrained_layout giving up on a crowded figure) go into the run's log, not the terminal:
    they concern the drawing, not the measurement. Without a log they go to the `secperf.report`
    logger at INFO (silent unless a caller configures logging)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    lines = [
        f"{time.strftime('%Y-%m-%dT%H:%M:%S')} report: {w.category.__name__}: {w.message} "
        f"({Path(w.filename).name}:{w.lineno})"
        for w in caught
    ]
    if not lines:
        return
    if log is not None:
        try:
            with open(log, "a", encoding="utf-8") as f:
                f.write("".join(line + "\n" for line in lines))
            return
        except OSError:
            pass  # an unwritable log loses the drawing warnings, never the report
    for line in lines:
        LOG.info(line)


def render(doc: Result, log: Path | None = None) -> str:
    """The report page of a Result (or of its JSON object, validated here); library warnings raised
    while drawing go to `log` (the run's log file)."""
    result = doc
    with library_warnings(log):
        return _render(result)


def _render(doc: Result) -> str:
    where = f"Result {doc.run_id}".strip()
    sections: list[dict[str, Any]] = []  # each a view: its template, its id and its first heading (the contents)
    with reading(where, "the crypto series (series of kind crypto, analysis.s5, analysis.strength)"):
        crypto = crypto_view(doc)
    if crypto:
        sections.append({**crypto, "id": "crypto"})
    handshakes = _of_kind(doc, "handshake")
    # each section is made from what validated; a malformed part names itself (exit 2)
    makers: tuple[tuple[str, str, Callable[[], dict[str, Any] | None]], ...] = (
        ("handshake", "the handshake series", lambda: html_handshake.view(handshakes)),
        ("netem", "the handshake series' link figures", lambda: html_netem.view(handshakes)),
        ("signer", "the signer series", lambda: html_signer.view(_of_kind(doc, "signer"))),
        ("jwt", "the jwt series", lambda: html_signer.view(_of_kind(doc, "jwt"), "JWT authentication")),
        ("connect", "the connect series", lambda: html_connect.view(doc)),
        ("mac", "the MAC and CAN figures (analysis.can, analysis.cortexm)", lambda: html_mac.view(doc)),
        ("whatif", "the what-if figures (analysis.whatif, whatif series)", lambda: html_whatif.view(doc)),
        ("plan", "the plan (analysis.plan)", lambda: html_plan.view(doc)),
        ("device", "the device series", lambda: html_device.view(doc)),
        ("server", "the server and fleet figures (analysis.fleet, server series)", lambda: html_server.view(doc)),
        ("mqtt_load", "the MQTT load (analysis.mqtt_load)", lambda: html_mqtt_load.view(doc)),
        ("failures", "the failures of the series", lambda: failures_view(doc)),
    )
    for sid, part, make in makers:
        with reading(where, part):
            v = make()
        if v:
            sections.append({**v, "id": sid})
    with reading(where, "its host metadata or key findings (host, analysis)"):
        context = {
            "run_id": doc.run_id,
            "kind": doc.kind,
            "header": header(doc),
            "glance": at_a_glance(doc, {v["id"] for v in sections}),
        }
    with reading(where, "the values the report shows"):  # a value of a hostile type met in a template
        return render_page("page.html.j2", sections=sections, **context)


def at_a_glance(doc: Result, present: set[str]) -> list[dict[str, Any]]:
    """The answer first: the run's key findings, each linking to the section it comes from (when
    the page has that section)."""

    return [{"text": f["text"], "section": f["section"], "linked": f["section"] in present} for f in key_findings(doc)]
