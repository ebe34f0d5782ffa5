"""`secperf clean`: remove what dead secperf runs left (processes, namespaces, registry files)."""

from __future__ import annotations

NAME = "clean"
HELP = ("stop processes and delete network namespaces left by secperf runs that died (kill -9, OOM); "
        "mark their results abandoned")


def add_arguments(p) -> None:
    p.add_argument("--json", action="store_true", help="print what was removed as JSON")


def run(args) -> int:
    from ..app.clean import clean
    return clean(args.json)
