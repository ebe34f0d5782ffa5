"""Cost tables for the what-if model: per-operation costs per party (client, server), each with its
source, from a built-in table (data/whatif_costs.toml), a device table, or a calibration Result.

An operation is named ``kind:alg`` (``sign:ecdsa-p256``, ``derive:x25519``, ``encaps:ml-kem-768``),
``parse_cert``, or ``base:PROTOCOL:HANDSHAKE:KEYKIND:PARTY`` — the library's own work per handshake
beyond the named crypto, which a calibration run measures as the residual of its loopback rows.
A cost the table lacks raises MissingCost (exit 2) naming the operation: never a silent zero.
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from typing import Any

from ..core.errors import InputError, ResultError
from ..core.result import validate
from ..core.result_schema import ConnectDerived, CountedDerived, HandshakeDerived, Result, Series
from ..inputs import netspec as NS
from ..inputs.core_profiles import Core
from . import flights
from . import flights as F
from .device_ops import DeviceOp, set_device_ops  # the user's own code replaces the library's op
from .figure import Figure

PARTIES = ("client", "server")


class MissingCost(InputError):
    """The model needs an operation's cost that the table does not have."""


class CalibrationError(InputError):
    """A calibration Result that cannot calibrate the model (wrong kind, missing rows)."""


@dataclass
class CostTable:
    name: str
    description: str
    source: str
    sigma: float = 0.15
    ops: dict[str, Figure] = field(default_factory=dict)  # same for both parties
    party_ops: dict[tuple[str, str], Figure] = field(default_factory=dict)  # (party, op) overrides
    se_host: dict[str, Figure] = field(default_factory=dict)  # key source -> host work around a token call
    # scenario key -> measured per-message CPU
    breakdowns: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    measured: dict[str, dict[str, Any]] = field(default_factory=dict)  # scenario key -> loopback P50s (for tables)
    strict: tuple[str, ...] = ()  # parties whose costs never fall back to the shared ops (a device)
    # a device table's library (its rows' stack) and, per protocol another library counts, that library's
    # table (app/device_stacks.py): model.predict.plan costs each scenario from for_protocol(protocol)
    stack: str | None = None
    library: str | None = None
    by_protocol: dict[str, CostTable] = field(default_factory=dict)

    def for_protocol(self, protocol: str) -> CostTable:
        """The table that costs `protocol`: another library's when one counts it, else this one."""
        return self.by_protocol.get(protocol, self)

    def stacks(self) -> dict[str, str]:
        """Library per protocol of a device table whose protocols come from several ({} otherwise)."""
        if not self.by_protocol:
            return {}
        return {p: t.library or t.stack or t.name for p, t in self.by_protocol.items()}

    def derived(self, name: str, description: str, source: str, strict: tuple[str, ...] | None = None) -> CostTable:
        """A table built on this one (calibrated from a run, a device's counts): its own name and
        source, its own copies of the figures to change, the same spread; `strict` as given or kept."""
        return CostTable(
            name=name,
            description=description,
            source=source,
            sigma=self.sigma,
            ops=dict(self.ops),
            party_ops=dict(self.party_ops),
            se_host=dict(self.se_host),
            breakdowns=dict(self.breakdowns),
            measured=dict(self.measured),
            strict=self.strict if strict is None else strict,
        )

    def has(self, party: str, op: str) -> bool:
        return (party, op) in self.party_ops or (party not in self.strict and op in self.ops)

    def get(self, party: str, op: str) -> Figure:
        if (party, op) in self.party_ops:
            return self.party_ops[(party, op)]
        if party in self.strict:
            raise MissingCost(
                f"cost table {self.name!r}: the device Result counted no {party} cost for {op!r}; "
                f"count it (`secperf device crypto --device CORE`, or `secperf device handshake --device CORE` "
                f"rows of this protocol and handshake) or predict with a cost table that has it"
            )
        if op in self.ops:
            return self.ops[op]
        if op.startswith("base:"):
            # base:PROTO:HS:KEYKIND:PARTY falls back to the same scenario with a software key, then to
            # the table's generic per-party estimate
            parts = op.split(":")
            if len(parts) == 5 and parts[3] != "software":
                alt = ":".join(parts[:3] + ["software", parts[4]])
                if self.has(party, alt):
                    f = self.get(party, alt)
                    return replace(f, source=f"{f.source} (software-key row reused)")
            generic = f"base:{party}"
            if generic in self.ops:
                return self.ops[generic]
        raise MissingCost(
            f"cost table {self.name!r} has no {party} cost for {op!r}; calibrate with a Result "
            f"that measured it (`--calibrate results/X/result.json`, e.g. from `secperf crypto "
            f"--alg {op.split(':')[-1]}`) or pick a --device table that has it"
        )

    def rows(self) -> list[dict[str, Any]]:
        out = [{"party": "both", "op": k, "us": f.us, "source": f.source} for k, f in sorted(self.ops.items())]
        out += [{"party": p, "op": k, "us": f.us, "source": f.source} for (p, k), f in sorted(self.party_ops.items())]
        out += [
            {"party": "client", "op": f"se-host:{k}", "us": f.us, "source": f.source} for k, f in self.se_host.items()
        ]
        return out


