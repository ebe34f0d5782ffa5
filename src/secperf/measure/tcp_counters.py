"""The kernel's own count of what a storm did to the listen queue, and the client kernel's SYN timers.

- `tcp_counters()`: TcpExt counters from /proc/net/netstat (the network namespace's, so other
  connections on this host count too): ListenOverflows (a SYN or a handshake's last ACK that found the
  accept queue full: Linux tcp_conn_request and tcp_v4_syn_recv_sock), ListenDrops (those and other
  drops at a listener) and TCPSynRetrans (SYNs the clients sent again after their timeout).
- `tcp_sysctls()`: the settings `fleet`'s model takes for the clients' SYN retransmissions and the
  accept queue: net.ipv4.tcp_syn_retries, net.ipv4.tcp_syn_linear_timeouts (Linux >= 6.5; absent
  before, which the model reads as 0: doubling from the first timeout) and net.core.somaxconn; for the
  broker on this host, net.ipv4.tcp_synack_retries and net.ipv4.tcp_abort_on_overflow.
A file that cannot be read gives None (another platform, a locked-down /proc): the record says so."""

from __future__ import annotations

from pathlib import Path

COUNTERS = ("ListenOverflows", "ListenDrops", "TCPSynRetrans")
SYSCTLS = {
    "tcp_syn_retries": "net/ipv4/tcp_syn_retries",
    "tcp_syn_linear_timeouts": "net/ipv4/tcp_syn_linear_timeouts",
    "somaxconn": "net/core/somaxconn",
    # the broker's side of a handshake whose final ACK finds the accept queue full (fleet_ack.py)
    "tcp_synack_retries": "net/ipv4/tcp_synack_retries",
    "tcp_abort_on_overflow": "net/ipv4/tcp_abort_on_overflow",
}


def parse_netstat(text: str) -> dict[str, int]:
    """The TcpExt counters of a /proc/net/netstat text (a header line of names, then one of values)."""
    rows = [line.split() for line in text.splitlines() if line.startswith("TcpExt:")]
    if len(rows) < 2 or len(rows[0]) != len(rows[1]):
        return {}
    names, values = rows[0][1:], rows[1][1:]
    return {n: int(v) for n, v in zip(names, values) if n in COUNTERS and v.lstrip("-").isdigit()}


def tcp_counters(path: Path = Path("/proc/net/netstat")) -> dict[str, int] | None:
    try:
        got = parse_netstat(path.read_text())
    except OSError:
        return None
    return got or None


def counters_between(a: dict[str, int] | None, b: dict[str, int] | None) -> dict[str, int] | None:
    """What each counter added from reading a to reading b (None when either reading is missing)."""
    if not a or not b:
        return None
    return {k: b[k] - a[k] for k in COUNTERS if k in a and k in b}


def tcp_sysctls(root: Path = Path("/proc/sys")) -> dict[str, int | None]:
    out: dict[str, int | None] = {}
    for key, rel in SYSCTLS.items():
        try:
            out[key] = int((root / rel).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            out[key] = None
    return out
