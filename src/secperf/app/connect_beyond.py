"""`secperf connect quic|dtls13|dtls12`: the protocols beyond TLS over TCP, measured by secperf's own
client/server pairs (aioquic for QUIC, a wolfSSL 5.9 pair for DTLS 1.3 and DTLS 1.2 on the same
server), validated here so a bad choice is an input error (exit 2) before anything starts.

Decisions: these rows authenticate as the connect rows of CoAP do -- the lab's server certificate
(ECDSA P-256), and for DTLS the client's software certificate (mutual authentication); QUIC runs
server-authenticated only (aioquic's server does not request client certificates). Neither
implementation can reach a PKCS#11 key, so `--key` other than software is refused naming that; the
default key list of `connect` (software,se:iot-safe-sim) means software here, with a note.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..core.errors import InputError
from ..measure import dtls13 as D
from ..measure import quic as Q
from . import bounds, links
from .reporter import reporter
from .runner import Phase, measure_and_write

if TYPE_CHECKING:
    from collections.abc import Callable

    from ..core.result_schema import Result
    from ..core.store import Run
    from ..inputs.netspec import NetSpec
    from ..measure.dtls13 import Dtls13Config
    from ..measure.quic import QuicConfig
    from .options import ConnectOptions
    from .runner import Output, Progress

BEYOND = ("quic", "dtls13", "dtls12")
DEFAULT_KEYS = ["software", "se:iot-safe-sim"]


def split(protocols: list[str]) -> tuple[list[str], list[str]]:
    """(the protocols handled here, the others)."""
    return [p for p in protocols if p in BEYOND], [p for p in protocols if p not in BEYOND]


def check_unused(beyond: dict[str, Any] | None, protocols: list[str]) -> None:
    """--lost and --cid act on quic and dtls13 only: refused, naming them, for the other protocols."""
    for opt, key in (("--lost", "lost"), ("--cid", "cid")):
        if (beyond or {}).get(key):
            raise InputError(
                f"{opt}: acts on {'quic' if key == 'lost' else 'dtls13'}; protocol "
                f"{','.join(protocols)} has none: drop {opt}"
            )


def configs(
    protocols: list[str],
    keys: list[str],
    handshakes: list[str],
    clients: list[str],
    networks: list[str],
    lost: Sequence[str] = ("none",),
    cid: list[str] | None = None,
    keys_given: bool = True,
) -> list[QuicConfig | Dtls13Config]:
    """QuicConfig / Dtls13Config rows for the chosen protocols × handshakes × options × networks."""

    if keys != ["software"]:
        if keys_given:
            raise InputError(
                f"--key {','.join(keys)}: {', '.join(protocols)} run with a software key only "
                "(aioquic and the wolfSSL DTLS tool load PEM keys, no PKCS#11): use --key software"
            )
        reporter().note(
            f"secperf connect: note: {', '.join(protocols)}: software key only (the secure-element default "
            "applies to the TLS/DTLS 1.2 rows)"
        )
    if clients and clients not in (["all"], ["probe"]):
        raise InputError(
            f"--client {','.join(clients)}: {', '.join(protocols)} are measured by secperf's own "
            "client (aioquic; the wolfSSL DTLS tool): drop --client"
        )
    lost = list(lost or ["none"])
    out: list[QuicConfig | Dtls13Config] = []
    known = {p: (Q.HANDSHAKES if p == "quic" else ("full", "resumed")) for p in protocols}
    if len(protocols) > 1:  # several protocols: a kind runs where it exists (0rtt: QUIC), said in a note
        skipped = [
            f"{h} ({p})"
            for p in protocols
            for h in handshakes
            if h not in known[p] and any(h in known[o] for o in protocols)
        ]
        if skipped:
            reporter().note(f"secperf connect: note: not measured, no such handshake: {', '.join(skipped)}")
    for p in protocols:
        hs_p = [h for h in handshakes if h in known[p] or not any(h in known[o] for o in protocols)]
        if p == "quic":
            for h in hs_p:
                if h not in Q.HANDSHAKES:
                    raise InputError(f"quic: unknown --handshake {h!r}; known: {', '.join(Q.HANDSHAKES)}")
            for x in lost:
                if x not in Q.LOSSES and not (set(protocols) - {"quic"} and x in ("client-hello",)):
                    raise InputError(f"--lost {x!r}: unknown for quic; known: {', '.join(Q.LOSSES)}")
            if cid and "on" in cid and protocols == ["quic"]:
                raise InputError("--cid: QUIC always carries connection IDs; --cid acts on dtls13 (drop it)")
            out += [
                Q.QuicConfig(handshake=h, network=n, lost=x)
                for n in networks
                for h in hs_p
                for x in lost
                if x in Q.LOSSES
            ]
        else:
            version = "1.3" if p == "dtls13" else "1.2"
            for h in hs_p:
                if h not in D.HANDSHAKES:
                    hint = (
                        " (0-RTT: QUIC only here; wolfSSL's DTLS 1.3 early data is not measured)" if h == "0rtt" else ""
                    )
                    raise InputError(f"{p}: unknown --handshake {h!r}; known: {', '.join(D.HANDSHAKES)}{hint}")
            cids = list(cid or (["off", "on"] if p == "dtls13" else ["off"]))
            for c in cids:
                if c not in ("off", "on"):
                    raise InputError(f"--cid {c!r}: known: off, on")
            for x in lost:
                if x not in D.LOSSES and not ("quic" in protocols and x in Q.LOSSES):
                    raise InputError(f"--lost {x!r}: unknown for {p}; known: {', '.join(D.LOSSES)}")
            out += [
                D.Dtls13Config(version=version, handshake=h, cid=c == "on", network=n, lost=x)
                for n in networks
                for h in hs_p
                for c in cids
                for x in lost
                if x in D.LOSSES
            ]
    return out


def phase(items: list[Any], n: int, warmup: int, timeout_ms: int, seed: int, specs: Sequence[NetSpec] = ()) -> Phase:
    def runner(its: list[Any], doc: Result, run: Run, progress: Progress) -> None:
        q = [c for c in its if isinstance(c, Q.QuicConfig)]
        d = [c for c in its if not isinstance(c, Q.QuicConfig)]
        if q:
            Q.run(q, n, warmup, timeout_ms, seed, doc, run, progress, specs)
        if d:
            D.run(d, n, warmup, timeout_ms, seed, doc, run, progress, specs)

    return Phase(items, lambda c: c.label, runner)


def connect(
    o: ConnectOptions,
    mine: list[str],
    others: list[str],
    output: Output,
    others_phases: Callable[[list[str], list[str]], tuple[dict[str, Any], list[Phase]]],
) -> Result:
    """Measure `mine` as `o` (app.options.ConnectOptions) selects (and, in the same Result, the other
    protocols through `others_phases(protocols, handshakes)`, which returns the ordinary connect rows'
    params and phases)."""

    keys, handshakes = o.keys or ["software", "se:iot-safe-sim"], o.handshakes or ["full", "resumed"]
    opts = o.measure
    if o.target:
        raise InputError(f"--connect HOST:PORT: {', '.join(mine)} are measured against secperf's own server only")
    if o.tls != "1.3" and (not others or set(others) <= {"coap", "vpn"}):
        v = o.tls
        raise InputError(
            f"--tls {v}: acts on https and mqtt; "
            + (
                "QUIC carries TLS 1.3 only (RFC 9001)"
                if "quic" in mine
                else "the DTLS version is in the protocol's name"
            )
            + ": for DTLS 1.2 name dtls12, drop --tls"
        )
    if o.nagle and not set(others) & {"mqtt", "https", "vpn"}:
        raise InputError(
            f"--nagle: acts on TCP connections (mqtt, https, vpn); {', '.join(mine)} run over UDP: drop --nagle"
        )
    lost, cid = o.lost or ["none"], o.cid or None
    nets = links.networks(o.networks)
    rows = configs(
        mine,
        keys,
        handshakes,
        o.clients or [],
        [n.name for n in nets],
        lost=lost,
        cid=cid,
        keys_given=o.keys is not None,
    )
    n, warmup, timeout_ms = opts.pick_n(20), opts.pick_warmup(2), opts.timeout_ms or 5000
    params: dict[str, Any] = {
        "protocols": mine,
        "handshakes": handshakes,
        "keys": ["software"],
        "lost": lost,
        "cid": cid,
        "networks": [x.as_dict() for x in nets],
        "n": n,
        "warmup": warmup,
        "timeout_ms": timeout_ms,
        "seed": opts.seed,
    }
    phases = [phase(rows, n, warmup, timeout_ms, opts.seed, nets)]  # the links resolved above

    extra_s = 0.0
    if others:
        ordinary = [h for h in handshakes if h in ("full", "resumed")]
        if not ordinary:
            raise InputError(f"--handshake {','.join(handshakes)}: nothing for {', '.join(others)} (full, resumed)")
        other_params, other_phases = others_phases(others, ordinary)
        extra_s = other_params.get("estimate_s", 0.0)
        params = {**other_params, **params, "protocols": [*others, *mine]}
        phases = other_phases + phases
    params.update(
        bounds.check(
            "connect",
            bounds.rows_of(rows, nets, lambda c: getattr(c, "protocol", "quic")),
            n + warmup + 1,
            opts.max_hours_given,
            extra_s,
        )
    )
    return measure_and_write("connect", params, phases, output)