def _tables_toml() -> dict[str, Any]:
    return tomllib.loads(resources.files("secperf.data").joinpath("whatif_costs.toml").read_text())


def table_names() -> list[str]:
    return list(_tables_toml()["tables"])


def load_table(name: str = "host-default") -> CostTable:
    tables = _tables_toml()["tables"]
    if name not in tables:
        raise InputError(f"--device: unknown cost table {name!r}; known: {', '.join(tables)}")
    t = tables[name]
    src = t["source"]
    srcs = t.get("sources", {})
    ops: dict[str, Figure] = {}
    for k, v in {**t.get("estimates", {}), **t.get("ops", {})}.items():
        s = srcs.get(k) or (srcs.get("base") if k.startswith("base") else None) or src
        ops[k] = Figure(float(v), s)
    return CostTable(
        name=name, description=t.get("description", ""), source=src, sigma=float(t.get("sigma", 0.15)), ops=ops
    )


# --- calibration from a Result ---------------------------------------------------------------------
def _sigma(s: Series) -> float:
    if s.summary is None:
        return 0.1
    p50, p90 = s.summary.p50_us, s.summary.p90_us
    if p50 and p90 and p90 > p50 > 0:
        return min(1.0, math.log(p90 / p50) / 1.2816)
    return 0.1


RATIOS_MAX = 500


def _ratios(s: Series) -> list[float] | None:
    """The row's own spread: each measured value over the row's P50, sorted (at most RATIOS_MAX,
    evenly picked); the simulator draws a connection's compute factor from these instead of a
    lognormal, so a calibration row's tail (a slow scheduling moment, a cache miss) keeps its real
    shape. None below 20 values."""
    vals = sorted(v for v in s.values_us if v and v > 0)
    p50 = s.p50_us
    if len(vals) < 20 or not p50:
        return None
    if len(vals) > RATIOS_MAX:
        vals = [vals[round(i * (len(vals) - 1) / (RATIOS_MAX - 1))] for i in range(RATIOS_MAX)]
    return [round(v / p50, 4) for v in vals]


def scenario_key(protocol: str, handshake: str, key: str) -> str:
    kind = "software" if key in ("software", "token") else "se"
    return f"{protocol}:{handshake}:{kind}"


def handshake_row_scenario(labels: Mapping[str, Any]) -> tuple[str, str] | None:
    """(model protocol, handshake) a `secperf handshake` row measured, or None if the model has none."""
    proto, tls, mode = labels.get("proto"), labels.get("tls"), labels.get("mode")
    hs = {
        "full": "full",
        "resume-ticket": "resumed",
        "resume-id": "resumed",
        "psk": "psk",
        "psk-dhe": "psk-dhe",
        "0rtt": "0rtt",
    }.get(str(mode))
    if hs is None or labels.get("server") != "probe":
        return None
    if proto == "dtls":
        return ("dtls1.2", "full" if labels.get("dtls_cookie", True) else "nocookie") if hs == "full" else None
    return (f"tls{tls}", hs)


