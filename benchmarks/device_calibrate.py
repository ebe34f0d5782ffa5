#!/usr/bin/env python3
"""Calibration from a board's own log: per board, the held-out error of a profile fitted to that
board's published rows (data/boards.toml), leave one row out.

For every board with at least --min-rows matched rows (benchmarks/device_boards.py's matching: the
board's core profile at its clock and wait states, the library build nearest the published one, the
operation secperf runs), the board's rows are its log. Each operation is counted once on the board's
core (`secperf device calibrate`'s counting: measure/device_calibrate.py, cached). Then, for each row,
the core's banded timing parameters are fitted within their sourced bounds to the board's OTHER rows
and the row is predicted: its held-out error. Printed per board: rows, the shipped profile's median
|error|, the fit's median |error| on all rows (in sample), the held-out median |error| (the target:
<= 8 % on every board), the parameters the full fit moved; and pooled over the boards. Rows of a
wolfSSL release older than the one built (4.x logs counted on 5.5.4) are marked with *, rows whose
version is in doubt (data/boards.toml's version_doubt) with ?; neither counts toward the target.

Decision: the target is judged on the rows of the release series secperf builds. wolfSSL 4.x's code
cannot be counted here (UNBUILT says why), so a 4.4.1 row's held-out error measures the code changes
since 4.4.1 as much as the fit. Each board is printed both ways: all its matched rows, and the rows of
the release series built. A board with fewer than --min-rows rows of the series built is reported
apart, with its figures on all rows and the reason, and does not count toward the target.

Usage: python benchmarks/device_calibrate.py [--min-rows 10] [--only BOARD] [--json OUT]
Exit status: 0 when every board meets the target, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import device_boards as DB  # noqa: E402  (the matching code: rows, builds, published figures)

from secperf.inputs.devices import core as core_profile  # noqa: E402
from secperf.measure import device_calibrate as C  # noqa: E402

TARGET = 0.08
# why a wolfSSL 4.x row is counted on 5.5.4 and not on its own code
UNBUILT = (
    "wolfSSL 4.x code is not buildable here: no package registry secperf reaches serves it (Debian's "
    "suites give 5.5.4; the wolfssl-sys crate bundles 5.2.0 in its oldest release, 0.1.0; the wolfssl "
    "sdists on PyPI, 4.1.0.post0 included, carry no C sources and clone them at build time)"
)


def row_ops(r: dict) -> tuple[str, ...]:
    """The operations a row's figure is made of (a wolfCrypt benchmark hash: two HMAC sizes, weighted)."""
    return DB.STREAM_OPS if r.get("stream") else (r["op"],)


def board_rows(rows: list[dict], progress: bool = True) -> tuple[list[C.Row], list[dict], C.Core]:
    """The board's rows counted on its core: (rows, rows not counted with the reason, the core)."""
    b = rows[0]
    info = b["board_info"]
    base = core_profile(b["profile"])
    base = DB.board_core(info, base) or base  # the board's memory when it differs (instruction cache off)
    dev = C.board_core(base, f"board-{b['board']}", float(info["clock_mhz"]), int(info.get("flash_wait_states", 0)))
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["stack"], r["config"])].append(r)
    out, failed = [], []
    for (stack, config), rs in groups.items():
        ops = sorted({op for r in rs for op in row_ops(r)})
        say = (lambda s: print(f"  counting {b['board']}: {s}", file=sys.stderr)) if progress else None
        try:
            counts, missing = C.count_ops(dev, stack, config, ops, progress=say)
        except Exception as exc:  # a build that fails here: its rows are listed, not dropped
            counts, missing = {}, {op: str(exc).splitlines()[0][:200] for op in ops}
        for r in rs:
            why = [missing[op] for op in row_ops(r) if op in missing]
            if why:
                failed.append({**r, "failed": "; ".join(why)})
                continue
            mark = DB.MARKS[r["version_match"]]
            label = f"{r['operation']}{mark} {r['library']} {r['version']} [{config or 'default'}]"
            out.append(
                C.Row(
                    label,
                    r["published_ms"] * float(info["clock_mhz"]) * 1e3,
                    row_ops(r),
                    [counts[op] for op in row_ops(r)],
                    {"i": r["i"], "version_match": r["version_match"], "stack": stack, "build": config},
                    DB.STREAM_WEIGHTS if r.get("stream") else (),
                )
            )
    return out, failed, dev


