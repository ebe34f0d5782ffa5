"""The Gilbert-Elliott loss state the Monte Carlo simulation carries per direction and connection
(sim/montecarlo.py draws with it, sim/recovery.py's resend rules take it)."""

from __future__ import annotations

import math

import numpy as np

from ..model import network as N


def geometric_failures(rng: np.random.Generator, n: int, p_fail: float) -> np.ndarray | None:
    """Failed attempts before the first success, P(F >= k) = p_fail^k; None when p_fail is 0."""
    if p_fail <= 0.0:
        return None
    u = rng.random(n)
    return np.floor(np.log(u) / math.log(p_fail))


class Chains:
    """Gilbert-Elliott state per direction and connection (True = bad), started from the chain's
    stationary distribution and advanced once per data packet the connection sends that way — as
    the emulator's link, which moves its chain per packet (transition first, then loss in the new
    state), not per unit of time. Bernoulli directions have no state."""

    def __init__(self, rng: np.random.Generator, link: N.LinkModel, n: int):
        self.bad: dict[str, np.ndarray] = {}
        for sender, d in (("client", link.up), ("server", link.down)):
            if d.ge:
                self.bad[sender] = rng.random(n) < d.ge_bad_share

    def send(
        self, rng: np.random.Generator, sender: str, d: N.Direction, packets: int, idx: np.ndarray | None, m: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Send `packets` packets for the connections `idx` (None: all m); returns (lost any,
        position of the first lost packet, -1 if none)."""
        if not d.ge:
            p_flight = 1.0 - (1.0 - d.loss) ** packets
            lost = rng.random(m) < p_flight
            pos = np.where(lost, rng.integers(0, packets, m), -1) if packets > 1 else np.where(lost, 0, -1)
            return lost, pos
        p, r, bad_loss, good_loss = d.ge
        st = self.bad[sender] if idx is None else self.bad[sender][idx]
        pos = np.full(m, -1)
        for k in range(packets):
            u = rng.random(m)
            st = np.where(st, u >= r, u < p)
            lost_k = rng.random(m) < np.where(st, bad_loss, good_loss)
            pos = np.where((pos < 0) & lost_k, k, pos)
        if idx is None:
            self.bad[sender] = st
        else:
            self.bad[sender][idx] = st
        return pos >= 0, pos

    def retries(
        self, rng: np.random.Generator, sender: str, d: N.Direction, packets: int, idx: np.ndarray, limit: int
    ) -> np.ndarray:
        """Further failed attempts of a lost transmission of `packets` packets (each attempt sends
        them all again), for the connections idx; at most limit + 1 (then the connection gave up)."""
        if not d.ge:
            g = geometric_failures(rng, idx.size, 1.0 - (1.0 - d.loss) ** packets)
            return np.minimum(g, limit + 1) if g is not None else np.zeros(idx.size)
        g = np.zeros(idx.size)
        alive = np.arange(idx.size)
        for _ in range(limit + 1):
            if not alive.size:
                break
            lost, _ = self.send(rng, sender, d, packets, idx[alive], alive.size)
            g[alive[lost]] += 1
            alive = alive[lost]
        return g
