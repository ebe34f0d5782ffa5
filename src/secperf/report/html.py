"""The HTML report: one self-contained file (inline CSS and SVG, no scripts, no network) with
plots and tables. Every piece of text from a Result is escaped before it reaches the page."""

from __future__ import annotations

import contextlib
import json
import logging
import time
import warnings
from pathlib import Path

from ..core.result import reading
from .plots import Plot, slug
from .svg import figure
from .units import esc as e, fmt_bytes_per_s, fmt_rate, fmt_time_us

CSS = """
body{font-family:system-ui,sans-serif;margin:0 auto;max-width:1500px;padding:1.2em 1.6em;color:#222;line-height:1.45}
h1{font-size:1.5em;margin-bottom:.2em} h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
h3{font-size:1.05em;margin-top:1.4em} p{max-width:110ch}
table{border-collapse:collapse;margin:.6em 0;font-size:13px;display:block;overflow-x:auto;max-width:100%}
th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:right;vertical-align:top}
th{background:#f5f5f5;white-space:nowrap} td.l,th.l{text-align:left} td.l:first-child,td:not(.l){white-space:nowrap}
.meta td{text-align:left;white-space:normal} .meta th{width:13em}
.muted{color:#777} .fail{color:#b00020} .warn{color:#a65f00}
.status-complete{color:#067d17} .status-interrupted,.status-running,.status-abandoned{color:#a65f00} .status-failed{color:#b00020}
figure{margin:1em 0} figure svg{width:100%;height:auto} figcaption{font-size:12.5px;color:#555;max-width:110ch}
.answers td{text-align:left;white-space:normal} .answers td:first-child{font-weight:600;width:28%}
code{background:#f3f3f3;padding:0 3px}
.glance{background:#f6f9fc;border-left:4px solid #2f6fb0;padding:.6em 1.2em .6em 2em;font-size:15px;max-width:130ch}
.glance li{margin:.25em 0} nav.toc{font-size:13px;margin:1em 0} nav.toc ol{margin:.2em 0;column-width:36em} td.nw{white-space:nowrap}
p.warn{border-left:4px solid #a65f00;padding:.3em .8em;background:#fff8ef}
"""

BULK = ("aead", "mac", "hash")
SIG_FAMILIES = ("rsa", "ecdsa", "eddsa", "pq-sig")


def _crypto(doc: dict) -> list[dict]:
    return [s for s in doc["series"] if s.get("kind") == "crypto"]


def _section(title: str, body: str, intro: str = "") -> str:
    return f"<h2>{e(title)}</h2>" + (f"<p>{intro}</p>" if intro else "") + body


def header(doc: dict) -> str:
    """The run's metadata. A line is shown only where it applies to this Result: the probe's
    libcrypto only when the probe ran, the post-quantum library only with post-quantum rows, the
    servers' software and the load generator only for server runs."""
    h = doc["host"]
    probe = h.get("probe") or {}
    crypto_lib = h.get("cryptography") or {}
    rows = [
        ("run", doc["run_id"]), ("command", " ".join(doc.get("command", []))),
        ("status", doc["status"]), ("started", doc.get("started")), ("finished", doc.get("finished")),
        ("CPU", f"{h.get('cpu_model')} — {h.get('cpu_count')} cores ({h.get('cpu_affinity')} usable), "
                f"governor {h.get('cpu_governor') or 'n/a'}"),
        ("system", f"{h.get('os')}, kernel {h.get('kernel')}, {h.get('machine')}"),
    ]
    if h.get("openssl"):
        rows.append(("libcrypto (probe)", f"{h['openssl']}; timer overhead "
                                          f"{probe.get('timer_overhead_ns', 'n/a')} ns per sample boundary"))
    pq = any(s.get("kind") == "crypto" and str((s.get("labels") or {}).get("family", "")).startswith("pq-")
             for s in doc.get("series", []))
    if pq and crypto_lib:
        rows.append(("post-quantum library", f"cryptography {crypto_lib.get('version')} with {crypto_lib.get('openssl')}"))
    from .html_server import provenance_rows
    rows += provenance_rows(doc)
    rows += [
        ("secperf", f"{h.get('secperf_version')} (git {h.get('secperf_git') or 'unknown'}), "
                    f"Python {h.get('python')}"),
        ("load average at start", ", ".join(f"{x:.2f}" for x in h.get("loadavg_at_start") or []) or "n/a"),
        ("parameters", json.dumps(doc.get("params", {}), sort_keys=True)),
    ]
    skipped = (doc.get("params") or {}).get("skipped_links")
    if skipped:  # a scenario's link rows left out because links cannot be built on this machine
        rows.append(("emulated links skipped", f"{', '.join(skipped['networks'])}: {skipped['reason']}"))
    trs = "".join(f"<tr><th class='l'>{e(k)}</th><td class='{'status-' + e(v) if k == 'status' else ''}'>{e(v)}</td></tr>"
                  for k, v in rows)
    return f"<table class='meta'>{trs}</table>"