def connect_row_scenario(labels: Mapping[str, Any]) -> tuple[str, str, str] | None:
    proto: Any = labels.get("protocol")
    hs: Any = labels.get("handshake")
    key: Any = labels.get("key_source", "software")
    if (labels.get("client"), proto) in (("aioquic", "quic"), ("wolfssl", "dtls13")):  # connect quic|dtls13
        if labels.get("lost", "none") != "none":
            return None
        return ("quic", hs, key) if proto == "quic" else ("dtls1.3", hs + ("-cid" if labels.get("cid") else ""), key)
    if (labels.get("client"), proto) == ("lakers+aiocoap", "edhoc"):  # connect edhoc (measure/edhoc.py)
        return (
            "edhoc",
            f"m{labels.get('method')}-{labels.get('cred')}" + ("-combined" if labels.get("flow") == "combined" else ""),
            key,
        )
    if labels.get("client") != "probe" or proto not in ("https", "mqtt", "coap"):
        return None
    if labels.get("auth", "mtls") not in ("mtls", None) or labels.get("security", "pki") != "pki":
        return None
    return (proto, hs, key)


def _checked(doc: Result, where: str) -> Result:
    """The Result a calibration reads, checked as its file would be (a CalibrationError if not one)."""
    try:
        return validate(doc, where)
    except ResultError as exc:
        raise CalibrationError(str(exc)) from None


def calibrate(doc: Result, base: CostTable | None = None, where: str = "--calibrate") -> CostTable:
    """A cost table from a Result's own rows: crypto P50s per operation, and per loopback handshake or
    connect row the measured client CPU, secure-element time and the rest (server + host), kept as
    the scenario's measured components; `model.predict` fits the `base:` residuals from them."""
    doc = _checked(doc, where)
    if doc.kind == "whatif":
        raise CalibrationError(
            f"{where}: a whatif Result is a prediction, not a measurement; pass a Result of "
            f"`secperf run`, `crypto`, `handshake` or `connect`"
        )
    t = base or load_table()
    t = t.derived(
        f"calibrated:{doc.run_id}", f"calibrated from run {doc.run_id} ({doc.kind}) over {t.name}", f"run {doc.run_id}"
    )
    used = 0
    for s in doc.series:
        if s.status not in ("ok", "partial"):
            continue
        lab = s.labels
        p50 = s.p50_us
        if p50 is None:
            continue
        if s.kind == "crypto" and lab.get("op") in ("keygen", "derive", "sign", "verify", "encaps", "decaps"):
            t.ops[f"{lab['op']}:{lab['alg']}"] = Figure(p50, f"run {doc.run_id} series {s.id} (P50)")
            used += 1
            continue
        if lab.get("network", "loopback") not in NS.LOOPBACK_NAMES:
            continue
        if s.kind == "handshake":
            hs_sc = handshake_row_scenario(lab)
            if not hs_sc or lab.get("mtls"):
                continue
            client = s.cpu_summary.p50_us if s.cpu_summary is not None else None
            if client is None:
                continue
            key = scenario_key(hs_sc[0], hs_sc[1], "software")
            t.measured[key] = {
                "metric": "handshake",
                "total_us": p50,
                "client_us": client,
                "se_us": 0.0,
                "server_us": max(0.0, p50 - client),
                "sigma": _sigma(s),
                "ratios": _ratios(s),
                "series": s.id,
                "group": lab.get("groups"),
                "cert": lab.get("cert_type"),
                "depth": lab.get("depth", 1),
            }
            bd = s.derived_as(HandshakeDerived).breakdown
            if bd:
                t.breakdowns[key] = bd["messages"]
            used += 1
        elif s.kind == "connect":
            sc = connect_row_scenario(lab)
            if not sc:
                continue
            phases = {p["phase"]: p["p50_us"] for p in s.derived_as(ConnectDerived).phases_p50_us or []}
            client = phases.get("handshake: client CPU")
            if client is None:
                continue
            se = phases.get("secure element", 0.0)
            key = scenario_key(*sc)
            t.measured[key] = {
                "metric": "usable",
                "total_us": p50,
                "client_us": client,
                "se_us": se,
                "server_us": max(0.0, p50 - client - se),
                "sigma": _sigma(s),
                "ratios": _ratios(s) if not se else None,
                "series": s.id,
                "group": lab.get("group", "x25519"),
                "cert": lab.get("server_cert", "ecdsa-p256"),
                "depth": 1,
                "client_key": lab.get("key_type", "ecdsa-p256"),
            }
            calls = s.derived_as(ConnectDerived).se_calls or {}
            if sc[2].startswith("se:") and calls.get("host_p50_ms") is not None:
                t.se_host[sc[2]] = Figure(
                    calls["host_p50_ms"] * 1000.0,
                    f"run {doc.run_id} series {s.id}: token host work around the "
                    f"injected delay (SoftHSM2 + engine), P50",
                )
            used += 1
    if not used:
        raise CalibrationError(
            f"{where}: Result {doc.run_id} (kind {doc.kind!r}) has no rows the model "
            f"can use: it needs crypto rows (secperf crypto) or loopback handshake/connect rows "
            f"(secperf handshake versions, secperf connect https,mqtt,coap)"
        )
    return t


