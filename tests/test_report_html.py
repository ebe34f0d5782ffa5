"""The HTML report: self-contained, escapes all text, and renders its plots in headless Chromium."""

import copy
import re

import pytest
from PIL import Image

from conftest import import_or_skip, run_chromium
from secperf.core import host
from secperf.core import result as R
from secperf.inputs.algorithms import select
from secperf.measure import crypto as C
from secperf.model import crypto_questions as Q
from secperf.report.html import render


@pytest.fixture(scope="module")
def real_doc(tmp_path_factory):
    rows = select(
        "rsa-1024,rsa-2048,ecdsa-p256,ecdsa-p384,ed25519,x25519,aes-128-gcm", "sign,verify,derive,encrypt", "16,1024"
    )
    p = C.CryptoParams(n=5, warmup=1, duration_s=0.5, key_cache=tmp_path_factory.mktemp("keys"))
    doc = R.new_result(kind="crypto", command=["test"], params=p.as_dict(), host=host.collect(), run_id="t")
    C.run_crypto(rows, p, doc)
    doc.analysis.s5 = Q.answers(doc)
    return R.finish(doc)


def test_report_is_self_contained(real_doc):
    page = render(real_doc)
    assert "<script" not in page
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", page)
    assert page.count("data-plot=") >= 4
    for a in real_doc.analysis.s5:
        assert a["question"] in page.replace("&#x27;", "'")


def test_report_escapes_hostile_text(real_doc):
    doc = copy.deepcopy(real_doc)
    evil = "<script>alert(1)</script>"
    doc.run_id = evil
    doc.host["cpu_model"] = evil
    doc.series[0].labels["alg"] = evil
    doc.series[0].failures.append(R.Failure(reason=evil, time="now"))
    doc.analysis.s5[0]["answer"] = evil
    page = render(doc)
    assert "<script" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page


def test_two_renders_of_a_result_are_byte_identical(real_doc):
    assert render(real_doc) == render(copy.deepcopy(real_doc))


def test_hostile_plot_labels_never_reach_the_page_unescaped(real_doc):
    doc = copy.deepcopy(real_doc)
    evil = "<script>alert(1)</script>"
    for s in doc.series:  # every plot's row labels come from these
        s.labels["alg"] = evil + s.labels["alg"]
    page = render(doc)
    assert evil not in page and "<script" not in page
    assert page.count("&lt;script&gt;alert(1)&lt;/script&gt;") > len(doc.series)  # tables and plots


@pytest.mark.slow  # over 10 s here: a fidelity check for the slow run
def test_figures_are_print_quality_png_and_pdf_pairs(real_doc, tmp_path):
    from secperf.report.figures import write_figures
    from secperf.report.html import plots_of

    written = write_figures(real_doc, tmp_path / "figs")
    names = [p.name for p in written]
    expected = [p.name for p in plots_of(real_doc)]
    assert expected and len(set(expected)) == len(expected)
    assert names == [f"{n}.{ext}" for n in expected for ext in ("png", "pdf")]
    assert "crypto-distribution-rsa.png" in names and "crypto-growth-key-size.pdf" in names
    for p in written:
        if p.suffix == ".png":
            with Image.open(p) as img:
                assert img.format == "PNG"
                assert [round(d) for d in img.info["dpi"]] == [300, 300]
                assert img.size[0] >= 7 * 300  # a full column at 300 dpi
        else:
            assert p.read_bytes()[:5] == b"%PDF-"


def test_figures_handshake_rows_and_bad_directories(tmp_path):
    from secperf.core.errors import InputError
    from secperf.report.figures import write_figures

    msgs = [{"message": m, "p50_cpu_us": v} for m, v in (("ClientHello (sent)", 80.0), ("Finished (received)", 30.0))]
    s = R.new_series(
        "handshake/probe/tls13",
        kind="handshake",
        labels={"label": "tls13", "server": "probe"},
        timer={"name": "handshake", "start": "connected", "end": "handshake complete"},
    )
    s.values_us.extend([900.0, 1100.0])
    s.cpu_values_us.extend([300.0, 320.0])
    s.derived.breakdown = {"messages": msgs}
    doc = R.new_result(kind="handshake", command=["test"], params={}, host={}, run_id="t")
    doc.series.append(R.finalize_series(s))
    names = [p.name for p in write_figures(doc, tmp_path / "hs")]
    assert names == [
        f"{n}.{e}"
        for n in ("handshake-wall-time", "handshake-client-cpu", "handshake-cpu-per-message")
        for e in ("png", "pdf")
    ]
    afile = tmp_path / "file"
    afile.write_text("x")
    for bad in (afile, afile / "sub"):
        with pytest.raises(InputError, match="--figures"):
            write_figures(doc, bad)


@pytest.mark.browser
def test_report_renders_plots_in_headless_chromium(real_doc, tmp_path):
    page = tmp_path / "report.html"
    page.write_text(render(real_doc), encoding="utf-8")
    shot = tmp_path / "report.png"
    p = run_chromium(tmp_path / "profile", page.as_uri(), f"--screenshot={shot}", "--window-size=1200,2400")
    assert shot.exists(), p.stderr[-2000:]
    img = Image.open(shot).convert("L")
    assert img.size == (1200, 2400)
    dark = sum(img.histogram()[:200])
    assert dark > 0.01 * img.size[0] * img.size[1]  # text and plots drawn, not a blank page
    # the browser's own layout: every plot has a drawn size and contains its marks
    probe_page = tmp_path / "probe.html"
    probe_page.write_text(
        page.read_text().replace(
            "</body>",
            "<pre id=out></pre><script>document.getElementById('out').textContent="
            "[...document.querySelectorAll('svg[data-plot]')].map(s=>{const b=s.getBBox();"
            "return s.dataset.plot+'|'+(b.width>100&&b.height>50)+'|'+s.querySelectorAll('.box,.bar,.segment,.series').length})"
            ".join(',');</script></body>",
        ),
        encoding="utf-8",
    )
    dom = run_chromium(tmp_path / "profile2", probe_page.as_uri(), "--dump-dom").stdout
    m = re.search(r'<pre id="out">([^<]*)</pre>', dom)
    assert m, dom[-2000:]
    plots = [x.split("|") for x in m.group(1).split(",")]
    kinds = {k for k, _, _ in plots}
    assert {"box", "bars", "line"} <= kinds
    assert all(drawn == "true" and int(marks) > 0 for _, drawn, marks in plots)


