"""The native tools' and workers' output: one JSON object per line, each with a "type".

Declared once here, read by one function. The producers: secperf-probe (speed/sign/client/server),
secperf-netem (the link relay), the secure-element shim's call log (one object per PKCS#11 call, no
"type"), and secperf's own worker processes (signer_worker, paho_client)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

# type -> who writes it and what it carries
MESSAGE_TYPES = {
    "meta": "probe: library, version and settings of the run",
    "row": "probe speed: the series being measured (algorithm, operation, size)",
    "sample": "probe speed / worker: one timed batch (wall and CPU ns, operations)",
    "end": "probe / worker: the series or run finished",
    "error": "any producer: a failure with its `reason`",
    "conn": "probe client / paho worker: one connection with its phases and per-message CPU",
    "server_conn": "probe server: one served connection",
    "listening": "probe server / JWT endpoint: the port it listens on",
    "iter": "signer / JWT worker: one timed iteration (start_ns, end_ns, ok, reason)",
    "signature": "probe sign: a signature for the verification cross-check",
    "list": "probe list: what the probe's OpenSSL offers",
    "ready": "netem relay: the TUN devices are up",
    "stats": "netem relay: packet and byte counters per direction",
    "flood": "netem flood: a load generator's counters",
    "interval": "loadgen: counts and latency percentiles of one reporting interval",
    "server_summary": "probe server --concurrent: counts, resumed, the process CPU at the end",
}


def parse_line(line: str | bytes) -> dict[str, Any] | None:
    """One line as a JSON object, or None for a blank or non-JSON line (a tool's stray output)."""
    if isinstance(line, bytes):
        line = line.decode("utf-8", errors="replace")
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        msg = json.loads(line)
    except json.JSONDecodeError:
        return None
    return msg if isinstance(msg, dict) else None


def parse_lines(lines: str | Iterable[str]) -> Iterator[dict[str, Any]]:
    """Every JSON object in a text (or an iterable of lines), in order; other lines are skipped."""
    for line in lines.splitlines() if isinstance(lines, str) else lines:
        msg = parse_line(line)
        if msg is not None:
            yield msg


def of_type(lines: str | Iterable[str], *types: str) -> Iterator[dict[str, Any]]:
    """The objects whose "type" is one of `types`."""
    for msg in parse_lines(lines):
        if msg.get("type") in types:
            yield msg
