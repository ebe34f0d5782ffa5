"""CSV export (`--csv FILE`): every number of a Result in tidy long format, one row per
observation, for spreadsheets, pandas and R.

The scheme is the same for every Result kind (core/observations.py decides what a kind's numbers
are and what they are called):

    kind,id,<the kind's identifying columns>,metric,statistic,value,unit

- `kind` is the series kind (crypto, handshake, signer, jwt, connect, server, whatif, device,
  cortexm) or the analysis (can, fleet, plan); `id` the series id or a stable row id.
- the identifying columns are the kind's own words, e.g. handshake:
  server,tls,proto,mode,ciphersuites,groups,cert_type,mtls,network; server:
  server,protocol,tls,key,key_source,client_auth,resume_ratio,chain_depth,concurrency,offered_per_s;
  plan: pattern,design,measures,verdict. A Result holding several kinds (a scenario run, `mac`)
  gets the union of their columns, in order of appearance; a column a row's kind does not have is empty.
- `metric` names the quantity (handshake_wall, server_cpu_per_handshake, handshakes_per_s,
  connection_setup, instructions, time_all_back...), `statistic` which summary of it (n, mean, sd,
  min, p50, p90, p95, p99, max, p50_ci95_lo/hi, value for a single number), `unit` its unit (us, ms,
  s, 1/s, bytes, J, mJ, ratio, count, instructions, cycles, bool).
- `value` is always a number: a statistic the Result does not hold is left out, never written
  empty. A Result with no number at all (every series failed before its first sample) is an
  export error naming why, not an empty file.

Why long rather than one wide row per series: the kinds share no common set of columns (a plan
has no P50 of a timer, a device has instruction counts), and a long table filters and pivots the
same way for every kind (`df.pivot_table(index="id", columns=["metric", "statistic"])`).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from ..core.errors import OutputError
from ..core.observations import ID_COLUMNS, Observation, observations
from ..core.result_schema import Result
from ..core.writes import atomic_write

HEAD = ["kind", "id"]
TAIL = ["metric", "statistic", "value", "unit"]


def columns(obs: list[Observation]) -> list[str]:
    cols: list[str] = []
    for kind in dict.fromkeys(o["kind"] for o in obs):
        for c in ID_COLUMNS.get(kind, ()):
            if c not in cols and c not in HEAD and c not in TAIL:
                cols.append(c)
    return HEAD + cols + TAIL


def rows(doc: Result) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for o in observations(doc):
        out.append(
            {
                "kind": o["kind"],
                "id": o["id"],
                **o["labels"],
                "metric": o["metric"],
                "statistic": o["statistic"],
                "value": repr(o["value"]) if o["value"] != int(o["value"]) else str(int(o["value"])),
                "unit": o["unit"],
            }
        )
    return out


def nothing_to_export(doc: Result) -> str:
    """Why a Result holds no number, in one line (failed series name their reason)."""
    failed = [s for s in doc.series if s.failures]
    if failed:
        s = failed[0]
        return (
            f"every series of this {doc.kind} Result failed before its first sample "
            f"(first: {s.id}: {s.failures[-1].reason[:200]})"
        )
    if doc.params.get("mqtt_load") is True:  # written before mqtt-load kept series (schema version 3), or failed
        broke = (doc.analysis.mqtt_load or {}).get("failed")
        if broke:
            return f"this mqtt-load run failed before its first phase ({str(broke)[:200]})"
        return (
            f"this mqtt-load Result (schema version {doc.schema_version}) holds no series: it was written before "
            "mqtt-load kept them; `secperf report` shows its figures, a new run exports them"
        )
    return f"this {doc.kind} Result holds no series and no analysis with numbers"


def to_csv(doc: Result) -> str:
    obs = rows(doc)
    if not obs:
        raise OutputError(f"--csv: nothing to export: {nothing_to_export(doc)}")
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=columns(observations(doc)), lineterminator="\n", restval="")
    w.writeheader()
    for r in obs:
        w.writerow(r)
    return buf.getvalue()


def write_csv(doc: Result, path: Path) -> None:
    text = to_csv(doc)  # an empty export is said before anything is written
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass  # atomic_write names the reason
    atomic_write(path, text, what="--csv")
