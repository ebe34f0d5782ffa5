"""Tests for the dependency-free SVG plots in secperf.report.svg."""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET

import pytest

from conftest import run_chromium

from secperf.report import svg

NS = "{http://www.w3.org/2000/svg}"
HOSTILE = "<script>alert(1)</script>"


# --------------------------------------------------------------------------- helpers


def parse(text: str) -> ET.Element:
    root = ET.fromstring(text)
    assert root.tag == NS + "svg"
    return root


def by_class(root: ET.Element, cls: str) -> list[ET.Element]:
    return [e for e in root.iter() if cls in (e.get("class") or "").split()]


def ticks(root: ET.Element, axis: str = "x-axis") -> list[tuple[float, float]]:
    """(value, pixel) of the ticks on one axis."""
    (ax,) = by_class(root, axis)
    out = []
    for t in by_class(ax, "tick"):
        pos = t.get("x1") if axis == "x-axis" else t.get("y1")
        out.append((float(t.get("data-value")), float(pos)))
    return out


def pixel_of(root: ET.Element, value: float, *, log: bool = False) -> float:
    """Pixel of a data value, interpolated from the first and last x tick."""
    (v0, p0), (v1, p1) = ticks(root)[0], ticks(root)[-1]
    f = (lambda v: math.log10(v)) if log else (lambda v: v)
    return p0 + (f(value) - f(v0)) / (f(v1) - f(v0)) * (p1 - p0)


def is_power_of_ten(v: float) -> bool:
    e = math.log10(v)
    return abs(e - round(e)) < 1e-9


def sample_box() -> str:
    return svg.box_plot([("a", [1.0, 2.0, 3.0]), ("b", [10.0, 20.0])], title="T", unit="µs")


def sample_bars() -> str:
    return svg.grouped_bars([("g", [("x", 1.0, 0.9, 1.1), ("y", 2.0, None, None)])], title="T", unit="µs")


def sample_line() -> str:
    return svg.line_plot([("s", [(1.0, 2.0), (2.0, 3.0)])], title="T", x_label="x", y_label="y")


ALL_KINDS = [("box", sample_box), ("bars", sample_bars), ("line", sample_line)]


# --------------------------------------------------------------------------- root element


@pytest.mark.parametrize("kind,make", ALL_KINDS)
def test_root_svg_has_required_attributes(kind, make):
    root = parse(make())
    assert root.get("data-plot") == kind
    assert root.get("role") == "img"
    assert root.get("aria-label") == "T"
    w, h = float(root.get("width")), float(root.get("height"))
    assert w == 760 and h > 0
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
    assert root.get("font-family") == "system-ui, sans-serif"
    # first child is an accessible <title>
    assert root[0].tag == NS + "title" and root[0].text == "T"


def test_css_class_is_applied_and_default_per_kind():
    assert parse(sample_box()).get("class") == "plot box-plot"
    assert parse(sample_bars()).get("class") == "plot grouped-bars"
    assert parse(sample_line()).get("class") == "plot line-plot"
    out = svg.box_plot([("a", [1.0])], title="T", unit="", css_class="mine wide")
    assert parse(out).get("class") == "mine wide"


def test_output_has_no_script_or_external_references():
    for _, make in ALL_KINDS:
        text = make()
        assert "<script" not in text.lower()
        assert "href" not in text
        assert "http://" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_coordinates_are_rounded_to_a_tenth_of_a_pixel():
    texts = [
        svg.box_plot([("a", [1 / 3, 2 / 7, 5 / 9, 11 / 13])], title="T", unit="µs"),
        svg.grouped_bars([("g", [("x", 1 / 3, 1 / 7, 2 / 3)])], title="T", unit="µs"),
        svg.line_plot([("s", [(1 / 3, 2 / 7), (5 / 9, 11 / 13), (1.0, 1 / 17)])], title="T",
                      x_label="x", y_label="y"),
    ]
    coord = re.compile(r'\s(?:x|y|x1|x2|y1|y2|cx|cy|r|width|height)="([^"]*)"')
    for text in texts:
        values = coord.findall(text)
        assert values
        for v in values:
            assert re.fullmatch(r"-?\d+(\.\d)?", v), v
        for pts in re.findall(r'points="([^"]*)"', text):
            for num in re.split(r"[ ,]", pts):
                assert re.fullmatch(r"-?\d+(\.\d)?", num), num


# --------------------------------------------------------------------------- escaping