def explainer() -> str:
    return ("<p>Each row is one operation on one algorithm, timed inside one process after a warm-up. "
            "Fast operations are timed in batches so that reading the clock costs under 1% of a sample; "
            "a value is the batch's wall time divided by its operations. <b>P50</b> is the median time per "
            "operation and its <b>95% interval</b> comes from a bootstrap of the samples. Signatures hash "
            "their 32-byte message inside each operation (SHA-256 unless the run says otherwise). "
            "<b>Bits</b> is the NIST SP 800-57 security strength, so rows with the same bits protect "
            "equally well and can be compared on cost. Classical algorithms run in the system OpenSSL "
            "through <code>secperf-probe</code>; post-quantum rows run through the Python "
            "<code>cryptography</code> package and its bundled OpenSSL, as their library column says.</p>")


def answers_section(doc: dict) -> str:
    ans = doc.get("analysis", {}).get("s5") or []
    if not ans:
        return ""
    trs = "".join(f"<tr><td>{e(a['question'])}</td><td>{e(a['answer'])}</td></tr>" for a in ans)
    return _section("Study S5 questions, answered from this run",
                    f"<table class='answers'><tr><th class='l'>question</th><th class='l'>answer</th></tr>{trs}</table>",
                    "Computed from the P50 values below; each answer's figures are in result.json "
                    "under <code>analysis.s5</code>.")


def strength_plots(series: list[dict]) -> list[Plot]:
    out = []
    for ops, title in ((("sign",), "Signing time by security strength"),
                       (("verify",), "Verification time by security strength"),
                       (("derive", "encaps"), "Key agreement / encapsulation by security strength")):
        groups: dict[int, list] = {}
        for s in series:
            lab, sm = s["labels"], s["summary"]
            if lab["family"] in BULK or lab["op"] not in ops or not sm:
                continue
            lo, hi = sm["median_ci95_us"]
            groups.setdefault(lab["security_bits"], []).append(
                (f"{lab['alg']} {lab['op']}", sm["p50_us"], lo, hi))
        if not groups:
            continue
        g = [(f"{bits}-bit security", sorted(bars, key=lambda b: b[1])) for bits, bars in sorted(groups.items())]
        out.append(Plot(slug("crypto-strength", ops[0]), "bars", title, g,
                        "Bars: P50 per operation (log scale); whiskers: bootstrap 95% interval of the median. "
                        "Groups are NIST SP 800-57 strength rows.", {"unit": "µs", "log": True}))
    return out


def distribution_plots(series: list[dict]) -> list[Plot]:
    out = []
    fams: dict[str, list] = {}
    for s in series:
        lab = s["labels"]
        if lab["family"] in BULK:
            continue
        fams.setdefault(lab["family"], []).append((f"{lab['alg']} {lab['op']}", s["values_us"]))
    titles = {"rsa": "RSA", "ecdsa": "ECDSA", "eddsa": "EdDSA", "kex": "Key agreement",
              "pq-kem": "ML-KEM", "pq-sig": "ML-DSA"}
    for fam, groups in fams.items():
        out.append(Plot(slug("crypto-distribution", fam), "box", f"{titles.get(fam, fam)}: time per operation",
                        groups, "Each dot is one sample (a batch's time per operation); box: P25–P75, line: "
                        "median, whiskers: 1.5 IQR.", {"unit": "µs"}))
    bulk: dict[str, list] = {}
    for s in series:
        lab = s["labels"]
        if lab["family"] in BULK and s["values_us"]:
            bulk.setdefault(f"{lab['size_bytes']} bytes", []).append((f"{lab['alg']} {lab['op']}", s["values_us"]))
    for size, groups in sorted(bulk.items(), key=lambda kv: int(kv[0].split()[0])):
        out.append(Plot(slug("crypto-bulk", size), "box", f"AEAD, MAC and hash on {size}", groups,
                        "Per-message time including set-up (IV, key schedule re-use, tag).", {"unit": "µs"}))
    return out


