"""One way to wait for something: poll a condition until it holds, a deadline passes or the thing
being waited for is gone. Every "poll until ready" loop in secperf (a server listening, a namespace
holder up, a process gone, an MQTT CONNACK) goes through `wait_until`, so the polling interval,
the deadline arithmetic (monotonic clock) and what a timeout returns are the same everywhere."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# how often a condition is polled by default: fast enough that a server's start is seen within a
# handshake's time on loopback, slow enough not to compete with what is being waited for
DEFAULT_INTERVAL_S = 0.02


def wait_until(
    condition: Callable[[], T],
    timeout_s: float,
    *,
    interval_s: float = DEFAULT_INTERVAL_S,
    give_up: Callable[[], bool] | None = None,
) -> T | None:
    """Call `condition` until it returns a true value (returned), `timeout_s` passes, or `give_up`
    returns True (e.g. the process being waited for exited); then None. The condition runs at least
    once, even with a timeout of 0. The last call is made at or after the deadline, so a condition
    that becomes true just in time is seen."""
    deadline = time.monotonic() + max(0.0, timeout_s)
    while True:
        value = condition()
        if value:
            return value
        if give_up is not None and give_up():
            return None
        now = time.monotonic()
        if now >= deadline:
            return None
        time.sleep(min(interval_s, max(0.0, deadline - now)))
