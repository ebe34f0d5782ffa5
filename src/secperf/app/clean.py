"""`secperf clean`: remove whatever dead secperf runs left behind -- processes, network namespaces
(links' and the VPN lab's), the registry files of the runs -- and mark their results abandoned."""

from __future__ import annotations

import json
from pathlib import Path

from ..core.errors import SecperfError
from ..core.store import RunStore, known_roots
from ..lab import netns, registry, vpn
from .reporter import Lines


def clean(as_json: bool = False, results: list[str] | None = None) -> str:
    """Remove what dead runs left; what was removed, as JSON or as lines for a person. A result it
    cannot mark (a full or read-only file system) is listed under `results_unwritable` with its
    reason and the sweep goes on to the next; the summary is printed whatever failed."""

    runs = registry.clean_dead()
    # namespaces of dead owners that no registry lists (older versions, a registry file lost)
    swept = netns.sweep_stale() + (vpn.sweep_stale() if not netns.rootless() else [])
    # results directories: those of the dead runs' registries, every one a run was ever written to
    # (noted in $SECPERF_HOME: found after the watchdog removed the registry), ./results, --results
    roots = {Path(d).parent.resolve() for run in runs for d in run.get("run_dirs", [])}
    roots |= {r.resolve() for r in known_roots()} | {Path(r).resolve() for r in (results or [])}
    roots.add(Path("results").resolve())
    abandoned: list[str] = []
    unwritable: list[dict[str, str]] = []  # roots or files it could not mark: said, and the sweep goes on
    for root in sorted(roots):
        try:
            if not root.is_dir():
                continue
            store = RunStore(root)
            abandoned += [str(p) for p in store.abandoned()]
            unwritable += [{"path": str(p), "reason": why} for p, why in store.unwritable]
        except (OSError, SecperfError) as exc:
            unwritable.append({"path": str(root), "reason": str(exc) or type(exc).__name__})
    summary = {
        "runs": runs,
        "namespaces_swept": swept,
        "results_abandoned": abandoned,
        "results_unwritable": unwritable,
    }
    if as_json:
        return json.dumps(summary, indent=1) + "\n"
    say = Lines()
    procs = sum(len(r["processes"]) for r in runs)
    nss = sum(len(r["namespaces"]) for r in runs) + len(swept)
    say(
        f"dead runs cleaned: {len(runs)}; processes stopped: {procs}; namespaces removed: {nss}; "
        f"abandoned results: {len(abandoned)}"
    )
    if unwritable:
        say(f"could not mark {len(unwritable)} result(s) (the rest were cleaned):")
    for u in unwritable:
        say(f"  not writable: {u['path']}: {u['reason']}")
    for p in abandoned:
        say(f"  abandoned (its process died before it finished): {p}")
    for r in runs:
        owner = r.get("owner") or {}
        ports = ", ".join(f"{p.get('what')} {p.get('proto')}/{p.get('port')}" for p in r.get("ports", []))
        say(
            f"  run of pid {owner.get('pid')}: stopped {r['processes'] or 'nothing'}, namespaces "
            f"{r['namespaces'] or 'none'}" + (f"; its ports were {ports}" if ports else "")
        )
    for name in swept:
        say(f"  stale namespace removed: {name}")
    return say.text()