def growth_plots(series: list[dict]) -> list[Plot]:
    out = []
    rsa: dict[str, list] = {}
    for s in series:
        lab = s["labels"]
        if lab["family"] == "rsa" and lab["alg"].removeprefix("rsa-").isascii() and lab["alg"].removeprefix("rsa-").isdigit() and s["summary"] \
                and lab["op"] in ("sign", "verify"):
            rsa.setdefault(f"RSA {lab['op']}", []).append((lab["key_bits"], s["summary"]["p50_us"]))
    ec: dict[str, list] = {}
    for s in series:
        lab = s["labels"]
        if lab["family"] == "ecdsa" and s["summary"] and lab["op"] in ("sign", "verify"):
            ec.setdefault(f"ECDSA {lab['op']}", []).append((lab["key_bits"], s["summary"]["p50_us"]))
    lines = [(k, sorted(v)) for k, v in list(rsa.items()) + list(ec.items()) if len(v) >= 2]
    if lines:
        out.append(Plot("crypto-growth-key-size", "line", "Cost against key size", lines,
                        "RSA modulus bits and EC field bits on the same axis; log-log, so a straight line "
                        "is a power law.", {"x_label": "key size (bits)", "y_label": "P50 per operation (µs)",
                                            "log_x": True, "log_y": True}))
    bulk: dict[str, list] = {}
    for s in series:
        lab, d = s["labels"], s["derived"]
        if lab["family"] in BULK and d.get("ns_per_byte"):
            bulk.setdefault(f"{lab['alg']} {lab['op']}", []).append((lab["size_bytes"], d["ns_per_byte"]))
    blines = [(k, sorted(v)) for k, v in bulk.items() if len(v) >= 2]
    if blines:
        out.append(Plot("crypto-growth-message-size", "line", "Bulk cost per byte against message size", blines,
                        "Small messages pay the fixed per-message cost: that is what CAN frames and "
                        "sensor readings see.", {"x_label": "message size (bytes)", "y_label": "ns per byte (P50)",
                                                 "log_x": True, "log_y": True}))
    return out


def _plots_section(title: str, plots: list[Plot]) -> str:
    return _section(title, "".join(figure(p) for p in plots)) if plots else ""


def series_table(series: list[dict]) -> str:
    head = ("<tr><th class='l'>algorithm</th><th class='l'>op</th><th>bytes</th><th>bits</th><th>n</th>"
            "<th>mean</th><th>sd</th><th>min</th><th>P50</th><th>95% CI of P50</th><th>P90</th><th>P99</th>"
            "<th>max</th><th>CPU P50</th><th>ops/s</th><th>throughput</th><th>ns/byte</th>"
            "<th class='l'>library</th></tr>")
    trs = []
    for s in series:
        lab, sm, d = s["labels"], s["summary"], s["derived"]
        size = lab["size_bytes"] if lab["family"] in BULK else ""
        if not sm:
            reason = s["failures"][-1]["reason"] if s["failures"] else s["status"]
            trs.append(f"<tr><td class='l'>{e(lab['alg'])}</td><td class='l'>{e(lab['op'])}</td><td>{e(size)}</td>"
                       f"<td>{e(lab['security_bits'])}</td><td>0</td><td class='l fail' colspan='13'>{e(s['status'])}: {e(reason)}</td></tr>")
            continue
        cpu = (s.get("cpu_summary") or {}).get("p50_us")
        lo, hi = sm["median_ci95_us"]
        cells = [fmt_time_us(sm[k]) for k in ("mean_us", "sd_us", "min_us", "p50_us")]
        cells += [f"{fmt_time_us(lo)}–{fmt_time_us(hi)}"]
        cells += [fmt_time_us(sm[k]) for k in ("p90_us", "p99_us", "max_us")]
        cells += [fmt_time_us(cpu), fmt_rate(d.get("ops_per_s")),
                  fmt_bytes_per_s(d.get("bytes_per_s")) if d.get("bytes_per_s") else "",
                  f"{d['ns_per_byte']:.2f}" if d.get("ns_per_byte") else ""]
        tds = "".join(f"<td>{e(c)}</td>" for c in cells)
        trs.append(f"<tr><td class='l'>{e(lab['alg'])}</td><td class='l'>{e(lab['op'])}</td><td>{e(size)}</td>"
                   f"<td>{e(lab['security_bits'])}</td><td>{e(sm['n'])}</td>{tds}"
                   f"<td class='l muted'>{e(lab.get('library'))}</td></tr>")
    return _section("All crypto series", f"<table>{head}{''.join(trs)}</table>",
                    "Times per operation. CPU P50 is the thread's CPU time; a large gap to wall time means "
                    "the process was descheduled.")


