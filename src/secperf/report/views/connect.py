"""What `secperf connect` results say, computed once for the terminal and the HTML report: the
per-series rows, S2's summary table (software vs secure element per protocol, with resumed and JWT
rows) and the secure element's share split into signing, session set-up, login and key search."""

from __future__ import annotations

PROTOCOL_ORDER = ("https", "mqtt", "coap", "vpn")
CATEGORIES = (("signing", ("C_SignInit", "C_Sign", "C_SignUpdate", "C_SignFinal")),
              ("session set-up", ("C_OpenSession", "C_CloseSession", "C_CloseAllSessions", "C_GetSessionInfo")),
              ("login", ("C_Login", "C_Logout")),
              ("key search", ("C_FindObjectsInit", "C_FindObjects", "C_FindObjectsFinal", "C_GetAttributeValue")))


def _p50(s: dict | None) -> float | None:
    return (s.get("summary") or {}).get("p50_us") if s else None


def se_categories(per_call: dict | None) -> dict[str, float]:
    """Per connection (µs): the secure element's time per category, from a per-call breakdown
    ({"calls": [{"fn", "calls_per_op", "p50_ms"}]}); functions outside the four are "other"."""
    out = {name: 0.0 for name, _ in CATEGORIES}
    out["other"] = 0.0
    for c in (per_call or {}).get("calls", []):
        us = (c.get("p50_ms") or 0.0) * 1000
        cat = next((name for name, fns in CATEGORIES if c["fn"] in fns), "other")
        out[cat] += us
    return out


def series_label(s: dict) -> str:
    lb = s["labels"]
    return lb.get("label") or " ".join(str(lb.get(k)) for k in ("protocol", "client", "key_source", "handshake"))


def connect_series(doc: dict) -> list[dict]:
    return [s for s in doc["series"] if s.get("kind") == "connect"]


def series_rows(doc: dict) -> list[dict]:
    rows = []
    for s in connect_series(doc):
        lb, sm, d = s["labels"], s.get("summary") or {}, s.get("derived") or {}
        rows.append({"id": s["id"], "label": series_label(s), "protocol": lb["protocol"],
                     "client": lb.get("client"), "key_source": lb["key_source"], "handshake": lb["handshake"],
                     "status": s["status"], "n": sm.get("n", 0), "p50_us": sm.get("p50_us"),
                     "p90_us": sm.get("p90_us"), "p99_us": sm.get("p99_us"),
                     "over_1s": sm.get("over_threshold"), "resumed": d.get("resumed"),
                     "token_calls": (d.get("se_calls") or {}).get("token_calls_per_op"),
                     "startup_p50_us": d.get("startup_p50_us"), "phases": d.get("phases_p50_us") or [],
                     "failure": s["failures"][-1]["reason"] if s["failures"] else None,
                     "note": d.get("resumption_note"),
                     "timer": s.get("timer", {})})
    return rows


def summary(doc: dict, se_source: str | None = None) -> dict:
    """S2's table: per protocol the software and secure-element establishment medians and their
    difference, side by side with the secure element's own cost from the shim log (signing, and
    all calls), plus resumed and JWT rows with the token calls per connection; a block of rows per
    network (loopback first), each row naming its network."""
    conn = connect_series(doc)
    se_sources = sorted({s["labels"]["key_source"] for s in conn if s["labels"]["key_source"].startswith("se:")})
    se_source = se_source or (se_sources[0] if se_sources else None)
    jwt_all = [s for s in doc["series"] if s.get("kind") == "jwt"]
    # one block of rows per network, loopback first: software and secure element are compared over
    # the same network, never across two
    seen = [_network(s) for s in conn + jwt_all]
    networks = sorted(dict.fromkeys(seen), key=lambda n: (n != "loopback", seen.index(n)))
    rows = []

    def find(proto, ks, hsk, client, net, ksess="warm", server="libcoap"):
        for s in conn:
            lb = s["labels"]
            if (lb["protocol"], lb["key_source"], lb["handshake"], lb.get("client"), lb.get("auth", "mtls"),
                    lb.get("security", "pki"), lb.get("nodelay", True), _network(s), lb.get("key_session", "warm"),
                    lb.get("coap_server", "libcoap")) == \
                    (proto, ks, hsk, client, "mtls", "pki", True, net, ksess, server):
                return s
        return None

    # CoAP once per CoAP/DTLS server measured (libcoap first; Californium resumes, libcoap does not)
    servers = {"coap": sorted({s["labels"].get("coap_server", "libcoap") for s in conn
                               if s["labels"]["protocol"] == "coap"}, key=lambda x: x != "libcoap")}
    for net in networks:
        for proto, server in ((p, sv) for p in PROTOCOL_ORDER for sv in servers.get(p, ["libcoap"])):
            client = "openvpn" if proto == "vpn" else "probe"
            # a cold key session (session, login, key search per connection) next to the warm one;
            # the software key has no session: its figure is the same in both rows
            for hsk, ksess in (("full", "warm"), ("full", "cold"), ("resumed", "warm")):
                sw, tok = (find(proto, "software", hsk, client, net, server=server),
                           find(proto, "token", hsk, client, net, ksess, server))
                se = find(proto, se_source, hsk, client, net, ksess, server) if se_source else None
                if ksess == "cold" and not (se or tok):
                    continue
                if not (sw or se or tok):
                    continue
                per = ((se or {}).get("derived") or {}).get("se_calls")
                a, b = _p50(sw), _p50(se)
                rows.append({"network": net, "protocol": proto if server == "libcoap" else f"{proto} ({server})",
                             "handshake": hsk, "auth": "mtls", "key_session": ksess,
                             "software_p50_us": a, "token_p50_us": _p50(tok), "se_p50_us": b,
                             "difference_us": (b - a) if a is not None and b is not None else None,
                             "se_parts_us": se_categories(per) if per else None,
                             "se_calls_per_conn": per.get("token_calls_per_op") if per else None,
                             "resumed": ((se or sw or {}).get("derived") or {}).get("resumed"),
                             "n": ((se or sw or {}).get("summary") or {}).get("n")})
        jwt = [s for s in jwt_all if _network(s) == net]
        for mode, ksess in (("jwt_fresh", "warm"), ("jwt_fresh", "cold"), ("jwt_cached", "warm")):
            sw = next((s for s in jwt if s["labels"]["mode"] == mode and s["labels"]["profile"] == "software"), None)
            se = next((s for s in jwt if s["labels"]["mode"] == mode and s["labels"]["profile"] != "software"
                       and s["labels"].get("key_session", "warm") == ksess
                       and (se_source is None or f"se:{s['labels']['profile']}" == se_source)), None)
            if not (sw or se) or (ksess == "cold" and not se):
                continue
            per = ((se or {}).get("derived") or {}).get("per_call")
            a, b = _p50(sw), _p50(se)
            rows.append({"network": net, "protocol": "https", "handshake": "full", "auth": mode, "key_session": ksess,
                         "software_p50_us": a, "token_p50_us": None, "se_p50_us": b,
                         "difference_us": (b - a) if a is not None and b is not None else None,
                         "se_parts_us": se_categories(per) if per else None,
                         "se_calls_per_conn": per.get("token_calls_per_op") if per else None, "resumed": None,
                         "n": ((se or sw or {}).get("summary") or {}).get("n")})
    return {"se_source": se_source, "rows": rows,
            "networks": list(dict.fromkeys(r["network"] for r in rows))}


def _network(s: dict) -> str:
    net = s.get("labels", {}).get("network") or "loopback"
    return "loopback" if net == "none" else net
