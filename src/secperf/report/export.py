"""CSV export: one row per series with its summary, for spreadsheets and other tools."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from ..core.store import atomic_write

FIELDS = ["id", "alg", "op", "family", "size_bytes", "security_bits", "status", "n", "mean_us", "sd_us",
          "min_us", "p50_us", "p90_us", "p99_us", "max_us", "p50_ci95_lo_us", "p50_ci95_hi_us",
          "cpu_p50_us", "ops_per_s", "bytes_per_s", "ns_per_byte", "library", "failure"]


def rows(doc: dict) -> list[dict]:
    out = []
    for s in doc["series"]:
        lab, sm, d = s["labels"], s["summary"] or {}, s["derived"]
        ci = sm.get("median_ci95_us") or [None, None]
        out.append({
            "id": s["id"], "alg": lab.get("alg"), "op": lab.get("op"), "family": lab.get("family"),
            "size_bytes": lab.get("size_bytes"), "security_bits": lab.get("security_bits"),
            "status": s["status"], "n": sm.get("n", 0),
            **{k: sm.get(k) for k in ("mean_us", "sd_us", "min_us", "p50_us", "p90_us", "p99_us", "max_us")},
            "p50_ci95_lo_us": ci[0], "p50_ci95_hi_us": ci[1],
            "cpu_p50_us": (s.get("cpu_summary") or {}).get("p50_us"),
            "ops_per_s": d.get("ops_per_s"), "bytes_per_s": d.get("bytes_per_s"),
            "ns_per_byte": d.get("ns_per_byte"), "library": lab.get("library"),
            "failure": s["failures"][-1]["reason"] if s["failures"] else "",
        })
    return out


def to_csv(doc: dict) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=FIELDS, lineterminator="\n")
    w.writeheader()
    for r in rows(doc):
        w.writerow(r)
    return buf.getvalue()


def write_csv(doc: dict, path: Path) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError:
        pass  # atomic_write names the reason
    atomic_write(path, to_csv(doc), what="--csv")
