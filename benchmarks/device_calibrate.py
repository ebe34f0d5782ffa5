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
wolfSSL release older than the one built (4.x logs counted on 5.5.4) are marked with *.

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


def board_rows(rows: list[dict], progress: bool = True) -> tuple[list[C.Row], list[dict], C.Core]:
    """The board's rows counted on its core: (rows, rows not counted with the reason, the core)."""
    b = rows[0]
    info = b["board_info"]
    base = core_profile(b["profile"])
    dev = C.board_core(base, f"board-{b['board']}", float(info["clock_mhz"]), int(info.get("flash_wait_states", 0)))
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["stack"], r["config"])].append(r)
    out, failed = [], []
    for (stack, config), rs in groups.items():
        ops = sorted({r["op"] for r in rs})
        say = (lambda s: print(f"  counting {b['board']}: {s}", file=sys.stderr)) if progress else None
        try:
            counts, missing = C.count_ops(dev, stack, config, ops, progress=say)
        except Exception as exc:  # a build that fails here: its rows are listed, not dropped
            counts, missing = {}, {op: str(exc).splitlines()[0][:200] for op in ops}
        for r in rs:
            if r["op"] in missing:
                failed.append({**r, "failed": missing[r["op"]]})
                continue
            mark = {"exact": "", "nearest": "~", "old": "*"}[r["version_match"]]
            label = f"{r['operation']}{mark} {r['library']} {r['version']} [{config or 'default'}]"
            out.append(C.Row(label, r["published_ms"] * float(info["clock_mhz"]) * 1e3, (r["op"],),
                             [counts[r["op"]]], {"i": r["i"], "version_match": r["version_match"]}))
    return out, failed, dev


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
    print(f"boards with >= {a.min_rows} matched rows: "
          + ", ".join(f"{k} ({len(v)})" for k, v in boards.items()), file=sys.stderr)
    summary, pooled, pooled_shipped, out_rows = {}, [], [], []
    ok = bool(boards)
    for board, rs in boards.items():
        rows, failed, dev = board_rows(rs)
        t = dev.timing
        if len(rows) < 2 or t is None:
            print(f"\n{board}: {len(rows)} rows counted ({len(failed)} not): too few to hold one out")
            ok = False
            continue
        f = C.fit(rows, t)
        loo = C.leave_one_out(rows, t)
        shipped = [r.point / r.published_cycles - 1 for r in rows]
        print(f"\n{board} ({dev.clock_mhz:g} MHz, {dev.flash_wait_states} WS, model of {rs[0]['profile']}): "
              f"{len(rows)} rows counted")
        print(f"  {'row':60} {'shipped':>8} {'fitted':>8} {'held out':>9}")
        for r, e, le, s in zip(rows, f.errors, loo, shipped):
            print(f"  {r.label[:60]:60} {s:+8.1%} {e:+8.1%} {le:+9.1%}")
            out_rows.append({"board": board, "row": r.label, "published_cycles": r.published_cycles,
                             "shipped_error": s, "fitted_error": e, "loo_error": le, **r.info})
        for r in failed:
            print(f"  not counted: {r['operation']} [{r['config']}]: {r['failed'][:100]}")
        med_loo = statistics.median(abs(x) for x in loo if x is not None)
        med_ship = statistics.median(abs(x) for x in shipped)
        params = {k: (f.bounds[k][1], v, f.bounds[k][0], f.bounds[k][2]) for k, v in f.params.items()}
        moved = "; ".join(f"{k} {old:g} -> {new:.3g} [{lo:g}, {hi:g}]" for k, (old, new, lo, hi) in params.items())
        print(f"  median |error|: shipped {med_ship:.1%}, fitted (in sample) {f.median_abs_error:.1%}, held out "
              f"{med_loo:.1%} (target <= {TARGET:.0%}) {'met' if med_loo <= TARGET else 'NOT met'}")
        print(f"  full fit: {moved or 'nothing to fit'}; not fitted: {', '.join(f.fixed) or 'none'}; linear model "
              f"vs plugin at the high ends: {C.surrogate_error(rows, t):.2%}")
        summary[board] = {"rows": len(rows), "not_counted": len(failed), "shipped_median_abs_error": med_ship,
                          "fitted_median_abs_error": f.median_abs_error, "loo_median_abs_error": med_loo,
                          "old_release_rows": sum(r.info["version_match"] == "old" for r in rows),
                          "parameters": params, "met": med_loo <= TARGET}
        ok &= med_loo <= TARGET
        pooled += [abs(x) for x in loo if x is not None]
        pooled_shipped += [abs(x) for x in shipped]
    if pooled:
        print(f"\npooled over {len(summary)} boards, {len(pooled)} held-out rows: median |error| "
              f"{statistics.median(pooled):.1%} (shipped profiles: {statistics.median(pooled_shipped):.1%})")
    print("\nper board (held-out median |error|, target <= 8 %): " + ", ".join(
        f"{k} {v['loo_median_abs_error']:.1%}" for k, v in summary.items()))
    print(f"targets {'met' if ok else 'NOT met'}")
    if a.json:
        Path(a.json).write_text(json.dumps({"boards": summary, "rows": out_rows,
                                            "pooled_loo_median_abs_error": statistics.median(pooled) if pooled
                                            else None}, indent=1, default=str))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