def failures_section(doc: dict) -> str:
    bad = [s for s in doc["series"] if s["failures"]]
    if not bad:
        return ""
    trs = "".join(f"<tr><td class='l'>{e(s['id'])}</td><td class='l'>{e(s['status'])}</td>"
                  f"<td class='l fail'>{e(f['reason'])}</td></tr>" for s in bad for f in s["failures"])
    return _section("Failures and unsupported rows",
                    f"<table><tr><th class='l'>series</th><th class='l'>status</th><th class='l'>reason</th></tr>{trs}</table>")


def strength_section(doc: dict) -> str:
    st = doc.get("analysis", {}).get("strength")
    if not st or not st.get("rows"):
        return ""
    ops = sorted({k for r in st["rows"] for k in r if k.endswith("_p50_us")})
    head = "<tr><th class='l'>algorithm</th><th class='l'>family</th>" + "".join(
        f"<th>{e(o.removesuffix('_p50_us'))} P50</th>" for o in ops) + "</tr>"
    trs = "".join("<tr><td class='l'>" + e(r["alg"]) + "</td><td class='l'>" + e(r["family"]) + "</td>" +
                  "".join(f"<td>{e(fmt_time_us(r.get(o)))}</td>" for o in ops) + "</tr>" for r in st["rows"])
    return _section(f"Algorithms at {st['security_bits']}-bit security", f"<table>{head}{trs}</table>")


def plots_of(doc: dict) -> list[Plot]:
    """Every plot of the report, in the report's order (what `--figures` writes)."""
    from . import (html_connect, html_device, html_handshake, html_libraries, html_mac, html_netem, html_plan,
                   html_signer, html_whatif)
    series = [s for s in _crypto(doc) if (s["labels"].get("backend") or "openssl") == "openssl"]
    out = strength_plots(series) + distribution_plots(series) + growth_plots(series) if series else []
    out += html_libraries.plots(doc)
    handshakes = [s for s in doc["series"] if s.get("kind") == "handshake"]
    if handshakes:
        out += html_handshake.plots(handshakes) + html_netem.sweep_plots(handshakes)
    out += html_signer.plots([s for s in doc["series"] if s.get("kind") == "signer"])
    out += html_connect.plots(doc) + html_mac.plots(doc) + html_whatif.plots(doc) + html_device.plots(doc)
    from . import html_server
    out += html_server.plots(doc)
    out += html_plan.plots(doc)
    return out


def _server_section(doc: dict) -> str:
    from .html_server import section
    return section(doc)


LOG = logging.getLogger("secperf.report")