def _connect_row(net, ks, hsk, p50):
    s = R.new_series(
        f"connect/https/{ks}/{hsk}/{net}",
        kind="connect",
        labels={"protocol": "https", "key_source": ks, "handshake": hsk, "client": "probe", "network": net},
        timer={"name": "establishment", "start": "connect", "end": "usable"},
    )
    s.values_us.extend([p50 * 0.99, p50, p50 * 1.01])  # P50 = p50
    if hsk == "resumed":
        s.derived.resumed = 3
    return R.finalize_series(s)


def test_the_answer_comes_first_and_links_to_its_section():
    from secperf.report.views.answers import key_findings

    doc = R.new_result(kind="connect", command=["test"], params={}, host={}, run_id="t")
    doc.series.extend(
        [
            _connect_row("loopback", "software", "full", 4_000.0),
            _connect_row("loopback", "se:iot-safe-sim", "full", 480_000.0),
            _connect_row("loopback", "se:iot-safe-sim", "resumed", 3_000.0),
        ]
    )
    found = key_findings(doc)
    assert found[0]["section"] == "connect"
    assert "HTTPS 4 ms with a software key, 480 ms with the key in iot-safe-sim (+476 ms)" in found[0]["text"]
    assert any("resumption" in f["text"] and "HTTPS 477 ms" in f["text"] for f in found)


def test_report_opens_with_findings_and_a_table_of_contents(real_doc):
    page = render(real_doc)
    glance, toc, first_table = page.index("At a glance"), page.index("Contents"), page.index("<table")
    assert glance < toc < first_table
    assert "href='#sec-crypto'" in page and "id='sec-crypto'" in page
    assert "cheapest signature here is" in page


# --- the templates -----------------------------------------------------------------------------------
EVIL = "<script>alert(1)</script>' onmouseover='x"
EVIL_ESCAPED = "&lt;script&gt;alert(1)&lt;/script&gt;&#39; onmouseover=&#39;x"


@pytest.fixture(scope="module")
def whatif_doc(tmp_path_factory):
    import result_kinds as K

    return K.cli(
        ["whatif", "mqtt", "--network", "lte-m,nb-iot", "--n", "100", "--baseline"], tmp_path_factory.mktemp("whatif")
    )  # the Result's JSON: a test changes it as a file would be changed


def test_a_script_in_a_label_or_a_failure_reason_is_escaped_in_the_report(whatif_doc):
    """A real what-if Result with a hostile network label and a hostile failure reason: the templates
    escape both wherever they land (the predictions table, the security table, the failures table,
    a hover title), also in single-quoted attributes, so neither the raw string nor a bare quote
    reaches the page."""
    doc = copy.deepcopy(whatif_doc)
    first = doc["series"][0]
    first["labels"]["network"] = EVIL
    first["failures"].append({"reason": EVIL, "time": "now"})
    page = render(R.validate(doc))
    assert "<script" not in page and EVIL not in page
    assert "onmouseover='x" not in page
    # the label in the predictions and security tables, the reason in the failures table
    assert page.count(EVIL_ESCAPED) >= 3, page.count(EVIL_ESCAPED)
    failures = page[page.index("id='sec-failures'") :]
    assert EVIL_ESCAPED in failures


def test_every_report_template_compiles_and_a_missing_value_is_an_error():
    from jinja2 import UndefinedError

    from secperf.report.html_env import ENV, render_page

    names = ENV.list_templates(extensions=["j2"])
    assert {"page.html.j2", "macros.html.j2", "crypto.html.j2", "whatif.html.j2"} <= set(names)
    for name in names:
        ENV.get_template(name)  # a syntax error would raise here
    with pytest.raises(UndefinedError):  # StrictUndefined: a view that forgets a value fails loudly
        render_page("page.html.j2", run_id="r", kind="k", header=[], sections=[])


def test_report_templates_ship_inside_the_package():
    """The templates load relative to the installed package (never the source tree), and the wheel's
    file selection (scikit-build-core, wheel.packages = src/secperf) takes them."""
    from pathlib import Path

    from secperf.report import html_env

    sk = import_or_skip("scikit_build_core.build._pathutil", "scripts/bootstrap installs the build backend")
    loader = html_env.ENV.loader
    assert loader.package_name == "secperf.report"
    src = Path(__file__).resolve().parents[1] / "src"  # the checkout's package, which the wheel is built from
    shipped = {
        str(t)
        for _, t in sk.iter_package_files(
            packages={"secperf": str(src / "secperf")},
            include=[],
            src_exclude=[],
            target_exclude=[],
            build_dir="build/x",
            mode="default",
        )
    }
    names = html_env.ENV.list_templates(extensions=["j2"])  # what the installed package loads
    assert "page.html.j2" in names
    for name in names:
        assert f"secperf/report/templates/{name}" in shipped, name
