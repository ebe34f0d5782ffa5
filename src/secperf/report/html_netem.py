"""Handshakes over emulated links in the HTML report: time against the link's configured round
trip (or loss, when the round trip does not vary), median and P95, one line per configuration,
and a table with what the link and the device's kernel saw (drops, TCP retransmissions)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..core import stats
from ..core.result_schema import LinkedDerived, Series
from .html_env import figure_view, hcell, macro
from .plots import Plot
from .units import fmt_time_us


def _networked(series: Sequence[Series], kind: str = "handshake", loopback: bool = False) -> list[Series]:
    """Series of `kind` over an emulated link (and with `loopback`, those over loopback: a link of
    no delay and no loss on the plot)."""
    return [
        s
        for s in series
        if s.kind == kind
        and ("network_rtt_ms" in s.labels or (loopback and s.labels.get("network", "loopback") in ("loopback", "none")))
    ]


def _total_us(s: Series) -> list[float]:
    """Per connection: TCP connect + handshake (what a device waits for before sending data)."""
    out = []
    for c in s.samples:
        if c.get("ok") and c.get("handshake_wall_us") is not None:
            out.append(float(c.get("tcp_connect_us") or 0.0) + float(c["handshake_wall_us"]))
    return out


def _handshake_name(s: Series) -> str:
    return f"{s.labels['label']} @ {s.labels['server']}"


def _connect_name(s: Series) -> str:
    return str(s.labels["label"].split(" @ ")[0])  # connect's label ends in "@ NETWORK"


def _values_us(s: Series) -> list[float]:
    return [float(v) for v in s.values_us]


def _rtt(s: Series) -> float:
    return float(s.labels.get("network_rtt_ms", 0.0))


def _loss(s: Series) -> float:
    return float(s.labels.get("network_loss", 0.0))


def sweep_figures(series: Sequence[Series], kind: str = "handshake") -> list[dict[str, Any]]:
    """The sweep plot as the page's figure (none when the Result has none)."""
    return [figure_view(p, data_plot="network-sweep") for p in sweep_plots(series, kind)]


def sweep_plot(series: Sequence[Series], kind: str = "handshake") -> str:
    """The sweep plot's HTML on its own ("" when the Result has none)."""
    figs = sweep_figures(list(series), kind)
    return macro("netem.html.j2", "sweep", figs) if figs else ""


def sweep_plots(series: Sequence[Series], kind: str = "handshake") -> list[Plot]:
    """Time per connection against the link's configured round trip (or loss, when the round trip
    does not vary), P50 and P95, one line per configuration: handshake rows (TCP connect +
    handshake) or connect rows (connection establishment until the protocol is usable)."""
    emulated = _networked(series, kind)
    if not emulated:
        return []
    values: Callable[[Series], list[float]]
    name_of: Callable[[Series], str]
    values, name_of = (_total_us, _handshake_name) if kind == "handshake" else (_values_us, _connect_name)
    # the axis: loss when every link has the same round trip and the losses differ (a loss sweep),
    # else the round trip, with loopback rows drawn at 0 (a link of no delay and no loss)
    by_loss = len({_rtt(s) for s in emulated}) == 1 and len({_loss(s) for s in emulated}) > 1
    nets = (
        emulated
        if by_loss
        else emulated + [s for s in _networked(series, kind, loopback=True) if "network_rtt_ms" not in s.labels]
    )
    if len({s.labels.get("network", "loopback") for s in nets}) < 2:
        return []
    xkey, xlabel = (
        ("network_loss", "configured one-way loss (%)")
        if by_loss
        else ("network_rtt_ms", "configured round-trip time (ms)")
    )
    # a grid (some round trip measured at several losses) gets a line per configuration and loss, so
    # points of different losses never join one line; profiles (each its own round trip and loss,
    # e.g. loopback, wifi, lte) stay one line per configuration
    losses_at: dict[float, set[float]] = {}
    for s in emulated:
        losses_at.setdefault(_rtt(s), set()).add(_loss(s))
    per_loss = not by_loss and any(len(v) > 1 for v in losses_at.values())
    lines: dict[str, list[tuple[float, float]]] = {}
    for s in nets:
        vals = values(s)
        if not vals:
            continue
        x = s.labels.get(xkey, 0.0) * (100 if by_loss else 1)
        name = name_of(s)
        if per_loss:
            name += f", loss {s.labels.get('network_loss', 0.0) * 100:g}%"
        lines.setdefault(f"{name} P50", []).append((x, stats.median(vals) / 1000))
        lines.setdefault(f"{name} P95", []).append((x, stats.percentile(vals, 95) / 1000))
    data = [(k, sorted(v)) for k, v in lines.items() if len(v) >= 2]
    if not data:
        return []
    what = "loss" if by_loss else "round trip"
    if kind == "handshake":
        title, ylabel = "TCP connect + handshake against the link", "time per connection (ms)"
        caption = (
            "Per configuration: median (P50) and 95th percentile (P95) of TCP connect + handshake time "
            f"over each emulated link, against the link's configured {what}. The slope counts round trips: "
            "TLS 1.3 needs 2 (TCP + one handshake round trip), TLS 1.2 needs 3."
        )
    else:
        title, ylabel = "Connection establishment against the link", "establishment time (ms)"
        caption = (
            "Per configuration: median (P50) and 95th percentile (P95) of the establishment time (until "
            f"the protocol is usable) over each emulated link, against the link's configured {what}. "
            "The slope counts the round trips a protocol and its client need before the first useful message."
        )
    return [Plot(f"{kind}-network-sweep", "line", title, data, caption, {"x_label": xlabel, "y_label": ylabel})]


