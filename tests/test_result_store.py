"""The Result schema round-trips; the run store never overwrites a run and writes atomically."""

import json
import os
from pathlib import Path

import pytest

from secperf.core import compare, host
from secperf.core import result as R
from secperf.core.errors import OutputError
from secperf.core.store import RunStore


def make_doc(run_id="r1", values=(1.0, 2.0, 3.0)):
    doc = R.new_result(
        kind="crypto", command=["secperf", "crypto"], params={"n": 3}, host=host.collect(), run_id=run_id
    )
    s = R.new_series(
        "crypto/x25519/derive/32",
        kind="crypto",
        labels={"alg": "x25519", "op": "derive", "family": "kex", "size_bytes": 32, "security_bits": 128},
        timer={"name": "per operation", "start": "before batch", "end": "after batch"},
    )
    s.values_us = list(values)
    s.cpu_values_us = list(values)
    s.samples = [{"wall_ns": int(v * 1000), "cpu_ns": int(v * 1000), "ops": 1} for v in values]
    R.finalize_series(s)
    doc.series.append(s)
    return R.finish(doc)


def test_result_round_trips_through_json(tmp_path):
    doc = make_doc()
    p = tmp_path / "result.json"
    p.write_text(R.dumps(doc))
    back = R.load(p)
    assert R.to_json(back) == json.loads(R.dumps(doc))
    assert back.schema_version == R.SCHEMA_VERSION
    assert back.series[0].summary.p50_us == 2.0
    for key in ("cpu_model", "cpu_count", "kernel", "secperf_version", "date", "python_ssl"):
        assert key in back.host


def test_series_without_samples_is_failed_with_reason():
    s = R.new_series("a", kind="crypto", labels={}, timer={"name": "t", "start": "a", "end": "b"})
    R.finalize_series(s)
    assert s.status == "failed" and s.failures[0].reason


def test_timer_must_name_boundaries():
    with pytest.raises(R.ResultError, match="start"):
        R.new_series("a", kind="crypto", labels={}, timer={"name": "t", "end": "b"})


@pytest.mark.parametrize(
    "text,match",
    [
        ("{not json", "malformed JSON at line 1"),
        ("[1, 2]", "expected a JSON object"),
        ('{"schema": "other"}', "not a secperf Result"),
    ],
)
def test_load_rejects_bad_documents_with_reason(tmp_path, text, match):
    p = tmp_path / "r.json"
    p.write_text(text)
    with pytest.raises(R.ResultError, match=match):
        R.load(p)


def test_load_rejects_newer_schema_and_bad_values(tmp_path):
    doc = R.to_json(make_doc())  # a file's JSON, changed by hand
    doc["schema_version"] = R.SCHEMA_VERSION + 1
    (tmp_path / "a.json").write_text(json.dumps(doc))
    with pytest.raises(R.ResultError, match="newer"):
        R.load(tmp_path / "a.json")
    doc = R.to_json(make_doc())
    doc["series"][0]["values_us"] = ["fast"]
    (tmp_path / "b.json").write_text(json.dumps(doc))
    with pytest.raises(R.ResultError, match="finite, non-negative times"):
        R.load(tmp_path / "b.json")


def test_store_gives_each_run_its_own_directory_and_latest_link(tmp_path):
    store = RunStore(tmp_path / "results")
    a = store.create("crypto")
    b = store.create("crypto")
    assert a.dir != b.dir and a.dir.is_dir() and b.dir.is_dir()
    a.save(make_doc("a"))
    b.save(make_doc("b"))
    assert R.load(a.result_path).run_id == "a"
    latest = tmp_path / "results" / "latest"
    assert latest.is_symlink() and latest.resolve() == b.dir.resolve()


def test_atomic_save_leaves_no_temp_files_and_replaces_whole(tmp_path):
    run = RunStore(tmp_path).create("x")
    for k in range(5):
        run.save(make_doc(values=[float(k + 1)] * 3))
    assert sorted(os.listdir(run.dir)) == ["result.json"]
    assert R.load(run.result_path).series[0].values_us == [5.0] * 3


