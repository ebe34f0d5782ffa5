"""`secperf connect quic`: QUIC (RFC 9000) with TLS 1.3 (RFC 9001) through aioquic, over real kernel
UDP (loopback, or the two namespaces of an emulated link), as full, resumed and 0-RTT handshakes
followed by one request and its response.

Why aioquic and one thread: aioquic is sans-I/O (a QuicConnection is fed datagrams and timer
ticks and hands back datagrams), so this module owns the sockets and the clock. Client and server
run in this one thread on two UDP sockets (the server's inside the link's server namespace, the
client's inside its device namespace: lab/netns.Link.socket), which gives

- every datagram on the wire, with its size and the QUIC packets coalesced in it (Initial, 0-RTT,
  Handshake, Retry, 1-RTT, read from the unprotected header fields), hence bytes, datagrams and
  packets per flight and the round trips until the first response;
- the client's CPU exactly (thread CPU time around each call into the client's connection only),
  split at message boundaries: ClientHello (+ 0-RTT request), the server's flight up to the
  client's Finished, and request → response;
- loss of a chosen Initial (`lost`): the client's first datagram (its Initial with the
  ClientHello) or the server's first (its Initial with the ServerHello) is not sent, so recovery is
  QUIC's own probe timeout, on top of whatever the emulated link loses at random.

The application is HTTP/0.9 over QUIC (ALPN "hq-interop", the interop runner's): a request of
`request_bytes` on the first bidirectional stream, answered with `response_bytes` (40 and 846
bytes by default: the GET and response of study S1). The initial RTT is RFC 9002's 333 ms (aioquic
defaults to 100 ms, which would fire spurious probes on every cellular link).

aioquic's CPU is Python's and is reported as such. A C implementation for CPU figures exists in
Debian 12: ngtcp2 0.12.1 with its GnuTLS crypto back end (libngtcp2-dev, libngtcp2-crypto-gnutls-dev,
and the ngtcp2-client/-server example programs). It is not wired in yet (a timed client on ngtcp2's
callback API is a native tool of its own); picoquic, lsquic, msquic and quiche are not packaged.
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ..core import result as R
from ..core import stats
from ..core.errors import InputError
from ..core.result_schema import ConnectDerived, LinkedDerived, Result, Series
from ..lab.netns import LinkPerNetwork
from ..lab.pki import LabPKI
from . import Progress
from .link_counts import link_counters, link_timeout_ms

if TYPE_CHECKING:
    from aioquic.quic.configuration import QuicConfiguration
    from aioquic.tls import SessionTicket

    from ..core.store import Run
    from ..inputs.netspec import NetSpec
    from ..lab.netns import Link

HANDSHAKES = ("full", "resumed", "0rtt")
LOSSES = ("none", "client-initial", "server-initial")
ALPN = "hq-interop"
INITIAL_RTT_S = 0.333  # RFC 9002 section 6.2.2, kInitialRtt
AMPLIFICATION_FACTOR = 3  # RFC 9000 section 8.1
CLIENT_INITIAL_MIN = 1200  # RFC 9000 section 14.1
USABLE = "response received (all response_bytes on the request stream, FIN)"
TIMER_START = "client QuicConnection.connect() (the ClientHello is built)"
CPU_SEGMENTS = ("ClientHello (+0-RTT request)", "server flight → client Finished", "request → response")
PACKET_TYPES = {0: "Initial", 1: "0-RTT", 2: "Handshake", 3: "Retry"}


class QuicError(InputError):
    """A QUIC configuration that cannot be measured as asked."""


@dataclass(frozen=True)
class QuicConfig:
    handshake: str = "full"  # full | resumed | 0rtt
    network: str = "loopback"
    lost: str = "none"  # none | client-initial | server-initial
    server_cert: str = "ecdsa-p256"
    request_bytes: int = 40
    response_bytes: int = 846

    @property
    def series_id(self) -> str:
        extra = "" if self.lost == "none" else f"/lost-{self.lost}"
        extra += "" if self.network in ("loopback", "none") else f"@{self.network}"
        return f"connect/quic/aioquic/{self.handshake}{extra}"

    @property
    def label(self) -> str:
        parts = ["quic", "aioquic", self.handshake]
        if self.lost != "none":
            parts.append(f"lost {self.lost}")
        if self.network not in ("loopback", "none"):
            parts.append(f"@ {self.network}")
        return " ".join(parts)


def validate(cfg: QuicConfig) -> None:
    if cfg.handshake not in HANDSHAKES:
        raise QuicError(f"quic: unknown handshake {cfg.handshake!r}; known: {', '.join(HANDSHAKES)}")
    if cfg.lost not in LOSSES:
        raise QuicError(f"quic: unknown --lost {cfg.lost!r}; known: {', '.join(LOSSES)}")


# --- what is on the wire ----------------------------------------------------------------------------


def _varint(data: bytes, i: int) -> tuple[int, int]:
    n = 1 << (data[i] >> 6)
    v = data[i] & 0x3F
    for k in range(1, n):
        v = (v << 8) | data[i + k]
    return v, i + n


def packet_types(datagram: bytes) -> list[str]:
    """The QUIC packets coalesced in one datagram, by type, from their unprotected long-header fields
    (RFC 9000 section 17.2); a short-header packet (1-RTT) runs to the datagram's end."""
    out, i = [], 0
    try:
        while i < len(datagram):
            first = datagram[i]
            if not any(datagram[i:]):
                out.append("padding")  # zero bytes after the last packet (RFC 9000 section 14.1)
                break
            if not first & 0x80:
                out.append("1-RTT")
                break
            version = int.from_bytes(datagram[i + 1 : i + 5], "big")
            if version == 0:
                out.append("VersionNegotiation")
                break
            kind = PACKET_TYPES[(first >> 4) & 3] if version == 1 else f"long-{(first >> 4) & 3}"
            if version == 0x6B3343CF:  # QUIC v2 (RFC 9369) rotates the type bits
                kind = {1: "Initial", 2: "0-RTT", 3: "Handshake", 0: "Retry"}[(first >> 4) & 3]
            j = i + 5
            j += 1 + datagram[j]  # destination connection ID
            j += 1 + datagram[j]  # source connection ID
            if kind == "Retry":
                out.append(kind)
                break
            if kind == "Initial":
                tok, j = _varint(datagram, j)
                j += tok
            length, j = _varint(datagram, j)
            out.append(kind)
            i = j + length
    except (IndexError, KeyError):
        out.append("unparsed")
    return out