# --- a device's instruction counts (`secperf device`) -----------------------------------------------
from .device_rows import DEVICE_GROUPS, DEVICE_OPS, device_row_handshake, device_row_protocols  # noqa: E402, F401


def _app_bytes() -> dict[str, tuple[int, str]]:
    """Plaintext bytes the client's record layer seals and opens for each protocol's application
    exchange, with what they are (model/flights/'s sizes; TLS 1.3 servers send two session
    tickets after a full handshake, OpenSSL's default)."""

    nst = 2 * F.NST13
    return {
        "tls1.3": (F.HTTP_REQ + F.HTTP_RESP + nst, "GET + response + 2 tickets"),
        "tls1.2": (F.HTTP_REQ + F.HTTP_RESP, "GET + response"),
        "dtls1.2": (F.HTTP_REQ + F.HTTP_RESP, "request + response"),
        "https": (F.HTTP_REQ + F.HTTP_RESP + nst, "GET + response + 2 tickets"),
        "jwt": (F.JWT_REQ + F.HTTP_RESP + nst, "GET with the JWT + response + 2 tickets"),
        "mqtt": (F.MQTT_CONNECT + F.MQTT_CONNACK + nst, "CONNECT + CONNACK + 2 tickets"),
        "coap": (F.COAP_REQ + F.COAP_RESP, "CoAP CON + ACK"),
        "openvpn": (2 * 300 + 100 + 300, "key-method data both ways + PUSH_REQUEST + PUSH_REPLY"),
    }


def _device_app_costs(t: CostTable, core: Core) -> None:
    """The client's application exchange on the device (`app:PROTOCOL`, charged after the last
    answer): costed from a counted primitive, the suite's AEAD over 1024 bytes, per byte sealed or
    opened. Decision: the device client's own application exchange (a GET to `openssl s_server -www`,
    whose status page is several KB) is no protocol's, so its count is not used; the record's fixed
    work per message (header, nonce) is left out, the AEAD's own per-call cost is inside the 1024-byte
    row. An OpenVPN client's tun set-up is an operating-system call, not counted: an A-profile core
    takes the host table's figure for it (named); a microcontroller runs no OpenVPN client."""
    aead = next(
        (
            t.party_ops[("client", f"aead:{a}")]
            for a in ("aes-128-gcm-1024", "chacha20-poly1305-1024")
            if ("client", f"aead:{a}") in t.party_ops
        ),
        None,
    )
    if aead is not None:
        for proto, (n, what) in _app_bytes().items():
            t.party_ops[("client", f"app:{proto}")] = Figure(
                aead.us * n / 1024,
                f"costed from a counted primitive: {n} B ({what}) x the AEAD's {aead.us:,.0f} µs "
                f"per 1024 B ({aead.source})",
            )
    if getattr(core, "profile", "M") == "A" and "tun_setup" in t.ops:
        f = t.ops["tun_setup"]
        t.party_ops[("client", "tun_setup")] = Figure(
            f.us, f"not counted on the device (an operating-system call): the host table's figure, {f.source}"
        )


# primitives-only stacks whose counts join any TLS stack's table for the operations it lacks (the TLS
# stacks built here have no ML-KEM): PQClean's portable ML-KEM/ML-DSA; and the user's own code
# (`device crypto --source`), whose op replaces the library's when its Result comes later in --calibrate
ADDON_STACKS = ("pqclean", "user")


