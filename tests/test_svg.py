"""The report's plots (secperf.report.plots, drawn with matplotlib) and their inline SVG
(secperf.report.svg): structure, escaping, determinism, self-containment; never pixels."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from secperf.report import plots, svg
from secperf.report.units import fmt_value

NS = "{http://www.w3.org/2000/svg}"
HOSTILE = "<script>alert(1)</script>"


def parse(text: str) -> ET.Element:
    root = ET.fromstring(text)
    assert root.tag == NS + "svg"
    return root


def marks(root: ET.Element, cls: str) -> list[ET.Element]:
    return [e for e in root.iter() if cls in (e.get("class") or "").split()]


def texts(root: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(NS + "text")]


def box(groups=(("a", [1.0, 2.0, 3.0]), ("b", [10.0, 20.0])), **kw) -> str:
    return svg.inline(plots.box_plot(list(groups), title=kw.pop("title", "T"), unit="µs", **kw), "box", "T")


def bars(groups, **kw) -> str:
    return svg.inline(plots.grouped_bars(groups, title="Bars", unit="µs", **kw), "bars", "Bars")


def lines(series, **kw) -> str:
    return svg.inline(
        plots.line_plot(series, title="Lines", x_label="key size (bits)", y_label="P50 (µs)", **kw), "line", "Lines"
    )


def stacked(rows) -> str:
    return svg.inline(plots.stacked_bars(rows, title="Stacked", unit="µs"), "stacked", "Stacked")


# --- root element and self-containment ---------------------------------------------------------------
@pytest.mark.parametrize(
    "kind,make",
    [
        ("box", lambda: box()),
        ("bars", lambda: bars([("g", [("x", 1.0, 0.9, 1.1)])])),
        ("line", lambda: lines([("s", [(1.0, 2.0), (2.0, 3.0)])])),
        ("stacked", lambda: stacked([("r", [("a", 1.0)])])),
    ],
)
def test_root_names_its_kind_and_title_and_is_self_contained(kind, make):
    text = make()
    root = parse(text)
    assert root.get("data-plot") == kind and root.get("role") == "img" and root.get("aria-label")
    assert root.find(NS + "title") is not None
    assert "<script" not in text and "<metadata" not in text and "<?xml" not in text and "DOCTYPE" not in text
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", text)  # no external resource
    assert "@font-face" not in text and root.find(f".//{NS}image") is None  # no fonts or images to fetch
    for ref in re.findall(r'(?:url\(#|href="#)([^")]+)', text):  # every reference resolves inside
        assert f'id="{ref}"' in text


def test_two_renders_are_byte_identical():
    data = [("rsa-2048 sign", [float(x) for x in range(1, 60)]), ("ecdsa-p256 sign", [3.0, 4.0, 5.0])]
    a = svg.inline(plots.box_plot(data, title="T", unit="µs"), "box", "T")
    b = svg.inline(plots.box_plot(data, title="T", unit="µs"), "box", "T")
    assert a == b


def test_different_plots_never_share_an_id():
    a, b = parse(box()), parse(lines([("s", [(1.0, 2.0), (2.0, 3.0)])]))
    ids_a = {e.get("id") for e in a.iter() if e.get("id")}
    ids_b = {e.get("id") for e in b.iter() if e.get("id")}
    assert ids_a and ids_b and not ids_a & ids_b


# --- escaping ----------------------------------------------------------------------------------------
def test_hostile_labels_titles_and_legends_are_escaped():
    text = svg.inline(plots.box_plot([(HOSTILE, [1.0, 2.0])], title=HOSTILE, unit="µs"), "box", HOSTILE)
    text += stacked([(HOSTILE, [(HOSTILE, 1.0)])])
    text += lines([(HOSTILE, [(1.0, 2.0), (2.0, 3.0)])])
    assert HOSTILE not in text and "<script" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_dollar_signs_ampersands_and_control_characters_stay_literal_and_well_formed():
    root = parse(box([("price $5 & $6 \x01", [1.0, 2.0])]))
    assert any("price $5 & $6 \ufffd" in t for t in texts(root))  # not read as math, not dropped


# --- box plots ----------------------------------------------------------------------------------------
def test_box_plot_one_box_and_median_per_non_empty_row_and_labels_for_all():
    root = parse(box([("a", [1.0, 2.0, 3.0]), ("empty", []), ("nan only", [float("nan")]), ("b", [4.0, 9.0])]))
    assert len(marks(root, "box")) == 2 and len(marks(root, "median")) == 2
    assert len(marks(root, "samples")) == 2
    t = texts(root)
    assert {"a", "empty", "nan only", "b"} <= set(t) and t.count("no data") == 2


def test_box_plot_draws_every_sample_up_to_the_thinning_limit():
    root = parse(box([("few", [float(x) for x in range(1, 31)]), ("many", [float(x) for x in range(1, 2001)])]))
    few, many = marks(root, "samples")
    assert len(few.findall(f".//{NS}use")) + len(many.findall(f".//{NS}use")) == 30 + plots.MAX_DOTS


def test_box_plot_value_axis_labels_carry_the_unit_and_log_ticks_are_decades():
    root = parse(box([("r", [2.0, 50.0, 3000.0])]))
    t = texts(root)
    assert {"10 µs", "100 µs", "1 ms"} <= set(t) and "log scale" in t
    root = parse(box([("r", [100.0, 1300.0])], log=False))
    assert "log scale" not in texts(root) and any(x.endswith(" ms") for x in texts(root))


def test_box_plot_prints_each_rows_median():
    root = parse(box([("r", [1.0, 2.0, 30.0])]))
    assert fmt_value(2.0, "µs") in texts(root)


def test_long_labels_are_shortened_with_an_ellipsis():
    root = parse(box([("x" * 100, [1.0, 2.0])]))
    assert any(t.startswith("x" * 10) and t.endswith("\u2026") and len(t) == plots.LABEL_CHARS for t in texts(root))


def test_empty_inputs_still_give_valid_plots():
    for text in (box([]), bars([]), lines([]), stacked([])):
        assert "no data" in texts(parse(text))


# --- grouped bars -------------------------------------------------------------------------------------
def test_grouped_bars_count_bars_error_bars_and_group_headers():
    root = parse(
        bars(
            [
                ("128-bit security", [("x25519 derive", 30.0, 28.0, 33.0), ("p256 derive", 60.0, None, None)]),
                ("192-bit security", [("p384 derive", 400.0, 380.0, 420.0), ("bad", float("nan"), None, None)]),
            ]
        )
    )
    assert len(marks(root, "bar")) == 3
    err_ids = {e.get("id").rsplit("-", 1)[-1] for e in marks(root, "err")}
    assert len(err_ids) == 2  # two bars have an interval
    t = texts(root)
    assert {"128-bit security", "192-bit security", "x25519 derive", "p384 derive"} <= set(t)
    assert fmt_value(400.0, "µs") in t and "no data" in t


def test_grouped_bars_log_axis_drops_non_positive_values():
    root = parse(bars([("g", [("zero", 0.0, None, None), ("neg", -1.0, None, None), ("ok", 5.0, 4.0, 6.0)])]))
    assert len(marks(root, "bar")) == 1 and texts(root).count("no data") == 2


# --- stacked bars -------------------------------------------------------------------------------------
def test_stacked_bars_one_segment_per_finite_part_and_one_legend_entry_per_name():
    root = parse(
        stacked(
            [
                ("tls13", [("ClientHello (sent)", 80.0), ("ServerHello (received)", 90.0)]),
                ("tls12", [("ServerHello (received)", 40.0), ("Finished", float("nan")), ("neg", -1.0)]),
            ]
        )
    )
    assert len(marks(root, "segment")) == 3
    t = texts(root)
    assert t.count("ClientHello (sent)") == 1 and t.count("ServerHello (received)") == 1
    assert "Finished" not in t and fmt_value(170.0, "µs") in t  # the row total after the bar


# --- lines --------------------------------------------------------------------------------------------
def test_line_plot_one_line_per_series_with_axis_labels_and_legend():
    root = parse(
        lines(
            [
                ("RSA sign", [(1024, 200.0), (2048, 1000.0), (4096, 6000.0)]),
                ("ECDSA sign", [(256, 20.0), (384, 200.0)]),
            ],
            log_x=True,
            log_y=True,
        )
    )
    series = marks(root, "series")
    assert len(series) == 2
    assert len(series[0].findall(f".//{NS}use")) == 3  # a marker per point
    t = texts(root)
    assert {"RSA sign", "ECDSA sign", "key size (bits) (log scale)", "P50 (µs) (log scale)"} <= set(t)


def test_line_plot_drops_points_a_log_axis_cannot_show():
    root = parse(lines([("s", [(1.0, 2.0), (2.0, 0.0), (3.0, float("inf")), (4.0, 5.0)])], log_y=True))
    (s,) = marks(root, "series")
    assert len(s.findall(f".//{NS}use")) == 2


# --- names and the Plot spec --------------------------------------------------------------------------
def test_slug_keeps_only_safe_file_name_characters():
    assert plots.slug("crypto-distribution", "EdDSA") == "crypto-distribution-eddsa"
    assert plots.slug("../../etc/passwd", HOSTILE) == "etc-passwd-script-alert-1-script"
    assert plots.slug("", None) == "plot"


def test_plot_spec_draws_its_kind():
    p = plots.Plot("x", "bars", "Title", [("g", [("a", 1.0, None, None)])], "cap", {"unit": "µs"})
    root = parse(svg.plot_svg(p))
    assert root.get("data-plot") == "bars" and len(marks(root, "bar")) == 1 and "Title" in texts(root)


# --- number formatting (moved from the old plotter to units) -----------------------------------------
@pytest.mark.parametrize(
    "value,unit,expected",
    [
        (1234, "µs", "1.23 ms"),
        (0.5, "µs", "500 ns"),
        (12.3456, "µs", "12.3 µs"),
        (2_500_000, "ops/s", "2.5M ops/s"),
        (999.7, "µs", "1 ms"),
        (1500, "ns", "1.5 µs"),
        (0, "µs", "0 µs"),
        (-1234, "µs", "-1.23 ms"),
        (1234, "", "1.23k"),
        (float("nan"), "µs", "n/a"),
    ],
)
def test_fmt_value(value, unit, expected):
    assert fmt_value(value, unit) == expected
