"""compare: B − A is named by its estimator; a Hodges-Lehmann shift whose sign differs from the
difference of the medians shown beside it says so (issue 43, item 4)."""

from __future__ import annotations

import io

from rich.console import Console

from secperf.core.compare import measured_row
from secperf.report.terminal_compare import measured_table

# medians 974 µs (A) and 965 µs (B): B's median is lower, but most of B's samples sit above A's, so the
# Hodges-Lehmann shift (median of all pairwise B − A) is positive
A = [942, 952, 962, 972, 972, 973, 974, 975, 976, 977, 1032, 1042, 1052]
B = [961, 962, 963, 964, 965, 1040, 1050, 1060, 1070, 1080, 1090, 900, 901]


def _render(rows: list[dict]) -> str:
    cmp = {"a": "run-a", "b": "run-b", "alpha": 0.05, "power": 0.8, "min_change": 0.05, "rows": rows}
    buf = io.StringIO()
    Console(file=buf, width=250, color_system=None).print(measured_table(cmp))
    return buf.getvalue()


def test_a_shift_against_the_medians_sign_is_labelled_with_the_medians_difference():
    row = measured_row("handshake", "p50", "us", A, B, 0.05, 0.05, 0.8)
    assert row["method"].startswith("Hodges-Lehmann")
    assert row["diff"] > 0 > row["b"] - row["a"]  # the case of the issue: the signs disagree
    out = _render([row])
    line = next(ln for ln in out.splitlines() if ln.lstrip("│ ").startswith("handshake"))
    assert "shift" in line and "medians −9" in line, line
    assert "Hodges-Lehmann" in out


def test_a_shift_with_the_medians_sign_needs_no_second_number_and_few_samples_say_means():
    same = measured_row("same", "p50", "us", A, [x + 50 for x in A], 0.05, 0.05, 0.8)
    few = measured_row("few", "p50", "us", [1000, 1010, 1020], [1100, 1110, 1120], 0.05, 0.05, 0.8)
    out = _render([same, few])
    s = next(ln for ln in out.splitlines() if ln.lstrip("│ ").startswith("same"))
    f = next(ln for ln in out.splitlines() if ln.lstrip("│ ").startswith("few"))
    assert "shift" in s and "medians" not in s
    assert "means" in f and "shift" not in f