def device_us(instructions: float, core: Core) -> tuple[float, str]:
    """µs of `instructions` on a core: instructions × CPI / clock with the middle of the core's CPI
    range (IPC = 1 / CPI), and the rule with the range for the source."""
    cpi = (core.cpi[0] + core.cpi[1]) / 2
    us = instructions * cpi / core.clock_mhz
    lo, hi = (instructions * c / core.clock_mhz for c in core.cpi)
    return us, (
        f"{instructions:,.0f} instructions x CPI {cpi:g} (middle of {core.cpi[0]:g}-{core.cpi[1]:g}"
        f"{', an estimate' if core.cpi_estimate else ''}) / {core.clock_mhz:g} MHz = {us:,.0f} µs "
        f"(range {lo:,.0f}-{hi:,.0f} µs)"
    )


def device_row_us(dv: CountedDerived, core: Core) -> tuple[float, str]:
    """µs of a device row: the timing model's cycles / clock when the row carries them (its point,
    with the band in the rule), else the instruction count at the middle of the old CPI range."""
    t, ins = dv.time, float(dv.instructions_median or 0)
    if t is not None and t.cycles:
        us = float(t.cycles) / core.clock_mhz
        return us, (
            f"{t.cycles:,.0f} cycles (timing model {t.model or '?'}, band {t.cycles_low or 0:,.0f}-"
            f"{t.cycles_high or 0:,.0f}; {ins:,.0f} instructions) / "
            f"{core.clock_mhz:g} MHz = {us:,.0f} µs"
        )
    return device_us(ins, core)


def _counted(s: Series) -> CountedDerived | None:
    """A device row's counts when it has some (a device or device-crypto series with its median)."""
    d = s.derived
    return d if isinstance(d, CountedDerived) and d.instructions_median else None


def _row_stack(s: Series) -> str | None:
    stack: str | None = s.labels.get("stack") or s.labels.get("library")
    return stack


def device_stack(docs: Sequence[Result], stack: str | None, core_name: str) -> str | None:
    """The one TLS stack whose counts make a device cost table: `stack` if given (it must have rows),
    else the only stack of the Results' handshake rows, else the only stack of their crypto rows. A
    table never mixes libraries: wolfSSL's P-256 and Mbed TLS's X25519 would be no device's."""
    rows = [
        s
        for d in docs
        if d.kind == "device"
        for s in d.series
        if s.status in ("ok", "partial") and _counted(s) and _row_stack(s) not in ADDON_STACKS
    ]
    have = sorted({st for s in rows if (st := _row_stack(s))})
    if stack:
        if stack not in have:
            raise CalibrationError(
                f"--stack: the device Results hold counts of {', '.join(have) or 'no stack'}, not {stack!r}"
            )
        return stack
    hs = sorted({st for s in rows if s.kind == "device" and (st := _row_stack(s))})
    cr = sorted({st for s in rows if s.kind == "device_crypto" and (st := _row_stack(s))})
    for found in (hs, cr):
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise CalibrationError(
                f"--device {core_name}: the Results hold counts of several stacks "
                f"({', '.join(found)}); a cost table takes one: give --stack "
                f"{' or --stack '.join(found)}"
            )
    return None


