"""What `secperf connect` results say, computed once for the terminal and the HTML report: the
per-series rows, S2's summary table (software vs secure element per protocol, with resumed and JWT
rows) and the secure element's share split into signing, session set-up, login and key search."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from ...core.result_schema import ConnectDerived, Result, Series, SignerDerived, Timer


class ConnectRow(TypedDict):
    """One connect series as its tables show it."""

    id: str
    label: str
    protocol: str
    client: str | None
    key_source: str
    handshake: str
    status: str
    n: int
    p50_us: float | None
    p90_us: float | None
    p99_us: float | None
    over_1s: int | None
    resumed: int | None
    token_calls: float | None
    startup_p50_us: float | None
    phases: list[dict[str, Any]]
    failure: str | None
    note: str | None
    timer: Timer


class S2Table(TypedDict):
    """S2's table: the secure element it compares with, its rows, their networks in order."""

    se_source: str | None
    rows: list[dict[str, Any]]
    networks: list[str]


PROTOCOL_ORDER = ("https", "mqtt", "coap", "vpn")
CATEGORIES = (
    ("signing", ("C_SignInit", "C_Sign", "C_SignUpdate", "C_SignFinal")),
    ("session set-up", ("C_OpenSession", "C_CloseSession", "C_CloseAllSessions", "C_GetSessionInfo")),
    ("login", ("C_Login", "C_Logout")),
    ("key search", ("C_FindObjectsInit", "C_FindObjects", "C_FindObjectsFinal", "C_GetAttributeValue")),
)


def _p50(s: Series | None) -> float | None:
    return s.p50_us if s is not None else None


def se_categories(per_call: Mapping[str, Any] | None) -> dict[str, float]:
    """Per connection (µs): the secure element's time per category, from a per-call breakdown
    ({"calls": [{"fn", "calls_per_op", "p50_ms"}]}); functions outside the four are "other"."""
    out = {name: 0.0 for name, _ in CATEGORIES}
    out["other"] = 0.0
    for c in (per_call or {}).get("calls", []):
        us = (c.get("p50_ms") or 0.0) * 1000
        cat = next((name for name, fns in CATEGORIES if c["fn"] in fns), "other")
        out[cat] += us
    return out


def series_label(s: Series) -> str:
    lb = s.labels
    return str(lb.get("label") or " ".join(str(lb.get(k)) for k in ("protocol", "client", "key_source", "handshake")))


def connect_series(doc: Result) -> list[Series]:
    return [s for s in doc.series if s.kind == "connect"]


def series_rows(doc: Result) -> list[ConnectRow]:
    rows: list[ConnectRow] = []
    for s in connect_series(doc):
        lb, sm, d = s.labels, s.summary, s.derived_as(ConnectDerived)
        rows.append(
            {
                "id": s.id,
                "label": series_label(s),
                "protocol": lb["protocol"],
                "client": lb.get("client"),
                "key_source": lb["key_source"],
                "handshake": lb["handshake"],
                "status": s.status,
                "n": sm.n if sm is not None else 0,
                "p50_us": sm.p50_us if sm is not None else None,
                "p90_us": sm.p90_us if sm is not None else None,
                "p99_us": sm.p99_us if sm is not None else None,
                "over_1s": sm.over_threshold if sm is not None else None,
                "resumed": d.resumed,
                "token_calls": (d.se_calls or {}).get("token_calls_per_op"),
                "startup_p50_us": d.startup_p50_us,
                "phases": d.phases_p50_us or [],
                "failure": s.failures[-1].reason if s.failures else None,
                "note": d.resumption_note,
                "timer": s.timer,
            }
        )
    return rows


def summary(doc: Result, se_source: str | None = None) -> S2Table:
    """S2's table: per protocol the software and secure-element establishment medians and their
    difference, side by side with the secure element's own cost from the shim log (signing, and
    all calls), plus resumed and JWT rows with the token calls per connection; a block of rows per
    network (loopback first), each row naming its network."""
    conn = connect_series(doc)
    se_sources = sorted({s.labels["key_source"] for s in conn if s.labels["key_source"].startswith("se:")})
    se_source = se_source or (se_sources[0] if se_sources else None)
    jwt_all = [s for s in doc.series if s.kind == "jwt"]
    # one block of rows per network, loopback first: software and secure element are compared over
    # the same network, never across two
    seen = [_network(s) for s in conn + jwt_all]
    networks = sorted(dict.fromkeys(seen), key=lambda n: (n != "loopback", seen.index(n)))
    # CoAP once per CoAP/DTLS server measured (libcoap first; Californium resumes, libcoap does not)
    coap = sorted(
        {s.labels.get("coap_server", "libcoap") for s in conn if s.labels["protocol"] == "coap"},
        key=lambda x: x != "libcoap",
    )
    rows: list[dict[str, Any]] = []
    for net in networks:
        rows += _connect_rows(conn, net, {"coap": coap}, se_source)
        rows += _jwt_rows([s for s in jwt_all if _network(s) == net], net, se_source)
    return {"se_source": se_source, "rows": rows, "networks": list(dict.fromkeys(r["network"] for r in rows))}


