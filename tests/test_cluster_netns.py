"""Generators on every node, tested on this machine: Ray's head and three worker nodes each in a
network namespace of their own (lab/netns_fabric.py: one bridge, own addresses), nginx in another,
the driver inside the head's namespace; `secperf server --target --cluster` loads nginx from every
node. Counts add up over the nodes, the merged percentiles are the local merge of the nodes'
histograms, a node that cannot reach the target is named and left out, and nothing is left behind
(by PID, and the namespaces deleted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, import_or_skip, short_tmpdir, skip
from secperf.core.histogram import Histogram
from secperf.lab.netns_fabric import Fabric
from secperf.lab.netns_owners import list_namespaces
from secperf.lab.pki import LabPKI
from secperf.lab.services import Nginx

NODES = ("n1", "n2", "n3")
RAY_PORT = 6390


@pytest.fixture(scope="module")
def fabric():
    """The fabric, nginx in `web`, a Ray head (no CPU) in `head` and one-CPU nodes n1..n3."""
    import_or_skip("ray", "scripts/bootstrap installs the 'cluster' extra")
    if os.geteuid() != 0:
        skip("needs-root", "network namespaces need root")
    with short_tmpdir("srn") as base:
        yield from _fabric(base)


def _fabric(base: Path):
    ray_exe = str(Path(sys.executable).parent / "ray")
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_DISABLE_USAGE_STATS": "1", "PYTHONPATH": str(ROOT / "src")}
    pki = LabPKI().ensure()
    certs = pki.server("ecdsa-p256", 1)
    fab = Fabric(["head", *NODES, "web"]).open()
    ng = None
    try:
        ng = fab.place(Nginx(certs, workdir=base / "nginx"), "web").start()
        head = f"{fab.addr('head')}:{RAY_PORT}"
        starts = [
            (
                "head",
                [
                    ray_exe,
                    "start",
                    "--head",
                    "--port",
                    str(RAY_PORT),
                    "--num-cpus",
                    "0",
                    "--include-dashboard",
                    "false",
                    "--disable-usage-stats",
                    "--temp-dir",
                    str(base / "head"),
                ],
            )
        ]
        starts += [
            (n, [ray_exe, "start", "--address", head, "--num-cpus", "1", "--temp-dir", str(base / n)]) for n in NODES
        ]
        for member, argv in starts:
            r = subprocess.run(
                [*fab.exec_prefix(member), *argv, "--node-ip-address", fab.addr(member)],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert r.returncode == 0, r.stdout[-1500:] + r.stderr[-1500:]
        yield {"fab": fab, "head": head, "env": env, "target": f"{fab.addr('web')}:{ng.port}", "certs": certs}
    finally:
        if ng is not None:
            ng.stop()
        fab.close()


def _server(fab_: dict, tmp_path, *extra) -> dict:
    fab = fab_["fab"]
    p = subprocess.run(
        [
            *fab.exec_prefix("head"),
            sys.executable,
            "-m",
            "secperf",
            "server",
            "--target",
            fab_["target"],
            "--ca",
            str(fab_["certs"].ca),
            "--servername",
            "localhost",
            "--cluster",
            fab_["head"],
            "--concurrency",
            "6",
            "--duration",
            "1",
            "--warmup",
            "0.3",
            *extra,
            "--json",
            "--no-report",
            "--out",
            str(tmp_path),
        ],
        env=fab_["env"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout)


@pytest.mark.slow
def test_every_node_loads_the_target_counts_add_up_and_the_merge_is_exact(fabric, tmp_path):
    doc = _server(fabric, tmp_path)
    (s,) = doc["series"]
    assert s["status"] == "ok", s["failures"]
    c = s["derived"]["cluster"]
    nodes = c["nodes"]
    assert sorted(n["node"].split()[0] for n in nodes) == sorted(fabric["fab"].addr(m) for m in NODES)
    assert (
        s["derived"]["handshakes"] == sum(n["handshakes"] for n in nodes) == sum(w["handshakes"] for w in c["workers"])
    )
    assert all(n["handshakes"] > 0 for n in nodes)
    local = Histogram.merged(Histogram.from_pairs(n["hist_us"], n["node"]) for n in nodes)
    assert s["derived"]["latency_ms"] == local.percentiles_ms()
    assert s["derived"]["negotiated"]["version"] == "TLSv1.3"
    assert doc["analysis"]["cluster"]["nodes_left_out"] == []
    assert len({w["core"] for w in c["workers"]}) == min(3, len(os.sched_getaffinity(0)))  # distinct cores


@pytest.mark.slow
def test_a_storm_replayed_from_every_node_against_the_target(fabric, tmp_path):
    fab = fabric["fab"]
    p = subprocess.run(
        [
            *fab.exec_prefix("head"),
            sys.executable,
            "-m",
            "secperf",
            "fleet",
            "--replay",
            "30",
            "--target",
            fabric["target"],
            "--cluster",
            fabric["head"],
            "--measure-seconds",
            "0.5",
            "--base",
            "0.05",
            "--cap",
            "0.2",
            "--json",
            "--no-report",
            "--out",
            str(tmp_path),
        ],
        env=fabric["env"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    (r,) = json.loads(p.stdout)["analysis"]["fleet"]["replays"]
    assert "failed" not in r, r
    assert r["clients"] == 30 and r["measured"]["back"] == 30 and r["capacity_per_s"] > 0
    assert len(r["cluster"]["workers"]) == 3 and r["server_cpu_s"] is None
    # the model's accept rate: the target (nginx in its own namespace) probed from the driver's namespace
    acc = r["accept_rate"]
    assert acc["lower_bound"] is True and acc["connections"] > 0 and r["accept_from"].startswith("measured from here")
    assert r["accept_per_s"] == acc["accept_per_s"] > 0


@pytest.mark.slow
def test_a_node_that_cannot_reach_the_target_is_named_and_left_out(fabric, tmp_path):
    fab = fabric["fab"]
    fab.cut("n3", "web")
    doc = _server(fabric, tmp_path)
    (s,) = doc["series"]
    left = doc["analysis"]["cluster"]["nodes_left_out"]
    assert len(left) == 1 and left[0].startswith(fab.addr("n3")) and "cannot reach the target" in left[0]
    assert s["status"] == "ok" and s["labels"]["generators"] == 2
    assert fab.addr("n3") not in {n["node"].split()[0] for n in s["derived"]["cluster"]["nodes"]}


def _loadgens_in(fab, members) -> list[int]:
    """PIDs of load generators running in the members' namespaces."""
    found = []
    for m in members:
        for pid in fab.pids()[m]:
            try:
                argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0]
            except OSError:
                continue
            if argv0.endswith(b"secperf-loadgen"):
                found.append(pid)
    return found


