"""whatif --baseline: a row letter means one scenario throughout one output (the main table, "what
security costs" and any later table), in the order the rows come out (issue 43, item 3)."""

from __future__ import annotations

import re

from rich.console import Console
from rich.table import Table

from secperf.cli import main
from secperf.report import fit


def _legend(out: str) -> list[tuple[str, str]]:
    return re.findall(r"^([A-Z]{1,2}) = (.+?)\s*$", out, re.M)


def test_a_letter_names_one_scenario_in_every_table_of_a_baseline_whatif(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    assert (
        main(
            [
                "whatif",
                "mqtt",
                "--network",
                "nb-iot",
                "--key",
                "software,se:iot-safe-sim",
                "--baseline",
                "--n",
                "2000",
                "--out",
                str(tmp_path),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    pairs = _legend(out)
    assert len({label for _, label in pairs}) >= 3, out  # the SIM row, plain TCP, the software row
    by_letter: dict[str, set[str]] = {}
    by_label: dict[str, set[str]] = {}
    for k, label in pairs:
        by_letter.setdefault(k, set()).add(label)
        by_label.setdefault(label, set()).add(k)
    assert all(len(v) == 1 for v in by_letter.values()), by_letter
    assert all(len(v) == 1 for v in by_label.values()), by_label
    plain = next(k for k, label in pairs if "without security" in label)
    security = out[out.index("what security costs") :]
    assert f"{plain} = " not in security  # the plain row is no row of that section
    # the rows come out in the order given, each followed by its references: software, plain, SIM
    first = [label for _, label in pairs][:3]
    assert "key software" in first[0] and "without security" in first[1] and "iot-safe-sim" in first[2], first


def test_tables_of_one_output_share_their_letters_and_separate_outputs_start_again():
    # word counts differ: no "words that differ" keys, letters
    long = [
        "a scenario label long enough to need a short key in every table " + w
        for w in ("one", "two and more", "three and more than that")
    ]

    def table(labels):
        t = Table()
        t.add_column("scenario")
        t.add_column("P50")
        for lab in labels:
            t.add_row(lab, "1 ms")
        return t

    def keys(tables):
        con = Console(width=40, record=True, color_system=None)
        fit.print_tables(con, tables)
        return _legend(con.export_text())

    got = keys([table(long), table([long[0], long[2]])])
    assert [k for k, _ in got] == ["A", "B", "C", "A", "C"], got  # the second table: A and C, not A and B
    assert [k for k, _ in keys([table([long[2], long[1]])])] == ["A", "B"]  # a new output: letters from A
