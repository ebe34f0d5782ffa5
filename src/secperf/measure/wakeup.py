"""How late a process on this host wakes up after sleeping for a flight: the input of the what-if's
host-scheduling component (`secperf whatif --host-scheduling measure`). A loaded host wakes a
sleeping receiver late; over an emulated link that lateness adds to every flight."""

from __future__ import annotations

import time

SLEEP_S = 0.020  # a process waiting for a flight of a 20 ms-or-more round trip
SAMPLES = 100  # 2 s of sampling


def lateness_ms(samples: int = SAMPLES, sleep_s: float = SLEEP_S) -> list[float]:
    """`samples` wake-up latenesses (ms, >= 0): each sleeps `sleep_s` and records how much longer
    it took; bounded in count, so at most samples x (sleep_s + lateness) seconds."""
    out = []
    for _ in range(samples):
        t = time.perf_counter()
        time.sleep(sleep_s)
        out.append(max(0.0, (time.perf_counter() - t - sleep_s) * 1e3))
    return out
