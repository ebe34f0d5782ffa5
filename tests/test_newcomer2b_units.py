"""Units and walls of text (issue 43, item 7): a column's unit comes from its largest value (human
scale, the same from run to run), an sd reads in its mean's unit, `device list` is a compact table,
`device crypto` names a build in a few characters, and a device what-if's first line fits 80 columns."""

from __future__ import annotations

from rich.table import Table

from secperf.app.device import list_devices, show_device
from secperf.app.device_counts import Counts
from secperf.core.result_schema import DeviceCryptoDerived, DeviceTime
from secperf.report import fit
from secperf.report.units import column_unit


def _normal(rows: list[tuple[str, ...]], heads: tuple[str, ...]) -> tuple[list[str], list[list[str]]]:
    t = Table()
    for h in heads:
        t.add_column(h)
    for r in rows:
        t.add_row(*r)
    n = fit.normalise(t)
    return [c.header for c in n.columns], [[fit.cell_text(x) for x in c._cells] for c in n.columns]


def test_a_column_reads_in_human_scale_whatever_its_small_values_are():
    # "672000 µs": a column with one small value was put in µs to keep that value short
    assert column_unit([("672", "ms"), ("1.23", "µs")]) == "ms"
    # two runs of one command: the small values differ, the unit does not
    runs = [[("980", "ms"), ("1.2", "µs")], [("990", "ms"), ("45", "µs")], [("1.02", "s"), ("3", "ms")]]
    assert {column_unit(r) for r in runs} == {"ms"}
    heads, cols = _normal([("a", "672000 µs"), ("b", "1.2 s")], ("row", "client"))
    assert heads[1] == "client (ms)" and cols[1] == ["672", "1200"]


def test_mean_and_sd_share_a_unit():
    heads, cols = _normal(
        [("a", "672 ms", "45.2 µs", "670 ms"), ("b", "475 ms", "9.2 ms", "475 ms")], ("row", "mean", "sd", "P50")
    )
    assert heads[1:] == ["mean (ms)", "sd (ms)", "P50 (ms)"]
    assert cols[2] == ["0.0452", "9.2"]


def test_device_list_is_a_compact_table_with_the_prose_behind_verbose_and_show():
    short = list_devices().splitlines()
    assert max(len(x) for x in short) <= 80, max(short, key=len)
    assert len(short) <= 30, len(short)
    assert short[0].split()[:2] == ["core", "profile"]
    assert any(x.startswith("cortex-m4-80 ") for x in short)
    verbose = list_devices(verbose=True)
    assert len(verbose.splitlines()) > 3 * len(short) and "timing model" in verbose
    one = show_device("cortex-m4-80")
    assert "timing model" in one and "cortex-a9-400" not in one


def test_a_device_whatifs_first_line_fits_80_columns():
    c = Counts(
        doc=None,
        counted=[],
        reused=[f"r{i}" for i in range(7)],
        stack="wolfssl",
        config="sp-asm",
        library="wolfSSL 5.5.4 (cortex-m4 build)",
    )
    line = f"cortex-m4-80: {c.note()}"
    assert len(line) <= 80 and "taken from the cache" in line and "sp-asm" in line, line


def _crypto_doc():
    from secperf.core import result as R

    doc = R.new_result(kind="device", command=["secperf", "device", "crypto"], params={}, host={}, run_id="d")
    for stack, lib, cfg in (
        ("wolfssl", "wolfSSL 5.5.4 (cortex-m4 build)", "sp-asm"),
        ("mbedtls", "Mbed TLS 2.28.3 (cortex-m4 build)", "default"),
    ):
        for op, n in (("x25519-derive", 1.22e6), ("sha256-1024", 42700.0)):
            s = R.new_series(
                f"device-crypto/cortex-m4-80/{stack}/{op}",
                kind="device_crypto",
                labels={
                    "device": "cortex-m4-80",
                    "stack": stack,
                    "library": lib,
                    "op": op,
                    "config": cfg,
                    "build_target": "cortex-m4",
                },
                timer={"name": "op", "start": "call", "end": "return"},
            )
            s.derived = DeviceCryptoDerived(
                instructions_median=n,
                instructions_cold=n,
                time=DeviceTime(
                    cycles=2 * n,
                    ms=2 * n / 80e3,
                    ms_low=1.8 * n / 80e3,
                    ms_high=2.2 * n / 80e3,
                    model="cortex-m4",
                    clock_mhz=80.0,
                    banded={"div": [2, 7, 12]},
                ),
                derived_ms={
                    "ms_low": 1.2 * n / 80e3,
                    "ms_high": 2 * n / 80e3,
                    "clock_mhz": 80.0,
                    "cpi": [1.2, 2.0],
                    "cpi_estimate": True,
                },
            )
            s.status = "ok"
            doc.series.append(s)
    R.finish(doc)
    return doc


def test_device_crypto_names_a_build_in_a_few_characters_with_the_library_under_the_table():
    import io

    from rich.console import Console

    from secperf.report.fit import print_tables
    from secperf.report.terminal_device import tables

    buf = io.StringIO()
    print_tables(Console(file=buf, width=80, color_system=None), tables(_crypto_doc()))
    out = buf.getvalue()
    assert " ".join(out.split()).count("wolfSSL 5.5.4 (cortex-m4 build)") == 1, out  # once, in the legend
    rows = [ln for ln in out.splitlines() if ln.startswith("│") and ("x25519" in ln or "sha256" in ln)]
    assert rows and all("wolfssl" in ln or "mbedtls" in ln for ln in rows), out
    # every row of each part takes at most two lines (the build id may wrap once), not five
    body = [ln for ln in out.splitlines() if ln.startswith("│")]
    assert len(body) <= 2 * 2 * len(rows), out