@pytest.mark.parametrize("kind", ["box", "bars", "line"])
def test_hostile_labels_and_titles_are_escaped(kind):
    if kind == "box":
        text = svg.box_plot([(HOSTILE, [1.0, 2.0]), ("ok", [])], title=HOSTILE, unit=HOSTILE,
                            css_class='x" onload="alert(1)')
    elif kind == "bars":
        text = svg.grouped_bars([(HOSTILE, [(HOSTILE, 5.0, 4.0, 6.0)])], title=HOSTILE, unit=HOSTILE,
                                css_class='x" onload="alert(1)')
    else:
        text = svg.line_plot([(HOSTILE, [(1.0, 1.0), (2.0, 4.0)])], title=HOSTILE, x_label=HOSTILE,
                             y_label=HOSTILE, css_class='x" onload="alert(1)')
    assert "<script" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    root = parse(text)  # still well-formed
    assert root.get("aria-label") == HOSTILE
    assert root.get("class") == 'x" onload="alert(1)'
    assert root.get("onload") is None
    # the escaped text survives as the *text* of elements, not as markup
    assert all(e.tag != "script" and not e.tag.endswith("}script") for e in root.iter())
    assert any(HOSTILE in "".join(e.itertext()) for e in root.iter(NS + "text"))


def test_ampersands_quotes_and_control_characters_keep_xml_well_formed():
    label = "a & b \"quoted\" 'single' \x00\x07 end"
    for text in (
        svg.box_plot([(label, [1.0])], title=label, unit="µs"),
        svg.grouped_bars([(label, [(label, 1.0, None, None)])], title=label, unit="µs"),
        svg.line_plot([(label, [(1.0, 1.0)])], title=label, x_label=label, y_label=label),
    ):
        root = parse(text)
        assert root.get("aria-label").startswith("a & b \"quoted\" 'single' ")


# --------------------------------------------------------------------------- box plot


def test_box_plot_has_one_box_per_non_empty_row_and_no_data_for_empty_rows():
    text = svg.box_plot([("a", [1.0, 2.0, 3.0]), ("empty", []), ("c", [4.0]), ("d", [5.0, 6.0])],
                        title="T", unit="µs")
    root = parse(text)
    assert len(by_class(root, "box")) == 3
    assert len(by_class(root, "median")) == 3
    no_data = by_class(root, "no-data")
    assert len(no_data) == 1 and no_data[0].text == "no data"
    labels = [e.text for e in by_class(root, "label")]
    assert labels == ["a", "empty", "c", "d"]


def test_box_plot_median_line_lies_at_the_pixel_of_the_median_on_linear_scale():
    root = parse(svg.box_plot([("r", [1, 2, 3, 4, 5])], title="T", unit="µs", log=False))
    (med,) = by_class(root, "median")
    tick3 = [p for v, p in ticks(root) if v == 3]
    assert tick3, "a tick at 3 is expected for data 1..5"
    assert float(med.get("x1")) == pytest.approx(tick3[0], abs=0.11)
    assert med.get("x1") == med.get("x2")


def test_box_plot_box_whiskers_and_outliers_follow_tukey_rules():
    data = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 40]  # P25=3.5, P75=8.5, IQR=5 -> fences -4, 16
    root = parse(svg.box_plot([("r", data)], title="T", unit="", log=False))
    (box,) = by_class(root, "iqr")
    x = float(box.get("x"))
    w = float(box.get("width"))
    assert x == pytest.approx(pixel_of(root, 3.5), abs=0.2)
    assert x + w == pytest.approx(pixel_of(root, 8.5), abs=0.2)
    caps = sorted(float(c.get("x1")) for c in by_class(root, "whisker-cap"))
    assert caps[0] == pytest.approx(pixel_of(root, 1), abs=0.2)
    assert caps[1] == pytest.approx(pixel_of(root, 10), abs=0.2)  # last datum inside the fence
    (outlier,) = by_class(root, "outlier")
    assert float(outlier.get("cx")) == pytest.approx(pixel_of(root, 40), abs=0.2)


def test_box_plot_draws_every_sample_as_a_deterministically_jittered_dot():
    data = [float(i % 7 + 1) for i in range(50)]
    a = svg.box_plot([("r", data)], title="T", unit="µs")
    b = svg.box_plot([("r", data)], title="T", unit="µs")
    assert a == b  # deterministic, no random state
    dots = by_class(parse(a), "sample")
    assert len(dots) == 50
    assert len({d.get("cy") for d in dots}) > 5  # jittered vertically


