"""The sweep workers of a cluster connection: one chunk runner (a Ray actor holding one CPU) per
worker CPU, kept for the connection's length (app/cluster.map_chunks hands them the chunks).

Why actors and not one Ray task per chunk: with tasks a worker got its next chunk only once the
driver had its last one (the result serialised and stored, the reply, the next task pushed to it):
about 50 ms idle between chunks, 8-10 % of a worker's wall time here. A runner instead always has
one chunk queued behind the one it runs (DEPTH), so it starts the next the moment one ends.

Why each runner moves to a session of its own: see own_session.

A runner that dies (its process killed, its node lost) is replaced by a new one; the chunk it was
running is tried again (up to RETRIES times, then it is a failed chunk with the reason), and the
chunk it had queued goes back to the queue unblamed. A chunk's own exception is not retried.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

S = TypeVar("S")
T = TypeVar("T")
R = TypeVar("R")
DEPTH = 2  # chunks handed to a runner at a time: the one it runs and the next
RETRIES = 3  # a chunk whose runner died under it is tried again this often, then failed

_SESSION: bool | None = None  # whether this worker process sits in a session of its own (own_session)


def own_session() -> bool:
    """Put this worker process in a session of its own, once (True when it is in one).

    Why: a kernel with `sched_autogroup_enabled` = 1 (the default of most distributions) shares the
    CPU between sessions first, then between the processes of a session. Ray's workers on one machine
    inherit the session of whoever started Ray (often the driver's login session), so two sweep
    workers and the driver are one scheduling group: under any other load they split one session's
    share, and a second worker adds next to nothing. In a session of its own each worker competes as
    it would on a node of its own. How: setsid() refuses a process-group leader, and Ray makes every
    worker the leader of its own group (so that it can kill the worker with whatever it started);
    the worker first joins its parent's group (same session), then setsid() makes it the leader of a
    new session and of a new group whose id is again its PID, so Ray's kill of the group still
    reaches it. What ends a worker is unchanged: Ray kills it by PID or group when the job or its node
    ends, the worker exits when its raylet is gone, and secperf's watchdog finds it by the run's mark
    in its environment, never by session. Where the system refuses, the worker stays where it was."""
    global _SESSION
    if _SESSION is not None:
        return _SESSION
    pid = os.getpid()
    try:
        if os.getsid(0) != pid:
            if os.getpgid(0) == pid:
                os.setpgid(0, os.getpgid(os.getppid()))
            try:
                os.setsid()
            except OSError:
                with contextlib.suppress(OSError):
                    os.setpgid(0, 0)  # back to a group of its own, as Ray made it
                raise
        _SESSION = True
    except OSError:
        _SESSION = False
    return _SESSION


def autogroup_of(pid: int | str = "self") -> str | None:
    """The scheduler autogroup a process sits in ("/autogroup-N"), or None where none can be named:
    the kernel has no autogroups, the process is gone, or it sits in the kernel's default group (a
    session that no setsid() ever started, as a container's first processes), whose
    /proc/PID/autogroup is empty."""
    try:
        with open(f"/proc/{pid}/autogroup") as f:
            words = f.read().split()
    except OSError:
        return None
    return words[0] if words else None


def run_whole_chunk(
    fn: Callable[[S, list[T]], R], shared: S, chunk: bytes | list[T], nice: int | None = None
) -> tuple[R, tuple[str, float, float, float]]:
    """On a worker: fn over one whole chunk (pickled by the driver: cluster._packed), returning its one
    payload and when it ran (worker, start, end, CPU seconds), at the driver's priority while it
    runs (where the system allows it): Ray starts its workers at nice 15, and a sweep's cells at that
    priority lose their core to anything else on the machine, while the same cells run locally at
    the user's."""
    own_session()
    t0, c0 = time.time(), time.thread_time()
    before = os.getpriority(os.PRIO_PROCESS, 0)
    if nice is not None and nice != before:
        with contextlib.suppress(OSError):  # no CAP_SYS_NICE: the chunk runs at Ray's priority
            os.setpriority(os.PRIO_PROCESS, 0, nice)  # this thread: the one running the task
    try:
        out = packed(fn(shared, pickle.loads(chunk) if isinstance(chunk, bytes) else chunk))
    finally:
        if os.getpriority(os.PRIO_PROCESS, 0) != before:
            with contextlib.suppress(OSError):
                os.setpriority(os.PRIO_PROCESS, 0, before)
    return out, (f"{os.uname().nodename}/{os.getpid()}", t0, time.time(), time.thread_time() - c0)


@dataclass(frozen=True)
class Pickled:
    """A chunk's payload pickled on the worker by the C pickler (unpacked by the driver: unpacked)."""

    data: bytes


def packed(payload: Any) -> Any:
    """The payload as one C-made pickle: Ray's own pickler (cloudpickle) calls back into Python for
    every object of a result, which made serialising a chunk of rows after its cells (about 0.06 ms of
    a worker's CPU per row) most of the gap between two chunks. Counted in the chunk's CPU time. A
    payload the standard pickler cannot take goes as it is."""
    try:
        return Pickled(pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))
    except (pickle.PicklingError, AttributeError, TypeError):
        return payload