def test_writing_to_a_fifo_or_device_writes_into_it_and_keeps_it(tmp_path):
    """An output path that is a FIFO (or /dev/null, /dev/stdout) is written into, never renamed
    over: `secperf report ... -o /dev/null` as root once replaced the device with a regular file."""
    import stat
    import threading

    from secperf.core.store import atomic_write

    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    atomic_write(fifo, "<html>report</html>")
    reader.join(timeout=10)
    assert got == ["<html>report</html>"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["out.fifo"]  # no temp file left beside it
    with pytest.raises(OutputError, match="is a directory"):
        atomic_write(tmp_path, "x")


def test_compare_says_faster_slower_or_no_difference():
    base = make_doc("a", values=[100.0 + i % 5 for i in range(30)])
    faster = make_doc("b", values=[80.0 + i % 5 for i in range(30)])
    same = make_doc("c", values=[100.0 + (i + 2) % 5 for i in range(30)])
    assert compare.compare(base, faster)["rows"][0]["verdict"] == "faster"
    assert compare.compare(faster, base)["rows"][0]["verdict"] == "slower"
    assert compare.compare(base, same)["rows"][0]["verdict"] == "no significant difference"


def test_version_1_results_still_load_and_render(tmp_path):
    from secperf.report.html import render

    doc = R.to_json(make_doc())
    doc["schema_version"] = 1
    doc.pop("owner", None)
    doc["status"] = "complete"
    (tmp_path / "v1.json").write_text(json.dumps(doc))
    back = R.load(tmp_path / "v1.json")
    assert back.schema_version == 1
    assert "<html" in render(back).lower()


def test_a_result_with_a_wrongly_typed_summary_is_rejected_by_the_schema(tmp_path):
    doc = R.to_json(make_doc())
    doc["series"][0]["summary"]["p50_us"] = "fast"
    (tmp_path / "r.json").write_text(json.dumps(doc))
    with pytest.raises(R.ResultError, match=r"series\.0\.summary\.p50_us"):
        R.load(tmp_path / "r.json")


def test_published_schema_accepts_a_real_result_and_names_its_fields():
    from secperf.core.result_schema import json_schema

    schema = json_schema()
    assert {"schema", "schema_version", "series", "status"} <= set(schema["required"])
    assert "abandoned" in json.dumps(schema["properties"]["status"])
    R.check_schema(json.loads(R.dumps(make_doc())))


def test_a_run_whose_process_died_is_marked_abandoned_by_the_next_run(tmp_path):
    import subprocess
    import sys

    from secperf.core.store import RunStore

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout.strip()
    store = RunStore(tmp_path)
    run = store.create("crypto")
    doc = make_doc()
    doc.status = "running"
    doc.owner = {"pid": int(dead), "start_ticks": 1}
    run.save(doc)
    alive = store.create("crypto")
    mine = make_doc()
    mine.status = "running"
    alive.save(mine)  # this process, still running: must stay `running`
    store.create("crypto")
    assert json.loads(run.result_path.read_text())["status"] == "abandoned"
    assert json.loads(run.result_path.read_text())["series"] == json.loads(R.dumps(doc))["series"]
    assert json.loads(alive.result_path.read_text())["status"] == "running"


@pytest.mark.parametrize("make", ["file", "unwritable"])
def test_out_that_cannot_hold_results_is_an_input_error_naming_out(tmp_path, make):
    import os

    from secperf.core.errors import InputError
    from secperf.core.store import RunStore

    target = tmp_path / "x"
    if make == "file":
        target.write_text("")
    else:
        target.mkdir()
        os.chmod(target, 0o500)
        if os.geteuid() == 0:
            target = Path("/proc/self/x")  # root can write anywhere a mode allows; /proc refuses
    with pytest.raises(InputError, match="--out"):
        RunStore(target).create("crypto")