def evaluate(board: str, rows: list[C.Row], dev: C.Core, failed: list[dict], what: str) -> dict:
    """Fit, leave-one-out and the plugin's own figures at the full fit; printed, and returned."""
    t = dev.timing
    f = C.fit(rows, t)
    loo = C.leave_one_out(rows, t)
    exact = C.verify(dev, f.params, rows, progress=lambda s: print(f"  counting {board} fitted: {s}", file=sys.stderr))
    fitted = [(x / r.published_cycles - 1) if x else e for r, x, e in zip(rows, exact, f.errors)]
    shipped = [r.point / r.published_cycles - 1 for r in rows]
    print(f"\n{board}, {what} ({dev.clock_mhz:g} MHz, {dev.flash_wait_states} WS): {len(rows)} rows")
    print(f"  {'row':60} {'shipped':>8} {'fitted':>8} {'held out':>9}")
    for r, e, le, sh in zip(rows, fitted, loo, shipped):
        print(f"  {r.label[:60]:60} {sh:+8.1%} {e:+8.1%} {le:+9.1%}")
    for r in failed:
        print(f"  not counted: {r['operation']} [{r['config']}]: {r['failed'][:100]}")
    med_loo = statistics.median(abs(x) for x in loo if x is not None)
    med_ship = statistics.median(abs(x) for x in shipped)
    med_fit = statistics.median(abs(x) for x in fitted)
    params = {k: (f.bounds[k][1], v, f.bounds[k][0], f.bounds[k][2]) for k, v in f.params.items()}
    moved = "; ".join(f"{k} {old:g} -> {new:.3g} [{lo:g}, {hi:g}]" for k, (old, new, lo, hi) in params.items())
    sur = C.surrogate_error([r for r, x in zip(rows, exact) if x], t, [x for x in exact if x], f.params)
    print(
        f"  median |error|: shipped {med_ship:.1%}, fitted (in sample, plugin) {med_fit:.1%}, held out "
        f"{med_loo:.1%} (target <= {TARGET:.0%}) {'met' if med_loo <= TARGET else 'NOT met'}"
    )
    print(
        f"  full fit: {moved or 'nothing to fit'}; not fitted: {', '.join(f.fixed) or 'none'}; the fit's linear "
        f"cycle model vs the plugin at the fit: {sur:.2%} at most"
    )
    return {
        "rows": len(rows),
        "not_counted": len(failed),
        "shipped_median_abs_error": med_ship,
        "fitted_median_abs_error": med_fit,
        "loo_median_abs_error": med_loo,
        "old_release_rows": sum(r.info["version_match"] == "old" for r in rows),
        "rows_in_doubt": sum(r.info["version_match"] == "doubt" for r in rows),
        "surrogate_error": sur,
        "parameters": params,
        "met": med_loo <= TARGET,
        "row_errors": [
            {"row": r.label, "shipped": sh, "fitted": e, "loo": le, **r.info}
            for r, e, le, sh in zip(rows, fitted, loo, shipped)
        ],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min-rows", type=int, default=10, help="boards with at least this many matched rows")
    ap.add_argument("--only", help="only this board id")
    ap.add_argument("--json", help="write the per-row and per-board figures here")
    a = ap.parse_args()
    run, _skipped = DB.plan_rows(DB.load(), a.only)
    by_board: dict[str, list[dict]] = defaultdict(list)
    for r in run:
        by_board[r["board"]].append(r)
    boards = {k: v for k, v in by_board.items() if len(v) >= a.min_rows}
    print(
        f"boards with >= {a.min_rows} matched rows: " + ", ".join(f"{k} ({len(v)})" for k, v in boards.items()),
        file=sys.stderr,
    )
    summary: dict[str, dict] = {}
    series: dict[str, dict] = {}
    apart: dict[str, str] = {}
    ok = bool(boards)
    for board, rs in boards.items():
        rows, failed, dev = board_rows(rs)
        if len(rows) < 2 or dev.timing is None:
            print(f"\n{board}: {len(rows)} rows counted ({len(failed)} not): too few to hold one out")
            for r in failed[:5]:
                print(f"  not counted: {r['operation']} [{r['config']}]: {r['failed'][:160]}")
            ok = False
            continue
        summary[board] = evaluate(board, rows, dev, failed, "all matched rows")
        same = [r for r in rows if r.info["version_match"] in ("exact", "nearest")]
        if len(same) == len(rows):
            series[board] = summary[board]
        elif len(same) >= a.min_rows:
            series[board] = evaluate(
                board, same, dev, [], "rows of the release series built (no 4.x logs, no rows in doubt)"
            )
        else:
            apart[board] = (
                f"{len(rows) - len(same)} of its {len(rows)} rows are of an older release series or in doubt, "
                f"{len(same)} of the series built (fewer than {a.min_rows})"
            )
    ok &= bool(series) and all(v["met"] for v in series.values())
    for label, res in (("all matched rows", summary), ("release series built only", series)):
        pooled = [abs(x["loo"]) for v in res.values() for x in v["row_errors"] if x["loo"] is not None]
        shipped = [abs(x["shipped"]) for v in res.values() for x in v["row_errors"]]
        if pooled:
            print(
                f"\npooled, {label}: {len(res)} boards, {len(pooled)} held-out rows: median |error| "
                f"{statistics.median(pooled):.1%} (shipped profiles: {statistics.median(shipped):.1%})"
            )
        print(
            f"per board, {label} (held-out median |error|, target <= 8 %): "
            + ", ".join(f"{k} {v['loo_median_abs_error']:.1%} ({v['rows']} rows)" for k, v in res.items())
        )
    if apart:
        print(f"\nreported apart, not judged ({UNBUILT}):")
        for k, why in apart.items():
            print(f"  {k}: {why}; held out on all its rows {summary[k]['loo_median_abs_error']:.1%}")
    print(f"targets (judged on the rows of the release series built) {'met' if ok else 'NOT met'}")
    if a.json:
        Path(a.json).write_text(
            json.dumps(
                {"boards": summary, "release_series_only": series, "apart": apart, "apart_reason": UNBUILT},
                indent=1,
                default=str,
            )
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
