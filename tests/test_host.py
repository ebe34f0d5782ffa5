"""Host metadata recorded with every Result (core/host.py, psutil underneath) agrees with what the
operating system reports directly."""

import json
import os

from secperf.core import host


def test_host_facts_match_the_operating_system():
    meta = host.collect()
    assert meta["cpu_count"] == os.cpu_count()
    assert meta["cpu_affinity"] == len(os.sched_getaffinity(0))
    assert 0 < meta["memory_available_bytes_at_start"] <= meta["memory_total_bytes"]
    with open("/proc/meminfo") as f:
        total_kib = int(next(line for line in f if line.startswith("MemTotal:")).split()[1])
    assert meta["memory_total_bytes"] == total_kib * 1024
    assert len(meta["loadavg_at_start"]) == 3 and all(x >= 0 for x in meta["loadavg_at_start"])
    assert meta["cpu_model"]
    json.dumps(meta)  # plain JSON types only
