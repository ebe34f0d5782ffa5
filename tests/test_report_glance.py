"""Reports that answer first and read well: "At a glance" opens every Result kind's report and the
docs home page (checked in headless Chromium on real Results), the page uses the window, plot
labels never cut two series to the same text, header lines appear only where they apply, and
library warnings raised while drawing go to the run's log, not the terminal."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from matplotlib.figure import Figure

from conftest import run_chromium, run_cli
from secperf.core import host
from secperf.core import result as R
from secperf.report import plots
from secperf.report.html import library_warnings, render
from secperf.report.svg import plot_svg

ROOT = Path(__file__).resolve().parents[1]


# --- labels ---------------------------------------------------------------------------------------
def test_labels_never_cut_two_series_to_the_same_text():
    base = "mqtt over TLS 1.3, mutual auth, full handshake, lte-m, key se:iot-safe-sim"
    warm, cold = base, base + ":cold"
    shown = plots.labels([warm, cold, "x" * 200, "short"], limit=42)
    assert shown[0] != shown[1]
    assert shown[1].endswith(":cold") and "\u2026" in shown[1]  # the tail that tells them apart is kept
    assert shown[2].endswith("\u2026") and len(shown[2]) == 42  # a lone long label is cut as before
    assert shown[3] == "short"
    # labels that differ only inside the cut part are shown whole, wrapped
    a, b = "p" * 50 + "A" + "q" * 49, "p" * 50 + "B" + "q" * 49
    wa, wb = plots.labels([a, b], limit=42)
    assert wa != wb and wa.replace("\n", "") == a and "\n" in wa


def test_drawn_box_plot_keeps_warm_and_cold_rows_apart():
    rows = [
        ("connect https mtls full over lte-m with key se:iot-safe-sim", [1.0, 2.0]),
        ("connect https mtls full over lte-m with key se:iot-safe-sim:cold", [3.0, 4.0]),
    ]
    svg = plot_svg(plots.Plot("t", "box", "t", rows, options={"unit": "µs"}))
    ticks = [t for t in re.findall(r"<text[^>]*>([^<]*)</text>", svg) if "iot-safe" in t]
    assert len(set(ticks)) == 2, ticks


# --- header ---------------------------------------------------------------------------------------
def _doc(kind="server"):
    return R.finish(R.new_result(kind=kind, command=["test"], params={}, host=host.collect(), run_id="t"))


def test_header_leaves_out_lines_that_do_not_apply():
    doc = _doc()
    doc.host.pop("openssl", None)
    page = render(doc)
    assert "libcrypto (probe)" not in page and "not run" not in page
    assert "post-quantum library" not in page  # no post-quantum rows in this Result
    doc.host["openssl"] = "OpenSSL 3.0.19"
    assert "libcrypto (probe)" in render(doc)  # the probe ran: its library is said


# --- warnings -------------------------------------------------------------------------------------
def test_library_warnings_while_drawing_go_to_the_log_not_the_terminal(tmp_path, capfd):
    log = tmp_path / "secperf.log"
    with library_warnings(log):
        fig = Figure(layout="constrained")
        fig.add_subplot()
        fig.subplots_adjust(left=0.2)  # matplotlib warns: incompatible with its layout engine
    out, err = capfd.readouterr()
    assert "subplots_adjust" not in err + out
    assert "UserWarning" in log.read_text() and "subplots_adjust" in log.read_text()


# --- every kind in Chromium -----------------------------------------------------------------------
# one quick real run per Result kind (the installed console script, as a user runs it); "netem" is a
# handshake Result over an emulated link
KIND_RUNS = {
    "crypto": ["crypto", "--alg", "ecdsa-p256,ed25519", "--op", "sign", "--n", "3", "--duration", "0.2"],
    "handshake": ["handshake", "versions", "--n", "3", "--warmup", "1"],
    "netem": ["handshake", "versions", "--network", "lte-m", "--n", "2", "--warmup", "1"],
    "signer": ["signer", "--n", "3", "--warmup", "1"],
    "jwt": ["jwt", "--n", "3", "--warmup", "1"],
    "connect": ["connect", "https", "--key", "software,se:iot-safe-sim", "--n", "2", "--warmup", "1"],
    "mac": ["mac", "--alg", "chaskey", "--size", "16", "--n", "3", "--duration", "0.2"],
    "can": ["can"],
    "whatif": ["whatif", "mqtt", "--network", "lte-m", "--n", "200"],
    "plan": ["plan", "--pattern", "periodic-collection"],
    "server": ["server", "--key", "ecdsa-p256", "--concurrency", "2", "--duration", "0.5", "--warmup", "0.1"],
    "fleet": ["fleet", "--capacity", "500", "--devices", "1000"],
    "device": ["device", "handshake", "--stack", "wolfssl", "--group", "x25519", "--suite", "aes128gcm", "--n", "1"],
}

PROBE = (
    "<pre id='glance-probe'></pre><script>(()=>{const h=[...document.querySelectorAll('h2')];"
    "const first=h.length?h[0].textContent.replace(/[\\u00b6#]/g,'').trim():'';"
    "const svgs=[...document.querySelectorAll('svg[data-plot]')].map(s=>Math.round(s.getBoundingClientRect().width));"
    "document.getElementById('glance-probe').textContent=JSON.stringify({first,svgs,"
    "page:Math.round(document.body.getBoundingClientRect().width)});})();</script></body>"
)


def _probe(page: Path, tmp: Path) -> dict:
    probed = page.with_name("probed-" + page.name)
    probed.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE, 1), encoding="utf-8")
    p = run_chromium(tmp / f"profile-{page.parent.name}", probed.as_uri(), "--dump-dom", "--window-size=1400,1000")
    m = re.search(r'<pre id="glance-probe">([^<]*)</pre>', p.stdout)
    assert m, f"{page}: no probe output from Chromium: {p.stderr[-1500:]}"
    return json.loads(m.group(1).replace("&quot;", '"'))


@pytest.fixture(scope="module")
def kind_reports(tmp_path_factory):
    out = tmp_path_factory.mktemp("kinds")
    pages = {}
    # the installed program with its own package and native tools (a source tree on PYTHONPATH would
    # make it look for them in the tree's build directory)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for name, args in KIND_RUNS.items():
        p = run_cli(*args, "--out", str(out / name), timeout=900, env=env)
        assert p.returncode == 0, f"{name}: {p.stderr[-2000:]}"
        res = sorted((out / name).glob("2*/result.json"))[-1]
        page = res.with_name("glance.html")
        page.write_text(render(R.load(res)), encoding="utf-8")  # this tree's renderer
        pages[name] = page
    return pages


@pytest.mark.slow
@pytest.mark.browser
def test_every_result_kind_opens_with_at_a_glance_in_chromium(kind_reports, tmp_path):
    for name, page in kind_reports.items():
        got = _probe(page, tmp_path)
        assert got["first"] == "At a glance", f"{name}: the first section is {got['first']!r}"
        # the page uses the window: at 1,400 px the body and every figure span most of it
        assert got["page"] >= 1300, (name, got)
        assert all(w >= 1200 for w in got["svgs"]), (name, got)


@pytest.mark.slow
@pytest.mark.browser
def test_docs_home_page_opens_with_at_a_glance_in_chromium(tmp_path):
    # the tests live in the same tree as the docs site: its absence is a broken checkout, not a reason to skip
    assert (ROOT / "mkdocs.yml").exists(), "no mkdocs.yml next to tests/: the docs site is missing from this tree"
    mkdocs = shutil.which("mkdocs", path=str(Path(sys.executable).parent))
    assert mkdocs, "mkdocs is not installed in the virtualenv (scripts/bootstrap installs the docs extra)"
    site = tmp_path / "site"
    p = subprocess.run(
        [mkdocs, "build", "--strict", "-q", "-d", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert p.returncode == 0, p.stderr[-3000:]
    got = _probe(site / "index.html", tmp_path)
    assert got["first"] == "At a glance", got
