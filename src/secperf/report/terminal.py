"""Terminal output with rich: result tables, S5 answers, comparisons and a progress bar."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console, JustifyMethod
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from ..core.result_schema import CryptoDerived, HandshakeDerived, Result, Series, SignerDerived
from .fit import print_table, shared_keys
from .terminal_compare import measured_table
from .units import fmt_bytes_per_s, fmt_rate, fmt_time_us
from .views.answers import key_findings
from .views.connect import series_rows, summary
from .views.handshake import message_matrix, verifications

FAMILY_TITLES = {
    "rsa": "RSA signatures",
    "ecdsa": "ECDSA signatures",
    "eddsa": "EdDSA signatures",
    "kex": "Key agreement",
    "aead": "AEAD",
    "mac": "MACs",
    "hash": "Hashes",
    "pq-kem": "Post-quantum KEM",
    "pq-sig": "Post-quantum signatures",
}


MIN_WIDTH = 20


def _columns_width() -> int | None:
    """COLUMNS when it is a usable width; None when unset. COLUMNS=0 (or junk) made rich print
    nothing at all, not even the result path: such a value counts as 80 columns."""
    v = os.environ.get("COLUMNS")
    if v is None:
        return None
    try:
        w = int(v.strip()) if v.strip().isascii() else 0
    except ValueError:
        w = 0
    return w if w >= MIN_WIDTH else 80


def err_console() -> Console:
    w = _columns_width()
    return Console(stderr=True, width=w) if w else Console(stderr=True)


PIPED_WIDTH = 160


def out_console() -> Console:
    """Tables on stdout at the terminal's width. Piped or redirected (a log, CI, `| tee`) rich
    assumes 80 columns and wraps every cell of a ten-column table over several lines; decision:
    PIPED_WIDTH columns there, unless COLUMNS says otherwise."""
    w = _columns_width()
    if w:
        return Console(width=w)
    c = Console()
    if not c.is_terminal:
        c = Console(width=PIPED_WIDTH)
    return c


@contextmanager
def progress_bar(console: Console, total: int, label: str) -> Iterator[Callable[..., None]]:
    """A progress bar with a running time estimate; yields an update(description) callable."""
    cols = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
    )
    with Progress(*cols, console=console, transient=False) as prog:
        task = prog.add_task(label, total=total)

        def update(description: str | None = None, advance: int = 0) -> None:
            prog.update(task, description=description or label, advance=advance)

        yield update


def crypto_tables(doc: Result) -> list[Table]:
    fams: dict[str, list[Series]] = {}
    for s in doc.series:
        if s.kind == "crypto":
            fams.setdefault(s.labels["family"], []).append(s)
    tables = []
    for fam, series in fams.items():
        bulk = fam in ("aead", "mac", "hash")
        libs = sorted({str(s.labels["library"]) for s in series if s.labels.get("library")})
        t = Table(
            title=FAMILY_TITLES.get(fam, fam),
            title_justify="left",
            header_style="bold",
            caption=("library: " + "; ".join(libs)) if libs else None,
            caption_justify="left",
        )
        t.add_column("algorithm")
        t.add_column("op")
        if bulk:
            t.add_column("bytes", justify="right")
        t.add_column("bits", justify="right", header_style="bold")
        t.add_column("P50/op", justify="right")
        t.add_column("P50 95% CI", justify="right")
        t.add_column("P99/op", justify="right")
        t.add_column("ops/s", justify="right")
        if bulk:
            t.add_column("throughput", justify="right")
            t.add_column("ns/byte", justify="right")
        t.add_column("n", justify="right")
        t.add_column("note")
        for s in series:
            lab, sm, d = s.labels, s.summary, s.derived_as(CryptoDerived)
            row = [lab["alg"], lab["op"]]
            if bulk:
                row.append(str(lab["size_bytes"]))
            row.append(str(lab["security_bits"]))
            if sm is not None:
                lo, hi = sm.median_ci95_us
                half = (hi - lo) / 2 / sm.p50_us if sm.p50_us else 0.0
                row += [fmt_time_us(sm.p50_us), f"±{half:.1%}", fmt_time_us(sm.p99_us), fmt_rate(d.ops_per_s)]
                if bulk:
                    row += [fmt_bytes_per_s(d.bytes_per_s), f"{d.ns_per_byte or 0:.2f}"]
                row.append(str(sm.n))
            else:
                row += (
                    ["[red]failed[/red]" if s.status != "unsupported" else "[yellow]n/a[/yellow]", "", "", ""]
                    + (["", ""] if bulk else [])
                    + ["0"]
                )
            note = "; ".join(s.warnings or [])
            if s.failures:
                note = f"[red]{s.failures[-1].reason}[/red]"
            row.append(note)
            t.add_row(*row)
        tables.append(t)
    return tables


def answers_table(answers: list[dict[str, Any]], title: str = "Study S5, answered from this run") -> Table:
    """Study S5's questions and their answers (this run's, or across libraries: terminal_libraries)."""
    t = Table(title=title, title_justify="left", show_lines=True, header_style="bold")
    t.add_column("question", ratio=1)
    t.add_column("answer", ratio=3)
    for a in answers:
        t.add_row(a["question"], a["answer"])
    return t


def strength_table(rows: list[dict[str, Any]], strength: int) -> Table:
    t = Table(
        title=f"Algorithms at {strength}-bit security (NIST SP 800-57), fastest first",
        title_justify="left",
        header_style="bold",
    )
    ops = []
    for r in rows:
        for k in r:
            if k.endswith("_p50_us") and k not in ops:
                ops.append(k)
    t.add_column("algorithm")
    t.add_column("family")
    for op in ops:
        t.add_column(op.removesuffix("_p50_us") + " P50", justify="right")
    fastest = {op: min((r[op] for r in rows if op in r), default=None) for op in ops}
    for r in rows:
        cells = [r["alg"], r["family"]]
        for op in ops:
            v = r.get(op)
            if v is None:
                cells.append("–")
            else:
                rel = v / fastest[op] if fastest[op] else 1
                cells.append(f"{fmt_time_us(v)} ({rel:.1f}×)" if rel >= 1.05 else f"[green]{fmt_time_us(v)}[/green]")
        t.add_row(*cells)
    return t


def compare_table(cmp: dict[str, Any]) -> Table:
    """The measured rows of `secperf compare` (every table of a comparison: terminal_compare.tables)."""

    return measured_table(cmp)


def handshake_tables(doc: Result) -> list[Table]:
    series = [s for s in doc.series if s.kind == "handshake"]
    if not series:
        return []
    t = Table(
        title="TLS/DTLS handshakes (per connection)",
        title_justify="left",
        header_style="bold",
        caption="handshake: TCP connected → handshake complete; CPU: client thread inside its TLS library (OpenSSL for the probe)",
        caption_justify="left",
    )
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("configuration", "left"),
        ("server", "left"),
        ("n", "right"),
        ("handshake P50", "right"),
        ("P90", "right"),
        ("client CPU P50", "right"),
        ("waiting P50", "right"),
        ("server CPU P50", "right"),
        ("app write / read P50", "right"),
        ("check", "left"),
    )
    for c, j in columns:
        t.add_column(c, justify=j)
    for s in series:
        lab, sm, d = s.labels, s.summary, s.derived_as(HandshakeDerived)
        checks = verifications(s)
        if s.failures:
            checks.append(f"[red]{len(s.failures)} failed: {s.failures[-1].reason}[/red]")
        if sm is None:
            t.add_row(
                lab["label"],
                lab["server"] + ("" if lab.get("network", "loopback") == "loopback" else f" / {lab['network']}"),
                "0",
                "",
                "",
                "",
                "",
                "",
                "",
                "; ".join(checks),
            )
            continue
        t.add_row(
            lab["label"],
            lab["server"] + ("" if lab.get("network", "loopback") == "loopback" else f" / {lab['network']}"),
            str(sm.n),
            fmt_time_us(sm.p50_us),
            fmt_time_us(sm.p90_us),
            fmt_time_us(_cpu_p50(s)),
            fmt_time_us(d.wait_p50_us),
            fmt_time_us(d.server_cpu_p50_us),
            f"{fmt_time_us(d.app_write_p50_us)} / {fmt_time_us(d.app_read_p50_us)}",
            "; ".join(checks),
        )
    out = [t]
    chosen = [s for s in series if s.labels.get("server") == "remote" and s.derived_as(HandshakeDerived).negotiated]
    if chosen:  # against the user's server a configuration is an offer: what did the server choose?
        n = Table(
            title="What the server chose (first connection of each row)", title_justify="left", header_style="bold"
        )
        for c in ("configuration", "version", "suite", "group", "signature"):
            n.add_column(c, overflow="fold")
        for s in chosen:
            neg = s.derived_as(HandshakeDerived).negotiated or {}
            n.add_row(s.labels["label"], *(str(neg.get(k) or "–") for k in ("version", "cipher", "group", "signature")))
        out.append(n)
    cols, order, matrix = message_matrix(series)
    if cols:
        m = Table(title="Client CPU per handshake message (P50)", title_justify="left", header_style="bold")
        m.add_column("message")
        several = len({s.labels["server"] for s in cols}) > 1
        for s in cols:
            m.add_column(s.labels["label"] + (f" @ {s.labels['server']}" if several else ""), justify="right")
        for msg, vals in zip(order, matrix):
            m.add_row(msg, *[fmt_time_us(v) if v is not None else "–" for v in vals])
        m.add_row("[bold]total (library CPU)[/bold]", *[f"[bold]{fmt_time_us(_cpu_p50(s))}[/bold]" for s in cols])
        out.append(m)
    return out


def _cpu_p50(s: Series) -> float | None:
    """The median CPU time of a series (its cpu_summary's P50), None when not measured."""
    return s.cpu_summary.p50_us if s.cpu_summary is not None else None


def signer_tables(doc: Result) -> list[Table]:
    out = []
    for kind, title in (("signer", "Signing (study S2's modes)"), ("jwt", "JWT authentication")):
        series = [s for s in doc.series if s.kind == kind]
        if series:
            out += _signer_tables(series, title)
    return out


def _network(s: Series) -> str:
    return str(s.labels.get("network", "loopback"))


def _signer_tables(series: Sequence[Series], title: str) -> list[Table]:
    networked = any(_network(s) != "loopback" for s in series)  # JWT over emulated links: a network column
    t = Table(title=title, title_justify="left", header_style="bold")
    left = ("profile", "key", "mode") + (("network",) if networked else ())
    for c in (*left, "n", "mean", "sd", "P50", "P90", "P99", "> 1 s", "token calls/op"):
        t.add_column(c, justify="left" if c in left else "right")
    for s in series:
        lab, sm = s.labels, s.summary
        pc = s.derived_as(SignerDerived).per_call
        names = [lab["profile"], lab["key_type"], lab["mode"]] + ([_network(s)] if networked else [])
        if sm is None:
            t.add_row(*names, "0", f"[red]{s.failures[-1].reason if s.failures else s.status}[/red]")
            continue
        t.add_row(
            *names,
            str(sm.n),
            *[fmt_time_us(v) for v in (sm.mean_us, sm.sd_us, sm.p50_us, sm.p90_us, sm.p99_us)],
            str(sm.over_threshold or 0),
            f"{pc['token_calls_per_op']:.1f}" if pc else "–",
        )
    out = [t]
    for s in series:
        pc = s.derived_as(SignerDerived).per_call
        if not pc or not pc["calls"]:
            continue
        at = "" if _network(s) == "loopback" else f" @ {_network(s)}"
        cold = " cold" if s.labels.get("key_session") == "cold" else ""
        m = Table(
            title=f"{s.labels['profile']} {s.labels['key_type']} {s.labels['mode']}{cold}{at}: per PKCS#11 call",
            title_justify="left",
            header_style="bold",
        )
        for c in ("function", "calls/op", "time/op P50", "injected P50"):
            m.add_column(c, justify="left" if c == "function" else "right")
        for c in pc["calls"]:
            m.add_row(
                c["fn"],
                f"{c['calls_per_op']:.2f}",
                fmt_time_us(c["p50_ms"] * 1000),
                fmt_time_us(c["delay_p50_ms"] * 1000),
            )
        if pc.get("injected_p50_ms") is not None:  # the whole operation: profile + host
            m.add_row(
                f"[bold]whole operation[/bold] (host {fmt_time_us(pc['host_p50_ms'] * 1000)})",
                f"{pc['token_calls_per_op']:.2f}",
                fmt_time_us(s.p50_us),
                fmt_time_us(pc["injected_p50_ms"] * 1000),
            )
        out.append(m)
    return out


def connect_tables(doc: Result) -> list[Table]:
    """`secperf connect`: the S2-shaped summary, then every series with its phase medians."""

    rows = series_rows(doc)
    if not rows:
        return []
    out = []
    sm = summary(doc)
    if sm["rows"]:
        se = sm["se_source"] or "secure element"
        t = Table(
            title=f"Connection establishment, P50 (study S2's shape; secure element = {se})",
            title_justify="left",
            header_style="bold",
        )
        by_net = len(sm["networks"]) > 1
        for c in (("network",) if by_net else ()) + (
            "protocol",
            "handshake / auth",
            "software",
            "token",
            "secure element",
            "difference",
            "SE signing",
            "SE session+login+search",
            "token calls/conn",
            "resumed",
        ):
            t.add_column(c, justify="left" if c in ("network", "protocol", "handshake / auth") else "right")
        for row in sm["rows"]:
            parts = row["se_parts_us"]
            t.add_row(
                *((row["network"],) if by_net else ()),
                row["protocol"],
                (row["handshake"] if row["auth"] == "mtls" else row["auth"])
                + (", cold key session" if row.get("key_session") == "cold" else ""),
                *[
                    fmt_time_us(row[k]) if row[k] is not None else "–"
                    for k in ("software_p50_us", "token_p50_us", "se_p50_us", "difference_us")
                ],
                fmt_time_us(parts["signing"]) if parts else "–",
                fmt_time_us(parts["session set-up"] + parts["login"] + parts["key search"]) if parts else "–",
                f"{row['se_calls_per_conn']:.1f}" if row["se_calls_per_conn"] is not None else "–",
                f"{row['resumed']}/{row['n']}" if row["resumed"] is not None and row["n"] else "–",
            )
        out.append(t)
    t = Table(title="Connection establishment per configuration", title_justify="left", header_style="bold")
    for c in ("configuration", "n", "P50", "P90", "P99", "> 1 s", "resumed", "token calls", "start-up"):
        t.add_column(c, justify="left" if c == "configuration" else "right")
    for r in rows:
        if not r["n"]:
            t.add_row(r["label"], "0", f"[red]{r['failure'] or r['status']}[/red]")
            continue
        t.add_row(
            r["label"] + ("" if r["status"] == "ok" else f" [yellow]({r['status']})[/yellow]"),
            str(r["n"]),
            *[fmt_time_us(r[k]) for k in ("p50_us", "p90_us", "p99_us")],
            str(r["over_1s"] or 0),
            str(r["resumed"]) if r["resumed"] is not None else "–",
            f"{r['token_calls']:.1f}" if r["token_calls"] is not None else "–",
            fmt_time_us(r["startup_p50_us"]) if r["startup_p50_us"] else "–",
        )
    notes = sorted({f"{r['protocol']}: {r['note']}" for r in rows if r.get("note")})
    if notes:
        t.caption = "\n".join(notes)
        t.caption_justify = "left"
    out.append(t)
    names = phase_names(rows)
    if names:
        t = Table(title="Where the time went: phase medians", title_justify="left", header_style="bold")
        t.add_column("configuration")
        for n in names:
            t.add_column(n, justify="right")
        for r in rows:
            if r["phases"]:
                got = {p["phase"]: p["p50_us"] for p in r["phases"]}
                t.add_row(r["label"], *[fmt_time_us(got[n]) if n in got else "–" for n in names])
        out.append(t)
    return out


def phase_names(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    names: list[str] = []
    for r in rows:
        for p in r["phases"]:
            if p["phase"] not in names:
                names.append(p["phase"])
    return names


GLANCE_TITLE = "At a glance"


def glance_lines(doc: Result) -> list[str]:
    """The Result's answer in a few sentences (views/answers.py key_findings), one per line."""

    return [f["text"] for f in key_findings(doc)]


def print_result(console: Console, doc: Result, tables: Sequence[Table | str]) -> None:
    """What every command prints for a Result: "At a glance" first and once (when its rows allow a
    finding), then its tables fitted to the console's width (report/fit.py)."""

    lines = glance_lines(doc)
    if lines:
        console.print(f"[bold]{GLANCE_TITLE}[/bold]")
        for line in lines:
            console.print(f"  • {line}", highlight=False, markup=False)
        console.print()
    with shared_keys():  # row letters mean one thing throughout the output
        for t in tables:
            print_table(console, t)
