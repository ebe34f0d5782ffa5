"""`secperf plan --verify`: for each measure the emulator can run — session resumption (MQTT,
HTTPS, and CoAP over DTLS against Californium's server), JWT caching (HTTPS), PSK (CoAP over
DTLS), keep-alive (MQTT: messages on a kept session) — run the before/after pair on the real
servers over the pattern's emulated link with `secperf connect`'s library functions, and put the
measured P50 next to the what-if's prediction of the same scenario on the same link. The measured
series join the plan's Result.

CoAP resumption runs against Californium's server because libcoap's coap-server resumes no DTLS
session with a verified client certificate (it sets no session ID context; measure/connect.py
RESUMPTION_REFUSED); both rows of that pair use Californium so they differ only by the measure.
Keep-alive rows time each message on a kept MQTT/TLS session (paho-mqtt, QoS 1 PUBLISH -> PUBACK,
measure/kept.py) against the planner's per-message prediction for the pattern's payload; the
key does not matter on a kept session (no handshake), so the software key is used.
Lives in app/ because it drives the lab; plan/ never imports measure or lab."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..core.analysis_schema import VerifyRow
from ..core.derived import derived
from ..inputs import netspec as NS
from ..inputs.devices import choose_device
from ..inputs.se_profiles import ProfileError, profiles_with
from ..measure import connect as MC
from ..measure.kept import measure_kept_mqtt
from ..model import costs as C
from ..model import flights as F
from ..model import network as N
from ..model import predict as P
from ..sim import montecarlo as M
from . import bounds, links
from .connect import connect_configs, key_profiles

if TYPE_CHECKING:
    from ..core.result_schema import Result, Series
    from ..core.store import Run
    from ..inputs.se_profiles import Profile as SEProfile
    from ..measure.connect_config import ConnectConfig
    from .plan_options import PlanOptions


@dataclass(frozen=True)
class Row:
    """One measured row of a before/after pair and the what-if scenario that predicts it."""

    row: str
    protocol: str  # connect protocol
    handshake: str  # connect handshake
    auth: str  # mtls | jwt_fresh | jwt_cached
    security: str | None = None  # coap: pki | psk
    whatif_protocol: str = ""
    whatif_handshake: str = ""
    coap_server: str = "libcoap"
    kept: bool = False  # messages on a kept session (keep-alive), not set-ups
    no_cookie: bool = False  # the server skips HelloVerifyRequest on resumption (Californium)


CF = "californium"
# measure -> (pattern protocol, auth) -> the before and after rows
PAIRS = {
    "resumption": {
        ("mqtt", "mtls"): [
            Row("full", "mqtt", "full", "mtls", None, "mqtt", "full"),
            Row("resumed", "mqtt", "resumed", "mtls", None, "mqtt", "resumed"),
        ],
        ("https", "mtls"): [
            Row("full", "https", "full", "mtls", None, "https", "full"),
            Row("resumed", "https", "resumed", "mtls", None, "https", "resumed"),
        ],
        ("coap", "mtls"): [
            Row("full (Cf)", "coap", "full", "mtls", "pki", "coap", "full", CF),
            Row("resumed (Cf)", "coap", "resumed", "mtls", "pki", "coap", "resumed", CF, no_cookie=True),
        ],
    },
    "token-cache": {
        ("https", "jwt"): [
            Row("fresh JWT", "https", "full", "jwt_fresh", None, "jwt", "fresh"),
            Row("cached JWT", "https", "full", "jwt_cached", None, "jwt", "cached"),
        ]
    },
    "psk": {
        ("coap", "mtls"): [
            Row("certificate", "coap", "full", "mtls", "pki", "coap", "full"),
            Row("PSK", "coap", "full", "mtls", "psk", "coap", "psk"),
        ]
    },
    "keepalive": {
        ("mqtt", "mtls"): [
            Row("full", "mqtt", "full", "mtls", None, "mqtt", "full"),
            Row("kept msg", "mqtt", "kept", "mtls", None, "mqtt", "", kept=True),
        ]
    },
}
NOT_RUN = {
    ("keepalive", "coap"): "not run: no client here keeps a DTLS session for several timed CoAP requests",
    ("keepalive", "https"): "not run: the probe and the JWT client make one request per connection",
    ("resumption", "https", "jwt"): "not run: the JWT client opens a new TLS session per request (no resumption); "
    "the plan composes JWT + resumption from the what-if's resumed HTTPS plan",
}
KEPT_MESSAGES = 5


def jobs(plans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The before/after pairs to run, one per (protocol, measure, network, key)."""
    seen: set[tuple[str, ...]] = set()
    out: list[dict[str, Any]] = []
    for p in plans:
        inp = p["inputs"]
        for m in [x["measure"] for x in p["measures"]]:
            k = (inp["protocol"], inp["auth"], m, inp["network"], inp["key"])
            if k in seen:
                continue
            seen.add(k)
            job = {
                "pattern": p["pattern"],
                "measure": m,
                "network": inp["network"],
                "key": inp["key"],
                "device": inp["device"],
                "payload_up_bytes": inp.get("payload_up_bytes", 64),
                "kept_p50_ms": p["before"]["numbers"].get("kept_message_p50_ms"),
            }
            pair = PAIRS.get(m, {}).get((inp["protocol"], inp["auth"]))
            if pair is not None:
                out.append({**job, "rows": pair})
                continue
            note = NOT_RUN.get((m, inp["protocol"], inp["auth"])) or NOT_RUN.get((m, inp["protocol"]))
            if note:
                out.append({**job, "rows": [], "note": note})
    return out


