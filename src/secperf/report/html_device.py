"""The `secperf device` section of the HTML report: per-message instruction tables and stacked
bars per configuration, cold and warm, with derived millisecond ranges labelled as derived."""

from __future__ import annotations

from .plots import Plot, slug
from .svg import figure
from .units import esc as _e
from .views import device as V


def _table(series: list[dict]) -> str:
    varying = V.varying_labels(series)
    head = "<tr><th class='l'>message</th>" + "".join(f"<th>{_e(V.column_name(s, varying))}</th>" for s in series) + "</tr>"
    order, mat = V.matrix(series)
    rows = [f"<tr><td class='l'>{_e(msg)}</td>" + "".join(f"<td>{_e(V.fmt_count(v))}</td>" for v in vals) + "</tr>"
            for msg, vals in zip(order, mat)]
    rows.append("<tr><td class='l'><b>handshake total</b></td>" + "".join(
        f"<td><b>{_e(V.fmt_count(s['derived']['instructions_median']))}</b></td>" for s in series) + "</tr>")
    rows.append("<tr><td class='l'>cycles (timing model)</td>" + "".join(
        f"<td>{_e(V.cycles(s['derived'].get('time')))}</td>" for s in series) + "</tr>")
    rows.append("<tr><td class='l'><b>time (band)</b></td>" + "".join(
        f"<td><b>{_e(V.time_band(s['derived'].get('time')))}</b></td>" for s in series) + "</tr>")
    rows.append("<tr><td class='l'>old CPI range (for comparison)</td>" + "".join(
        f"<td class='muted'>{_e(V.ms_range(s))}</td>" for s in series) + "</tr>")
    rows.append("<tr><td class='l'>build</td>" + "".join(
        f"<td class='muted'>{_e(V.build_label(s))}</td>" for s in series) + "</tr>")
    rows.append("<tr><td class='l'>library footprint (linked)</td>" + "".join(
        f"<td class='muted'>{_e(V.footprint(s))}</td>" for s in series) + "</tr>")
    rows.append("<tr><td class='l'>handshake stack (worst, painted)</td>" + "".join(
        f"<td class='muted'>{_e(V.stack(s))}</td>" for s in series) + "</tr>")
    rows.append("<tr><td class='l'>checks</td>" + "".join(
        f"<td class='l muted'>{_e('; '.join(V.checks(s)))}</td>" for s in series) + "</tr>")
    return f"<table>{head}{''.join(rows)}</table>"


def _crypto_table(series: list[dict]) -> str:
    if not series:
        return ""
    head = ("<tr><th class='l'>device</th><th class='l'>build</th><th class='l'>operation</th><th>instr. cold</th>"
            "<th>instr. warm</th><th>cycles</th><th>time (band)</th><th>old CPI range</th><th>stack (painted)</th></tr>")
    trs = []
    for s in series:
        d, lab = s["derived"], s["labels"]
        cells = (f"<td>{_e(V.fmt_count(d['instructions_cold']))}</td><td>{_e(V.fmt_count(d['instructions_median']))}</td>"
                 f"<td>{_e(V.cycles(d.get('time')))}</td><td><b>{_e(V.time_band(d.get('time')))}</b></td>"
                 f"<td class='muted'>{_e(V.ms_range(s))}</td><td>{_e(V.op_stack(s))}</td>"
                 ) if d else "<td class='fail' colspan='6'>failed</td>"
        trs.append(f"<tr><td class='l'>{_e(lab['device'])}</td><td class='l'>{_e(V.build_label(s))}</td>"
                   f"<td class='l'>{_e(lab['op'])}</td>{cells}</tr>")
    return (f"<h3>Primitive operations</h3><p class='muted'>{_e(V.profile_note(series))}</p>"
            f"<table>{head}{''.join(trs)}</table>")


def _phase_plot(phase: str, series: list[dict]) -> Plot:
    varying = V.varying_labels(series)
    rows = [(V.column_name(s, varying), [(V.message_label(m), float(m["instructions"]))
                                         for m in s["derived"]["messages"]]) for s in series]
    return Plot(slug("device-instructions", phase), "stacked", f"Instructions per handshake message ({phase})", rows,
                "Instructions counted under QEMU per message; the bar is the whole handshake.",
                {"unit": "instructions"})


def plots(doc: dict) -> list[Plot]:
    """The per-message stacked bars, one per phase (cold, warm)."""
    return [_phase_plot(phase, series) for phase, series in V.phases(doc).items()]


def section(doc: dict) -> str:
    ph = V.phases(doc)
    cs = V.crypto_series(doc)
    if not ph and not cs:
        return ""
    parts = ["<h2>Emulated devices: TLS stacks on ARM cores, instructions per handshake message</h2>",
             "<p>Real embedded TLS stacks cross-compiled for ARM run under <code>qemu-arm</code> against "
             "<code>openssl s_server</code> on loopback; a TCG plugin counts every executed user-mode "
             "instruction of the client process. The client hands the library one record at a time and "
             "marks each record and the library's message-building functions, so the handshake's count "
             "is split per message: a received message owns reading and processing its record, a sent "
             "message owns building and writing it. <b>Instructions are the measurement</b>; milliseconds are "
             "derived from the core profile's clock and cycles-per-instruction range and shown as a range. "
             "Cold is the first handshake in the process; warm rows follow the warm-up handshakes.</p>"]
    for phase, series in ph.items():
        parts.append(f"<h3>{_e(phase.capitalize())} handshakes — {_e(series[0]['labels']['device'])}, "
                     f"{_e(series[0]['labels']['library'])}</h3><p class='muted'>{_e(V.profile_note(series))}</p>")
        parts.append(_table(series))
        parts.append(figure(_phase_plot(phase, series)))
    parts.append(_crypto_table(cs))
    return "".join(parts)
