"""Signer sections of the HTML report: study S2's table (mode × statistics incl. runs over 1 s),
the distributions per mode, and the secure element's per-PKCS#11-call breakdown."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..core.result_schema import JwtDerived, Series, SignerDerived
from ..model.tokens import signatures_per_hour
from .html_env import cell, figure_view, frag, macro
from .plots import Plot
from .units import fmt_time_us
from .views.series import failure_reason

MODE_TEXT = {
    "local_sw": "local_sw (in-process)",
    "local_sw_cmd": "local_sw (openssl dgst command)",
    "sign_only": "sign_only",
    "total": "total",
    "jwt_fresh": "JWT fresh",
    "jwt_cached": "JWT cached",
}


def _network(s: Series) -> str:
    return str(s.labels.get("network", "loopback"))


def _name(s: Series) -> str:
    lab = s.labels
    at = "" if _network(s) == "loopback" else f" @ {_network(s)}"
    return f"{lab['profile']} {lab['key_type']} {MODE_TEXT.get(lab['mode'], lab['mode'])}{at}"


def s2_view(series: Sequence[Series]) -> dict[str, Any]:
    """Study S2's table: mode × statistics, runs over 1 s, token calls, signing and request time."""
    networked = any(_network(s) != "loopback" for s in series)  # JWT over emulated links: a network column
    head = [
        "profile",
        "key",
        "mode",
        *(["network"] if networked else []),
        "timed section",
        "n",
        "mean",
        "sd",
        "P50",
        "P90",
        "P99",
        "runs > 1 s",
        "token calls / op",
        "signing P50",
        "request P50",
    ]
    left = 5 if networked else 4
    rows: list[list[Any]] = []
    for s in series:
        lab, sm, d = s.labels, s.summary, s.derived_as(SignerDerived)
        pc = d.per_call
        jwt = d if isinstance(d, JwtDerived) else None
        net = [_network(s)] if networked else []
        if sm is None:
            rows.append(
                [lab["profile"], lab["key_type"], lab["mode"], *net, cell(failure_reason(s), cls="fail", colspan=11)]
            )
            continue
        cells: list[Any] = [sm.n, *(fmt_time_us(v) for v in (sm.mean_us, sm.sd_us, sm.p50_us, sm.p90_us, sm.p99_us))]
        cells += [
            0 if sm.over_threshold is None else sm.over_threshold,  # no threshold given: none over it
            f"{pc['token_calls_per_op']:.1f}" if pc else "–",
            fmt_time_us(jwt.sign_p50_us if jwt else None),
            fmt_time_us(jwt.request_p50_us if jwt else None),
        ]
        rows.append(
            [
                lab["profile"],
                lab["key_type"],
                MODE_TEXT.get(lab["mode"], lab["mode"]),
                *net,
                cell(lab["what"], cls="muted"),
                *cells,
            ]
        )
    return {"head": head, "rows": rows, "left": left}


def per_call_view(series: Sequence[Series]) -> list[dict[str, Any]]:
    """Per signer: the PKCS#11 calls per operation from the shim's log, and the whole operation."""
    out = []
    for s in series:
        pc = s.derived_as(SignerDerived).per_call
        if not pc or not pc["calls"]:
            continue
        rows: list[list[Any]] = [
            [
                c["fn"],
                f"{c['calls_per_op']:.2f}",
                fmt_time_us(c["p50_ms"] * 1000),
                fmt_time_us(c["delay_p50_ms"] * 1000),
            ]
            for c in pc["calls"]
        ]
        if pc.get("injected_p50_ms") is not None:  # the whole operation: profile + host
            rows.append(
                [
                    cell(
                        parts=[
                            frag("whole operation", b=True),
                            f" (host: {fmt_time_us(pc['host_p50_ms'] * 1000)} P50 beyond the injected delay)",
                        ]
                    ),
                    f"{pc['token_calls_per_op']:.2f}",
                    fmt_time_us(s.p50_us),
                    fmt_time_us(pc["injected_p50_ms"] * 1000),
                ]
            )
        out.append(
            {
                "title": f"{_name(s)}: per PKCS#11 call",
                "rows": rows,
                "head": ["function", "calls per operation", "time per operation (P50)", "of which injected (P50)"],
            }
        )
    return out


def per_call_table(series: Sequence[Series]) -> str:
    """The per-call tables' HTML on their own."""
    return macro("signer.html.j2", "per_call", per_call_view(list(series)))


def lifetime_view(series: Sequence[Series], requests_per_hour: float = 3600.0) -> dict[str, Any] | None:
    """Signatures per hour and signing time per hour against token lifetime, for a device making
    one request per second, from each signer's measured fresh-JWT signing time."""

    # signing does not depend on the network: one row per signer, from its loopback series when there is one
    fresh: list[tuple[Series, float]] = []
    seen: set[tuple[Any, Any]] = set()
    for s in sorted(series, key=lambda s: _network(s) != "loopback"):
        key = (s.labels["profile"], s.labels["key_type"])
        sign_us = s.derived.sign_p50_us if isinstance(s.derived, JwtDerived) else None
        if s.labels["mode"] == "jwt_fresh" and sign_us and key not in seen:
            seen.add(key)
            fresh.append((s, sign_us))
    if not fresh:
        return None
    lifetimes = (1, 60, 300, 900, 3600, 86400)
    rows = []
    for s, sign_us in fresh:
        cells = []
        for lt in lifetimes:
            n = signatures_per_hour(lt, requests_per_hour)
            cells.append(f"{n:g} sig/h, {fmt_time_us(n * sign_us)} signing/h")
        rows.append([f"{s.labels['profile']} {s.labels['key_type']}", *cells])
    return {"head": ["signer", *(f"lifetime {lt} s" for lt in lifetimes)], "rows": rows}


def plots(series: Sequence[Series]) -> list[Plot]:
    """The signing-time distribution per profile, key and mode (signer Results; JWT rows have none)."""
    ok = [s for s in series if s.values_us and s.kind != "jwt"]
    if not ok:
        return []
    return [
        Plot(
            "signer-time-per-signature",
            "box",
            "Time per signature by mode",
            [(_name(s), s.values_us) for s in ok],
            "Log scale; dots are signatures.",
            {"unit": "µs"},
        )
    ]


def view(series: Sequence[Series], title: str = "Signing with a secure element") -> dict[str, Any] | None:
    """Signer or JWT series: the S2 table, the lifetime table (JWT), the distributions (signer) and
    the per-call tables."""
    if not series:
        return None
    jwt = series[0].kind == "jwt"
    return {
        "template": "signer.html.j2",
        "title": title,
        "jwt": jwt,
        "s2": s2_view(series),
        "lifetime": lifetime_view(series) if jwt else None,
        "figures": [] if jwt else [figure_view(p) for p in plots(series)],
        "per_call": per_call_view(series),
    }
