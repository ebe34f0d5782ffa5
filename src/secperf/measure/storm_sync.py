"""One storm instant for every generator (`secperf-mqttload --storm-sync`): each generator, its hold
over, writes a `storm_ready` line and holds on (keep-alive, PUBLISH) until it reads `storm-at NS` on
its stdin, an absolute CLOCK_REALTIME instant in nanoseconds; it sleeps until that instant and drops
all its clients. Once every generator has reported ready, the driver hands all of them the same
instant, SYNC_LEAD_S ahead of its own clock (on a cluster shifted by each node's measured clock
offset). Each generator records the instant it was given and the instant it dropped
(`drop_realtime_ns` on its storm line), so the skew between generators is measured, not assumed.

Here the processes are local (`run_generators`: several generators on this machine, one instant);
app/cluster_mqtt.py relays the same lines through the cluster's actors."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from typing import TYPE_CHECKING, Any

from ..core.jsonlines import parse_line
from ..lab import registry

if TYPE_CHECKING:
    from collections.abc import Callable

SYNC_LEAD_S = 0.25  # the instant lies this far ahead of the last ready report (every writer reaches its stdin)
SYNC_OPTION = "--storm-sync"


class StormSync:
    """Collects the generators' ready reports; when all have reported, hands each the same instant
    (`send(i, ns)`, ns on that generator's clock: the driver's instant plus its offset)."""

    def __init__(
        self,
        parties: int,
        send: Callable[[int, int], None],
        offsets_s: list[float] | None = None,
        lead_s: float = SYNC_LEAD_S,
        clock_ns: Callable[[], int] = time.time_ns,
    ):
        self.parties, self.send, self.lead_s, self.clock_ns = parties, send, lead_s, clock_ns
        self.offsets_s = offsets_s or [0.0] * parties
        self.ready_ns: dict[int, int] = {}  # generator -> when its ready line came (driver's clock, ns)
        self.left: set[int] = set()  # generators that ended before reporting ready
        self.instant_ns: int | None = None
        self._lock = threading.Lock()

    def ready(self, i: int) -> None:
        with self._lock:
            if self.instant_ns is None and i not in self.left:
                self.ready_ns.setdefault(i, self.clock_ns())
        self._fire()

    def leave(self, i: int) -> None:
        """A generator ended (or was lost) before its ready line: the others no longer wait for it."""
        with self._lock:
            if i not in self.ready_ns:
                self.left.add(i)
        self._fire()

    def _fire(self) -> None:
        with self._lock:
            if self.instant_ns is not None or not self.ready_ns:
                return
            if len(self.ready_ns) + len(self.left) < self.parties:
                return
            self.instant_ns = at = self.clock_ns() + int(self.lead_s * 1e9)
        for k in sorted(self.ready_ns):
            self.send(k, at + int(self.offsets_s[k] * 1e9))

    def said(self) -> dict[str, Any]:
        return {
            "instant_ns": self.instant_ns,
            "lead_s": self.lead_s,
            "ready": len(self.ready_ns),
            "left_before_ready": len(self.left),
            "rule": "after every generator's storm_ready line the driver hands all of them one absolute "
            "CLOCK_REALTIME instant (lead ahead of its clock, shifted by each node's clock offset); each "
            "sleeps until it and drops its clients, recording the instant it dropped",
        }


def drop_skew(storm_lines: list[dict[str, Any]], offsets_s: list[float] | None = None) -> dict[str, Any]:
    """The measured spread of the generators' drop instants (their storm lines' drop_realtime_ns, each
    shifted back to the driver's clock by its offset) and how late each dropped after its instant."""
    offsets_s = offsets_s or [0.0] * len(storm_lines)
    drops = [
        int(m["drop_realtime_ns"]) - int(o * 1e9)
        for m, o in zip(storm_lines, offsets_s)
        if m.get("drop_realtime_ns") is not None
    ]
    late = [int(m["drop_late_ns"]) for m in storm_lines if m.get("drop_late_ns") is not None]
    return {
        "generators": len(storm_lines),
        "synchronised": sum(1 for m in storm_lines if m.get("storm_sync") == "storm-at"),
        "drop_skew_ms": (max(drops) - min(drops)) / 1e6 if len(drops) == len(storm_lines) and drops else None,
        "drop_late_ms_max": max(late) / 1e6 if late else None,
        "not_synchronised": sorted(
            {str(m.get("storm_sync")) for m in storm_lines if m.get("storm_sync") != "storm-at"}
        ),
    }


def run_generators(argvs: list[list[str]], cores: list[int], timeout_s: float) -> list[dict[str, Any]]:
    """Several generators on this machine (each pinned to `cores`), their storms started at one instant:
    each one's JSON lines, exit code and stderr, plus the sync record (the same for all)."""

    def pre() -> None:
        os.sched_setaffinity(0, cores)

    procs = [
        registry.spawn(
            a,
            f"secperf-mqttload ({i})",
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=pre,
        )
        for i, a in enumerate(argvs)
    ]

    def send(i: int, ns: int) -> None:
        try:
            stdin = procs[i].stdin
            assert stdin is not None
            stdin.write(f"storm-at {ns}\n")
            stdin.flush()
        except (OSError, ValueError):
            pass  # that generator is gone: its lines say so

    sync = StormSync(len(procs), send)
    lines: list[list[dict[str, Any]]] = [[] for _ in procs]

    def read(i: int) -> None:
        stdout = procs[i].stdout
        assert stdout is not None
        for raw in stdout:
            m = parse_line(raw)
            if m:
                lines[i].append(m)
                if m.get("type") == "storm_ready":
                    sync.ready(i)
        sync.leave(i)

    threads = [threading.Thread(target=read, args=(i,), daemon=True) for i in range(len(procs))]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout_s
    out = []
    try:
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
        for i, p in enumerate(procs):
            late = ""
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=30)
                except subprocess.TimeoutExpired:  # deaf to SIGTERM: it and all it started are killed
                    registry.kill_tree(p, reap=False)
                    p.wait()
                    late = "stopped: still running 30 s after SIGTERM"
            err = p.stderr.read() if p.stderr else ""
            rc = p.wait()
            out.append(
                {
                    "lines": lines[i],
                    "returncode": rc,
                    "stderr": (err.strip() + "\n" + late).strip(),
                    "sync": sync.said(),
                }
            )
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
            registry.forget(p)
    return out