def without_cookie_exchange(pl: P.Plan) -> P.Plan:
    """The plan without its first exchange when that is the DTLS cookie exchange (ClientHello ->
    HelloVerifyRequest): Californium's server resumes a session on the first ClientHello (measured:
    ClientHello, then ServerHello + ChangeCipherSpec + Finished), while the what-if's `resumed`
    DTLS handshake keeps the cookie round trip that OpenSSL-based servers make."""
    if pl.flights[1] is None or "HelloVerifyRequest" not in pl.flights[1].name:
        return pl
    flights = tuple(None if f is None else replace(f, exchange=f.exchange - 1) for f in pl.flights[2:])
    return replace(pl, model=replace(pl.model, exchanges=pl.model.exchanges[1:]), flights=flights)


@dataclass
class RowInputs:
    """What --verify's rows name, each looked up once per run (rows share links, keys and devices):
    the secure-element profiles read once (connect_configs, key_profiles and the prediction take
    them), each link parsed once, each device chosen once (inputs.devices.choose_device) and its cost
    table loaded once."""

    _profiles: dict[str, SEProfile] | None = None
    _specs: dict[str, NS.NetSpec] = field(default_factory=dict)
    _links: dict[str, N.LinkModel] = field(default_factory=dict)
    _tables: dict[str, C.CostTable] = field(default_factory=dict)

    def profiles(self) -> dict[str, SEProfile]:
        if self._profiles is None:
            self._profiles = profiles_with()
        return self._profiles

    def se(self, name: str) -> SEProfile:
        known = self.profiles()
        if name not in known:
            raise ProfileError(f"unknown secure-element profile {name!r}; known: {', '.join(known)}")
        return known[name]

    def spec(self, network: str) -> NS.NetSpec:
        """The row's link resolved once a run: the NetSpec the connections run over (an emulated link is
        built from it, not parsed again from its name in lab/) and the link model is made from."""
        if network not in self._specs:
            self._specs[network] = NS.parse_networks([network])[0]
        return self._specs[network]

    def link(self, network: str) -> N.LinkModel:
        if network not in self._links:
            self._links[network] = N.from_spec(self.spec(network))
        return self._links[network]

    def table(self, device: str) -> C.CostTable:
        """The table a row's prediction draws from: a cost table by name; an emulated core's plan is
        checked against this host's table (the verified connections run on this host's CPU)."""
        if device not in self._tables:
            ch = choose_device(device)
            self._tables[device] = C.load_table(ch.name if ch.table and ch.name else "host-default")
        return self._tables[device]