def test_box_plot_thins_very_many_samples():
    data = [1.0 + (i % 100) for i in range(20_000)]
    root = parse(svg.box_plot([("r", data)], title="T", unit="µs"))
    assert 0 < len(by_class(root, "sample")) <= 500
    (box,) = by_class(root, "box")
    assert "n=20000" in box.find(NS + "title").text


def test_box_plot_truncates_long_labels_with_ellipsis_and_full_title_tooltip():
    long = "ecdsa-p256 verify with an extremely long descriptive label " * 2
    root = parse(svg.box_plot([(long, [1.0, 2.0])], title="T", unit="µs"))
    (lab,) = by_class(root, "label")
    shown = lab.text if lab.text else "".join(lab.itertext())
    tip = lab.find(NS + "title")
    assert tip is not None and tip.text == long
    visible = (lab.find(NS + "title").tail or "")
    assert visible.endswith("\u2026") and len(visible) < len(long)
    assert shown  # something is visible


def test_box_plot_height_grows_with_rows_and_explicit_height_is_kept():
    h1 = float(parse(svg.box_plot([("a", [1.0])], title="T", unit="")).get("height"))
    h5 = float(parse(svg.box_plot([(str(i), [1.0]) for i in range(5)], title="T", unit="")).get("height"))
    h20 = float(parse(svg.box_plot([(str(i), [1.0]) for i in range(20)], title="T", unit="")).get("height"))
    assert h1 < h5 < h20
    fixed = parse(svg.box_plot([(str(i), [1.0]) for i in range(20)], title="T", unit="", height=300))
    assert fixed.get("height") == "300"


def test_box_plot_log_ticks_are_powers_of_ten_covering_the_data_with_time_units():
    root = parse(svg.box_plot([("hash", [0.05, 0.06]), ("keygen", [2_000_000.0, 1_500_000.0])],
                              title="T", unit="µs"))
    values = [v for v, _ in ticks(root)]
    assert all(is_power_of_ten(v) for v in values)
    assert min(values) <= 0.05 and max(values) >= 2_000_000
    labels = [e.text for e in by_class(root, "tick-label")]
    assert "1 µs" in labels and "1 ms" in labels and "1 s" in labels
    assert "10 ns" in labels


def test_log_axis_ignores_zero_negative_and_nan_values():
    data = [0.0, -3.0, float("nan"), float("inf"), 0.5, 20.0, 3000.0]
    root = parse(svg.box_plot([("r", data), ("bad", [0.0, -1.0])], title="T", unit="µs"))
    assert len(by_class(root, "sample")) == 3
    assert len(by_class(root, "box")) == 1  # the row with only non-positive values shows "no data"
    assert len(by_class(root, "no-data")) == 1
    values = [v for v, _ in ticks(root)]
    assert all(is_power_of_ten(v) for v in values)
    assert min(values) <= 0.5 and max(values) >= 3000
    for c in by_class(root, "sample"):
        assert math.isfinite(float(c.get("cx")))


def test_linear_axis_skips_nan_but_keeps_zero_and_negative():
    root = parse(svg.box_plot([("r", [-2.0, 0.0, float("nan"), 4.0])], title="T", unit="", log=False))
    assert len(by_class(root, "sample")) == 3
    values = [v for v, _ in ticks(root)]
    assert min(values) <= -2 and max(values) >= 4


@pytest.mark.parametrize("log", [True, False])
def test_all_equal_values_still_give_a_valid_axis(log):
    root = parse(svg.box_plot([("r", [7.0, 7.0, 7.0])], title="T", unit="µs", log=log))
    vals = [v for v, _ in ticks(root)]
    pix = [p for _, p in ticks(root)]
    assert len(vals) >= 2 and len(set(pix)) == len(pix)
    assert min(vals) < 7 < max(vals)
    (med,) = by_class(root, "median")
    assert min(pix) < float(med.get("x1")) < max(pix)


@pytest.mark.parametrize("log", [True, False])
def test_single_power_of_ten_value_is_padded(log):
    root = parse(svg.box_plot([("r", [1.0])], title="T", unit="", log=log))
    vals = [v for v, _ in ticks(root)]
    assert min(vals) < 1 < max(vals)


def test_empty_inputs_give_valid_plots():
    for text in (
        svg.box_plot([], title="T", unit="µs"),
        svg.grouped_bars([], title="T", unit="µs"),
        svg.line_plot([], title="T", x_label="x", y_label="y"),
        svg.line_plot([("s", [])], title="T", x_label="x", y_label="y", log_x=True, log_y=True),
    ):
        root = parse(text)
        assert by_class(root, "no-data")


