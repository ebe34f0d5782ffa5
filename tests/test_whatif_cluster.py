"""What-if cells on a cluster: rows built and packed on the workers (app/whatif_cluster.py), merged in
order on the driver (app/cluster.map_chunks); a chunk that fails is failed rows naming the reason."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import alive, import_or_skip, pids_marked, short_tmpdir, skip
from secperf.app import whatif as W
from secperf.app import whatif_cluster as WC
from secperf.core import result as R
from secperf.core.errors import InputError

ROOT = Path(__file__).resolve().parents[1]


def _options(tmp_path, **kw) -> W.WhatifOptions:
    return W.WhatifOptions(
        protocols=["tls1.3", "mqtt"],
        keys=["software", "se:iot-safe-sim"],
        sweep="rtt=0..100:25,loss=0,2",
        n=400,
        seed=5,
        out=str(tmp_path),
        no_report=True,
        json=True,
        baseline=True,
        **kw,
    )


def _cells(o: W.WhatifOptions):
    table = W.cost_table(o)
    cells, _ = W._cells(o, table)
    return table, cells


def _json(rows) -> list[str]:
    return [r.model_dump_json() for r in rows]


def test_a_packed_chunk_unpacks_to_the_rows_it_was_made_of(tmp_path):
    o = _options(tmp_path)
    table, cells = _cells(o)
    cells = cells[:6]
    made = [W._row(c, W.predict_cell(c, table, o), table, o.until) for c in cells]
    want = _json(made)
    payload = pickle.dumps(WC.rows_chunk((table, o), cells))
    got = WC.unpack(pickle.loads(payload))
    assert len(got) == len(cells)
    assert _json(got) == want
    assert all(len(r.values_us) == min(o.n, 2000) for r in got)
    # what every row has alike travels once: a packed chunk is smaller than its rows pickled one by one
    assert len(payload) < sum(len(pickle.dumps(r)) for r in made)


def test_a_shared_part_is_shared_only_with_parts_of_the_same_json():
    memo: dict = {}
    a = WC._same(memo, [{"op": "sign", "us": 1.0, "n": 2}])
    assert WC._same(memo, [{"op": "sign", "us": 1.0, "n": 2}]) is a  # equal: one object travels
    # equal to Python, another JSON: a float is not an int, the key order is kept
    for other in ([{"op": "sign", "us": 1, "n": 2}], [{"us": 1.0, "op": "sign", "n": 2}]):
        got = WC._same(memo, other)
        assert got is other and json.dumps(got) != json.dumps(a)

    def local():  # what the C pickler cannot take (a local function) goes as it is
        return 0

    assert WC._same(memo, local) is local


def test_failed_rows_carry_the_reason_and_the_result_keeps_the_rest(tmp_path):
    o = _options(tmp_path)
    table, cells = _cells(o)
    preds = [W.predict_cell(c, table, o) for c in cells]
    lost = WC.unpack(WC.failed_rows(cells[2:5], table, o, "3 of the what-if cells failed on a worker: boom"))
    assert [r.status for r in lost] == ["failed"] * 3
    assert all(r.failures[-1].reason.endswith("boom") and not r.values_us for r in lost)
    mixed = preds[:2] + lost + preds[5:]
    doc = R.new_result(kind="whatif", command=["secperf", "whatif"], params={}, host={}, run_id="t")
    W.predict_into(doc, o, table, cells, W.SW.parse(o.sweep), mixed)
    R.finish(doc)
    again = R.validate(json.loads(R.dumps(doc)))  # the file format: a failed row is a valid row
    main_ids = {W._row(c, p, table, o.until).id for c, p in zip(cells, mixed)}
    rows = {s.id: s for s in again.series}
    assert main_ids <= set(rows)
    assert sorted(s.status for s in again.series if s.id in main_ids).count("failed") == 3
    for r in lost:
        assert rows[r.id].status == "failed" and rows[r.id].derived.security_cost is None
    ok = [s for s in again.series if s.id in main_ids and s.status == "ok" and s.labels.get("role") is None]
    assert ok and all(s.derived.security_cost is not None for s in ok)
    from secperf.report.terminal_whatif import tables

    assert tables(again)  # the terminal still draws the rows that have figures


@pytest.fixture(scope="module")
def local_ray():
    import_or_skip("ray", "scripts/bootstrap installs the 'cluster' extra")
    os.environ.setdefault("RAY_DISABLE_USAGE_STATS", "1")
    from secperf.app.cluster import connect

    with connect("local") as cl:
        yield cl


@pytest.mark.slow
def test_chunked_rows_on_the_cluster_equal_the_local_run(local_ray, tmp_path):
    o = _options(tmp_path)
    table, cells = _cells(o)
    local = [W._row(c, W.predict_cell(c, table, o), table, o.until) for c in cells]
    from secperf.app.cluster import chunk_count

    assert chunk_count(len(cells), local_ray.cpus) > local_ray.cpus  # more chunks than workers
    remote = W.predict_cells(cells, table, o, local_ray)
    assert len(remote) == len(cells) >= 20
    assert _json(remote) == _json(local)
    refs_local = W.predict_references(cells, table, o, {W._cell_key(c): p for c, p in zip(cells, local)})
    refs_remote = W.predict_references(cells, table, o, {W._cell_key(c): p for c, p in zip(cells, remote)}, local_ray)
    assert refs_local.keys() == refs_remote.keys()
    assert all(
        W._row(rc, refs_local[k], table, o.until).model_dump_json()
        == W._row(rc, refs_remote[k], table, o.until).model_dump_json()
        for k, rc in ((W._cell_key(rc), rc) for refs in W.reference_cells(cells, o) for _, rc in refs)
    )


@pytest.mark.slow
def test_a_chunk_that_fails_is_failed_items_with_the_reason_not_a_lost_run(local_ray):
    from secperf.app.cluster import map_chunks

    def work(shared, chunk):  # runs on a worker (pickled by value: defined here)
        if 13 in chunk:
            raise RuntimeError("cell 13 broke")
        if 29 in chunk:
            os._exit(3)  # the worker process dies, on every retry
        if 41 in chunk:
            raise InputError("cell 41: a bad input")
        return [x * shared for x in chunk]

    def failed(chunk, reason):
        return [f"failed {x}: {reason}" for x in chunk]

    items = list(range(40))
    timings = []
    out = [
        x for part in map_chunks(work, 2, items, local_ray, "test cells", failed=failed, timings=timings) for x in part
    ]
    assert len(out) == 40
    bad = {i for i, x in enumerate(out) if isinstance(x, str)}
    # exactly the two chunks that failed: the one queued behind the chunk whose worker died ran again
    from secperf.app.cluster import guided_chunks

    parts = guided_chunks(items, local_ray.cpus)
    assert bad == {x for ch in parts if 13 in ch or 29 in ch for x in ch}
    # when and where each chunk that came back ran: the failed ones have no timing
    assert sum(t.items for t in timings) == 40 - len(bad) and len({t.index for t in timings}) == len(timings)
    assert all(t.start <= t.end <= t.received and t.cpu_s >= 0 and "/" in t.worker for t in timings)
    assert all(out[i] == 2 * i for i in range(40) if i not in bad)
    assert "cell 13 broke" in out[13] and "of the test cells failed on a worker" in out[13]
    assert "failed 29:" in out[29]
    # secperf's own error (bad input) is raised as itself, as the local run raises it
    with pytest.raises(InputError, match="cell 41"):
        map_chunks(work, 2, list(range(40, 44)), local_ray, "test cells", failed=failed)


@pytest.mark.slow
def test_a_chunk_runs_at_the_drivers_priority_not_rays_nice_15(local_ray):
    from secperf.app.cluster import map_chunks

    def niceness(shared, chunk):
        return [os.getpriority(os.PRIO_PROCESS, 0) for _ in chunk]

    mine = os.getpriority(os.PRIO_PROCESS, 0)
    got = [x for part in map_chunks(niceness, None, list(range(8)), local_ray, "test cells") for x in part]
    if os.geteuid() != 0:
        skip("needs-root", "raising a Ray worker's priority back from nice 15 needs root (CAP_SYS_NICE)")
    assert got == [mine] * 8


@pytest.mark.slow
def test_sweep_workers_run_in_sessions_of_their_own_and_apart_from_the_driver(local_ray):
    # the kernel's autogroups share the CPU by session first: sweep workers in the driver's session
    # would split one share however many there are
    from secperf.app.cluster import map_chunks
    from secperf.app.cluster_pool import autogroup_of

    def _session_of(shared, chunk):  # runs on a sweep worker (pickled by value: defined here)
        return [(os.getpid(), os.getsid(0), os.getpgid(0), autogroup_of()) for _ in chunk]

    got = {x for part in map_chunks(_session_of, None, list(range(64)), local_ray, "test cells") for x in part}
    assert got
    mine = autogroup_of()
    for pid, sid, pgid, group in got:
        assert pid != os.getpid()
        assert sid == pid and pgid == pid  # its own session, and still the leader of its own group (Ray's kill)
        assert sid != os.getsid(0)
        if mine is not None:  # None: the driver sits in the kernel's default group, which has no name
            assert group is not None and group != mine
    runners = local_ray.pool.runners
    assert runners and all(own for _, _, own in runners)


@pytest.mark.slow
def test_kill_9_of_a_sweeping_driver_leaves_no_sweep_worker_in_its_own_session(tmp_path):
    import_or_skip("ray", "scripts/bootstrap installs the 'cluster' extra")
    with short_tmpdir("srs") as base:
        env = {**os.environ, "RAY_TMPDIR": str(base), "RAY_DISABLE_USAGE_STATS": "1", "PYTHONPATH": str(ROOT / "src")}
        argv = ["whatif", "tls1.3", "--sweep", "rtt=0..999:1,loss=0..9:1", "--n", "3000", "--seed", "1"]
        proc = subprocess.Popen(
            [sys.executable, "-m", "secperf", *argv, "--cluster", "local", "--no-report", "--out", str(tmp_path)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        mark = f"SECPERF_CLUSTER_DRIVER={proc.pid}\0"
        try:
            deadline = time.time() + 180
            workers: list[int] = []
            while time.time() < deadline and not workers:
                time.sleep(0.5)
                assert proc.poll() is None, (proc.returncode, proc.stderr.read().decode()[-2000:])
                workers = [p for p in pids_marked(mark) if _sid(p) == p]
            assert workers, "no sweep worker in a session of its own"
            started = pids_marked(str(base))  # Ray's processes of the run (their command lines name its temp dir)
            proc.kill()
            proc.wait()
            # Ray's own agents (dashboard, runtime env) take about 60 s to notice their raylet is gone,
            # with or without sessions of their own for the workers
            deadline = time.time() + 150
            while time.time() < deadline and (pids_marked(mark) or pids_marked(str(base))):
                time.sleep(0.5)
            assert not [p for p in workers if alive(p)], "a sweep worker outlived the driver"
            assert not pids_marked(mark) and not [p for p in started if alive(p)], "a Ray process outlived the driver"
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def _sid(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None
