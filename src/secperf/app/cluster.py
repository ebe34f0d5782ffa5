"""The one adapter between secperf and a Ray cluster (`--cluster auto|local|ADDRESS`).

measure/ and sim/ stay unaware of where they run: this module connects to Ray, ships work to its
sweep workers (what-if cells, plan patterns: app/cluster_pool.py) or to generator actors
(app/cluster_generators.py), and brings back exactly what the local path would have computed. Ray is an optional extra
(`pip install 'secperf[cluster]'`) imported only here and only when --cluster is given; without
it --cluster is an input error (exit 2) naming what to install.

Addresses:
  auto          the cluster this machine belongs to (RAY_ADDRESS, or the one `ray start` started here)
  local         a private Ray instance on this machine for this run only (all its cores)
  HOST:PORT     a cluster's GCS address (`ray start --head` prints it); ray://HOST:PORT for Ray Client

Determinism: a what-if cell's random draws depend on the run's --seed only (every cell draws with
numpy's generator seeded with --seed: common random numbers, so that two cells differ by their
inputs, not by their luck; `--baseline` relies on it), never on which worker ran it or in which
order; a fanned-out run therefore gives the series a local run gives, bit for bit. A chunk a lost
worker was running is run again on a new one (cluster_pool.RETRIES), so a sweep survives a worker's
loss; a chunk that still fails becomes failed rows naming the reason (map_chunks' `failed`), not a
lost run.

Where the driver runs from a source tree (PYTHONPATH=src), the workers get the same PYTHONPATH
through the runtime environment; on other machines secperf must be installed (the same version:
checked, a mismatch is named).
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import os
import pickle
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any, TypeVar

from .. import __version__
from .. import __version__ as v
from ..core.errors import InputError, MeasurementError, SecperfError
from .cluster_pool import Pool, unpacked
from .reporter import reporter

INSTALL_HINT = "pip install 'secperf[cluster]' (Ray 2.40 or later)"
ADDRESS_HELP = (
    "auto (the cluster this machine joined with `ray start`), local (a private Ray on this machine "
    "for this run) or HOST:PORT of a cluster's head (ray://HOST:PORT for Ray Client)"
)
S = TypeVar("S")  # what every item's call shares (put in the object store once)
T = TypeVar("T")
R = TypeVar("R")
CHUNKS_PER_CPU = 4  # the smallest chunk: a 4 x CHUNKS_PER_CPU-th of one worker CPU's share of the items


class ClusterError(InputError):
    """--cluster cannot be used: Ray missing, a malformed address, no cluster there (exit 2)."""


class ClusterRunError(MeasurementError):
    """The cluster failed as a whole during a run (every worker lost, a task failing on all retries)."""


_ADDRESS = re.compile(r"^(ray://)?[A-Za-z0-9_.\-\[\]:]+:\d{1,5}$")


def check_address(text: str | None) -> str | None:
    """The --cluster value checked (None: no cluster). Raises ClusterError naming the accepted forms."""
    if text is None:
        return None
    t = text.strip()
    if t in ("auto", "local") or _ADDRESS.match(t):
        if _ADDRESS.match(t) and not 1 <= int(t.rsplit(":", 1)[1]) <= 65535:
            raise ClusterError(f"--cluster {text}: port {t.rsplit(':', 1)[1]} is not 1..65535")
        return t
    raise ClusterError(f"--cluster {text!r}: give {ADDRESS_HELP}")


def ray_module() -> Any:  # the ray module: it ships no type information here
    """Ray, imported now (never at secperf's import); a ClusterError naming the extra when missing."""
    try:
        import ray  # noqa: PLC0415 (lazy on purpose: the extra is optional)  # reason: optional 'cluster' extra (Ray)
    except ImportError:
        raise ClusterError(f"--cluster needs Ray, which is not installed here: {INSTALL_HINT}") from None
    return ray


def require(address: str | None) -> str | None:
    """Check --cluster before anything runs: the address's form and that Ray can be imported."""
    a = check_address(address)
    if a is not None:
        ray_module()
    return a


def _source_tree() -> str | None:
    """The directory holding the secperf package when it is not installed (a source tree)."""
    pkg = Path(__file__).resolve().parents[1]
    if any(part in ("site-packages", "dist-packages") for part in pkg.parts):
        return None
    return str(pkg.parent)


def runtime_env() -> dict[str, Any]:
    # the driver's PID on every worker process (and so on every generator they start): a test, or a
    # person, finds what a run started on a node by it
    env = {"RAY_DEDUP_LOGS": "0", "SECPERF_CLUSTER_DRIVER": str(os.getpid())}
    src = _source_tree()
    if src:
        env["PYTHONPATH"] = os.pathsep.join(x for x in (src, os.environ.get("PYTHONPATH")) if x)
    return {"env_vars": env}


@dataclass
class Cluster:
    """What the run connected to: the address, the alive nodes and their CPUs."""

    address: str
    nodes: list[dict[str, Any]] = field(default_factory=list)  # {"node_id", "name", "ip", "cpus"}
    # the sweep workers (app/cluster_pool.py), started by the first map and kept for the connection
    pool: Pool | None = field(default=None, repr=False, compare=False)

    @property
    def cpus(self) -> int:
        return sum(n["cpus"] for n in self.nodes)

    def as_dict(self) -> dict[str, Any]:
        return {"address": self.address, "nodes": self.nodes, "cpus": self.cpus, "ray": _ray_version()}


def _ray_version() -> str | None:
    try:
        return version("ray")
    except Exception:  # noqa: BLE001 (metadata absent: the version is only a label)
        return None


def _alive_nodes(ray: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for n in ray.nodes():
        if not n.get("Alive"):
            continue
        cpus = int(n.get("Resources", {}).get("CPU", 0))
        if cpus <= 0:
            continue
        out.append(
            {
                "node_id": n["NodeID"],
                "ip": n.get("NodeManagerAddress"),
                "name": f"{n.get('NodeManagerAddress')} ({n['NodeID'][:8]})",
                "cpus": cpus,
            }
        )
    return out


def _worker_version() -> str:
    return v


@contextlib.contextmanager
def connect(address: str, quiet: bool = True) -> Iterator[Cluster]:
    """Connect to the cluster for the length of a run (a `local` one is started and stopped here)."""
    ray = ray_module()
    logging.getLogger("ray").setLevel(logging.WARNING)
    kw = {
        "runtime_env": runtime_env(),
        "log_to_driver": not quiet,
        "logging_level": logging.WARNING,
        "configure_logging": True,
    }
    owned = not ray.is_initialized()
    if owned:
        try:
            if address == "local":
                ray.init(address="local", include_dashboard=False, _node_ip_address="127.0.0.1", **kw)  # loopback only
            else:
                ray.init(address=address, **kw)
        except OSError as exc:
            if address != "local" or isinstance(exc, (ConnectionError, TimeoutError)):
                raise ClusterError(
                    f"--cluster {address}: no Ray cluster reachable there ({str(exc).splitlines()[0]}); "
                    f"start one with `ray start --head` (see docs/how-to/cluster.md) or give {ADDRESS_HELP}"
                ) from None
            # e.g. its socket paths under $RAY_TMPDIR (or $TMPDIR) past the 107 bytes AF_UNIX allows
            raise ClusterError(
                f"--cluster local: Ray could not start a cluster here ({str(exc).splitlines()[0]}); "
                "a shorter RAY_TMPDIR may help if it names a path"
            ) from None
        except (RuntimeError, ValueError) as exc:
            raise ClusterError(
                f"--cluster {address}: no Ray cluster reachable there ({str(exc).splitlines()[0]}); "
                f"start one with `ray start --head` (see docs/how-to/cluster.md) or give "
                f"{ADDRESS_HELP}"
            ) from None
    try:
        nodes = _alive_nodes(ray)
        if not nodes:
            raise ClusterError(f"--cluster {address}: the cluster has no node with a CPU")
        cl = Cluster(address, nodes)
        if not quiet:
            reporter().note(f"cluster {address}: {len(nodes)} node(s), {cl.cpus} CPU(s)")
        _check_versions(ray, cl)
        try:
            yield cl
        finally:
            if cl.pool is not None:  # its CPUs back to the cluster (a session secperf did not start goes on)
                cl.pool.close()
                cl.pool = None
    finally:
        if owned:
            ray.shutdown()


def _check_versions(ray: Any, cl: Cluster) -> None:
    """Every node runs the driver's secperf version (a worker with another one computes another thing)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # reason: optional 'cluster' extra (Ray)

    probe = ray.remote(num_cpus=0)(_worker_version)
    refs = {
        n["name"]: probe.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["node_id"], soft=False)).remote()
        for n in cl.nodes
    }
    for name, ref in refs.items():
        try:
            v = ray.get(ref, timeout=120)
        except Exception as exc:  # noqa: BLE001 (any worker failure here: secperf not importable there)
            raise ClusterError(
                f"--cluster {cl.address}: node {name} cannot run secperf ({_cause(exc)}); install "
                f"secperf {__version__} with its cluster extra there"
            ) from None
        if v != __version__:
            raise ClusterError(
                f"--cluster {cl.address}: node {name} runs secperf {v}, this driver {__version__}; "
                f"install the same version on every node"
            )


def _cause(exc: BaseException) -> str:
    cause = getattr(exc, "cause", None)
    text = str(cause if cause is not None else exc).strip().splitlines()
    return text[-1] if text else type(exc).__name__


def _run_chunk(fn: Callable[[S, T], R], shared: S, chunk: list[T]) -> list[R]:
    """On a worker: fn over one chunk of items (results in the chunk's order)."""
    return [fn(shared, item) for item in chunk]


@dataclass(frozen=True)
class ChunkTiming:
    """When and where one chunk ran (time.time() of the worker's host: on one machine, the driver's
    clock too), its worker's CPU for it, and when the driver had received it."""

    index: int  # the chunk's place in the items' order
    items: int
    worker: str  # "node/pid" of the worker process that ran it
    start: float  # seconds (epoch) on the worker
    end: float
    cpu_s: float  # the worker thread's CPU time for the chunk
    received: float = 0.0  # seconds (epoch) on the driver, once the payload was unpacked there


def _packed(chunk: list[T]) -> bytes | list[T]:
    """A chunk as one pickle made by the C pickler: Ray's own (cloudpickle) calls back into Python
    for every object of a task's arguments, which was a tenth of the driver's time per what-if cell.
    Items the standard pickler cannot take (a closure among them) go as they are."""
    try:
        return pickle.dumps(chunk, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError):
        return chunk


def chunks(items: list[T], parts: int) -> list[list[T]]:
    """`items` cut into at most `parts` contiguous chunks of near-equal length (order kept)."""
    parts = max(1, min(parts, len(items)))
    q, r = divmod(len(items), parts)
    out: list[list[T]] = []
    i = 0
    for k in range(parts):
        n = q + (1 if k < r else 0)
        out.append(items[i : i + n])
        i += n
    return out


def chunk_sizes(items: int, cpus: int) -> list[int]:
    """The lengths of a map's chunks, in order: each a 2 x cpus-th of the items not yet handed out
    (guided scheduling), never below the smallest (CHUNKS_PER_CPU): large chunks first, to amortise a
    task, then ever smaller ones, so that the workers finish within a small chunk of each other and
    the driver has only a small chunk left to unpack when the last one ends (equal chunks left one
    worker idle for up to a whole chunk at the end, and the driver unpacking a whole one after it)."""
    cpus = max(1, cpus)
    smallest = max(1, -(-items // (cpus * CHUNKS_PER_CPU * 4)))
    out: list[int] = []
    left = items
    while left > 0:
        n = min(left, max(smallest, -(-left // (2 * cpus))))
        out.append(n)
        left -= n
    return out


def guided_chunks(items: list[T], cpus: int) -> list[list[T]]:
    """`items` cut into contiguous chunks of chunk_sizes' lengths (order kept)."""
    out: list[list[T]] = []
    i = 0
    for n in chunk_sizes(len(items), cpus):
        out.append(items[i : i + n])
        i += n
    return out


def chunk_count(items: int, cpus: int) -> int:
    """How many tasks a map over `items` on `cpus` worker CPUs makes (chunk_sizes)."""
    return max(1, len(chunk_sizes(items, cpus)))


def map_chunks(
    fn: Callable[[S, list[T]], R],
    shared: S,
    items: list[T],
    cl: Cluster,
    label: str = "items",
    progress: Callable[[int, int], object] | None = None,
    failed: Callable[[list[T], str], R] | None = None,
    received: Callable[[R], Any] | None = None,
    timings: list[ChunkTiming] | None = None,
) -> list[Any]:
    """fn(shared, chunk) for contiguous chunks of `items` on the cluster's sweep workers (one per
    worker CPU, kept for the connection: app/cluster_pool.py): one payload per chunk, in the items'
    order (each passed through `received` as it arrives, while the workers go on); the caller merges
    them. A SecperfError raised on a worker is raised here as itself (the local run raises it too).
    Any other failure of a chunk (its code raising, its worker lost on every retry) is, with `failed`,
    that chunk's payload `failed(chunk, reason)` and the run goes on; without it a ClusterRunError.
    The chunks shrink as the map goes on (chunk_sizes); every worker has the next one queued behind
    the one it runs. With `timings`, each chunk's ChunkTiming is appended to it (a failed chunk has
    none)."""
    if not items:
        return []
    ray = ray_module()
    if cl.pool is None:
        cl.pool = Pool(ray, cl.cpus)
    ref = ray.put(shared)
    parts = guided_chunks(list(items), cl.cpus)
    nice = os.getpriority(os.PRIO_PROCESS, 0)  # the driver's: the workers take it for the run's chunks
    done: dict[int, Any] = {}
    # the payloads are many small acyclic objects, kept: a garbage collection while they arrive
    # would only walk them (and every one received before) again, for nothing
    gc_was = gc.isenabled()
    gc.disable()
    try:
        for i, out, exc in cl.pool.run([(fn, ref, _packed(ch), nice) for ch in parts]):
            ran = None
            if exc is None:
                got, (worker, t0, t1, cpu) = out
                got = unpacked(got)
                ran = ChunkTiming(i, len(parts[i]), worker, t0, t1, cpu)
            else:
                err = _unwrap(exc, label)
                if failed is None or (isinstance(err, SecperfError) and not isinstance(err, ClusterRunError)):
                    raise err from None
                got = failed(parts[i], f"{len(parts[i])} of the {label} failed on a worker: {_cause(exc)}")
            done[i] = received(got) if received else got
            if ran is not None and timings is not None:
                timings.append(ChunkTiming(**{**ran.__dict__, "received": time.time()}))
            if progress:
                progress(len(done), len(parts))
    finally:
        if gc_was:
            gc.enable()
    return [done[i] for i in range(len(parts))]


def map_items(
    fn: Callable[[S, T], R],
    shared: S,
    items: list[T],
    cl: Cluster,
    label: str = "items",
    progress: Callable[[int, int], object] | None = None,
) -> list[R]:
    """fn(shared, item) for every item, as Ray tasks (one CPU each, several items per task), results
    in the items' order. `shared` is put in the object store once. A SecperfError raised on a worker
    is raised here as itself; tasks of a lost worker are retried by Ray."""
    out = map_chunks(functools.partial(_run_chunk, fn), shared, items, cl, label, progress)
    return [x for part in out for x in part]


def _unwrap(exc: BaseException, label: str) -> BaseException:
    """The worker's own SecperfError when it raised one; else a ClusterRunError naming the failure."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, SecperfError):
        return cause
    return ClusterRunError(f"cluster: computing the {label} failed on a worker: {_cause(exc)}")