@contextlib.contextmanager
def library_warnings(log: Path | None):
    """Warnings that matplotlib and other libraries raise while the report is drawn (e.g.
    constrained_layout giving up on a crowded figure) go into the run's log, not the terminal:
    they concern the drawing, not the measurement. Without a log they go to the `secperf.report`
    logger at INFO (silent unless a caller configures logging)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield
    lines = [f"{time.strftime('%Y-%m-%dT%H:%M:%S')} report: {w.category.__name__}: {w.message} "
             f"({Path(w.filename).name}:{w.lineno})" for w in caught]
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


def render(doc: dict, log: Path | None = None) -> str:
    """The report page; library warnings raised while drawing go to `log` (the run's log file)."""
    with library_warnings(log):
        return _render(doc)


def _render(doc: dict) -> str:
    from .html_handshake import section as handshake_section
    from .html_connect import section as connect_section
    from .html_netem import section as netem_section
    from .html_mac import section as mac_section
    from .html_signer import section as signer_section
    from .html_whatif import section as whatif_section
    from .html_plan import section as plan_section
    from .html_libraries import section as libraries_section
    where = f"Result {doc.get('run_id', '')}".strip()
    with reading(where, "the crypto series (series of kind crypto, analysis.s5, analysis.strength)"):
        series_all = _crypto(doc)
        # one library per plot: other libraries' rows are in the cross-library section
        series = [s for s in series_all if (s["labels"].get("backend") or "openssl") == "openssl"]
    from .html_device import section as device_section
    handshakes = [s for s in doc["series"] if s.get("kind") == "handshake"]
    parts: list[tuple[str, str]] = []  # (section id, html): each part becomes a <section> in the contents
    if series_all:
        with reading(where, "the crypto series (series of kind crypto, analysis.s5, analysis.strength)"):
            parts += [("crypto", "".join([_section("Crypto primitives: what this report shows", explainer()),
                                           answers_section(doc), strength_section(doc),
                                           _plots_section("Cost at equal security strength", strength_plots(series)),
                                           _plots_section("Distributions", distribution_plots(series)),
                                           _plots_section("Growth with key and message size", growth_plots(series)),
                                           libraries_section(doc), series_table(series_all)]))]
    # each section is rendered from what validated; a malformed part names itself (exit 2)
    for sid, part, make in (
            ("handshake", "the handshake series", lambda: handshake_section(handshakes)),
            ("netem", "the handshake series' link figures", lambda: netem_section(handshakes)),
            ("signer", "the signer series", lambda: signer_section([s for s in doc["series"] if s.get("kind") == "signer"])),
            ("jwt", "the jwt series", lambda: signer_section([s for s in doc["series"] if s.get("kind") == "jwt"],
                                                             "JWT authentication")),
            ("connect", "the connect series", lambda: connect_section(doc)),
            ("mac", "the MAC and CAN figures (analysis.can, analysis.cortexm)", lambda: mac_section(doc)),
            ("whatif", "the what-if figures (analysis.whatif, whatif series)", lambda: whatif_section(doc)),
            ("plan", "the plan (analysis.plan)", lambda: plan_section(doc)),
            ("device", "the device series", lambda: device_section(doc)),
            ("server", "the server and fleet figures (analysis.fleet, server series)", lambda: _server_section(doc)),
            ("failures", "the failures of the series", lambda: failures_section(doc))):
        with reading(where, part):
            parts.append((sid, make()))
    parts = [(sid, html) for sid, html in parts if html]
    with reading(where, "its host metadata or key findings (host, analysis)"):
        body = [f"<h1>secperf report</h1><p class='muted'>{e(doc['run_id'])} — {e(doc['kind'])}</p>",
                at_a_glance(doc, {sid for sid, _ in parts}), contents(parts), header(doc)]
    body += [f"<section id='sec-{sid}'>{html}</section>" for sid, html in parts]
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            f"<meta name='viewport' content='width=device-width'><title>secperf — {e(doc['run_id'])}</title>"
            f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>\n")


def at_a_glance(doc: dict, present: set[str]) -> str:
    """The answer first: the run's key findings, each linking to the section it comes from."""
    from .views.answers import key_findings
    items = [f for f in key_findings(doc)]
    if not items:
        return ""
    lis = "".join(f"<li>{e(f['text'])}" + (f" <a href='#sec-{e(f['section'])}'>details</a>"
                                           if f["section"] in present else "") + "</li>" for f in items)
    return f"<h2 id='at-a-glance'>At a glance</h2><ul class='glance'>{lis}</ul>"


def contents(parts: list[tuple[str, str]]) -> str:
    """A table of contents: each section's first heading, linking to it."""
    import re
    links = []
    for sid, html in parts:
        m = re.search(r"<h2[^>]*>(.*?)</h2>", html, re.S)
        if m:
            links.append(f"<li><a href='#sec-{e(sid)}'>{m.group(1)}</a></li>")  # heading text is escaped already
    return f"<nav class='toc'><b>Contents</b><ol>{''.join(links)}</ol></nav>" if links else ""
