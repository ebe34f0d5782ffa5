"""What the terminal and HTML reports show of `secperf device` series, computed once: per phase
(cold, warm) the per-message instruction matrix across configurations, the totals with their
DERIVED millisecond ranges, and the checks (sum rule, spread, messages per record)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...core.result_schema import CountedDerived, DeviceDerived, DeviceTime, Result, Series

Time = DeviceTime  # the timing model's figures of a counted run (a handshake or a primitive)

MESSAGE_DIR_SUFFIX = {"sent": " (sent)", "received": ""}
AMBIGUOUS = ("Certificate", "CertificateVerify", "Finished", "ChangeCipherSpec")


def message_label(m: Mapping[str, Any]) -> str:
    """'Finished (sent)' vs 'Finished (received)'; unambiguous names stay bare."""
    if m["message"] in AMBIGUOUS:
        return f"{m['message']} ({m['dir']})"
    return str(m["message"])


def column_name(s: Series, varying: list[str]) -> str:
    lab = s.labels
    return " ".join(str(lab[k]) for k in varying) or str(lab["stack"])


def varying_labels(series: Sequence[Series]) -> list[str]:
    """The label keys that differ between the series (so column names stay short)."""
    keys = ("device", "stack", "config", "tls", "group", "suite", "mode", "server_cert")
    out = [k for k in keys if len({s.labels.get(k) for s in series}) > 1]
    return out or ["group", "suite"]


def handshake_series(doc: Result) -> list[Series]:
    return [s for s in doc.series if isinstance(s.derived, DeviceDerived) and s.derived.messages]


def messages(s: Series) -> list[dict[str, Any]]:
    """A device handshake's per-message rows (median instructions per message)."""
    return s.derived_as(DeviceDerived).messages or []


def phases(doc: Result) -> dict[str, list[Series]]:
    out: dict[str, list[Series]] = {}
    for s in handshake_series(doc):
        out.setdefault(s.labels["phase"], []).append(s)
    return out


def matrix(series: Sequence[Series]) -> tuple[list[str], list[list[int | None]]]:
    """(message labels in first-seen order, median instructions per [message][series])."""
    per: list[dict[str, int]] = [{message_label(m): m["instructions"] for m in messages(s)} for s in series]
    order: list[str] = []
    for p in per:
        order += [m for m in p if m not in order]
    return order, [[p.get(msg) for p in per] for msg in order]


def fmt_count(n: float | None) -> str:
    if n is None:
        return "–"
    if n >= 1e6:
        return f"{n / 1e6:.2f} M"
    if n >= 1e3:
        return f"{n / 1e3:.1f} k"
    return f"{n:.0f}"


def ms_range(s: Series) -> str:
    d = s.derived_as(CountedDerived).derived_ms
    return f"{_ms(d['ms_low'])}–{_ms(d['ms_high'])} ms" if d else "–"


def time_band(t: Time | None) -> str:
    """'98.7 ms (97.6–104)': the timing model's point and band, or '–' without it."""
    if t is None or t.ms is None or t.ms_low is None or t.ms_high is None:
        return "–"
    return f"{_ms(t.ms)} ms ({_ms(t.ms_low)}–{_ms(t.ms_high)})"


def cycles(t: Time | None) -> str:
    return "–" if t is None or t.cycles is None else fmt_count(t.cycles)


def build_label(s: Series) -> str:
    """The library build a figure comes from: 'wolfSSL 5.9.4 (cortex-m4 build), config sp-asm'."""
    lab = s.labels
    cfg = lab.get("config")
    return f"{lab.get('library', lab.get('stack'))}" + (f", config {cfg}" if cfg else "")


def build_id(s: Series) -> str:
    """A build's short name for a table cell: the stack and its config ('wolfssl sp-asm'); the full
    build_label goes under the table once."""
    lab = s.labels
    return " ".join(str(x) for x in (lab.get("stack") or lab.get("library"), lab.get("config")) if x)


def _ms(x: float) -> str:
    return f"{x:.3g}" if x < 100 else f"{x:.0f}"


def checks(s: Series) -> list[str]:
    d = s.derived_as(DeviceDerived)
    out = [
        f"parts sum to total within {d.parts_sum_max_error or 0:.2%}",
        f"spread {d.spread or 0:.2%} over {len(s.samples)}",
    ]
    per = [n for x in s.samples for n in x.get("messages_per_record", [])]
    if per and any(per):
        out.append("one message per record" if all(n == 1 for n in per) else "records with several messages")
    if s.labels.get("mode") == "resumed":
        out.append(f"resumed {sum(1 for x in s.samples if x.get('resumed'))}/{len(s.samples)}")
    return out


def profile_note(series: Sequence[Series]) -> str:
    if not series:
        return ""
    counted = [s.derived_as(CountedDerived) for s in series]
    t = next((c.time for c in counted if c.time is not None), None)
    d = next((c.derived_ms for c in counted if c.derived_ms), None)
    if t is not None:
        banded = ", ".join(t.banded or {}) or "none"
        return (
            f"time: cycles of the {t.model} timing model / {t.clock_mhz or 0:g} MHz "
            f"({series[0].labels['device']}): instruction classes at the TRM's cycle costs, branches, "
            f"flash or cache stalls simulated; band: parameters at their low and high values ({banded}); "
            f"instructions are the exact count"
        )
    if not d:
        return ""
    est = " (an estimate)" if d.get("cpi_estimate") else ""
    return (
        f"milliseconds are DERIVED: instructions x CPI {d['cpi'][0]:g}–{d['cpi'][1]:g}{est} / "
        f"{d['clock_mhz']:g} MHz ({series[0].labels['device']}); instructions are the measured figure"
    )


def op_stack(s: Series) -> str:
    """The deepest stack a primitive's repetitions wrote (painted), or – when not measured."""
    b = s.derived_as(CountedDerived).stack_bytes_max
    return "–" if not b else (f"{b / 1024:.1f} KB" if b >= 1024 else f"{b} B")


def crypto_series(doc: Result) -> list[Series]:
    return [s for s in doc.series if s.kind == "device_crypto"]


def footprint(s: Series) -> str:
    """'248 KB flash, 31 KB RAM (library linked)' from the link map, or '–'."""
    fp = s.derived_as(CountedDerived).footprint
    if not fp:
        return "–"
    return f"{fp['flash'] / 1024:.0f} KB flash, {fp['ram_static'] / 1024:.0f} KB static RAM"


def stack(s: Series) -> str:
    """'9.8 KB' — the deepest stack any handshake of the row used (painted and scanned), or '–'."""
    b = s.derived_as(CountedDerived).stack_bytes_max
    return f"{b / 1024:.1f} KB" if b else "–"