def predicted_p50_ms(
    protocol: str,
    handshake: str,
    key: str,
    network: str,
    n: int,
    seed: int,
    device: str,
    no_cookie: bool = False,
    inputs: RowInputs | None = None,
) -> float:
    """The what-if's P50 of the row's exchange. The verified connections run on this host's CPU: an
    emulated core's plan is checked against the host table's prediction of the same exchange (the
    device's own counts are checked by benchmarks/whatif_device_counts.py). inputs: the run's
    looked-up names (RowInputs; a fresh one when not given)."""
    inputs = inputs or RowInputs()
    sc = F.Scenario(protocol=protocol, handshake=handshake, key=key)
    se = inputs.se(sc.se_profile) if sc.se_profile else None
    pl = P.plan(sc, inputs.table(device), inputs.link(network), se=se)
    if no_cookie:
        pl = without_cookie_exchange(pl)
    return float(M.simulate(pl, n, seed)["usable"]["p50_us"]) / 1e3


def _measured(doc: Result, start: int, cfg: ConnectConfig) -> Series | None:
    for s in doc.series[start:]:
        if cfg.client == "jwt-client":
            if (
                s.kind == "jwt"
                and s.labels.get("mode") == cfg.auth
                and s.labels.get("profile") == (cfg.profile or "software")
                and s.labels.get("network") == cfg.network
            ):
                return s
        elif s.id == cfg.series_id:
            return s
    return None


def _run_row(
    job: dict[str, Any], r: Row, o: PlanOptions, doc: Result, run: Run, inputs: RowInputs
) -> tuple[Series | None, str, float | None]:
    """Measure one row; (series or None, key used, predicted P50 ms). inputs: the run's looked-up names."""

    cp = MC.ConnectParams(n=o.verify_n, warmup=2, timeout_ms=5000, seed=o.seed, links=(inputs.spec(job["network"]),))
    if r.kept:
        s: Series | None = measure_kept_mqtt(
            job["network"], cp, doc, run, messages=KEPT_MESSAGES, payload_bytes=int(job["payload_up_bytes"])
        )
        return s, "software", job["kept_p50_ms"]
    key = "software" if r.security == "psk" else job["key"]
    if r.handshake != "full" and key.endswith(":cold"):
        # a resumed handshake never uses the client's key (the session is resumed, nothing is signed):
        # opening the secure element's session per connection ("cold") has nothing to act on there
        key = key.removesuffix(":cold")
    cfgs = connect_configs(
        [r.protocol],
        [key],
        [r.handshake],
        None,
        [r.auth],
        coap_security=[r.security] if r.security else None,
        networks=[job["network"]],
        coap_servers=[r.coap_server],
        profiles=inputs.profiles(),
    )
    want = "jwt-client" if r.auth.startswith("jwt") else "probe"
    cfgs = [c for c in cfgs if c.client == want and c.coap_server == r.coap_server] or cfgs  # only this row
    # the JWT client measures fresh and cached tokens in one run: the second row finds its series
    s = _measured(doc, 0, cfgs[0]) if want == "jwt-client" else None
    if s is None:
        start = len(doc.series)
        cp.profiles = key_profiles(cfgs[:1], known=inputs.profiles())  # the row's key source
        MC.run_connect(cfgs[:1], cp, doc, run)
        s = _measured(doc, start, cfgs[0])
    pred = predicted_p50_ms(
        r.whatif_protocol,
        r.whatif_handshake,
        key,
        job["network"],
        20_000,
        o.seed,
        job["device"],
        no_cookie=r.no_cookie,
        inputs=inputs,
    )
    return s, key, pred


