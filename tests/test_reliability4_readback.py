"""Issue 42, part A: a Result secperf writes is one it can read. Run.save reads a finished Result
back as report, compare and metrics do; what they would refuse is secperf's bug (exit 1,
"internal:"), kept readable with status internal-error. Repeated list values are folded with a note,
and list and grid sizes are bounded before any work starts."""

import argparse
import json

import pytest

import secperf.app  # noqa: F401  (registers the readers' checks, as every command does)
from secperf import cli
from secperf.core import host
from secperf.core import result as R
from secperf.core.errors import InputError, InternalError
from secperf.core.result_schema import DeviceCryptoDerived
from secperf.core.store import READBACK_CHECKS, RunStore, readback_problem
from secperf.subcommands import argtypes


def _series(sid, values=(1.0, 2.0, 3.0)):
    s = R.new_series(
        sid,
        kind="crypto",
        labels={"alg": "x25519", "op": "derive", "family": "kex", "size_bytes": 32, "security_bits": 128},
        timer={"name": "per operation", "start": "before batch", "end": "after batch"},
    )
    s.values_us = list(values)
    s.cpu_values_us = list(values)
    s.samples = [{"wall_ns": int(v * 1000), "cpu_ns": int(v * 1000), "ops": 1} for v in values]
    return R.finalize_series(s)


def _run_with(tmp_path, series, analysis=None, kind="crypto"):
    run = RunStore(tmp_path / "results").create(kind)
    doc = R.new_result(kind=kind, command=["secperf", kind], params={}, host=host.collect(), run_id=run.run_id)
    run.save(doc)  # a running Result is written as it is (no read-back yet)
    for s in series:  # appended as the measures do (in place: no check on assignment)
        doc.series.append(s)
    for key, value in (analysis or {}).items():
        setattr(doc.analysis, key, value)
    return run, R.finish(doc)


def test_the_readers_checks_are_registered():
    names = " ".join(n for n, _ in READBACK_CHECKS)
    assert "report" in names and "metrics" in names and "terminal" in names


def test_a_finished_result_with_repeated_series_ids_is_secperfs_bug_kept_readable(tmp_path, capsys):
    run, doc = _run_with(tmp_path, [_series("crypto/x"), _series("crypto/x", (4.0, 5.0))])
    with pytest.raises(InternalError) as exc:
        run.save(doc)
    msg = str(exc.value)
    assert msg.startswith("internal:") and "schema" in msg and "duplicate series id" in msg
    assert exc.value.exit_code == 1
    back = R.load(run.result_path)  # the reader's own load accepts it
    assert back.status == "internal-error"
    assert [s.id for s in back.series] == ["crypto/x"]
    assert back.internal["check"].startswith("the Result schema")
    whole = json.loads((run.dir / "result.unchecked.json").read_text())
    assert [s["id"] for s in whole["series"]] == ["crypto/x", "crypto/x"]
    # `report` and `metrics` read it and say whose bug it is
    assert cli.main(["metrics", str(run.dir)]) == 0
    err = capsys.readouterr().err
    assert "internal:" in err and "secperf's bug" in err


def test_a_reader_crash_on_a_written_result_is_internal_and_the_analysis_withheld(tmp_path, capsys):
    # a plan row of the declared fields whose inputs lack what the matrix names (secperf's own writer
    # bug): the schema takes it (inputs are an open bag), the views crash on it
    plan = {"patterns": [{"pattern": "p", "verdict": "hard to reconcile", "inputs": {}, "requirements": {}}]}
    run, doc = _run_with(tmp_path, [], {"plan": plan}, kind="plan")
    found = readback_problem(doc)
    assert found is not None
    with pytest.raises(InternalError, match="internal: the Result this run wrote fails"):
        run.save(doc)
    back = R.load(run.result_path)
    assert back.status == "internal-error" and back.analysis.plan is None
    assert "analysis.plan" in back.internal["withheld"]
    assert cli.main(["report", str(run.dir), "-o", str(tmp_path / "r.html")]) == 0
    assert "internal:" in capsys.readouterr().err


