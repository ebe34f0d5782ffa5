"""What an emulated link adds to any measurer's series: the per-stage timeout stretched by the link
(round trips, serialisation, retransmission timeouts) and the link's and the device kernel's packet
counters around a configuration's run (derived.link). Every measurer over `--network` uses these."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..core.result_schema import LinkCounts as LinkCountsModel
from ..core.result_schema import LinkedDerived
from ..inputs import netspec as NS

if TYPE_CHECKING:
    from ..lab.netns import Link


# Three retransmission timeouts in a row, 1 + 2 + 4 s: DTLS resends a lost flight after OpenSSL's
# 1 s timer, doubled each time; TCP resends a lost SYN after 1 s, doubled (RFC 6298). Over a lossy
# link a handshake that lost the same flight three times is a slow handshake, and its time belongs
# in the tail of the distribution, not among the failures. Decision: the wait is added whenever the
# link loses packets, so that with 5% loss a DTLS handshake that took 5.4 s (two of eight did) is
# measured, not recorded as timed out; a flight lost four times in a row still fails, with its reason.
LOSS_BACKOFF_MS = 7000


def link_timeout_ms(timeout_ms: int, spec: NS.NetSpec | None) -> int:
    """Per-stage timeout over an emulated link: the configured one plus ten configured round trips
    (and the serialisation of 16 kB at the slower rate), so a slow link is not a failure; over a
    lossy link also three retransmission timeouts (LOSS_BACKOFF_MS)."""
    if spec is None or spec.loopback:
        return timeout_ms
    rates = [r for r in (spec.up.rate_bps, spec.down.rate_bps) if r > 0]
    ser_ms = 16384 * 8 / min(rates) * 1000 if rates else 0.0
    backoff_ms = LOSS_BACKOFF_MS if spec.loss > 0 else 0
    return int(timeout_ms + 10 * (spec.rtt_ms + 4 * max(spec.up.jitter_ms, spec.down.jitter_ms)) + ser_ms + backoff_ms)


@contextmanager
def link_counters(derived: LinkedDerived, link: Link | None) -> Iterator[None]:
    """Record in derived.link (a kind that runs over links: LinkedDerived) what an emulated link (its relay's counters per direction) and the
    device's kernel (TCP segments and retransmissions, UDP datagrams) saw during the block; nothing
    without a link or over loopback, and nothing if the block raised."""
    if link is None or link.loopback:
        yield
        return
    before = (link.stats(), link.snmp("dev"))
    yield
    derived.link = LinkCountsModel.model_validate(_link_delta(before, (link.stats(), link.snmp("dev"))))


LinkCounts = tuple[dict[str, Any] | None, dict[str, int]]  # (the relay's counters, the device kernel's)


def _link_delta(before: LinkCounts, after: LinkCounts) -> dict[str, Any]:
    """What the link and the device's kernel saw during one configuration's run."""
    (s0, k0), (s1, k1) = before, after
    out: dict[str, Any] = {}
    if s0 and s1:
        for d in ("up", "down"):
            out[d] = {k: s1[d][k] - s0[d][k] for k in s1[d] if k != "pending_at_exit"}
        if "load_sleeps" in s0 and "load_sleeps" in s1:  # the relay found the machine loaded this often
            out["relay_load_sleeps"] = s1["load_sleeps"] - s0["load_sleeps"]
    for k in ("Tcp.RetransSegs", "Tcp.OutSegs", "Udp.OutDatagrams", "Udp.InDatagrams"):
        if k in k0 and k in k1:
            out["device_" + k.replace(".", "_")] = k1[k] - k0[k]
    return out
