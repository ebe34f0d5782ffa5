"""Link emulator fidelity: configured versus measured, side by side, in one run.

Rows (each pass/fail; the script exits 1 if any row misses):
- ping RTT at 0, 10, 50 and 200 ms one-way delay: median of ICMP echo round trips from the device
  namespace (our own sender, as for the latency rows: iputils ping prints round trips of 100 ms and
  more in whole milliseconds), against twice the delay; error within 1% or 0.2 ms, whichever is
  larger;
- loss at 1%, 5% and 20% (device -> server): numbered UDP datagrams counted at the receiver; the
  measured share must fall inside the binomial 99% interval of the configured probability;
- rate at 250 kbit/s and 1 Mbit/s: UDP datagrams of 1028 IP bytes sent faster than the link,
  timed at the receiver (first to last arrival), IP bits per second within 5%; plus TCP goodput
  (information only: TCP/IP headers take about 3.5% of a 1500-byte packet);
- the relay's own added latency: ICMP echo RTT through the relay at zero delay minus echo RTT
  over a direct veth pair between the same two namespaces (the kernel reference, measured
  alternately in the same run), halved per direction; median; the sender sleeps between echoes
  (iputils ping busy-waits at intervals under 10 ms, loading a CPU itself); the adaptive default
  (echoes 5 ms apart, as inside an experiment) and busy-poll must stay within 20 µs; the adaptive relay woken from sleep (pings
  50 ms apart) is reported beside them;
- the relay's maximum packet rate: paced floods of 18-byte UDP datagrams through the relay at
  rising rates; the highest rate with every packet delivered (flood sent = relay sent = server
  kernel received).

Run as root, or as another user in the rootless mode (README, "Without root"): `make bench` or
`.venv/bin/python benchmarks/netem.py [--quick]`.
"""

from __future__ import annotations

import argparse
import json
import math
import socket
import statistics
import subprocess
import sys
import threading
import time

from secperf.lab import netns
from secperf.lab.netns import SO_TIMESTAMPNS, Link, find_netem, kernel_rx_ns

ROWS: list[tuple[str, str, str, str, bool]] = []


def row(name: str, configured: str, measured: str, band: str, ok: bool) -> None:
    ROWS.append((name, configured, measured, band, ok))
    print(
        f"  {'PASS' if ok else 'FAIL'}  {name:34} configured {configured:>14}  measured {measured:>16}  ({band})",
        flush=True,
    )


