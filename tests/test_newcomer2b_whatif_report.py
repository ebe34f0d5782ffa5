"""The what-if report (issue 43, item 10): the cost table lists the operations the scenarios'
flights use first, each with its source and what it prices, the rest folded away in <details>; the
report's wide tables do not scroll sideways at 1,400 px."""

from __future__ import annotations

import json
import re

import pytest

from conftest import run_chromium
from secperf.cli import main
from secperf.core import result as R
from secperf.report.html import render
from secperf.report.views.whatif import cost_rows_by_use


@pytest.fixture(scope="module")
def whatif_doc(tmp_path_factory):
    out = tmp_path_factory.mktemp("wi")
    assert (
        main(
            [
                "whatif",
                "tls1.3,dtls1.2,edhoc",
                "--network",
                "nb-iot",
                "--key",
                "se:iot-safe-sim",
                "--baseline",
                "--n",
                "2000",
                "--out",
                str(out),
                "--no-report",
            ]
        )
        == 0
    )
    return json.loads(sorted(out.glob("*/result.json"))[-1].read_text())


def test_the_cost_table_lists_the_flights_operations_first_and_folds_the_rest(whatif_doc):
    rows = whatif_doc["analysis"]["whatif"]["cost_table"]["rows"]
    used, rest = cost_rows_by_use(R.validate(whatif_doc))
    assert used and rest and len(used) + len(rest) == len(rows)
    assert len(used) < len(rows) / 2, (len(used), len(rows))  # most of the table is not used here
    flight_ops = {
        (f["sender"], op)
        for s in whatif_doc["series"]
        if s["kind"] == "whatif"
        for f in s["derived"].get("flights") or []
        for op in f["ops"]
    }
    priced = {u for r in used for u in r["used_as"]}
    # every flight operation the table prices is listed as used (the secure element's time is a profile's)
    assert {f"{p} {op}" for p, op in flight_ops if not op.startswith("secure element")} <= priced
    assert all(r["source"] for r in used)
    html = render(R.validate(whatif_doc))
    part = html[html.index("<h3>Cost table") :]
    listed, folded = part.split("<details>", 1)
    assert all(r["op"] in listed for r in used)
    assert f"other {len(rest)} operations" in folded
    assert sum(folded.count(f">{r['op']}<") for r in rest) >= len(rest)  # each unused op inside <details>


PROBE = (
    "<pre id='tw-probe'></pre><script>(()=>{const out=[];document.querySelectorAll('table').forEach((t,i)=>{"
    "out.push({i,scroll:t.scrollWidth,client:t.clientWidth,head:(t.rows[0]||{}).textContent.slice(0,40)});});"
    "document.getElementById('tw-probe').textContent=JSON.stringify(out);})();</script></body>"
)


@pytest.mark.slow
@pytest.mark.browser
def test_no_table_of_the_whatif_report_scrolls_sideways_at_1400px(whatif_doc, tmp_path):
    page = tmp_path / "report.html"
    page.write_text(render(R.validate(whatif_doc)).replace("</body>", PROBE, 1), encoding="utf-8")
    p = run_chromium(tmp_path / "profile", page.as_uri(), "--dump-dom", "--window-size=1400,1000")
    m = re.search(r'<pre id="tw-probe">([^<]*)</pre>', p.stdout)
    assert m, p.stderr[-1500:]
    tables = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert len(tables) >= 4
    wide = [t for t in tables if t["scroll"] > t["client"] + 1]
    assert not wide, wide