def from_device(
    doc: Result,
    core: Core,
    base: CostTable | None = None,
    where: str = "--calibrate",
    stack: str | None = None,
    checked: bool = False,
    key_types: Mapping[str, Any] | None = None,
) -> CostTable:
    """The client's costs on an emulated device from a `secperf device` Result: its primitive counts
    (device_crypto rows) become client operations, its warm handshake rows the client's measured
    handshake CPU (model.predict fits the client's `base:` residual from them, as for a loopback
    row); the server stays the base table's (this host). Every figure is the timing model's cycles /
    clock (instructions × the old CPI range's middle for Results made before it) — modelled, not
    measured; its source names the run, the row and the rule. checked: `doc` was already checked as
    its file would be (core.result.new_result with its series, validate or load): not checked again.
    key_types: the model's key types when the caller holds them (a flights.Context's), else read here."""
    doc = doc if checked else _checked(doc, where)
    if doc.kind != "device":
        raise CalibrationError(
            f"{where}: --device {core.name} takes a Result of `secperf device` (its instruction "
            f"counts); this one is of kind {doc.kind!r}"
        )
    t = base or load_table()
    if t.strict:  # a second device Result adds to the first
        t = replace(t, name=f"{t.name}+{doc.run_id}", party_ops=dict(t.party_ops), measured=dict(t.measured))
    else:
        t = t.derived(
            f"device:{core.name}:{doc.run_id}",
            f"client on {core.name} ({core.description}) from run {doc.run_id}'s instruction counts; server: {t.name}",
            f"run {doc.run_id} (secperf device)",
            strict=("client",),
        )
    used = 0
    ops: list[DeviceOp] = []  # the counted primitives, set into the table together after the loop
    for s in doc.series:
        lab = s.labels
        dv = _counted(s)
        if s.status not in ("ok", "partial") or dv is None:
            continue
        addon = lab.get("stack") in ADDON_STACKS
        if stack and _row_stack(s) not in (None, stack) and not addon:
            continue  # another library's counts (see device_stack)
        if lab.get("device") not in (None, core.name):
            raise CalibrationError(
                f"{where}: row {s.id} counted on {lab.get('device')!r}, not {core.name!r}; "
                f"give --device {lab.get('device')}"
            )
        us, rule = device_row_us(dv, core)
        if s.kind == "device_crypto" and lab.get("op") in DEVICE_OPS:
            src = f"run {doc.run_id} series {s.id} ({lab.get('library', lab.get('stack'))}): {rule}"
            ops.append((("client", DEVICE_OPS[lab["op"]]), us, lab.get("stack") == "user", src))
            used += 1
        elif s.kind == "device" and lab.get("phase") == "warm" and lab.get("group") in DEVICE_GROUPS:
            # the device's external PSK mode is psk_dhe_ke (a key share with the PSK)
            hs = device_row_handshake(lab)
            if hs is None:
                continue
            # a certificate the model knows by name (EDHOC's CCS credentials are no X.509 key type: the
            # row's credential stays in its labels, the scenario keeps its own)
            if key_types is None:
                key_types = flights.key_types()
            known = key_types
            client_cert = lab.get("client_cert", "none")
            client_cert = client_cert if client_cert in known else "none"
            server_cert = lab.get("server_cert") if lab.get("server_cert") in known else None
            # one row per model protocol and handshake: the model's default configuration (x25519,
            # AES-GCM) first
            rank = (lab["group"] == "x25519") + (lab.get("suite") == "aes128gcm")
            for proto in device_row_protocols(lab):
                key = scenario_key(proto, hs, "software")
                old = t.measured.get(key)
                alts = list(old.get("alternatives", [])) if old is not None and old.get("client_only") else []
                row: dict[str, Any] = {
                    "group": DEVICE_GROUPS[lab["group"]],
                    "cert": server_cert,
                    "client_key": client_cert if client_cert != "none" else None,
                    "suite": lab.get("suite"),
                    "client_us": us,
                    "total_us": us,
                    "series": s.id,
                    "source": f"run {doc.run_id} series {s.id}: {rule}",
                }
                alts.append(row)
                if old is not None and old.get("client_only") and old.get("rank", -1) >= rank:
                    old["alternatives"] = alts
                    continue
                t.measured[key] = {
                    "alternatives": alts,
                    "rank": rank,
                    "metric": "handshake",
                    "total_us": us,
                    "client_us": us,
                    "se_us": 0.0,
                    "server_us": None,
                    "client_only": True,
                    "sigma": 0.02,
                    "series": s.id,
                    "group": DEVICE_GROUPS[lab["group"]],
                    "cert": server_cert,
                    "depth": 1,
                    **({"client_key": client_cert} if client_cert != "none" else {}),
                    # a host row of the same scenario keeps the server's measured side
                    **(
                        {"server_row": old}
                        if old is not None and not old.get("client_only")
                        else {"server_row": old["server_row"]}
                        if old and old.get("server_row")
                        else {}
                    ),
                    "source": f"run {doc.run_id} series {s.id}: {rule}",
                }
            used += 1
    set_device_ops(t.party_ops, ops)
    _device_app_costs(t, core)
    if not used:
        raise CalibrationError(
            f"{where}: Result {doc.run_id} has no instruction counts the model can use "
            f"(`secperf device crypto --device {core.name}` or `secperf device handshake --device {core.name}`)"
        )
    return t