def echo_rtts(link: Link, dst: str, count: int, interval: float) -> list[float]:
    """ICMP echo round trips (ms) from the device namespace, a sleeping sender: send time read just
    before sendto, arrival time the kernel's receive timestamp (SO_TIMESTAMPNS), as ping does.
    Not ping itself: iputils ping busy-waits between pings less than 10 ms apart, and the relay
    (which stops spinning when tasks wait for a CPU) would be measured beside a CPU-bound sender."""
    s = link.socket("dev", socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    s.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
    s.settimeout(3)
    ident, out = 0x5350, []
    try:
        for seq in range(count):
            body = ident.to_bytes(2, "big") + seq.to_bytes(2, "big") + bytes(56)
            csum = _icmp_checksum(b"\x08\x00\x00\x00" + body)
            pkt = b"\x08\x00" + csum.to_bytes(2, "big") + body
            t_send = time.time_ns()
            s.sendto(pkt, (dst, 0))
            while True:
                try:
                    data, anc, _, _ = s.recvmsg(2048, 64)
                except TimeoutError:
                    break
                ihl = (data[0] & 0x0F) * 4
                icmp = data[ihl:]
                if icmp[0] == 0 and icmp[4:6] == ident.to_bytes(2, "big") and icmp[6:8] == seq.to_bytes(2, "big"):
                    t_rx = kernel_rx_ns(anc) or time.time_ns()
                    out.append((t_rx - t_send) / 1e6)
                    break
            time.sleep(interval)
    finally:
        s.close()
    return out


def _icmp_checksum(b: bytes) -> int:
    if len(b) % 2:
        b += b"\0"
    total = sum(int.from_bytes(b[i : i + 2], "big") for i in range(0, len(b), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def add_veth(link: Link) -> str:
    """A direct veth pair between the link's two namespaces (the kernel reference path)."""
    if link.rootless:  # no names: made from inside the device namespace, the peer sent to the server holder's
        subprocess.run(
            link.dev_exec(
                ["ip", "link", "add", "spv0", "type", "veth", "peer", "name", "spv1", "netns", str(link.holders[1].pid)]
            ),
            check=True,
        )
        for side, dev, addr in (("dev", "spv0", "10.78.0.1/30"), ("srv", "spv1", "10.78.0.2/30")):
            subprocess.run(link.prefix(side) + ["ip", "addr", "add", addr, "dev", dev], check=True)
            subprocess.run(link.prefix(side) + ["ip", "link", "set", dev, "up"], check=True)
        return "10.78.0.2"
    subprocess.run(
        [
            "ip",
            "link",
            "add",
            "spv0",
            "netns",
            link.dev_ns,
            "type",
            "veth",
            "peer",
            "name",
            "spv1",
            "netns",
            link.srv_ns,
        ],
        check=True,
    )
    for ns, dev, addr in ((link.dev_ns, "spv0", "10.78.0.1/30"), (link.srv_ns, "spv1", "10.78.0.2/30")):
        subprocess.run(["ip", "-n", ns, "addr", "add", addr, "dev", dev], check=True)
        subprocess.run(["ip", "-n", ns, "link", "set", dev, "up"], check=True)
    return "10.78.0.2"


def bench_rtt(quick: bool) -> None:
    for delay_ms in (0, 10, 50, 200):
        with Link(f"delay={delay_ms}ms") as link:
            count = {0: 100, 10: 40, 50: 20, 200: 10}[delay_ms] // (2 if quick else 1)
            # our own echoes, not iputils ping: ping prints round trips of 100 ms and more in whole
            # milliseconds ("time=101 ms"), as coarse as the 1 ms tolerance at 50 ms one-way
            rtts = echo_rtts(link, link.server_addr, count, 0.005)  # 5 ms apart, as the latency rows
        conf = 2.0 * delay_ms
        med = statistics.median(rtts) if rtts else float("nan")
        tol = max(0.01 * conf, 0.2)
        row(
            f"ping RTT, {delay_ms} ms one-way",
            f"{conf:g} ms",
            f"{med:.3f} ms (n={len(rtts)})",
            f"±{tol:g} ms",
            abs(med - conf) <= tol,
        )


def binom_interval(n: int, p: float, conf: float = 0.99) -> tuple[int, int]:
    """Central interval of Binomial(n, p) holding at least `conf` of the probability."""
    logs = [
        math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1) + k * math.log(p) + (n - k) * math.log1p(-p)
        for k in range(n + 1)
    ]
    pmf = [math.exp(x) for x in logs]
    tail = (1 - conf) / 2
    acc, lo = 0.0, 0
    for k, v in enumerate(pmf):
        if acc + v > tail:
            lo = k
            break
        acc += v
    acc, hi = 0.0, n
    for k in range(n, -1, -1):
        if acc + pmf[k] > tail:
            hi = k
            break
        acc += pmf[k]
    return lo, hi


def udp_count(link: Link, n: int, size: int, gap_s: float, burst: int = 1) -> tuple[list[tuple[int, float]], float]:
    """Send n numbered datagrams device -> server, `burst` at a time every gap_s; arrivals (seq, t)."""
    rx = link.socket("srv", socket.AF_INET, socket.SOCK_DGRAM)
    tx = link.socket("dev", socket.AF_INET, socket.SOCK_DGRAM)
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    rx.bind((link.server_addr, 0))
    port = rx.getsockname()[1]
    got: list[tuple[int, float]] = []

    def reader():
        rx.settimeout(1.5)
        try:
            while True:
                b = rx.recv(65536)
                got.append((int.from_bytes(b[:4], "big"), time.monotonic()))
        except OSError:
            pass

    t = threading.Thread(target=reader)
    t.start()
    pad = bytes(size - 4)
    t0 = time.monotonic()
    for i in range(n):
        tx.sendto(i.to_bytes(4, "big") + pad, (link.server_addr, port))
        if i % burst == burst - 1:
            nxt = t0 + (i // burst + 1) * gap_s
            while time.monotonic() < nxt:
                time.sleep(max(0.0, min(0.001, nxt - time.monotonic())))
    sent_s = time.monotonic() - t0
    t.join(timeout=120)
    rx.close()
    tx.close()
    return got, sent_s


def bench_loss(quick: bool) -> None:
    n = 2000 if quick else 5000
    for p in (0.01, 0.05, 0.20):
        with Link(f"up.loss={p * 100:g}%", seed=7) as link:
            got, _ = udp_count(link, n, 64, 0.001, burst=20)
        lost = n - len({s for s, _ in got})
        lo, hi = binom_interval(n, p)
        row(
            f"loss {p * 100:g}% (n={n})",
            f"{p * 100:g}%",
            f"{lost / n * 100:.2f}% ({lost})",
            f"binomial 99%: {lo}-{hi}",
            lo <= lost <= hi,
        )


def bench_rate(quick: bool) -> None:
    secs = 2.0 if quick else 3.0
    for bps in (250e3, 1e6):
        ip_bytes = 1028  # 1000 bytes of payload + UDP 8 + IPv4 20
        pps = bps / (ip_bytes * 8) * 1.3
        n = int(pps * secs)
        with Link(f"up.rate={bps / 1e3:g}kbit,up.queue=1000") as link:
            got, _ = udp_count(link, n, 1000, 1.0 / pps)
        ts = sorted(t for _, t in got)
        measured = (len(ts) - 1) * ip_bytes * 8 / (ts[-1] - ts[0]) if len(ts) > 2 else 0.0
        row(
            f"rate {bps / 1e3:g} kbit/s (UDP, IP bytes)",
            f"{bps / 1e3:g} kbit/s",
            f"{measured / 1e3:.1f} kbit/s",
            "±5%",
            abs(measured - bps) <= 0.05 * bps,
        )
        with Link(f"rate={bps / 1e3:g}kbit") as link:
            goodput = tcp_goodput(link, int(bps / 8 * secs))
        row(
            f"  TCP goodput over {bps / 1e3:g} kbit/s",
            "(info)",
            f"{goodput / 1e3:.1f} kbit/s",
            f"{goodput / bps * 100:.1f}% of the rate",
            True,
        )


def tcp_goodput(link: Link, nbytes: int) -> float:
    srv = link.socket("srv")
    srv.bind((link.server_addr, 0))
    srv.listen(1)
    res = {}

    def receiver():
        c, _ = srv.accept()
        total, first = 0, None
        while total < nbytes:
            b = c.recv(65536)
            if not b:
                break
            first = first or time.monotonic()
            total += len(b)
        res["bps"] = total * 8 / (time.monotonic() - first)
        c.close()

    t = threading.Thread(target=receiver)
    t.start()
    cli = link.socket("dev")
    cli.connect((link.server_addr, srv.getsockname()[1]))
    cli.sendall(bytes(nbytes))
    cli.close()
    t.join(timeout=120)
    srv.close()
    return res.get("bps", 0.0)


def bench_self_latency(quick: bool) -> None:
    count = 100 if quick else 300
    # (mode, ping interval): the default adaptive relay while an experiment keeps it busy (pings
    # 5 ms apart, inside its 10 ms spin window) carries the 20 µs requirement, as does busy-poll;
    # the adaptive relay woken from sleep (pings 50 ms apart) is reported beside them: its extra is
    # the scheduler's wake-up of an idle CPU, paid by the first packet after a quiet spell
    for poll, interval, gate in (("adaptive", 0.005, True), ("busy", 0.005, True), ("adaptive", 0.05, False)):
        n = count if interval < 0.01 else count // 5
        with Link("delay=0ms", poll=poll) as link:
            veth = add_veth(link)
            relay, ref = [], []
            for _ in range(5):  # alternate, so load changes hit both paths alike
                relay += echo_rtts(link, link.server_addr, n // 5, interval)
                ref += echo_rtts(link, veth, n // 5, interval)
        added_us = (statistics.median(relay) - statistics.median(ref)) * 1000 / 2
        name = f"relay added latency ({poll}{', idle' if interval > 0.01 else ''}), per dir"
        row(
            name,
            "<= 20 µs" if gate else "(info)",
            f"{added_us:.1f} µs",
            f"echoes {interval * 1000:g} ms apart; relay RTT P50 {statistics.median(relay) * 1000:.0f} µs vs veth "
            f"{statistics.median(ref) * 1000:.0f} µs",
            added_us <= 20.0 if gate else True,
        )


def sys_counter(link: Link, side: str, name: str) -> int:
    p = subprocess.run(
        link.prefix(side) + ["cat", f"/sys/class/net/{netns.IFNAME}/statistics/{name}"], capture_output=True, text=True
    )
    return int(p.stdout.strip() or 0)


def bench_packet_rate(quick: bool) -> None:
    """Paced floods of 18-byte UDP datagrams device -> server at rising rates, each up to three
    attempts; a rate counts when one attempt delivers every packet: relay sent = flood sent = the
    server kernel's received count on its TUN (noise on a shared machine can only cause loss, never
    fake a delivery, so one clean attempt proves the rate). The server side has a bound UDP socket
    that is not read: the server kernel accepts and drops at the socket instead of answering each
    datagram with an ICMP port-unreachable (the receiving host's work, not the link's)."""
    best, tried = 0, []
    with Link("delay=0ms") as link:
        sink = link.socket("srv", socket.AF_INET, socket.SOCK_DGRAM)
        sink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sink.bind((link.server_addr, 9))
        for pps in (100_000, 150_000, 200_000, 225_000, 250_000, 275_000, 300_000, 350_000, 400_000):
            n = int(pps * (0.5 if quick else 1.0))
            ok, notes = False, []
            for _attempt in range(3):
                s0, k0 = link.stats()["up"], sys_counter(link, "srv", "rx_packets")
                out = subprocess.run(
                    link.dev_exec(
                        [
                            str(find_netem()),
                            "flood",
                            "--dst",
                            link.server_addr,
                            "--count",
                            str(n),
                            "--pps",
                            str(pps),
                            "--size",
                            "18",
                            "--port",
                            "9",
                        ]
                    ),
                    capture_output=True,
                    text=True,
                    timeout=60,
                ).stdout
                time.sleep(0.2)
                s1, k1 = link.stats()["up"], sys_counter(link, "srv", "rx_packets")
                fl = json.loads(out)
                relayed, received = s1["tx_packets"] - s0["tx_packets"], k1 - k0
                notes.append(f"{relayed / fl['sent'] * 100:.2f}%")
                if fl["pps"] < 0.95 * pps:  # the sender itself could not keep the pace
                    notes[-1] += f"(sender {fl['pps'] / 1000:.0f}k)"
                    continue
                if relayed == received == fl["sent"]:
                    ok = True
                    break
            tried.append(f"{pps // 1000}k:" + "/".join(notes))
            if not ok:
                break
            best = pps
        sink.close()
    row(
        "relay max packet rate without loss",
        ">= 200000/s",
        f"{best}/s",
        "delivered " + " ".join(tried),
        best >= 200_000,
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer samples (about 40 s)")
    args = ap.parse_args()
    problem = netns.check()
    if problem:
        print(f"netem benchmark: cannot emulate links here: {problem}", file=sys.stderr)
        return 1
    print("secperf-netem: configured vs measured (one run)")
    for part in (bench_rtt, bench_loss, bench_rate, bench_self_latency, bench_packet_rate):
        part(args.quick)
    failed = [r for r in ROWS if not r[4]]
    print(f"{len(ROWS) - len(failed)} of {len(ROWS)} rows inside their bands")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