# --------------------------------------------------------------------------- grouped bars


def test_grouped_bars_count_bars_groups_and_error_bars():
    groups = [
        ("128-bit security", [("rsa-3072 sign", 1400.0, 1350.0, 1480.0),
                              ("ecdsa-p256 sign", 18.5, 17.9, 19.2),
                              ("ed25519 sign", 21.0, None, None)]),
        ("192-bit security", [("rsa-7680 sign", 16000.0, None, None),
                              ("ecdsa-p384 sign", 250.0, 240.0, None)]),
    ]
    root = parse(svg.grouped_bars(groups, title="T", unit="µs"))
    assert len(by_class(root, "bar")) == 5
    assert len(by_class(root, "err")) == 3  # only where an interval (or one side of it) is given
    assert [e.text for e in by_class(root, "group-label")] == ["128-bit security", "192-bit security"]
    assert [e.text for e in by_class(root, "value")] == ["1.4 ms", "18.5 µs", "21 µs", "16 ms", "250 µs"]


def test_grouped_bars_error_bar_spans_the_interval_and_bar_ends_at_value():
    root = parse(svg.grouped_bars([("g", [("a", 3.0, 2.0, 4.0), ("b", 10.0, None, None)])],
                                  title="T", unit="", log=False))
    bar_a, bar_b = by_class(root, "bar")
    (err,) = by_class(root, "err")
    line = err.find(NS + "line")
    assert float(line.get("x1")) == pytest.approx(pixel_of(root, 2.0), abs=0.2)
    assert float(line.get("x2")) == pytest.approx(pixel_of(root, 4.0), abs=0.2)
    # linear bars start at zero and end at their value
    for bar, value in ((bar_a, 3.0), (bar_b, 10.0)):
        assert float(bar.get("x")) == pytest.approx(pixel_of(root, 0.0), abs=0.2)
        end = float(bar.get("x")) + float(bar.get("width"))
        assert end == pytest.approx(pixel_of(root, value), abs=0.2)


def test_grouped_bars_colour_by_position_within_group():
    groups = [("g1", [("a", 1.0, None, None), ("b", 2.0, None, None)]),
              ("g2", [("c", 3.0, None, None), ("d", 4.0, None, None)])]
    fills = [b.get("fill") for b in by_class(parse(svg.grouped_bars(groups, title="T", unit="")), "bar")]
    assert fills[0] == fills[2] == svg.PALETTE[0]
    assert fills[1] == fills[3] == svg.PALETTE[1]
    assert fills[0] != fills[1]


def test_grouped_bars_log_axis_drops_non_positive_values():
    groups = [("g", [("zero", 0.0, None, None), ("neg", -1.0, None, None), ("nan", float("nan"), None, None),
                     ("ok", 50.0, 0.0, 600.0)])]
    root = parse(svg.grouped_bars(groups, title="T", unit="µs"))
    assert len(by_class(root, "bar")) == 1
    assert len(by_class(root, "no-data")) == 3
    assert all(is_power_of_ten(v) for v, _ in ticks(root))
    (err,) = by_class(root, "err")  # the invalid lower end is dropped, the upper end kept
    xs = [float(e.get("x1")) for e in err.iter(NS + "line")] + [float(e.get("x2")) for e in err.iter(NS + "line")]
    assert all(math.isfinite(x) for x in xs)


# --------------------------------------------------------------------------- line plot


def test_line_plot_series_points_and_legend():
    sizes = [1024, 2048, 3072, 4096]
    series = [("sign", [(s, s / 10) for s in sizes]), ("verify", [(s, s / 100) for s in sizes[:3]])]
    root = parse(svg.line_plot(series, title="T", x_label="modulus (bits)", y_label="µs"))
    groups = by_class(root, "series")
    assert [g.get("data-series") for g in groups] == ["sign", "verify"]
    assert [len(by_class(g, "point")) for g in groups] == [4, 3]
    lines = by_class(root, "line")
    assert [len(ln.get("points").split()) for ln in lines] == [4, 3]
    assert lines[0].get("stroke") != lines[1].get("stroke")
    assert [e.text for e in by_class(root, "legend-label")] == ["sign", "verify"]