def test_a_readable_result_is_written_as_finished(tmp_path):
    run, doc = _run_with(tmp_path, [_series("crypto/a"), _series("crypto/b")])
    run.save(doc)
    back = R.load(run.result_path)
    assert back.status == "complete" and len(back.series) == 2
    assert not (run.dir / "result.unchecked.json").exists()


def test_a_series_with_a_summary_but_no_values_is_refused_as_inconsistent(tmp_path):
    s = _series("crypto/x")
    raw = json.loads(
        R.dumps(R.finish(R.new_result(kind="crypto", command=["secperf"], params={}, host={}, run_id="r")))
    )
    bad = s.model_dump(mode="json", by_alias=True, exclude_unset=True)
    bad["values_us"], bad["cpu_values_us"], bad["samples"] = [], [], []
    bad["summary"]["n"] = 1000
    raw["series"] = [bad]
    with pytest.raises(R.ResultError, match="inconsistent"):
        R.validate(raw)
    p = tmp_path / "result.json"
    p.write_text(json.dumps(raw))
    assert cli.main(["compare", str(p), str(p)]) == 2


@pytest.mark.parametrize("alpha", ["0", "1", "-0", "1.5", "1e999", "nan"])
def test_compare_alpha_outside_the_open_interval_is_refused(tmp_path, alpha, capsys):
    assert cli.main(["compare", "a.json", "b.json", "--alpha", alpha]) == 2
    assert "--alpha" in capsys.readouterr().err


def test_compare_as_a_library_refuses_alpha_zero():
    from secperf.core.compare import CompareError, compare

    with pytest.raises(CompareError, match="--alpha"):
        doc = R.new_result(kind="crypto", command=["secperf"], params={}, host={}, run_id="r")
        compare(doc, doc, alpha=0.0)


# --- lists --------------------------------------------------------------------------------------
def _leaf_parsers():
    """Every (sub)command parser with its comma-list options, from the CLI's own parser."""
    out = []

    def walk(p, path):
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        lists = [a for a in p._actions if isinstance(a.type, argtypes._CommaList)]
        if lists:
            out.append((path, p, lists))
        for a in subs:
            for name, sp in a.choices.items():
                walk(sp, [*path, (a.dest, name)])

    walk(cli.build_parser(), [])
    return out


def test_every_comma_list_of_every_command_folds_repeats_with_a_note():
    leaves = _leaf_parsers()
    assert len(leaves) >= 10
    checked = 0
    for path, parser, lists in leaves:
        for a in lists:
            ns = argparse.Namespace(**dict(path))
            value = a.type.choices[0] if a.type.choices else ("full" if a.type.item_type is None else "3")
            once = a.type(value)
            setattr(ns, a.dest, once + once + a.type(f"{value},{value}"))
            notes = []
            argtypes.settle_lists(parser, ns, notes.append)
            assert getattr(ns, a.dest) == once, (path, a.dest)
            assert notes and "used once" in notes[0], (path, a.dest)
            checked += 1
    assert checked >= 40


@pytest.mark.parametrize(
    "values,kept",
    [
        (["16", "16", "016", "16.0"], ["16"]),
        (["full", "FULL", "resumed"], ["full", "resumed"]),
        ([3, 3.0, 4], [3, 4]),
        (["a/x.toml", "a/X.toml"], ["a/x.toml", "a/X.toml"]),  # paths keep their case
    ],
)
def test_unique_folds_the_same_request(values, kept):
    assert argtypes.unique(values, "--x") == kept


def test_a_list_too_long_is_refused_before_any_work(capsys):
    sizes = ",".join(str(i) for i in range(1, 5001))
    assert cli.main(["crypto", "--alg", "aes-128-gcm", "--size", sizes]) == 2
    err = capsys.readouterr().err
    assert "--size" in err and str(argtypes.MAX_LIST_ITEMS) in err