def table_view(series: Sequence[Series]) -> dict[str, Any] | None:
    nets = _networked(series)
    if not nets:
        return None
    head = [
        "configuration",
        "network",
        "RTT (configured)",
        "loss",
        "n ok",
        "connect+handshake P50",
        "P95",
        "round trips (P50/RTT)",
        "link drops up/down",
        "device TCP retransmissions",
        hcell(
            "requests sent again (DTLS)",
            left=False,
            title="DTLS resends only handshake flights: the probe sends a request that got no answer "
            "again after 2, 4, 8 s (RFC 7252 timer); times sent again, over all connections",
        ),
        hcell(
            "machine loaded (relay)",
            left=False,
            title="spin windows the relay ended because tasks waited for a CPU: the machine was loaded "
            "during this run, and times may include waiting for a CPU",
        ),
    ]
    rows = []
    for s in nets:
        lab = s.labels
        vals = _total_us(s)
        counted = s.derived.link if isinstance(s.derived, LinkedDerived) else None
        link: dict[str, Any] = counted.model_dump(exclude_unset=True) if counted is not None else {}
        drops = (
            "/".join(
                str(sum(v for k, v in (link.get(x) or {}).items() if k.startswith("dropped_"))) for x in ("up", "down")
            )
            if link
            else ""
        )
        rtt = lab["network_rtt_ms"]
        p50 = stats.median(vals) if vals else None
        rows.append(
            [
                f"{lab['label']} @ {lab['server']}",
                lab["network"],
                f"{rtt:g} ms",
                f"{lab['network_loss'] * 100:g}%",
                len(vals),
                fmt_time_us(p50),
                fmt_time_us(stats.percentile(vals, 95) if vals else None),
                f"{p50 / 1000 / rtt:.2f}" if p50 and rtt > 0 else "",
                drops,
                link.get("device_Tcp_RetransSegs", ""),
                sum((c.get("app") or {}).get("resent", 0) for c in s.samples) if lab.get("proto") == "dtls" else "",
                link.get("relay_load_sleeps", ""),
            ]
        )
    return {"head": head, "rows": rows}


def table(series: Sequence[Series]) -> str:
    """The link table's HTML on its own ("" without emulated links)."""
    t = table_view(list(series))
    return macro("netem.html.j2", "table", t) if t else ""


def view(series: Sequence[Series]) -> dict[str, Any] | None:
    """Handshakes over emulated links: the sweep plot and the table of what the link saw."""
    t = table_view(series)
    if not t:
        return None
    return {
        "template": "netem.html.j2",
        "title": "Handshakes over emulated links",
        "sweep": sweep_figures(series),
        "table": t,
    }