def test_line_plot_linear_ticks_use_1_2_5_steps_and_cover_the_data():
    root = parse(svg.line_plot([("s", [(0.0, 0.13), (7.3, 0.91)])], title="T", x_label="x", y_label="y"))
    for axis, lo, hi in (("x-axis", 0.0, 7.3), ("y-axis", 0.13, 0.91)):
        vals = [v for v, _ in ticks(root, axis)]
        assert min(vals) <= lo and max(vals) >= hi
        step = vals[1] - vals[0]
        mant = step / 10 ** math.floor(math.log10(step))
        assert round(mant, 9) in (1, 2, 5)
        assert all(b - a == pytest.approx(step) for a, b in zip(vals, vals[1:]))


def test_line_plot_point_maps_to_tick_pixels():
    root = parse(svg.line_plot([("s", [(1.0, 10.0), (5.0, 1000.0)])], title="T", x_label="x", y_label="y",
                               log_y=True))
    p0, p1 = by_class(root, "point")
    xt = dict(ticks(root, "x-axis"))
    yt = dict(ticks(root, "y-axis"))
    assert float(p0.get("cx")) == pytest.approx(xt[1.0], abs=0.11)
    assert float(p1.get("cx")) == pytest.approx(xt[5.0], abs=0.11)
    assert float(p0.get("cy")) == pytest.approx(yt[10.0], abs=0.11)
    assert float(p1.get("cy")) == pytest.approx(yt[1000.0], abs=0.11)
    assert float(p1.get("cy")) < float(p0.get("cy"))  # larger y is higher up


def test_line_plot_log_axes_drop_non_positive_points_and_tick_powers_of_ten():
    pts = [(0.0, 1.0), (1.0, 0.0), (10.0, 5.0), (100.0, -2.0), (1000.0, 50.0), (float("nan"), 3.0)]
    root = parse(svg.line_plot([("s", pts)], title="T", x_label="x", y_label="y", log_x=True, log_y=True))
    assert len(by_class(root, "point")) == 2
    for axis in ("x-axis", "y-axis"):
        assert all(is_power_of_ten(v) for v, _ in ticks(root, axis))
    xs = [v for v, _ in ticks(root, "x-axis")]
    assert min(xs) <= 10 and max(xs) >= 1000


def test_line_plot_all_equal_values():
    root = parse(svg.line_plot([("s", [(3.0, 5.0), (3.0, 5.0)])], title="T", x_label="x", y_label="y"))
    for axis in ("x-axis", "y-axis"):
        vals = [v for v, _ in ticks(root, axis)]
        assert len(vals) >= 2 and len(set(vals)) == len(vals)


def test_line_plot_legend_wraps_for_many_series():
    series = [(f"series number {i}", [(1.0, float(i + 1)), (2.0, float(i + 2))]) for i in range(12)]
    root = parse(svg.line_plot(series, title="T", x_label="x", y_label="y", width=500))
    ys = {float(e.get("y")) for e in by_class(root, "legend-label")}
    assert len(ys) > 1
    for e in by_class(root, "legend-label"):
        assert float(e.get("x")) < 500


# --------------------------------------------------------------------------- formatting and scales


@pytest.mark.parametrize("value,unit,expected", [
    (1234, "µs", "1.23 ms"),
    (0.5, "µs", "500 ns"),
    (12.3456, "µs", "12.3 µs"),
    (2_500_000, "ops/s", "2.5M ops/s"),
    (2_000_000, "µs", "2 s"),
    (0.05, "µs", "50 ns"),
    (999.7, "µs", "1 ms"),  # rounding to 3 digits carries into the next unit
    (1, "µs", "1 µs"),
    (1234, "us", "1.23 ms"),
    (1500, "ns", "1.5 µs"),
    (0.25, "s", "250 ms"),
    (4000, "s", "4000 s"),
    (0, "µs", "0 µs"),
    (-1234, "µs", "-1.23 ms"),
    (1234, "", "1.23k"),
    (999, "B", "999 B"),
    (0.000123, "x", "0.000123 x"),
    (float("nan"), "µs", "n/a"),
])
def test_fmt_value(value, unit, expected):
    assert svg.fmt_value(value, unit) == expected


def test_nice_linear_ticks():
    lo, hi, ts, step = svg.nice_linear_ticks(0.13, 0.91, 6)
    assert step == 0.2 and ts == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0] and (lo, hi) == (0.0, 1.0)
    lo, hi, ts, step = svg.nice_linear_ticks(1024, 15360, 6)
    assert step == 5000 and ts == [0, 5000, 10000, 15000, 20000]
    lo, hi, ts, step = svg.nice_linear_ticks(4, 4)
    assert lo < 4 < hi and len(ts) >= 2
    lo, hi, ts, step = svg.nice_linear_ticks(0, 0)
    assert lo < 0 < hi


