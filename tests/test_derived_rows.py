"""Rows secperf derives itself (core/derived.py): a check refusing one is secperf's bug, exit 1 "internal:
..." naming the derived row, and the partial Result is marked internal-error, still readable, keeping what
was measured. One wrapper, used where rows are derived."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from secperf import cli
from secperf.core import result as R
from secperf.core.derived import derived
from secperf.core.errors import InputError, InternalError
from secperf.core.store import RunStore

SRC = Path(__file__).resolve().parent.parent / "src" / "secperf"
WRAPPED = ("app/plan_verify.py", "app/device_counts.py", "app/whatif.py")


def test_an_input_error_in_a_derived_row_is_internal_and_the_partial_result_is_marked(tmp_path):
    run = RunStore(tmp_path / "out").create("plan")
    doc = R.new_result(kind="plan", command=["secperf", "plan"], params={"n": 1}, host={}, run_id=run.run_id)
    run.save(doc)
    with pytest.raises(InternalError) as exc:
        with derived("plan --verify derived the row 'coap full'", doc, run, "plan --verify's derived rows"):
            raise InputError("--coap-server no-such: unknown")
    msg = str(exc.value)
    assert msg.startswith("internal: plan --verify derived the row 'coap full'") and "no-such" in msg
    assert exc.value.exit_code == 1
    saved = json.loads(run.result_path.read_text())
    assert saved["status"] == "internal-error" and saved["internal"]["check"] == "plan --verify's derived rows"
    assert cli.main(["report", str(run.result_path), "-o", str(tmp_path / "r.html")]) == 0


def test_without_a_result_the_error_is_still_internal_and_other_errors_pass_through():
    with pytest.raises(InternalError):
        with derived("a device-count row"):
            raise InputError("x")
    with pytest.raises(KeyError):
        with derived("a device-count row"):
            raise KeyError("not an input error: secperf's traceback as before")


def test_every_place_that_derives_rows_uses_the_one_wrapper():
    """plan --verify's rows, the device-count rows a what-if or a plan needs, and what-if's --baseline rows."""
    for path in WRAPPED:
        text = (SRC / path).read_text()
        assert "from ..core.derived import derived" in text and "with derived(" in text, path