def _derived_row(
    job: dict[str, Any], r: Row, o: PlanOptions, doc: Result, run: Run, inputs: RowInputs
) -> tuple[Series | None, str, float | None]:
    """One row secperf built itself from the plan: an input error there blames options the user never
    gave, so it is secperf's (core/derived.py: InternalError, exit 1, naming the row it derived; the partial
    Result marked internal-error)."""

    with derived(
        f"plan --verify derived the row '{r.row}' of {job['measure']} ({r.protocol}, {r.handshake} "
        f"handshake, key {job['key']}, network {job['network']})",
        doc,
        run,
        "plan --verify's derived rows",
    ):
        return _run_row(job, r, o, doc, run, inputs)


def estimate(plans: list[dict[str, Any]], o: PlanOptions) -> dict[str, float]:
    """--verify's length (app/bounds.py): each distinct row's warm-up + --verify-n connections over its link
    (a kept session: its messages too); refused over --max-hours before any server starts."""

    rows: list[tuple[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    for job in jobs(plans):
        spec = links.networks([job["network"]])[0] if job["rows"] else None
        for r in job["rows"]:
            k = (r, job["network"], job["key"])
            if k not in seen:
                seen.add(k)
                rows.append((r.protocol if not r.kept else "mqtt", spec))
    per = o.verify_n + 3
    est = bounds.estimate_s(rows, per) + KEPT_MESSAGES * bounds.link_rtt_s(None) * len(rows)
    if not rows:
        return bounds.check_estimate("plan --verify", est, "no row to run", "lower --verify-n", o.max_hours)
    return bounds.check(
        "plan --verify",
        rows,
        per,
        o.max_hours,
        extra_s=est - bounds.estimate_s(rows, per),
        lower="lower --verify-n or the link's delay",
    )


def verify(plans: list[dict[str, Any]], o: PlanOptions, doc: Result, run: Run) -> list[VerifyRow]:
    """The --verify table: a row per planned row measured (or a note-only row per job with none)."""
    rows: list[VerifyRow] = []
    done: dict[
        tuple[Any, ...], tuple[Series | None, str, float | None]
    ] = {}  # a row measured once per run (e.g. the full set-up before resumption and before keep-alive)
    inputs = RowInputs()  # the names the rows share, each looked up once for the run
    for job in jobs(plans):
        if not job["rows"]:
            rows.append(
                VerifyRow(
                    pattern=job["pattern"], measure=job["measure"], row="–", network=job["network"], note=job["note"]
                )
            )
            continue
        for r in job["rows"]:
            k = (r, job["network"], job["key"], job["device"], job["payload_up_bytes"] if r.kept else None)
            if k not in done:
                done[k] = _derived_row(job, r, o, doc, run, inputs)
            s, key, pred = done[k]
            meas = s.p50_us if s is not None else None
            note = ""
            if s is None:
                note = "no measured series"
            elif s.status not in ("ok", "partial"):
                note = (s.failures[-1].reason if s.failures else s.status)[:120]
            elif s.labels.get("note"):
                note = s.labels["note"][:120]
            if key != job["key"] and r.security != "psk" and not r.kept:
                note = (note + "; " if note else "") + (
                    f"{r.handshake}: the client key is not used, measured with {key} (cold applies to full handshakes)"
                )
            if r.kept and s is not None:
                note = note or (
                    f"{KEPT_MESSAGES} QoS 1 messages of {job['payload_up_bytes']} B per kept connection "
                    f"(paho-mqtt, software key)"
                )
            rows.append(
                VerifyRow(
                    pattern=job["pattern"],
                    measure=job["measure"],
                    row=r.row,
                    network=job["network"],
                    key=key,
                    series=s.id if s is not None else None,
                    predicted_p50_ms=pred,
                    measured_p50_ms=None if meas is None else meas / 1e3,
                    error_share=None if meas is None or pred is None else pred / (meas / 1e3) - 1.0,
                    n=len(s.values_us) if s is not None else 0,
                    note=note,
                )
            )
    return rows
