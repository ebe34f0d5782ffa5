"""OpenVPN's machine-readable log: its lines (realtime µs, message), one client log turned into
the establishment time and its phases, and a reader that keeps a child's log as it runs."""

from __future__ import annotations

import re
import subprocess
import threading
from pathlib import Path
from typing import Any

_LINE_RE = re.compile(r"^(\d+)\.(\d{6}) ([0-9a-fA-F]+) (.*)$")
START_RE = re.compile(
    r"TCP/UDP: Preserving recently used remote address|Socket Buffers|"
    r"Attempting to establish TCP connection|link local|link remote"
)
DONE_RE = re.compile(r"Initialization Sequence Completed")
# a client line that means this attempt has failed (with --tls-exit the client also exits)
FAIL_RE = re.compile(
    r"TLS Error|TLS_ERROR|VERIFY ERROR|AUTH_FAILED|Options error|Exiting due to fatal error|"
    r"SIGUSR1\[soft|SIGTERM\[soft,tls-error|Cannot load|PKCS#11: Cannot|"
    r"Verification Failed|private key password verification failed",
    re.I,
)
PIN_CMD_RE = re.compile(r"MANAGEMENT: CMD 'password")
TLS_RE = re.compile(r"Control Channel: (TLSv[\d.]+)")
PEER_CERT_RE = re.compile(r"VERIFY OK: depth=0")

# phase name, the log line that ends it (in order); a phase whose line is absent merges into the next
PHASES = (
    ("tcp connect", re.compile(r"TCP connection established with")),
    ("control channel reset", re.compile(r"TLS: Initial packet from")),
    ("tls handshake", re.compile(r"Peer Connection Initiated with")),
    ("push request/reply", re.compile(r"PUSH: Received control message: 'PUSH_REPLY")),
    ("tun setup", DONE_RE),
)
PIN_PHASES = ("tls handshake: to PIN query", "PIN entry (management)", "tls handshake: login, sign, finish")


def parse_line(line: str) -> tuple[int, str] | None:
    """(realtime µs, message) of one --machine-readable-output line, None for other lines."""
    m = _LINE_RE.match(line.rstrip("\r\n"))
    if not m:
        return None
    return int(m.group(1)) * 1_000_000 + int(m.group(2)), m.group(4)


def parse_client_log(
    lines: list[tuple[int, str]], spawn_us: int | None = None, pin_query_us: int | None = None
) -> dict[str, Any]:
    """Establishment time and phases from one client's log.

    ``lines``: (realtime µs, message) in log order; ``spawn_us``: realtime µs just before the
    process was spawned; ``pin_query_us``: realtime µs when secperf received the PIN query on the
    management socket. Returns {ok, reason, usable_us, phases [{phase, us}] summing to usable_us,
    startup_us (spawn → first log line), init_us (first log line → first socket line), tls,
    peer_cert_verified}."""
    out: dict[str, Any] = {
        "ok": False,
        "reason": None,
        "usable_us": None,
        "phases": [],
        "startup_us": None,
        "init_us": None,
        "tls": None,
        "peer_cert_verified": False,
    }
    if not lines:
        out["reason"] = "the client wrote no log line"
        return out
    if spawn_us is not None:
        out["startup_us"] = float(lines[0][0] - spawn_us)
    for _t, msg in lines:
        m = TLS_RE.search(msg)
        if m and out["tls"] is None:
            out["tls"] = m.group(1)
        if PEER_CERT_RE.search(msg):
            out["peer_cert_verified"] = True
    start = next(((t, i) for i, (t, msg) in enumerate(lines) if START_RE.search(msg)), None)
    if start is None:
        out["reason"] = "no socket/link line in the client log"
        return out
    t0, i0 = start
    out["init_us"] = float(t0 - lines[0][0])
    end = next(((t, i) for i, (t, msg) in enumerate(lines) if i >= i0 and DONE_RE.search(msg)), None)
    if end is None:
        out["reason"] = "no 'Initialization Sequence Completed' in the client log"
        return out
    t_end, i_end = end
    phases: list[dict[str, Any]] = []
    prev_t, pos = t0, i0
    for name, rx in PHASES:
        hit = next(((t, i) for i, (t, msg) in enumerate(lines[pos : i_end + 1], start=pos) if rx.search(msg)), None)
        if hit is None:
            continue
        t, i = hit
        if name == "tls handshake" and pin_query_us is not None:
            pin_cmd = next(
                (tt for ii, (tt, msg) in enumerate(lines[pos : i + 1], start=pos) if PIN_CMD_RE.search(msg)), None
            )
            if pin_cmd is not None:
                q = min(max(pin_query_us, prev_t), pin_cmd)  # the query lies between the two log lines
                for pname, a, b in (
                    (PIN_PHASES[0], prev_t, q),
                    (PIN_PHASES[1], q, pin_cmd),
                    (PIN_PHASES[2], pin_cmd, t),
                ):
                    phases.append({"phase": pname, "us": float(b - a)})
                prev_t, pos = t, i
                continue
        phases.append({"phase": name, "us": float(t - prev_t)})
        prev_t, pos = t, i
    out.update(ok=True, usable_us=float(t_end - t0), phases=phases)
    return out


class LogReader:
    """Reads a child's stdout for its whole life (so it never blocks on a full pipe), appends each
    line to a log file, keeps the parsed lines and signals when a line matches ``stop_rx``."""

    def __init__(self, proc: subprocess.Popen[str], log_path: Path, stop_rx: re.Pattern[str] | None = None) -> None:
        self.lines: list[tuple[int, str]] = []
        self.raw_tail: list[str] = []
        self.hit = threading.Event()
        self.hit_line: str | None = None
        self.eof = threading.Event()
        self._stop_rx = stop_rx
        self._thread = threading.Thread(target=self._run, args=(proc, log_path), daemon=True)
        self._thread.start()

    def _run(self, proc: subprocess.Popen[str], log_path: Path) -> None:
        try:
            with open(log_path, "a", buffering=1) as log:
                for line in proc.stdout or ():
                    log.write(line)
                    self.raw_tail = (self.raw_tail + [line.rstrip()])[-40:]
                    p = parse_line(line)
                    if p is not None:
                        self.lines.append(p)
                        if self._stop_rx is not None and not self.hit.is_set() and self._stop_rx.search(p[1]):
                            self.hit_line = p[1]
                            self.hit.set()
        except (OSError, ValueError):
            pass
        finally:
            self.eof.set()
            self.hit.set()

    def join(self, timeout_s: float = 2.0) -> None:
        self._thread.join(timeout_s)
