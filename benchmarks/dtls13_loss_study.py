"""What wolfSSL 5.9's DTLS 1.3 does when a datagram is lost, read from the pair's own datagram log
over a lossy emulated link: the timers behind the what-if's DTLS 1.3 loss model (model/network.py
DTLS13_*, sim/recovery.py).

The wolfSSL pair (native/dtls13/dtls_pair.c, measure/dtls13.py) runs full handshakes over
`delay=D,loss=L` (lab/netns.Link, as root); the client logs every datagram it sends or receives
with its time. Without a lossless reference per connection, each event is recognised by what the
client did next:

- a resent ClientHello (173 bytes) or ClientHello with the cookie (246): the gap since it was last
  sent (the client's long timer; 1 s, and 0.25 s more after the HelloRetryRequest, a handshake record);
- an ACK the client sends between the server's flight and its own (an encrypted record missing):
  the gap since the last datagram it received (wolfSSL's quick timeout, a quarter of the long one),
  and the time until the resent record arrives (a round trip when the server resends at once);
- the server's partial ACK of the client's flight (56 bytes: two of three records), the gap since
  the client's flight left (the server's quick timeout plus the one-way delay);
- a resent request (62 bytes): the pair's application timer (2 s, doubling).

    sudo PYTHONPATH=src .venv/bin/python benchmarks/dtls13_loss_study.py [--network delay=10ms,loss=10%]
        [--n 150] [--log FILE]

Prints each gap's count, median and range (ms); --log keeps the connections' datagram lines.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from secperf.lab import registry
from secperf.lab.netns import Link
from secperf.lab.pki import LabPKI
from secperf.measure import dtls13 as D

CH, CH_COOKIE, CLIENT_CERT, REQUEST = 173, 246, 506, 62  # the client's datagrams (bytes, ECDSA P-256, X25519)
SERVER_PARTIAL_ACK = 56  # the server's ACK naming two of the client's three records


def run_pair(net: str, n: int, seed: int) -> list[dict]:
    pki = LabPKI().ensure()
    exe = D.ensure_tool()
    srv, cli = pki.server("ecdsa-p256", 1), pki.client("ecdsa-p256")
    with Link(net, seed=seed) as link:
        host = link.server_addr
        server = registry.spawn(
            [
                *link.srv_prefix(),
                str(exe),
                "--role",
                "server",
                "--host",
                host,
                "--ca",
                str(cli.ca),
                "--cert",
                str(srv.cert),
                "--key",
                str(srv.key),
                "--version",
                "1.3",
            ],
            "DTLS server (wolfSSL)",
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            port = json.loads(server.stdout.readline())["ready"]
            p = registry.run(
                [
                    *link.dev_prefix(),
                    str(exe),
                    "--role",
                    "client",
                    "--host",
                    host,
                    "--port",
                    str(port),
                    "--ca",
                    str(srv.ca),
                    "--cert",
                    str(cli.cert),
                    "--key",
                    str(cli.key),
                    "--n",
                    str(n),
                    "--warmup",
                    "1",
                    "--mode",
                    "full",
                    "--version",
                    "1.3",
                ],
                "DTLS client (wolfSSL)",
                capture_output=True,
                text=True,
                timeout=n * 70 + 30,
            )
        finally:
            server.kill()
            server.wait()
            registry.forget(server)
    out = []
    for line in p.stdout.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


def gaps(conns: list[dict]) -> dict[str, list[float]]:
    g: dict[str, list[float]] = {
        k: []
        for k in (
            "ClientHello resent (since sent)",
            "ClientHello+cookie resent (since sent)",
            "client quick-timeout ACK (since last received)",
            "client ACK -> missing record in",
            "server partial ACK (since client flight)",
            "client flight resent (since sent)",
            "request resent (since sent)",
        )
    }
    for c in conns:
        if not c.get("ok"):
            continue
        w = c["wire"]
        last_in = None
        sent: dict[int, float] = {}
        for i, d in enumerate(w):
            t = d["t_us"] / 1e3
            if d["dir"] == "s2c":
                if d["bytes"] == SERVER_PARTIAL_ACK and CLIENT_CERT in sent:
                    g["server partial ACK (since client flight)"].append(t - sent[CLIENT_CERT])
                last_in = t
                continue
            b = d["bytes"]
            if b in sent:
                key = {
                    CH: "ClientHello resent (since sent)",
                    CH_COOKIE: "ClientHello+cookie resent (since sent)",
                    CLIENT_CERT: "client flight resent (since sent)",
                    REQUEST: "request resent (since sent)",
                }.get(b)
                if key:
                    g[key].append(t - sent[b])
            elif (
                CH_COOKIE in sent
                and CLIENT_CERT not in sent
                and last_in is not None
                and w[i - 1]["dir"] == "s2c"
                and b not in (CH, CH_COOKIE, CLIENT_CERT)
                and b > 40
            ):
                g["client quick-timeout ACK (since last received)"].append(t - last_in)
                if i + 1 < len(w) and w[i + 1]["dir"] == "s2c":
                    g["client ACK -> missing record in"].append(w[i + 1]["t_us"] / 1e3 - t)
            sent[b] = t
    return g


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--network", default="delay=10ms,loss=10%")
    ap.add_argument("--n", type=int, default=150)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--log", help="write the connections (one JSON line each) here")
    a = ap.parse_args()
    conns = run_pair(a.network, a.n, a.seed)
    if a.log:
        Path(a.log).write_text("".join(json.dumps(c) + "\n" for c in conns))
    ok = [c for c in conns if c.get("ok")]
    print(f"{len(ok)} of {len(conns)} connections over {a.network}")
    for k, v in gaps(conns).items():
        if v:
            v = sorted(v)
            print(f"  {k:48} n={len(v):3}  median {statistics.median(v):7.1f} ms  range {v[0]:.1f}-{v[-1]:.1f}")
        else:
            print(f"  {k:48} n=  0")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