def test_log10_ticks():
    assert svg.log10_ticks(0.05, 2e6) == (0.01, 1e7, [0.01, 0.1, 1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7])
    assert svg.log10_ticks(3, 7) == (1, 10, [1, 2, 5, 10])  # one decade: add 2x and 5x
    assert svg.log10_ticks(100, 100)[2] == [10, 100, 1000]
    assert svg.log10_ticks(0, -1)[:2] == (1, 10)


def test_scale_maps_linear_and_log():
    assert svg.Scale(0, 10, 100, 200)(5) == 150
    assert svg.Scale(1, 1000, 0, 300, log=True)(10) == pytest.approx(100)
    assert svg.Scale(0, 10, 300, 100)(10) == 100  # inverted (y axis)


def test_linear_time_axis_uses_one_unit_for_all_tick_labels():
    root = parse(svg.box_plot([("r", [100.0, 1300.0])], title="T", unit="µs", log=False))
    labels = [e.text for e in by_class(root, "tick-label")]
    assert labels and all(lab.endswith(" ms") for lab in labels)
    assert "1.0 ms" in labels


# --------------------------------------------------------------------------- browser


@pytest.mark.browser
def test_plots_render_in_headless_chromium(tmp_path):
    body = "".join([
        svg.box_plot([("a", [1.0, 2.0, 3.0]), (HOSTILE, [10.0, 20.0])], title=HOSTILE, unit="µs"),
        svg.grouped_bars([("g", [("x", 1.0, 0.9, 1.1), ("y", 2.0, None, None)])], title="bars", unit="µs"),
        svg.line_plot([("s", [(1.0, 2.0), (2.0, 3.0)])], title="line", x_label="x", y_label="y"),
    ])
    # the test page's own script (not part of the plots) records what the browser laid out
    page = tmp_path / "plots.html"
    page.write_text(
        "<!doctype html><meta charset=utf-8><body>" + body + "<pre id=out></pre><script>"
        "const r=[...document.querySelectorAll('svg[data-plot]')].map(s=>{const b=s.getBBox();"
        "return s.dataset.plot+':'+(b.width>0&&b.height>0)});"
        "r.push('scripts:'+document.scripts.length);"
        "document.getElementById('out').textContent=r.join(',');</script></body>",
        encoding="utf-8",
    )
    dom = run_chromium(tmp_path / "profile", page.as_uri(), "--dump-dom").stdout
    m = re.search(r'<pre id="out">([^<]*)</pre>', dom)
    assert m, dom[-2000:]
    assert m.group(1) == "box:true,bars:true,line:true,scripts:1"


def test_stacked_bars_keep_segment_colours_across_rows_and_escape():
    out = svg.stacked_bars([("a", [("ClientHello", 80.0), ("ServerHello", 90.0)]),
                            (HOSTILE, [("ServerHello", 40.0), ("Finished", float("nan"))])],
                           title=HOSTILE, unit="µs")
    root = ET.fromstring(out)
    assert root.get("data-plot") == "stacked"
    segs = [e for e in root.iter() if e.get("class") == "segment"]
    assert len(segs) == 3  # the NaN segment is dropped
    fills = {}
    for e in segs:
        name = e.find(f"{{{svg.SVG_NS}}}title").text.split("— ")[1].split(":")[0]
        fills.setdefault(name, set()).add(e.get("fill"))
    assert all(len(v) == 1 for v in fills.values()) and len({next(iter(v)) for v in fills.values()}) == 2
    assert "<script" not in out


def test_line_plot_grows_with_a_long_legend_instead_of_squeezing_the_plot():
    import re
    from secperf.report import svg
    few = svg.line_plot([("a", [(0, 1), (1, 2)])], title="t", x_label="x", y_label="y")
    many = svg.line_plot([(f"configuration number {i} with a long name", [(0, i), (1, i + 1)]) for i in range(24)],
                         title="t", x_label="x", y_label="y")
    height = lambda doc: float(re.search(r'viewBox="0 0 [\d.]+ ([\d.]+)"', doc).group(1))  # noqa: E731
    assert height(few) == 360
    assert height(many) > 360 + 18 * 8  # at least eight more legend lines' worth