@pytest.mark.slow
def test_kill_9_of_the_driver_in_its_namespace_leaves_no_generator_on_any_node(fabric, tmp_path):
    """The whole set-up at once: the driver in the head's namespace, generators on the nodes in theirs;
    a kill -9 of the driver (no atexit, no finally) and every node's generator goes within the bound."""
    fab = fabric["fab"]
    proc = subprocess.Popen(
        [
            *fab.exec_prefix("head"),
            sys.executable,
            "-m",
            "secperf",
            "server",
            "--target",
            fabric["target"],
            "--ca",
            str(fabric["certs"].ca),
            "--servername",
            "localhost",
            "--cluster",
            fabric["head"],
            "--concurrency",
            "6",
            "--duration",
            "120",
            "--warmup",
            "0.3",
            "--no-report",
            "--out",
            str(tmp_path),
        ],
        env=fabric["env"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 180
        gens: list[int] = []
        while time.monotonic() < deadline and len(gens) < 2:  # at least two nodes loading (n3 may be cut)
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            time.sleep(0.5)
            gens = _loadgens_in(fab, NODES)
        assert len(gens) >= 2, "the generators never started on the nodes"
        proc.kill()  # `ip netns exec` execs python: this PID is the driver
        proc.wait(10)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and _loadgens_in(fab, NODES):
            time.sleep(0.5)
        assert not _loadgens_in(fab, NODES), "a generator outlived the driver on a node"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


@pytest.mark.slow
def test_the_fabric_leaves_nothing_behind(tmp_path):
    if os.geteuid() != 0:
        skip("needs-root", "network namespaces need root")
    fab = Fabric(["a", "b"]).open()
    names = [fab.ns(m) for m in ("hub", "a", "b")]
    sleeper = subprocess.Popen([*fab.exec_prefix("a"), "sleep", "300"])
    deadline = time.monotonic() + 20  # in the namespace once exec'd: waited for, not assumed after 0.3 s
    while sleeper.pid not in fab.pids()["a"] and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sleeper.pid in fab.pids()["a"]
    fab.close()
    assert sleeper.wait(10) is not None
    assert not set(names) & set(list_namespaces())


KILLED = """
import subprocess, sys, time
from secperf.lab.netns_fabric import Fabric
fab = Fabric(["a", "b"]).open()
p = subprocess.Popen([*fab.exec_prefix("a"), "sleep", "300"])
print(" ".join(fab.ns(m) for m in ("hub", "a", "b")), p.pid, flush=True)
time.sleep(300)
"""


@pytest.mark.slow
def test_kill_9_of_the_owner_deletes_the_namespaces_and_what_runs_inside(tmp_path):
    if os.geteuid() != 0:
        skip("needs-root", "network namespaces need root")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    owner = subprocess.Popen([sys.executable, "-c", KILLED], stdout=subprocess.PIPE, text=True, env=env)
    *names, pid = owner.stdout.readline().split()
    assert set(names) <= set(list_namespaces())
    owner.kill()  # SIGKILL: no atexit, no finally
    owner.wait(10)
    deadline = time.time() + 30
    while time.time() < deadline and (set(names) & set(list_namespaces()) or Path(f"/proc/{pid}").exists()):
        time.sleep(0.3)
    assert not set(names) & set(list_namespaces())
    assert not Path(f"/proc/{pid}").exists()


def test_per_node_figures_add_up_and_merge_exactly():
    import random

    from secperf.app.cluster_target import per_node

    rng = random.Random(3)
    workers, every = [], []
    for i, node in enumerate(("10.78.1.2 (aa)", "10.78.1.2 (aa)", "10.78.1.3 (bb)", "10.78.1.4 (cc)")):
        xs = [rng.uniform(200, 90_000) for _ in range(50 + 10 * i)]
        every += xs
        h = Histogram.of(xs)
        workers.append(
            {"name": f"generator-{i}", "node": node, "handshakes": len(xs), "failed": i, "hist_us": h.to_pairs()}
        )
    nodes = per_node(workers)
    assert [n["node"] for n in nodes] == ["10.78.1.2 (aa)", "10.78.1.3 (bb)", "10.78.1.4 (cc)"]
    assert [n["generators"] for n in nodes] == [2, 1, 1]
    assert sum(n["handshakes"] for n in nodes) == len(every) and sum(n["failed"] for n in nodes) == 6
    merged = Histogram.merged(Histogram.from_pairs(n["hist_us"], n["node"]) for n in nodes)
    whole = Histogram.of(every)  # one histogram of every sample: the local merge
    assert merged.percentiles_ms() == whole.percentiles_ms() and merged.to_pairs() == whole.to_pairs()