def _find(
    conn: list[Series],
    proto: str,
    ks: str | None,
    hsk: str,
    client: str,
    net: str,
    ksess: str = "warm",
    server: str = "libcoap",
) -> Series | None:
    """The mutual-TLS, PKI, TCP_NODELAY connect series of one protocol, key source, handshake, client,
    network, key session and CoAP server, if measured."""
    for s in conn:
        lb = s.labels
        if (
            lb["protocol"],
            lb["key_source"],
            lb["handshake"],
            lb.get("client"),
            lb.get("auth", "mtls"),
            lb.get("security", "pki"),
            lb.get("nodelay", True),
            _network(s),
            lb.get("key_session", "warm"),
            lb.get("coap_server", "libcoap"),
        ) == (proto, ks, hsk, client, "mtls", "pki", True, net, ksess, server):
            return s
    return None


def _s2_row(
    net: str, protocol: str, handshake: str, auth: str, ksess: str, sw: Series | None, se: Series | None
) -> dict[str, Any]:
    """One row of S2's table: the software and secure-element medians, their difference, n."""
    a, b = _p50(sw), _p50(se)
    return {
        "network": net,
        "protocol": protocol,
        "handshake": handshake,
        "auth": auth,
        "key_session": ksess,
        "software_p50_us": a,
        "token_p50_us": None,
        "se_p50_us": b,
        "difference_us": (b - a) if a is not None and b is not None else None,
        "se_parts_us": None,
        "se_calls_per_conn": None,
        "resumed": None,
        "n": _n(se if se is not None else sw),
    }


def _connect_rows(
    conn: list[Series], net: str, servers: dict[str, list[str]], se_source: str | None
) -> list[dict[str, Any]]:
    """S2's connection rows over one network: per protocol (and CoAP server) a full handshake with a
    warm and a cold key session and a resumed one. A cold key session (session, login, key search per
    connection) sits next to the warm one; the software key has no session: its figure is the same
    in both rows."""
    rows = []
    for proto, server in ((p, sv) for p in PROTOCOL_ORDER for sv in servers.get(p, ["libcoap"])):
        client = "openvpn" if proto == "vpn" else "probe"
        for hsk, ksess in (("full", "warm"), ("full", "cold"), ("resumed", "warm")):
            sw = _find(conn, proto, "software", hsk, client, net, server=server)
            tok = _find(conn, proto, "token", hsk, client, net, ksess, server)
            se = _find(conn, proto, se_source, hsk, client, net, ksess, server) if se_source else None
            if (ksess == "cold" and se is None and tok is None) or (sw is None and se is None and tok is None):
                continue
            per = se.derived_as(ConnectDerived).se_calls if se is not None else None
            either = se if se is not None else sw
            row = _s2_row(net, proto if server == "libcoap" else f"{proto} ({server})", hsk, "mtls", ksess, sw, se)
            row.update(
                token_p50_us=_p50(tok),
                se_parts_us=se_categories(per) if per else None,
                se_calls_per_conn=per.get("token_calls_per_op") if per else None,
                resumed=either.derived_as(ConnectDerived).resumed if either is not None else None,
            )
            rows.append(row)
    return rows


def _jwt_rows(jwt: list[Series], net: str, se_source: str | None) -> list[dict[str, Any]]:
    """S2's JWT rows over one network: fresh tokens (warm and cold key session) and cached ones."""
    rows = []
    for mode, ksess in (("jwt_fresh", "warm"), ("jwt_fresh", "cold"), ("jwt_cached", "warm")):
        sw = next((s for s in jwt if s.labels["mode"] == mode and s.labels["profile"] == "software"), None)
        se = next(
            (
                s
                for s in jwt
                if s.labels["mode"] == mode
                and s.labels["profile"] != "software"
                and s.labels.get("key_session", "warm") == ksess
                and (se_source is None or f"se:{s.labels['profile']}" == se_source)
            ),
            None,
        )
        if (sw is None and se is None) or (ksess == "cold" and se is None):
            continue
        per = se.derived_as(SignerDerived).per_call if se is not None else None
        row = _s2_row(net, "https", "full", mode, ksess, sw, se)
        row.update(
            se_parts_us=se_categories(per) if per else None,
            se_calls_per_conn=per.get("token_calls_per_op") if per else None,
        )
        rows.append(row)
    return rows


def _n(s: Series | None) -> int | None:
    return s.summary.n if s is not None and s.summary is not None else None


def _network(s: Series) -> str:
    net = s.labels.get("network") or "loopback"
    return "loopback" if net == "none" else str(net)