def unpacked(payload: Any) -> Any:
    """What `packed` made, back as the payload."""
    return pickle.loads(payload.data) if isinstance(payload, Pickled) else payload


class ChunkRunner:
    """A Ray actor: runs the chunks handed to it, one after the other, in its own session."""

    def __init__(self) -> None:
        own_session()

    def ready(self) -> tuple[str, int, bool]:
        """Its node, PID and whether it has a session of its own (answered once it is up)."""
        return os.uname().nodename, os.getpid(), bool(_SESSION)

    def run(self, fn: Any, shared: Any, chunk: Any, nice: int | None) -> Any:
        return run_whole_chunk(fn, shared, chunk, nice)


@dataclass
class _Slot:
    actor: Any
    ready: Any | None  # its ready() call until the runner answered it
    calls: list[Any] = field(default_factory=list)  # refs handed to it, in order: the first is running


class Pool:
    """`size` chunk runners on the cluster `ray` is connected to, until close()."""

    def __init__(self, ray: Any, size: int) -> None:
        self.ray = ray
        self.cls = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(ChunkRunner)
        self.slots = [self._new() for _ in range(max(1, size))]
        self.runners: list[tuple[str, int, bool]] = []  # every runner that answered: node, PID, own session

    def _new(self) -> _Slot:
        a = self.cls.remote()
        return _Slot(a, a.ready.remote())

    def _replace(self, k: int) -> None:
        with contextlib.suppress(Exception):  # noqa: BLE001 (already gone: nothing to end)
            self.ray.kill(self.slots[k].actor, no_restart=True)
        self.slots[k] = self._new()

    def close(self) -> None:
        for s in self.slots:
            with contextlib.suppress(Exception):  # noqa: BLE001 (gone with its node or the session)
                self.ray.kill(s.actor, no_restart=True)
        self.slots = []

    def run(self, args: list[tuple[Any, ...]]) -> Iterator[tuple[int, Any, BaseException | None]]:
        """Every chunk's run(*args[i]) on the runners, each yielded once as it ends: (i, payload, None),
        or (i, None, the error) for a chunk that raised or whose runner died under it RETRIES + 1 times."""
        from ray.exceptions import RayActorError  # reason: optional 'cluster' extra (Ray)

        ray = self.ray
        todo = deque(range(len(args)))
        tries = [0] * len(args)
        owner: dict[Any, tuple[int, int]] = {}  # call ref -> (slot, chunk)
        waiting: dict[Any, int] = {}  # ready ref -> slot
        start_deaths = 0

        def fill(k: int) -> None:
            s = self.slots[k]
            while todo and len(s.calls) < DEPTH:
                i = todo.popleft()
                r = s.actor.run.remote(*args[i])
                s.calls.append(r)
                owner[r] = (k, i)

        for k, s in enumerate(self.slots):
            s.calls = []  # what a run left when its caller stopped reading it is not this run's
            if s.ready is None:
                fill(k)
            else:
                waiting[s.ready] = k
        while owner or (todo and waiting):
            (r,), _ = ray.wait([*owner, *waiting], num_returns=1)
            if r in waiting:
                k = waiting.pop(r)
                try:
                    self.runners.append(ray.get(r))
                except RayActorError as exc:  # it died starting: another one takes its place
                    start_deaths += 1
                    if start_deaths > 2 * len(self.slots) + 2:
                        while todo:
                            yield todo.popleft(), None, exc
                        continue
                    self._replace(k)
                    waiting[self.slots[k].ready] = k
                    continue
                self.slots[k].ready = None
                fill(k)
                continue
            k, i = owner.pop(r)
            s = self.slots[k]
            try:
                out = ray.get(r)
            except RayActorError as exc:
                # the runner died: the chunk it was running (the first handed to it of those not yet
                # back) is blamed; the one queued behind it goes back to the queue as it was
                here = [i if x == r else owner.pop(x)[1] for x in s.calls]
                tries[here[0]] += 1
                for j in reversed(here):
                    if j == here[0] and tries[j] > RETRIES:
                        yield j, None, exc
                    else:
                        todo.appendleft(j)
                self._replace(k)
                waiting[self.slots[k].ready] = k
                continue
            except Exception as exc:  # noqa: BLE001 (the chunk's own error, wrapped by Ray: the caller judges)
                s.calls.remove(r)
                fill(k)
                yield i, None, exc
                continue
            s.calls.remove(r)
            fill(k)
            yield i, out, None