def flights(datagrams: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive datagrams sent the same way, as flights: direction, datagrams, bytes (UDP payload),
    packets by type, and whether any was dropped on purpose (`lost`)."""
    out: list[dict[str, Any]] = []
    for d in datagrams:
        if not out or out[-1]["dir"] != d["dir"]:
            out.append({"dir": d["dir"], "datagrams": 0, "bytes": 0, "packets": {}, "t_us": d["t_us"]})
        f = out[-1]
        f["datagrams"] += 1
        f["bytes"] += d["bytes"]
        for p in d["packets"]:
            f["packets"][p] = f["packets"].get(p, 0) + 1
        if d.get("dropped"):
            f["dropped"] = f.get("dropped", 0) + 1
    return out


def round_trips(datagrams: list[dict[str, Any]], until_us: float) -> int:
    """Client → server turns the client waited through before `until_us`: each time the wire turns
    from the client's datagrams to the server's (a dropped datagram still counts as sent)."""
    n, last = 0, None
    for d in datagrams:
        if d["t_us"] > until_us:
            break
        if last == "c2s" and d["dir"] == "s2c":
            n += 1
        last = d["dir"]
    return n


# --- one endpoint pair ------------------------------------------------------------------------------


class _Tickets:
    """The server's ticket store: a ticket is taken once (single-use, as 0-RTT anti-replay wants)."""

    def __init__(self) -> None:
        self.store: dict[bytes, SessionTicket] = {}

    def add(self, ticket: SessionTicket) -> None:
        self.store[ticket.ticket] = ticket

    def pop(self, label: bytes) -> SessionTicket | None:
        return self.store.pop(label, None)


class QuicLab:
    """A QUIC server (aioquic, the lab's ECDSA certificate) and a client socket over one link."""

    def __init__(self, cfg: QuicConfig, pki: LabPKI, link: Link | None = None, timeout_s: float = 10.0) -> None:
        from aioquic.quic.configuration import QuicConfiguration  # reason: optional 'protocols' extra

        self.cfg, self.timeout_s = cfg, timeout_s
        certs = pki.server(cfg.server_cert, 1)
        self.ca = str(certs.ca)
        self.server_cfg = QuicConfiguration(is_client=False, alpn_protocols=[ALPN], initial_rtt=INITIAL_RTT_S)
        self.server_cfg.load_cert_chain(str(certs.cert), str(certs.key))
        self.tickets = _Tickets()
        emul = link if link is not None and not link.loopback else None
        host = emul.server_addr if emul else "127.0.0.1"
        self.srv = (
            emul.socket("srv", type=socket.SOCK_DGRAM) if emul else socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        )
        self.srv.bind((host, 0))
        self.server_addr: tuple[str, int] = self.srv.getsockname()
        self.dev_factory: Callable[[], socket.socket] = (
            (lambda: emul.socket("dev", type=socket.SOCK_DGRAM))
            if emul
            else (lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
        )
        self.ticket: SessionTicket | None = None  # the client's newest ticket

    def close(self) -> None:
        self.srv.close()

    def client_config(self, ticket: SessionTicket | None) -> QuicConfiguration:
        from aioquic.quic.configuration import QuicConfiguration  # reason: optional 'protocols' extra

        c = QuicConfiguration(is_client=True, alpn_protocols=[ALPN], server_name="localhost", initial_rtt=INITIAL_RTT_S)
        c.load_verify_locations(self.ca)
        c.session_ticket = ticket
        return c

    def connection(self, i: int, kind: str | None = None) -> dict[str, Any]:
        """One connection (`kind`: the configuration's handshake unless given): handshake, request,
        response; the sample (ok or with its reason)."""
        from aioquic.buffer import Buffer  # type: ignore[attr-defined]  # aioquic re-exports its C Buffer without __all__  # reason: optional 'protocols' extra
        from aioquic.quic import events as E  # reason: optional 'protocols' extra
        from aioquic.quic.connection import QuicConnection  # reason: optional 'protocols' extra
        from aioquic.quic.packet import pull_quic_header  # reason: optional 'protocols' extra

        cfg = self.cfg
        kind = kind or cfg.handshake
        wants_ticket = kind != "full"
        if wants_ticket and self.ticket is None:
            return {"i": i, "ok": False, "stage": "ticket", "reason": "no session ticket from the previous connection"}
        cli_sock = self.dev_factory()
        cli_sock.bind(("0.0.0.0", 0))
        cli_sock.setblocking(False)
        self.srv.setblocking(False)
        new_tickets: list[SessionTicket] = []
        client = QuicConnection(
            configuration=self.client_config(self.ticket if wants_ticket else None),
            session_ticket_handler=new_tickets.append,
        )
        server: QuicConnection | None = None
        wire: list[dict[str, Any]] = []
        cpu = [0.0, 0.0, 0.0]
        seg = 0
        t0 = time.perf_counter()
        drop_left = {"client-initial": ("c2s", 1), "server-initial": ("s2c", 1)}.get(cfg.lost) if i >= 0 else None
        dropped = 0

        def now() -> float:
            return time.perf_counter()

        def on_client(fn: Callable[..., object], *a: object) -> None:
            c0 = time.thread_time()
            fn(*a)
            cpu[seg] += time.thread_time() - c0

        def flush(conn: QuicConnection | None, sock: socket.socket, to: tuple[str, int], direction: str) -> None:
            nonlocal drop_left, dropped
            if conn is None:
                return
            c0 = time.thread_time()
            out = conn.datagrams_to_send(now())
            if conn is client:
                cpu[seg] += time.thread_time() - c0
            for data, _addr in out:
                rec: dict[str, Any] = {
                    "dir": direction,
                    "t_us": (now() - t0) * 1e6,
                    "bytes": len(data),
                    "packets": packet_types(data),
                }
                if drop_left and drop_left[0] == direction and drop_left[1] > 0:
                    drop_left = (direction, drop_left[1] - 1)
                    rec["dropped"] = True
                    dropped += 1
                else:
                    sock.sendto(data, to)
                wire.append(rec)

        client_addr: tuple[str, int] | None = None
        sid: int | None = None
        handshake_us: float | None = None
        resumed = early = False
        response = bytearray()
        request_sent_us: float | None = None
        on_client(client.connect, self.server_addr, now())
        if kind == "0rtt":
            sid = client.get_next_available_stream_id()
            on_client(client.send_stream_data, sid, b"G" * cfg.request_bytes, True)
            request_sent_us = 0.0
        flush(client, cli_sock, self.server_addr, "c2s")
        deadline = t0 + self.timeout_s
        done_us: float | None = None
        reason: str | None = None
        try:
            while True:
                t = now()
                if t > deadline:
                    reason = f"timeout after {self.timeout_s:.1f} s (no response)"
                    break
                timers = [x for x in (client.get_timer(), server.get_timer() if server else None) if x is not None]
                wait = max(0.0, min([deadline, *timers]) - t)
                ready, _, _ = select.select([cli_sock, self.srv], [], [], wait)
                if self.srv in ready:
                    while True:
                        try:
                            data, addr = self.srv.recvfrom(65536)
                        except BlockingIOError:
                            break
                        if client_addr is not None and addr != client_addr:
                            continue  # a late datagram of an earlier connection
                        if server is None:
                            if not packet_types(data)[:1] == ["Initial"]:
                                continue  # only a client's Initial opens a connection
                            hdr = pull_quic_header(Buffer(data=data), host_cid_length=8)
                            server = QuicConnection(
                                configuration=self.server_cfg,
                                original_destination_connection_id=hdr.destination_cid,
                                session_ticket_fetcher=self.tickets.pop,
                                session_ticket_handler=self.tickets.add,
                            )
                            client_addr = addr
                        server.receive_datagram(data, addr, now())
                if cli_sock in ready:
                    while True:
                        try:
                            data, addr = cli_sock.recvfrom(65536)
                        except BlockingIOError:
                            break
                        if seg == 0:
                            seg = 1
                        on_client(client.receive_datagram, data, addr, now())
                t = now()
                srv_timer = server.get_timer() if server is not None else None
                if server is not None and srv_timer is not None and srv_timer <= t:
                    server.handle_timer(t)
                cli_timer = client.get_timer()
                if cli_timer is not None and cli_timer <= t:
                    on_client(client.handle_timer, t)
                while server is not None and (ev := server.next_event()) is not None:
                    if isinstance(ev, E.StreamDataReceived) and ev.end_stream:
                        server.send_stream_data(ev.stream_id, b"R" * cfg.response_bytes, True)
                while (ev := client.next_event()) is not None:
                    if isinstance(ev, E.HandshakeCompleted):
                        handshake_us = (now() - t0) * 1e6
                        resumed, early = ev.session_resumed, ev.early_data_accepted
                        seg = 2
                        if sid is None:
                            sid = client.get_next_available_stream_id()
                            on_client(client.send_stream_data, sid, b"G" * cfg.request_bytes, True)
                            request_sent_us = handshake_us
                    elif isinstance(ev, E.StreamDataReceived) and ev.stream_id == sid:
                        response += ev.data
                        if ev.end_stream:
                            done_us = (now() - t0) * 1e6
                    elif isinstance(ev, E.ConnectionTerminated):
                        reason = f"connection closed: error {ev.error_code} {ev.reason_phrase}"
                flush(client, cli_sock, self.server_addr, "c2s")
                if client_addr is not None:
                    flush(server, self.srv, client_addr, "s2c")
                if reason:
                    break
                # after the response, keep going only until the next ticket is in (resumption needs it)
                if done_us is not None and (new_tickets or now() - t0 > done_us / 1e6 + 2.0):
                    break
            if done_us is not None:
                client.close()
                flush(client, cli_sock, self.server_addr, "c2s")
        finally:
            cli_sock.close()
            self._drain()
        if new_tickets:
            self.ticket = new_tickets[-1]
        if reason or done_us is None:
            return {
                "i": i,
                "ok": False,
                "stage": "handshake" if handshake_us is None else "response",
                "reason": reason or "no response",
                "wire": wire,
            }
        if len(response) != cfg.response_bytes:
            return {
                "i": i,
                "ok": False,
                "stage": "response",
                "reason": f"{len(response)} of {cfg.response_bytes} bytes",
            }
        if kind != "full" and not resumed:
            return {"i": i, "ok": False, "stage": "resumption", "reason": "the server did not resume the session"}
        if kind == "0rtt" and not early:
            return {"i": i, "ok": False, "stage": "0-RTT", "reason": "the server refused the early data"}
        upto = [d for d in wire if d["t_us"] <= done_us]
        return {
            "i": i,
            "ok": True,
            "usable_us": done_us,
            "handshake_us": handshake_us,
            "request_sent_us": request_sent_us,
            "resumed": bool(resumed),
            "early_data_accepted": bool(early),
            "lib_cpu_us": sum(cpu) * 1e6,
            "cpu_segments": [{"segment": n, "cpu_us": round(c * 1e6, 3)} for n, c in zip(CPU_SEGMENTS, cpu)],
            "round_trips": round_trips(wire, done_us),
            "dropped": dropped,
            "zero_rtt_packets": sum(d["packets"].count("0-RTT") for d in wire),
            "bytes_c2s": sum(d["bytes"] for d in upto if d["dir"] == "c2s"),
            "bytes_s2c": sum(d["bytes"] for d in upto if d["dir"] == "s2c"),
            "datagrams": len(upto),
            "flights": flights(upto),
            "wire": wire,
        }

    def _drain(self) -> None:
        self.srv.setblocking(False)
        while True:
            try:
                self.srv.recvfrom(65536)
            except (BlockingIOError, OSError):
                return


def _priming(lab: QuicLab) -> dict[str, Any] | None:
    """A full handshake that leaves a ticket for a resumed or 0-RTT row; None when it did."""
    c = lab.connection(-1, "full")
    return None if lab.ticket is not None else c


def measure(
    cfg: QuicConfig, n: int, warmup: int, pki: LabPKI, link: Link | None = None, timeout_s: float = 10.0
) -> Series:
    """One configuration as a connect series: establishment time per connection, client CPU, and the
    flights, bytes and round trips of every connection in its sample."""
    validate(cfg)
    labels = {
        **asdict(cfg),
        "protocol": "quic",
        "client": "aioquic",
        "server": "aioquic",
        "label": cfg.label,
        "alpn": ALPN,
        "initial_rtt_ms": INITIAL_RTT_S * 1000,
        "tls": "1.3",
        "key_source": "software",
    }
    s = R.new_series(
        cfg.series_id,
        kind="connect",
        labels=labels,
        timer={
            "name": "establishment",
            "start": TIMER_START,
            "end": USABLE,
            "clock": "time.perf_counter (CLOCK_MONOTONIC), thread_time for client CPU",
        },
    )
    try:
        import aioquic  # reason: optional 'protocols' extra

        s.labels["library"] = f"aioquic {aioquic.__version__}"
    except ImportError:
        R.add_failure(s, "aioquic is not installed (scripts/bootstrap installs it)")
        return R.finalize_series(s)
    if link is not None and not link.loopback:
        s.labels.update(
            network_spec=link.spec.canonical(), network_rtt_ms=link.spec.rtt_ms, network_loss=link.spec.loss
        )
    lab = QuicLab(cfg, pki, link, timeout_s)

    try:
        if cfg.handshake != "full":
            bad = _priming(lab)
            if bad is not None:
                R.add_failure(s, f"priming connection: {bad.get('stage')}: {bad.get('reason')}")
                return R.finalize_series(s)
        with link_counters(s.derived_as(LinkedDerived), link):
            for i in range(-warmup, n):
                c = lab.connection(i)
                if i < 0:
                    continue
                if not c.get("ok"):
                    R.add_failure(s, f"connection {i}: {c.get('stage')}: {c.get('reason')}")
                    s.samples.append(c)
                    continue
                s.samples.append(c)
                s.values_us.append(float(c["usable_us"]))
                s.cpu_values_us.append(float(c["lib_cpu_us"]))
    finally:
        lab.close()
    _derive(s)
    return R.finalize_series(s)


def _derive(s: Series) -> None:
    ok = [c for c in s.samples if c.get("ok")]
    if not ok:
        return
    d = s.derived_as(ConnectDerived)
    d.handshake_p50_us = stats.median([c["handshake_us"] for c in ok])
    d.round_trips_p50 = stats.median([c["round_trips"] for c in ok])
    d.bytes_c2s_p50 = stats.median([c["bytes_c2s"] for c in ok])
    d.bytes_s2c_p50 = stats.median([c["bytes_s2c"] for c in ok])
    d.resumed = sum(1 for c in ok if c["resumed"])
    # as the probe's connect rows name it, so `whatif --calibrate` takes the client's CPU from here (the
    # whole connection's: handshake and request/response; the rest of the time is server + network)
    d.phases_p50_us = [{"phase": "handshake: client CPU", "p50_us": stats.median([c["lib_cpu_us"] for c in ok])}]
    d.early_data_accepted = sum(1 for c in ok if c["early_data_accepted"])
    d.cpu_segments_p50_us = [
        {"segment": n, "p50_us": stats.median([c["cpu_segments"][k]["cpu_us"] for c in ok])}
        for k, n in enumerate(CPU_SEGMENTS)
    ]
    # the first clean connection's flights (no random loss): the shape a flight model is checked against
    clean = [c for c in ok if all(not f.get("dropped") for f in c["flights"])] or ok
    d.flights = [{k: v for k, v in f.items() if k != "t_us"} for f in clean[0]["flights"]]
    for c in s.samples:
        c.pop("wire", None)  # flights keep what the Result needs; the datagram log would bloat it


def run(
    configs: list[QuicConfig],
    n: int,
    warmup: int,
    timeout_ms: int,
    seed: int,
    doc: Result,
    run: Run | None = None,
    progress: Progress | None = None,
    specs: Sequence[NetSpec] = (),  # the --network links the command resolved, by name in the configs
) -> Result:
    """Every configuration in turn, each over its network (configurations over one network share one
    emulated link); series go into `doc` as they finish."""

    pki = LabPKI().ensure()
    with LinkPerNetwork(seed, specs) as links:
        for k, cfg in enumerate(configs):
            if progress:
                progress("start", cfg, k, len(configs), None)
            link, err = links.get(cfg.network)
            if err:
                s = R.new_series(
                    cfg.series_id,
                    kind="connect",
                    labels={**asdict(cfg), "protocol": "quic", "label": cfg.label},
                    timer={"name": "establishment", "start": TIMER_START, "end": USABLE},
                )
                R.add_failure(s, f"network {cfg.network}: {err}")
                doc.series.append(R.finalize_series(s))
            else:
                t_ms = link_timeout_ms(timeout_ms, link.spec) if link is not None else timeout_ms
                doc.series.append(measure(cfg, n, warmup, pki, link, t_ms / 1000.0))
            if run is not None:
                run.save(doc)
            if progress:
                progress("done", cfg, k, len(configs), None)
    return doc
