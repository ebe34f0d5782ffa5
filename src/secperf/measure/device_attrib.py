"""Per-message attribution of a guest TLS client's instruction count (pure functions).

Input: the counting plugin's event file (native/device/plugin/insn_events.c): the running
instruction count at each marker system call of the guest client and at each watched library
function entry. Output per handshake: the whole count (HS_BEGIN -> HS_END markers around the
library's handshake call) and its partition into handshake messages.

The attribution rule (the same shape as the host probe's, native/probe/hs_trace.c):
1. A received message owns the instructions from the moment the library asks for the first byte
   of its record (RECV_BEGIN: the client hands the library one record at a time, so the library
   has finished with the previous record) up to the next event: reading, decrypting, parsing and
   processing it (ServerHello includes the shared secret and the key schedule, Certificate the
   chain verification, CertificateVerify the signature check).
2. A sent message owns the instructions from the entry of the library function that builds it
   (wolfSSL: SendTls13ClientHello, SendTls13Finished, ...; Mbed TLS: the state-machine step that
   writes it) up to the next event, including the write itself and the flush after it.
3. Instructions before the first event belong to the first message; a state-machine step that
   neither sends nor receives anything (Mbed TLS) is folded into the step before it, and a step
   that reads a record names the message it read when that is visible (plaintext).
4. Where a record carries several handshake messages (several entries of the library's message
   dispatcher inside one record), each further message starts a new part.
5. Mbed TLS 3.x writes a step's message at the start of the next step (it flushes pending output
   before running a step): a step that built a message without writing it keeps the instructions
   up to that write when the write comes first thing (within DEFERRED_FLUSH_MAX instructions,
   before anything is read) in the next step and its record can carry that message; otherwise it
   is a silent step (rule 3).
Labels: plaintext handshake records name themselves (their first byte; a ServerHello with the
HelloRetryRequest random is a HelloRetryRequest); encrypted ones are named by their position in
the flight the negotiated mode implies (TLS 1.3 full: EncryptedExtensions, [CertificateRequest],
Certificate, CertificateVerify, Finished; resumed: EncryptedExtensions, Finished; TLS 1.2:
Finished; DTLS 1.3 as TLS 1.3, then the server's ACK of the client's flight). DTLS hands the
library a datagram per read: its further records name the further messages the library's
dispatcher is entered for (rule 4). So the parts partition the handshake's count exactly.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import MeasurementError
from .device_timing import class_deltas, parse_tail

if TYPE_CHECKING:
    from .device_timing import Timed

# marker kinds (native/device/marker.h)
HS_BEGIN, HS_END, RECV_BEGIN, RECV_INFO, SEND, STEP, APP_BEGIN, APP_END, OP_BEGIN, OP_END = range(1, 11)
# 6: a ServerHello carrying the HelloRetryRequest random (the guest's recio names it so; DTLS 1.3's cookie)
HS_TYPES = {
    0: "HelloRequest",
    1: "ClientHello",
    2: "ServerHello",
    3: "HelloVerifyRequest",
    4: "NewSessionTicket",
    6: "HelloRetryRequest",
    8: "EncryptedExtensions",
    11: "Certificate",
    12: "ServerKeyExchange",
    13: "CertificateRequest",
    14: "ServerHelloDone",
    15: "CertificateVerify",
    16: "ClientKeyExchange",
    20: "Finished",
}
WATCH_SENT = {
    1: "ClientHello",
    2: "ClientHello",
    3: "Certificate",
    4: "CertificateVerify",
    5: "Finished",
    6: "Certificate",
    7: "CertificateVerify",
    8: "ClientKeyExchange",
    9: "ChangeCipherSpec",
    10: "Finished",
    13: "ChangeCipherSpec",
}
WATCH_MSG = (11, 12)
DEFERRED_FLUSH_MAX = 5000  # instructions from a step's start to a write that belongs to the step before
# Mbed TLS 2.28 client states (mbedtls/ssl.h, mbedtls_ssl_states): state -> (direction, message)
MBEDTLS_STATES = {
    0: ("sent", "ClientHello"),
    1: ("sent", "ClientHello"),
    2: ("received", "ServerHello"),
    3: ("received", "Certificate"),
    4: ("received", "ServerKeyExchange"),
    5: ("received", "CertificateRequest"),
    6: ("received", "ServerHelloDone"),
    7: ("sent", "Certificate"),
    8: ("sent", "ClientKeyExchange"),
    9: ("sent", "CertificateVerify"),
    10: ("sent", "ChangeCipherSpec"),
    11: ("sent", "Finished"),
    12: ("received", "ChangeCipherSpec"),
    13: ("received", "Finished"),
    14: None,
    15: None,
    16: None,
    17: ("received", "NewSessionTicket"),
}
# Mbed TLS 3.6 (STEP markers carry state + 0x100): TLS 1.2 uses the same first 16 states; TLS 1.3
# has its own order (EncryptedExtensions, CertificateRequest, Certificate, the server's
# CertificateVerify in state 9, Finished, then the client's flight). Without client authentication
# the CertificateRequest state reads the Certificate record (and leaves it to the next state).
MBEDTLS3_TLS12 = {**MBEDTLS_STATES, 16: ("received", "NewSessionTicket"), 17: None}
MBEDTLS3_TLS13 = {
    0: ("sent", "ClientHello"),
    1: ("sent", "ClientHello"),
    2: ("received", "ServerHello"),
    3: ("received", "Certificate"),
    5: ("received", "Certificate"),
    7: ("sent", "Certificate"),
    9: ("received", "CertificateVerify"),
    11: ("sent", "Finished"),
    13: ("received", "Finished"),
    14: None,
    15: None,
    16: ("received", "NewSessionTicket"),
    18: ("received", "HelloRetryRequest"),
    19: ("received", "EncryptedExtensions"),
    21: ("sent", "CertificateVerify"),
    22: ("sent", "ChangeCipherSpec"),
    23: ("sent", "ChangeCipherSpec"),
    24: ("received", "ChangeCipherSpec"),
    25: ("sent", "ChangeCipherSpec"),
    26: ("received", "ChangeCipherSpec"),
    28: ("received", "NewSessionTicket"),
    29: None,
}

Bound = tuple[int, Any]  # (count, owner): owner (dir, message), or None for the unattributed start


@dataclass
class Event:
    count: int
    kind: str  # "M" marker, "W" watched function
    a1: int
    a2: int = 0
    timed: Timed | None = None  # the timing model's cycles and class counters here


@dataclass
class Handshake:
    index: int
    ok: bool
    instructions: int
    messages: list[dict[str, Any]] = field(default_factory=list)  # [{"message", "dir", "instructions"}]
    records_in: int = 0
    records_out: int = 0
    messages_per_record: list[int] = field(default_factory=list)
    app_instructions: int | None = None

    @property
    def parts_sum(self) -> int:
        return sum(m["instructions"] for m in self.messages)


def read_events(path: Path) -> tuple[int, list[Event]]:
    """(total instructions of the process, events in order) from the plugin's file; with the
    timing model on (a v2 file), every event carries its cycles and class counters."""

    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise MeasurementError(f"the counting plugin wrote no event file ({exc}); did qemu-arm load it?") from None
    if not lines or not lines[0].startswith(("# insn_events v1", "# insn_events v2")):
        raise MeasurementError(f"unexpected event file header: {lines[:1]}")
    if " oom" in lines[0]:
        raise MeasurementError("the counting plugin ran out of memory for events")
    total = int(lines[0].split("total=")[1].split()[0])
    events = []
    for ln in lines[1:]:
        head, bar, tail = ln.partition("|")
        f = head.split()
        events.append(
            Event(int(f[0]), f[1], int(f[2]), int(f[3]) if len(f) > 3 else 0, parse_tail(bar + tail) if bar else None)
        )
    return total, events


def in_cycles(events: list[Event], k: int) -> list[Event]:
    """The same events with the timing model's cycles of set k (0 low, 1 point, 2 high) as their count,
    so the attribution rule partitions cycles exactly as it partitions instructions."""
    out = []
    for e in events:
        if e.timed is None:
            raise MeasurementError("the plugin's event file has no cycles (the timing model was off)")
        out.append(Event(int(round(e.timed.cycles[k])), e.kind, e.a1, e.a2))
    return out


def _expected_encrypted(tls: str, resumed: bool, mtls: bool) -> list[str]:
    """The encrypted records a client receives in the handshake, in order (DTLS 1.3: the server's ACK
    of the client's last flight ends it: wolfSSL's connect returns once it has it)."""
    if tls in ("1.2", "dtls1.2"):
        return ["Finished"]
    ack = ["ACK"] if tls == "dtls1.3" else []
    if resumed:
        return ["EncryptedExtensions", "Finished"] + ack
    return (
        ["EncryptedExtensions"]
        + (["CertificateRequest"] if mtls else [])
        + ["Certificate", "CertificateVerify", "Finished"]
        + ack
    )


def _writes(send_arg: int, message: str) -> bool:
    """Whether a SEND marker's first record can carry `message` (encrypted records can carry any
    handshake message; plaintext ones name theirs)."""
    ctype, hs = send_arg >> 24, (send_arg >> 16) & 0xFF
    if ctype == 20:
        return message == "ChangeCipherSpec"
    if ctype == 22:
        return HS_TYPES.get(hs) == message
    return ctype == 23 and message != "ChangeCipherSpec"


def attribute(
    events: list[Event], tls: str, resumed: bool, mtls: bool = False, ccs_message: bool = False
) -> tuple[list[Bound], int]:
    """Boundaries [(count, (dir, message))] of one handshake's events (HS_BEGIN first, HS_END
    last) and the end count. Owners None are resolved to the next owner."""
    begin, end = events[0].count, events[-1].count
    steps = any(e.kind == "M" and e.a1 == STEP for e in events)
    dgram = tls.startswith("dtls")  # one read is a datagram: several records, one RECV_INFO each
    dg_names: list[str] = []  # the names of a datagram's further records, for its further messages
    # DTLS steps silent by the mode (Mbed TLS runs every state): the client-authentication states
    # without it; the server's Certificate and ServerKeyExchange states of a PSK or resumed handshake
    silent = (() if mtls else (5, 7, 9)) + ((3, 4) if resumed else ())
    info_seen = False
    first_is_hs = True  # the read's first record holds handshake messages (not a CCS)
    last_state = None  # the state of the step before (Mbed TLS)
    pending = None
    enc_names = iter(_expected_encrypted(tls, resumed, mtls))
    enc_n = 0
    bounds: list[list[Any]] = [[begin, None]]  # [count, owner]; owners None and "prev" resolved at the end
    ccs_seen = False
    cur_dir = None
    step_io = True
    msgs_in_record = 0
    for e in events[1:-1]:
        if e.kind == "W" and e.a1 in WATCH_SENT and not steps:
            bounds.append([e.count, ("sent", WATCH_SENT[e.a1])])
            cur_dir = "sent"
        elif e.kind == "W" and e.a1 in WATCH_MSG and not steps:
            msgs_in_record += 1
            # a further message in the same record (DTLS: datagram, whose first record may be a CCS)
            # (OpenSSL dispatches a ChangeCipherSpec like a message, ccs_message; wolfSSL does not)
            if msgs_in_record > (1 if first_is_hs or ccs_message else 0):
                if dg_names:
                    name = dg_names.pop(0)
                else:
                    enc_n += 1
                    name = next(enc_names, f"message {enc_n} (received)")
                bounds.append([e.count, ("received", name)])
        elif e.kind == "M" and e.a1 == STEP:
            if e.a2 >= 0x100:
                table, state = (MBEDTLS3_TLS13 if tls == "1.3" else MBEDTLS3_TLS12), e.a2 - 0x100
            else:
                table, state = MBEDTLS_STATES, e.a2
            owner = table.get(state, ("sent", f"state {state}"))
            if mtls and table is MBEDTLS3_TLS13 and state == 5:  # asked for a certificate: the state reads its request
                owner = ("received", "CertificateRequest")
            if owner is None:  # flush and wrap-up steps: part of the message before
                continue
            if pending is not None:  # that step's write never came: it was silent after all
                bounds[pending][1] = "prev"
                pending = None
            # DTLS: a flight is written, and a datagram's records read, in steps after the message's own
            # step, so a step without I/O keeps its message there -- except the client-authentication
            # states (CertificateRequest, client Certificate, CertificateVerify), silent without it
            if not step_io and len(bounds) > 1 and (not dgram or last_state in silent):
                if e.a2 >= 0x100 and bounds[-1][1] not in (None, "prev") and bounds[-1][1][0] == "sent":
                    pending = len(bounds) - 1  # 3.x: its write may come at the start of this step (rule 5)
                else:
                    bounds[-1][1] = "prev"  # the previous step neither sent nor received: fold it back
            bounds.append([e.count, owner])
            step_io = False
            last_state = state
        elif e.kind == "M" and e.a1 == RECV_BEGIN:
            if pending is not None:
                bounds[pending][1] = "prev"
                pending = None
            step_io = True
            msgs_in_record = 0
            dg_names, info_seen = [], False
            if not steps:
                bounds.append([e.count, ("received", "?")])
                cur_dir = "received"
        elif e.kind == "M" and e.a1 == RECV_INFO:
            ctype, hs = e.a2 >> 24, (e.a2 >> 16) & 0xFF
            if ctype == 20:
                name = "ChangeCipherSpec"
                ccs_seen = True
            elif ctype == 22 and not ccs_seen and hs in HS_TYPES:
                name = HS_TYPES[hs]
            elif ctype in (22, 23):
                enc_n += 1
                name = next(enc_names, f"record {enc_n} (received)")
            elif ctype == 21:
                name = "Alert"
            else:
                name = f"record type {ctype}"
            if dgram and info_seen:  # a further record of the same datagram
                dg_names.append(name)
                continue
            info_seen = True
            first_is_hs = ctype in (22, 23)
            if not steps:
                bounds[-1][1] = ("received", name)
            elif (
                bounds[-1][1] not in (None, "prev")
                and bounds[-1][1][0] == "received"
                and ((ctype == 20 and tls != "1.3") or (ctype == 22 and not ccs_seen and hs in HS_TYPES))
            ):
                bounds[-1][1] = ("received", name)  # the step read another message than its state's
        elif e.kind == "M" and e.a1 == SEND:
            if (
                pending is not None
                and not step_io
                and e.count - bounds[-1][0] <= DEFERRED_FLUSH_MAX
                and _writes(e.a2, bounds[pending][1][1])
            ):
                bounds[-1][0] = e.count  # the write of the message the step before built
                pending = None
                continue
            step_io = True
            if not steps and cur_dir != "sent":
                ctype, hs = e.a2 >> 24, (e.a2 >> 16) & 0xFF
                name = {20: "ChangeCipherSpec", 21: "Alert"}.get(ctype) or (
                    HS_TYPES.get(hs, "record") if ctype == 22 else "record"
                )
                bounds.append([e.count, ("sent", name)])
                cur_dir = "sent"
    if pending is not None:
        bounds[pending][1] = "prev"
    if steps and not step_io and len(bounds) > 1 and (not dgram or last_state in silent):
        bounds[-1][1] = "prev"
    # "prev": fold into the previous part; None/"?": into the next one (rule 3), else the previous
    for i in range(1, len(bounds)):
        if bounds[i][1] == "prev":
            bounds[i][1] = bounds[i - 1][1]
    for i in range(len(bounds) - 2, -1, -1):
        if bounds[i][1] in (None, "prev") or bounds[i][1][1] == "?":
            bounds[i][1] = bounds[i + 1][1]
    for i in range(1, len(bounds)):
        if bounds[i][1] in (None, "prev") or bounds[i][1][1] == "?":
            bounds[i][1] = bounds[i - 1][1]
    return [(c, o) for c, o in bounds], end


def partition(bounds: list[Bound], end: int) -> list[dict[str, Any]]:
    """Merge consecutive parts with the same owner; counts between boundaries."""
    rows: list[dict[str, Any]] = []
    for (c, owner), nxt in zip(bounds, [b[0] for b in bounds[1:]] + [end]):
        d, name = owner if owner else ("received", "unattributed")
        if rows and rows[-1]["message"] == name and rows[-1]["dir"] == d:
            rows[-1]["instructions"] += nxt - c
        else:
            rows.append({"message": name, "dir": d, "instructions": nxt - c})
    return rows


def handshakes(
    events: list[Event],
    conns: list[dict[str, Any]],
    tls: str,
    mtls: bool = False,
    psk: bool = False,
    ccs_message: bool = False,
) -> list[Handshake]:
    """One Handshake per HS_BEGIN..HS_END window, matched with the client's JSON line for it. A PSK
    handshake's encrypted flight is named as a resumed one's (no certificate, no signature)."""
    out: list[Handshake] = []
    by_index = {c["conn"]: c for c in conns}
    i = 0
    while i < len(events):
        e = events[i]
        if e.kind == "M" and e.a1 == HS_BEGIN:
            j = i + 1
            while j < len(events) and not (events[j].kind == "M" and events[j].a1 == HS_END):
                j += 1
            if j == len(events):
                break
            window = events[i : j + 1]
            conn = by_index.get(e.a2, {})
            bounds, end = attribute(window, tls, psk or bool(conn.get("resumed")), mtls and not psk, ccs_message)
            hs = Handshake(
                index=e.a2,
                ok=bool(events[j].a2),
                instructions=events[j].count - e.count,
                messages=partition(bounds, end),
            )
            hs.records_in = sum(1 for x in window if x.kind == "M" and x.a1 == RECV_BEGIN)
            hs.records_out = sum(x.a2 & 0xFFFF for x in window if x.kind == "M" and x.a1 == SEND)
            per, n = [], None
            for x in window:
                if x.kind == "M" and x.a1 == RECV_INFO:
                    if n is not None:
                        per.append(n)
                    n = 0 if (x.a2 >> 24) in (22, 23) else None
                elif x.kind == "W" and x.a1 in WATCH_MSG and n is not None:
                    n += 1
            if n is not None:
                per.append(n)
            hs.messages_per_record = per
            # the application exchange right after this handshake
            k = j + 1
            if k < len(events) and events[k].kind == "M" and events[k].a1 == APP_BEGIN:
                m = k + 1
                while m < len(events) and not (events[m].kind == "M" and events[m].a1 == APP_END):
                    m += 1
                if m < len(events):
                    hs.app_instructions = events[m].count - events[k].count
            out.append(hs)
            i = j + 1
        else:
            i += 1
    return out


def op_classes(events: list[Event]) -> list[dict[str, int]]:
    """The timing model's counters (instruction classes, memory events) of each OP_BEGIN..OP_END pair."""

    out: list[dict[str, int]] = []
    start: Event | None = None
    for e in events:
        if e.kind == "M" and e.a1 == OP_BEGIN:
            start = e
        elif e.kind == "M" and e.a1 == OP_END and start is not None:
            if start.timed is not None and e.timed is not None:
                out.append(class_deltas(start.timed, e.timed))
            start = None
    return out


def op_counts(events: list[Event]) -> list[tuple[int, int]]:
    """(operation id, instructions) for each OP_BEGIN..OP_END pair (crypto mode)."""
    out: list[tuple[int, int]] = []
    start: Event | None = None
    for e in events:
        if e.kind == "M" and e.a1 == OP_BEGIN:
            start = e
        elif e.kind == "M" and e.a1 == OP_END and start is not None:
            out.append((start.a2, e.count - start.count))
            start = None
    return out


def guest_connections(stdout: str, stderr: str, returncode: int, who: str) -> list[dict[str, Any]]:
    """The guest client's per-connection JSON lines; a start-up error line or no line at all is a
    MeasurementError naming `who` (the stack's guest client) and what it said."""

    conns = []
    for line in stdout.splitlines():
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if "error" in d and "conn" not in d:
            raise MeasurementError(f"the {who} guest client could not start: {d['error']}")
        conns.append(d)
    if not conns:
        raise MeasurementError(f"the {who} guest client printed nothing (exit {returncode}): {stderr.strip()[-600:]}")
    return conns
