"""The peer of the QUIC device rows: aioquic on loopback, in a thread of this process, configured as
the host's QUIC rows are (measure/quic.py). measure/quic_device.py points the emulated client at it."""

from __future__ import annotations

import select
import socket
import threading
import time
from typing import TYPE_CHECKING

from ..lab.pki import LabPKI
from . import quic as Q

if TYPE_CHECKING:
    from aioquic.quic.connection import QuicConnection


class LoopbackServer:
    """aioquic on 127.0.0.1 in a thread of this process: measure/quic.py's server configuration (ALPN
    hq-interop, the lab certificate, RFC 9002's initial RTT, single-use tickets, 0-RTT accepted); it
    answers a request stream's FIN with `response_bytes`. One connection per client address."""

    def __init__(self, server_cert: str, response_bytes: int = 846) -> None:
        from aioquic.quic.configuration import QuicConfiguration  # reason: optional 'protocols' extra

        self.certs = LabPKI().ensure().server(server_cert, 1)
        self.cfg = QuicConfiguration(is_client=False, alpn_protocols=[Q.ALPN], initial_rtt=Q.INITIAL_RTT_S)
        self.cfg.load_cert_chain(str(self.certs.cert), str(self.certs.key))
        self.tickets = Q._Tickets()
        self.response_bytes = response_bytes
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.setblocking(False)
        self.conns: dict[tuple[str, int], QuicConnection] = {}
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="quic-device-server", daemon=True)

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                self._step()
        except Exception as exc:  # noqa: BLE001 -- the run reports it as the server's failure
            self.errors.append(f"the aioquic server stopped: {type(exc).__name__}: {exc}")

    def _step(self) -> None:
        from aioquic.buffer import Buffer  # type: ignore[attr-defined]  # aioquic re-exports its C Buffer without __all__  # reason: optional 'protocols' extra
        from aioquic.quic import events as E  # reason: optional 'protocols' extra
        from aioquic.quic.connection import QuicConnection  # reason: optional 'protocols' extra
        from aioquic.quic.packet import pull_quic_header  # reason: optional 'protocols' extra

        now = time.monotonic()
        timers = [t for c in self.conns.values() if (t := c.get_timer()) is not None]
        wait = min([0.05] + [max(0.0, t - now) for t in timers])
        ready, _, _ = select.select([self.sock], [], [], wait)
        if ready:
            while True:
                try:
                    data, addr = self.sock.recvfrom(65536)
                except (BlockingIOError, InterruptedError):
                    break
                conn = self.conns.get(addr)
                if conn is None:
                    if Q.packet_types(data)[:1] != ["Initial"]:
                        continue
                    hdr = pull_quic_header(Buffer(data=data), host_cid_length=8)
                    conn = self.conns[addr] = QuicConnection(
                        configuration=self.cfg,
                        original_destination_connection_id=hdr.destination_cid,
                        session_ticket_fetcher=self.tickets.pop,
                        session_ticket_handler=self.tickets.add,
                    )
                conn.receive_datagram(data, addr, time.monotonic())
        now = time.monotonic()
        for addr, conn in list(self.conns.items()):
            t = conn.get_timer()
            if t is not None and t <= now:
                conn.handle_timer(now)
            closed = False
            while (ev := conn.next_event()) is not None:
                if isinstance(ev, E.StreamDataReceived) and ev.end_stream:
                    conn.send_stream_data(ev.stream_id, b"R" * self.response_bytes, True)
                elif isinstance(ev, E.ConnectionTerminated):
                    closed = True
            for data, _ in conn.datagrams_to_send(time.monotonic()):
                self.sock.sendto(data, addr)
            if closed:
                del self.conns[addr]
