"""--cluster: the Ray adapter (app/cluster.py), load generators on workers (app/cluster_generators.py) and
the histograms they merge (core/histogram.py).

The fast tests need no Ray cluster. The slow ones start a real one on this machine: a head with no
CPU and two worker nodes of one CPU each (`ray start`, each with its own --temp-dir, on loopback),
stopped at the end by the PIDs of the processes carrying this test's temp-dir (never by name)."""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import alive, import_or_skip, pids_marked, short_tmpdir
from secperf.core.histogram import Histogram, HistogramError, bin_index, bin_lower, bin_width

ROOT = Path(__file__).resolve().parents[1]


# --- histograms ---------------------------------------------------------------------------------------
def test_every_value_falls_in_its_bin_and_bins_are_at_most_one_64th_wide():
    for v in [*range(0, 3000), *(2**k + d for k in range(7, 32) for d in (-1, 0, 1))]:
        v = min(v, 2**32 - 1)
        i = bin_index(v)
        assert bin_lower(i) <= v < bin_lower(i) + bin_width(i)
        assert i < 128 or bin_width(i) / bin_lower(i) <= 1 / 64
    assert bin_index(2**32 - 1) == 1727


def test_merged_histograms_equal_the_histogram_of_all_samples_and_its_percentiles():
    rng = random.Random(5)
    parts = [[int(rng.lognormvariate(9, 1.2)) for _ in range(rng.randint(1, 3000))] for _ in range(7)]
    merged = Histogram.merged(Histogram.of(p) for p in parts)
    whole = Histogram.of([v for p in parts for v in p])
    assert merged == whole and merged.n == sum(map(len, parts))
    for q in (0.5, 0.9, 0.95, 0.99, 1.0):
        assert merged.quantile_us(q) == whole.quantile_us(q)
    # the percentile's bin holds the exact nearest-rank value of all samples (never below it)
    allv = sorted(v for p in parts for v in p)
    for q in (0.5, 0.99):
        exact = allv[min(len(allv), max(1, int(q * len(allv) + 0.999999))) - 1]
        i = bin_index(exact)
        assert merged.quantile_us(q) == bin_lower(i) + bin_width(i) - 1 >= exact


def test_an_average_of_percentiles_is_not_what_the_merge_gives():
    # two generators, one fast and one slow: the merged P50 is not the mean of their P50s
    fast, slow = Histogram.of([100] * 900), Histogram.of([10_000] * 100)
    merged = Histogram.merged([fast, slow])
    assert merged.quantile_us(0.5) == 100
    assert (fast.quantile_us(0.5) + slow.quantile_us(0.5)) / 2 != merged.quantile_us(0.5)


def test_the_generators_pairs_round_trip_and_malformed_ones_are_named():
    h = Histogram.of([5, 5, 300, 70_000])
    assert Histogram.from_pairs(h.to_pairs()) == h
    for bad in ("x", [[1]], [[129, 1]], [[-1, 2]], [[1.5, 1]]):
        with pytest.raises(HistogramError):
            Histogram.from_pairs(bad, "worker-1 hist_us")


# --- splitting the load ---------------------------------------------------------------------------------
def test_the_load_is_split_over_generators_without_losing_or_adding_any():
    from secperf.app.cluster_generators import worker_argvs

    base = ["lg", "--port", "1", "--concurrency", "10", "--procs", "4", "--seed", "3"]
    parts = worker_argvs(base, 3)
    assert sum(int(a[a.index("--concurrency") + 1]) for a in parts) == 10
    assert all(a[a.index("--procs") + 1] == "1" for a in parts)
    assert len({a[a.index("--seed") + 1] for a in parts}) == 3
    # fewer clients than generators: the idle ones are left out, none gets 0
    assert len(worker_argvs(["lg", "--concurrency", "2"], 5)) == 2
    rate = worker_argvs(["lg", "--rate", "90", "--procs", "2"], 4)
    assert sum(float(a[a.index("--rate") + 1]) for a in rate) == pytest.approx(90)
    storm = worker_argvs(["lg", "--storm", "101"], 4)
    assert sum(int(a[a.index("--storm") + 1]) for a in storm) == 101


