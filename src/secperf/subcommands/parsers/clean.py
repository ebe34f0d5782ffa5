"""`secperf clean`: remove what dead secperf runs left (processes, namespaces, registry files)."""

from __future__ import annotations

import argparse

NAME = "clean"

HELP = (
    "stop processes and delete network namespaces left by secperf runs that died (kill -9, OOM); "
    "mark their results abandoned"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print what was removed as JSON")
    p.add_argument(
        "--results",
        action="append",
        metavar="DIR",
        help="also look for abandoned runs in this results "
        "directory (default: ./results and every directory secperf has written runs to)",
    )