def test_a_grid_too_large_is_refused_naming_its_options():
    p = argparse.ArgumentParser()
    p.add_argument("--a", action="extend", type=argtypes.comma_list())
    p.add_argument("--b", action="extend", type=argtypes.comma_list())
    p.add_argument("--c", action="extend", type=argtypes.comma_list())
    many = ",".join(f"v{i}" for i in range(60))
    ns = p.parse_args(["--a", many, "--b", many, "--c", many])
    with pytest.raises(InputError, match=r"--a 60 × --b 60 × --c 60 make 216,000 rows"):
        argtypes.settle_lists(p, ns)


def test_5000_repeats_run_once(tmp_path, capsys):
    """`--size 16,16,...` (5,000 times) is one row: the Result reads back, report and metrics exit 0."""
    out = tmp_path / "res"
    code = cli.main(
        [
            "mac",
            "--alg",
            "chaskey",
            "--size",
            ",".join(["16"] * 5000),
            "--n",
            "3",
            "--warmup",
            "1",
            "--cortexm",
            "m0",
            "--no-report",
            "--out",
            str(out),
        ]
    )
    err = capsys.readouterr().err
    assert code == 0, err
    assert "16 given 5000 times" in err
    doc = R.load(out / "latest")
    ids = [s.id for s in doc.series]
    assert len(ids) == len(set(ids)) and doc.status == "complete"
    assert cli.main(["metrics", str(out / "latest")]) == 0


def test_a_device_result_with_a_failed_user_code_row_reads_back(tmp_path):
    """Found by the read-back on Results secperf wrote: a user-code row that timed out keeps its
    footprint but has no instruction counts, and the report and the terminal table crashed on it."""
    run = RunStore(tmp_path / "results").create("device")
    doc = R.new_result(
        kind="device", command=["secperf", "device"], params={"device": "cortex-m4-80"}, host={}, run_id=run.run_id
    )
    s = R.new_series(
        "device-crypto/cortex-m4-80/user/spin",
        kind="device_crypto",
        labels={
            "device": "cortex-m4-80",
            "stack": "user",
            "library": "fault.c",
            "op": "spin",
            "entry": "spin",
            "config": "-O2",
            "build_target": "cortex-m4",
        },
        timer={"name": "guest instructions per call", "start": "OP_BEGIN", "end": "OP_END", "unit": "instructions"},
    )
    s.derived = DeviceCryptoDerived(
        footprint={"text": 4, "rodata": 0, "data": 0, "bss": 0, "flash": 4, "ram_static": 0}, entry_bytes=2
    )
    R.add_failure(s, "time limit: the run did not finish within 5 s")
    doc.series.append(R.finalize_series(s))
    assert readback_problem(R.finish(doc)) is None
    run.save(doc)
    assert R.load(run.result_path).status == "complete"


def test_a_crypto_analysis_the_report_cannot_read_is_internal_and_the_series_kept(tmp_path):
    run, doc = _run_with(tmp_path, [_series("crypto/a")], {"s5": [{"answer_ms": float("inf")}]})
    with pytest.raises(InternalError, match="the report"):
        run.save(doc)
    back = R.load(run.result_path)
    assert back.status == "internal-error" and [s.id for s in back.series] == ["crypto/a"]
    assert back.analysis.s5 is None and "analysis.s5" in back.internal["withheld"]
    assert "answer_ms" in (run.dir / "result.unchecked.json").read_text()


def test_a_measured_series_whose_summary_counts_other_values_is_inconsistent():
    s = _series("crypto/x")
    raw = s.model_dump(mode="json", by_alias=True, exclude_unset=True)
    raw["summary"]["n"] = 1000  # three values, a summary of a thousand
    with pytest.raises(R.ResultError, match="inconsistent"):
        R.as_series(raw)