def test_chunks_keep_order_and_cover_every_item():
    from secperf.app.cluster import chunks

    items = list(range(103))
    cs = chunks(items, 8)
    assert len(cs) == 8 and [x for c in cs for x in c] == items
    assert max(map(len, cs)) - min(map(len, cs)) <= 1
    assert chunks([1, 2], 10) == [[1], [2]]


@pytest.mark.parametrize("items,cpus", [(6000, 1), (6000, 2), (10000, 2), (40, 2), (8, 2), (3, 4), (1, 1), (6000, 64)])
def test_guided_chunks_shrink_to_a_small_tail_and_cover_every_item_in_order(items, cpus):
    from secperf.app.cluster import CHUNKS_PER_CPU, chunk_count, chunk_sizes, guided_chunks

    sizes = chunk_sizes(items, cpus)
    assert sum(sizes) == items and min(sizes) >= 1 and len(sizes) == chunk_count(items, cpus)
    assert all(a >= b for a, b in zip(sizes, sizes[1:]))  # never a larger chunk after a smaller one
    smallest = -(-items // (cpus * CHUNKS_PER_CPU * 4))
    assert sizes[-1] <= smallest  # the tail: at most the smallest chunk
    assert sizes[0] <= -(-items // (2 * cpus))  # no worker takes more than half its share at once
    if items >= 4 * cpus:
        assert len(sizes) > cpus  # a worker that is done takes another
    cs = guided_chunks(list(range(items)), cpus)
    assert [len(c) for c in cs] == sizes and [x for c in cs for x in c] == list(range(items))


# --- bad input -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", ["", "nowhere", "host:99999", "http://x:1", "a b:1"])
def test_a_malformed_cluster_address_is_an_input_error(value):
    from secperf.app.cluster import ClusterError, check_address

    with pytest.raises(ClusterError, match="--cluster"):
        check_address(value)


@pytest.mark.parametrize(
    "argv",
    [
        ["whatif", "tls1.3", "--cluster", "auto"],
        ["plan", "--pattern", "periodic-collection", "--cluster", "auto"],
        ["server", "--cluster", "auto"],
        ["fleet", "--replay", "20", "--cluster", "auto"],
    ],
)
def test_without_ray_cluster_exits_2_naming_the_extra(argv, monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError: Ray missing
    from secperf.cli import main

    code = main([*argv, "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2
    assert "secperf[cluster]" in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())  # refused before any run directory


def test_a_bad_cluster_address_exits_2_before_any_work(capsys, tmp_path):
    from secperf.cli import main

    assert main(["whatif", "tls1.3", "--cluster", "no-port", "--out", str(tmp_path)]) == 2
    assert "--cluster 'no-port'" in capsys.readouterr().err


def test_a_local_cluster_ray_cannot_start_exits_2_naming_why(tmp_path):
    """Ray puts AF_UNIX sockets (107 bytes at most) under $RAY_TMPDIR: a temp dir too deep for them is a
    named error before any run directory, not Ray's traceback, and no Ray process is left."""
    import_or_skip("ray", "scripts/bootstrap installs the 'cluster' extra")
    with short_tmpdir("srd") as base:
        deep = base / ("d" * 90)
        deep.mkdir()
        env = {**os.environ, "RAY_TMPDIR": str(deep), "RAY_DISABLE_USAGE_STATS": "1", "PYTHONPATH": str(ROOT / "src")}
        out = tmp_path / "out"
        p = _secperf("whatif", "tls1.3", "--n", "50", "--cluster", "local", "--no-report", "--out", str(out), env=env)
        assert p.returncode == 2, p.stderr[-2000:]
        assert "--cluster local: Ray could not start" in p.stderr and "107 bytes" in p.stderr
        assert "Traceback" not in p.stderr
        assert not out.exists()
        deadline = time.time() + 30
        while time.time() < deadline and pids_marked(str(deep)):
            time.sleep(0.5)
        assert not pids_marked(str(deep))


# --- a real Ray cluster on this machine -------------------------------------------------------------------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _descendants(pids: list[int]) -> set[int]:
    kids: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d.name))
    out, todo = set(), list(pids)
    while todo:
        p = todo.pop()
        if p not in out:
            out.add(p)
            todo += kids.get(p, [])
    return out


def _loadgens_of(driver_pid: int) -> list[int]:
    mark = f"SECPERF_CLUSTER_DRIVER={driver_pid}\0"
    out = []
    for pid in pids_marked(mark):
        try:
            if b"secperf-loadgen" in Path(f"/proc/{pid}/cmdline").read_bytes():
                out.append(pid)
        except OSError:
            pass
    return out


@pytest.fixture(scope="module")
def ray_cluster():
    """A head (no CPU) and two worker nodes (one CPU each) on loopback, each with its own temp dir."""
    import_or_skip("ray", "scripts/bootstrap installs the 'cluster' extra")
    with short_tmpdir("sry") as base:
        yield from _ray_cluster(base)


def _ray_cluster(base: Path):
    ray_exe = str(Path(sys.executable).parent / "ray")
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_DISABLE_USAGE_STATS": "1", "PYTHONPATH": str(ROOT / "src")}
    port = _free_port()
    addr = f"127.0.0.1:{port}"
    starts = [
        [
            ray_exe,
            "start",
            "--head",
            "--port",
            str(port),
            "--num-cpus",
            "0",
            "--include-dashboard",
            "false",
            "--disable-usage-stats",
            "--temp-dir",
            str(base / "head"),
        ]
    ]
    starts += [
        [ray_exe, "start", "--address", addr, "--num-cpus", "1", "--temp-dir", str(base / f"w{i}")] for i in (1, 2)
    ]
    try:
        for argv in starts:
            r = subprocess.run(
                [*argv, "--node-ip-address", "127.0.0.1"], env=env, capture_output=True, text=True, timeout=240
            )
            assert r.returncode == 0, r.stdout[-1500:] + r.stderr[-1500:]
        yield {"address": addr, "env": env}
    finally:
        pids = _descendants(pids_marked(str(base)))
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for p in pids:
                try:
                    os.kill(p, sig)
                except OSError:
                    pass
            deadline = time.time() + 10
            while time.time() < deadline and any(alive(p) for p in pids):
                time.sleep(0.2)


def _secperf(*args, env, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "secperf", *args], capture_output=True, text=True, env=env, timeout=timeout
    )


@pytest.mark.slow
def test_a_sweep_on_the_cluster_equals_the_local_run_with_the_same_seed(ray_cluster, tmp_path):
    args = [
        "whatif",
        "tls1.3,mqtt",
        "--key",
        "software",
        "--sweep",
        "rtt=0..200:20,loss=0,2",
        "--n",
        "3000",
        "--seed",
        "11",
        "--json",
        "--no-report",
        "--out",
        str(tmp_path),
    ]
    local = _secperf(*args, env=ray_cluster["env"])
    remote = _secperf(*args, "--cluster", ray_cluster["address"], env=ray_cluster["env"])
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr[-2000:]
    a, b = json.loads(local.stdout), json.loads(remote.stdout)
    assert len(a["series"]) == 2 * 11 * 2
    assert a["series"] == b["series"]
    assert a["analysis"]["whatif"] == b["analysis"]["whatif"]
    assert b["analysis"]["cluster"]["cpus"] == 2 and len(b["analysis"]["cluster"]["nodes"]) == 2
    other = _secperf(
        *args[:-6],
        "--seed",
        "12",
        "--json",
        "--no-report",
        "--out",
        str(tmp_path),
        "--cluster",
        ray_cluster["address"],
        env=ray_cluster["env"],
    )
    assert json.loads(other.stdout)["series"] != b["series"]  # the seed, not luck, decides


@pytest.mark.slow
def test_a_plan_on_the_cluster_equals_the_local_plan(ray_cluster, tmp_path):
    args = [
        "plan",
        "--pattern",
        "periodic-collection,event-driven,remote-management",
        "--n",
        "2000",
        "--seed",
        "3",
        "--json",
        "--no-report",
        "--out",
        str(tmp_path),
    ]
    local = _secperf(*args, env=ray_cluster["env"])
    remote = _secperf(*args, "--cluster", ray_cluster["address"], env=ray_cluster["env"])
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr[-2000:]
    assert json.loads(local.stdout)["analysis"]["plan"] == json.loads(remote.stdout)["analysis"]["plan"]


@pytest.mark.slow
def test_server_on_the_cluster_adds_counts_and_merges_histograms(ray_cluster, tmp_path):
    p = _secperf(
        "server",
        "--server",
        "probe",
        "--key",
        "ecdsa-p256",
        "--concurrency",
        "4",
        "--duration",
        "1.5",
        "--warmup",
        "0.3",
        "--cluster",
        ray_cluster["address"],
        "--json",
        "--no-report",
        "--out",
        str(tmp_path),
        env=ray_cluster["env"],
    )
    assert p.returncode == 0, p.stderr[-3000:]
    s = json.loads(p.stdout)["series"][0]
    d = s["derived"]
    workers = d["cluster"]["workers"]
    assert len(workers) == 2 and not d["cluster"]["lost"]
    assert {w["node"] for w in workers} and len({w["node"] for w in workers}) == 2  # one per worker node
    assert d["handshakes"] == sum(w["handshakes"] for w in workers) > 0
    assert all(w["handshakes"] > 0 and w["cpu_us_per_handshake"] > 0 for w in workers)
    local = Histogram.merged(Histogram.from_pairs(w["hist_us"]) for w in workers)
    assert local.n == d["handshakes"]
    assert d["latency_ms"] == local.percentiles_ms()
    assert Histogram.from_pairs(d["latency_hist_us"]) == local
    assert all(abs(w["clock_offset_ms"]) < 1000 for w in workers)


@pytest.mark.slow
def test_a_worker_lost_mid_run_is_named_and_leaves_no_generator(ray_cluster, tmp_path):
    import ray

    from secperf.app import cluster as C
    from secperf.app import cluster_generators as CL
    from secperf.lab.pki import LabPKI
    from secperf.lab.services import ProbeServer
    from secperf.measure import server as S

    os.environ["RAY_AUTH_MODE"] = "disabled"
    pki = LabPKI(tmp_path / "pki").ensure()
    srv = ProbeServer(pki.server("ecdsa-p256"), args=["--concurrent", "64"], workdir=tmp_path / "srv").start()
    ray.init(address=ray_cluster["address"], runtime_env=C.runtime_env(), log_to_driver=False)
    try:
        cl = C.Cluster(ray_cluster["address"], C._alive_nodes(ray))
        g = CL.place(cl, server_core=0)
        assert len(g.actors) == 2
        p = S.LoadParams(duration_s=8.0, warmup_s=0.3, seed=1)
        argv = S.loadgen_argv(srv.port, S.ServerConfig("probe", "ecdsa-p256"), 4, p)
        out: dict = {}
        t = threading.Thread(target=lambda: out.update(CL.run_level(g, argv, srv.proc.pid, 0.3, 8.0, 40)))
        t.start()
        deadline = time.time() + 30
        gens = []
        while time.time() < deadline and len(gens) < 2:
            time.sleep(0.3)
            gens = _loadgens_of(os.getpid())
        assert len(gens) == 2, "both generators should be running"
        time.sleep(1.0)
        victim = g.places[1]
        os.kill(victim["pid"], signal.SIGKILL)  # the worker's process dies mid-run
        t.join(90)
        assert not t.is_alive()
        lost = out["cluster"]["lost"]
        assert [x["name"] for x in lost] == [victim["name"]] and victim["ip"] in lost[0]["node"]
        kept = out["cluster"]["workers"]
        assert [w["name"] for w in kept] == [g.places[0]["name"]]
        level = S.summarize_level(out)
        assert level["handshakes"] == kept[0]["handshakes"] > 0
        g.stop()
        deadline = time.time() + 20
        while time.time() < deadline and any(alive(x) for x in gens):
            time.sleep(0.2)
        assert not [x for x in gens if alive(x)], "a generator outlived its worker"
    finally:
        ray.shutdown()
        srv.stop()


@pytest.mark.slow
def test_kill_9_of_the_driver_leaves_no_generator_on_any_worker(ray_cluster, tmp_path):
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "secperf",
            "server",
            "--server",
            "probe",
            "--key",
            "ecdsa-p256",
            "--concurrency",
            "4",
            "--duration",
            "60",
            "--cluster",
            ray_cluster["address"],
            "--no-report",
            "--out",
            str(tmp_path),
        ],
        env=ray_cluster["env"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.time() + 120
        gens: list[int] = []
        while time.time() < deadline and len(gens) < 2:
            time.sleep(0.5)
            gens = _loadgens_of(proc.pid)
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
        assert len(gens) == 2
        workers = pids_marked(f"SECPERF_CLUSTER_DRIVER={proc.pid}\0")
        proc.kill()
        proc.wait()
        deadline = time.time() + 60
        while time.time() < deadline and any(alive(x) for x in gens):
            time.sleep(0.5)
        assert not [x for x in gens if alive(x)], "a generator outlived the driver"
        left = [x for x in pids_marked(f"SECPERF_CLUSTER_DRIVER={proc.pid}\0") if x in workers]
        assert not [x for x in left if b"secperf-loadgen" in Path(f"/proc/{x}/cmdline").read_bytes()]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_storm_end_lines_merge_counts_and_rank_waits_over_all_clients():
    from secperf.app.cluster_generators import merge_storm

    w1 = [200_000] * 30  # 30 clients back after 0.2 s
    w2 = [900_000] * 9  # 9 of 10 back after 0.9 s, one never came back
    ends = [
        {
            "type": "end",
            "worker": "generator-0",
            "clients": 30,
            "back": 30,
            "gave_up": 0,
            "attempts": 31,
            "failed_attempts": 1,
            "elapsed_s": 0.3,
            "time_all_back_s": 0.2,
            "stopped": "all back",
            "wait_hist_us": Histogram.of(w1).to_pairs(),
            "errors": {"refused": 1},
            "cpu_s": 0.1,
        },
        {
            "type": "end",
            "worker": "generator-1",
            "clients": 10,
            "back": 9,
            "gave_up": 1,
            "attempts": 12,
            "failed_attempts": 3,
            "elapsed_s": 1.0,
            "stopped": "duration",
            "wait_hist_us": Histogram.of(w2).to_pairs(),
            "errors": {"refused": 2, "reset": 1},
            "cpu_s": 0.2,
        },
    ]
    run = {
        "lines": ends,
        "cluster": {
            "workers": [{"name": "generator-0", "start_late_ms": 1.0}, {"name": "generator-1", "start_late_ms": 2.0}]
        },
    }
    m = merge_storm(run)
    assert (m["clients"], m["back"], m["gave_up"], m["attempts"], m["failed_attempts"]) == (40, 39, 1, 43, 4)
    assert m["errors"] == {"refused": 3, "reset": 1}
    assert "time_all_back_s" not in m  # one client never came back
    whole = Histogram.of(w1 + w2)
    assert m["wait_p50_s"] == whole.quantile_us(0.5) / 1e6
    assert m["wait_p90_s"] == whole.quantile_us(36 / 39) / 1e6  # rank 36 of the 40 clients
    assert "wait_max_s" not in m  # rank 40 > the 39 that came back
    assert m["elapsed_s"] == pytest.approx(1.002)


@pytest.mark.parametrize(
    "argv,word",
    [(["server", "--procs", "2"], "--procs 2 with --cluster"), (["fleet", "--capacity", "100"], "--replay")],
)
def test_cluster_options_that_cannot_apply_exit_2(argv, word, capsys, tmp_path):
    import_or_skip("ray", "scripts/bootstrap installs the 'cluster' extra")
    from secperf.cli import main

    assert main([*argv, "--cluster", "auto", "--out", str(tmp_path)]) == 2
    assert word in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_autogroup_of_reads_the_group_or_none_where_autogroups_do_not_apply(tmp_path, monkeypatch):
    # a process in the kernel's default autogroup (a session no setsid() started, as in a container) has
    # an empty /proc/PID/autogroup: that is "no name", not an error (the session check has nothing to compare)
    import builtins

    from secperf.app.cluster_pool import autogroup_of

    real_open = builtins.open
    files = {"/proc/1001/autogroup": "/autogroup-77 nice 0\n", "/proc/1002/autogroup": ""}

    def fake_open(path, *a, **k):
        if str(path) in files:
            f = tmp_path / str(path).replace("/", "_")
            f.write_text(files[str(path)])
            return real_open(f, *a, **k)
        return real_open(path, *a, **k)

    monkeypatch.setattr(builtins, "open", fake_open)
    assert autogroup_of(1001) == "/autogroup-77"
    assert autogroup_of(1002) is None
    assert autogroup_of(2**22 + 12345) is None  # no such process
