"""`secperf plan --verify`: for each measure the emulator can run — session resumption (MQTT,
HTTPS), JWT caching (HTTPS), PSK (CoAP over DTLS) — run the before/after pair on the real servers
over the pattern's emulated link with `secperf connect`'s library functions, and put the measured
set-up P50 next to the what-if's prediction of the same scenario on the same link. The measured
series join the plan's Result. Keep-alive is not run: the probe makes one request per connection.
Lives in app/ because it drives the lab; plan/ never imports measure or lab."""

from __future__ import annotations

from ..model import costs as C
from ..model import network as N
from ..model import predict as P
from ..model import flights as F
from ..sim import montecarlo as M
from ..spec import netspec as NS

# measure -> (pattern protocol, auth) -> [(row, connect protocol, handshake, auth, coap security, what-if protocol,
# what-if handshake)] for before and after
PAIRS = {
    "resumption": {("mqtt", "mtls"): [("full", "mqtt", "full", "mtls", None, "mqtt", "full"),
                                      ("resumed", "mqtt", "resumed", "mtls", None, "mqtt", "resumed")],
                   ("https", "mtls"): [("full", "https", "full", "mtls", None, "https", "full"),
                                       ("resumed", "https", "resumed", "mtls", None, "https", "resumed")]},
    "token-cache": {("https", "jwt"): [("fresh JWT", "https", "full", "jwt_fresh", None, "jwt", "fresh"),
                                       ("cached JWT", "https", "full", "jwt_cached", None, "jwt", "cached")]},
    "psk": {("coap", "mtls"): [("certificate", "coap", "full", "mtls", "pki", "coap", "full"),
                               ("PSK", "coap", "full", "mtls", "psk", "coap", "psk")]},
}


def jobs(plans: list[dict]) -> list[dict]:
    """The before/after pairs to run, one per (protocol, measure, network, key)."""
    seen, out = set(), []
    for p in plans:
        inp = p["inputs"]
        names = [m["measure"] for m in p["measures"]]
        for m in names:
            pair = PAIRS.get(m, {}).get((inp["protocol"], inp["auth"]))
            if pair is None:
                continue
            k = (inp["protocol"], inp["auth"], m, inp["network"], inp["key"])
            if k in seen:
                continue
            seen.add(k)
            out.append({"pattern": p["pattern"], "measure": m, "network": inp["network"], "key": inp["key"],
                        "device": inp["device"], "rows": pair})
        if "keepalive" in names:
            out.append({"pattern": p["pattern"], "measure": "keepalive", "network": inp["network"], "key": inp["key"],
                        "device": inp["device"], "rows": [], "note": "not run: the probe makes one request per "
                        "connection, so a kept session cannot be timed by `secperf connect`"})
    return out


def predicted_p50_ms(protocol: str, handshake: str, key: str, network: str, n: int, seed: int,
                     device: str) -> float:
    sc = F.Scenario(protocol=protocol, handshake=handshake, key=key)
    link = N.from_spec(NS.parse_networks([network])[0])
    pl = P.plan(sc, C.load_table(device), link)
    return M.simulate(pl, n, seed)["usable"]["p50_us"] / 1e3


def _measured(doc: dict, start: int, cfg) -> dict | None:
    for s in doc["series"][start:]:
        if cfg.client == "jwt-client":
            if (s.get("kind") == "jwt" and s["labels"].get("mode") == cfg.auth
                    and s["labels"].get("profile") == (cfg.profile or "software")
                    and s["labels"].get("network") == cfg.network):
                return s
        elif s["id"] == cfg.series_id:
            return s
    return None


def verify(plans: list[dict], o, doc: dict, run) -> list[dict]:
    from ..measure import connect as MC
    from .connect import connect_configs
    rows = []
    for job in jobs(plans):
        if not job["rows"]:
            rows.append({"pattern": job["pattern"], "measure": job["measure"], "row": "–", "network": job["network"],
                         "note": job["note"]})
            continue
        for row, proto, hs, auth, sec, wproto, whs in job["rows"]:
            key = "software" if sec == "psk" else job["key"]
            cfgs = connect_configs([proto], [key], [hs], None, [auth], coap_security=[sec] if sec else None,
                                   networks=[job["network"]])
            want = "jwt-client" if auth.startswith("jwt") else "probe"
            cfgs = [c for c in cfgs if c.client == want] or cfgs    # only the row this pair compares
            start = len(doc["series"])
            cp = MC.ConnectParams(n=o.verify_n, warmup=2, timeout_ms=5000, seed=o.seed)
            MC.run_connect(cfgs, cp, doc, run)
            s = _measured(doc, start, cfgs[0])
            pred = predicted_p50_ms(wproto, whs, key, job["network"], 20_000, o.seed, job["device"])
            meas = (s.get("summary") or {}).get("p50_us") if s else None
            note = ""
            if s is None:
                note = "no measured series"
            elif s.get("status") not in ("ok", "partial"):
                note = (s.get("failures") or [{}])[-1].get("reason", s.get("status", ""))[:120]
            elif s["labels"].get("note"):
                note = s["labels"]["note"][:120]
            rows.append({"pattern": job["pattern"], "measure": job["measure"], "row": row, "network": job["network"],
                         "key": key, "series": s["id"] if s else None, "predicted_p50_ms": pred,
                         "measured_p50_ms": None if meas is None else meas / 1e3,
                         "error_share": None if meas is None else pred / (meas / 1e3) - 1.0,
                         "n": len(s.get("values_us") or []) if s else 0, "note": note})
    return rows
