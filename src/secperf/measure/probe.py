"""Running secperf-probe (the native tool) and reading its JSON lines as they arrive."""

from __future__ import annotations

import selectors
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import MeasurementError
from ..core.jsonlines import parse_line, parse_lines
from ..core.native import PROBE_NAME as PROBE_NAME  # re-exported: the measure modules name them as probe.X
from ..core.native import SHIM_NAME as SHIM_NAME
from ..core.native import ProbeNotFound as ProbeNotFound
from ..core.native import find_native as find_native
from ..core.native import find_probe as find_probe
from ..core.native import find_shim as find_shim
from ..core.paths import private_dir, secperf_home
from ..lab import registry


@dataclass
class ProbeRun:
    """What one probe invocation produced; `error` set means a failed sample with a reason."""

    meta: dict[str, Any] | None = None
    row: dict[str, Any] | None = None
    samples: list[dict[str, Any]] = field(default_factory=list)
    end: dict[str, Any] | None = None
    error: str | None = None
    unsupported: str | None = None  # the library lacks the row: its reason (other libraries' tools)
    returncode: int | None = None
    stderr: str = ""


def default_key_cache() -> Path:
    return secperf_home() / "keys"


ensure_private_dir = private_dir


def run_speed(
    args: list[str],
    *,
    setup_timeout_s: float,
    run_timeout_s: float,
    on_sample: Callable[[dict[str, Any]], object] | None = None,
    command: list[str] | None = None,
) -> ProbeRun:
    """Run `secperf-probe speed ARGS`; never raises for measurement problems.

    setup_timeout_s bounds the time until the row header (covers a first RSA-15360 key generation),
    run_timeout_s bounds the sampling after it. `command` runs another tool speaking the same
    protocol (measure/backends: wolfCrypt, Mbed TLS, Go, JMH) instead of the probe.
    """
    out = ProbeRun()
    try:
        argv = [*command, "speed"] if command else [str(find_probe()), "speed"]
        proc = registry.spawn(
            [*argv, *args], "probe speed", stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, bufsize=1
        )
    except (OSError, ProbeNotFound) as exc:
        out.error = f"could not start {PROBE_NAME}: {exc}"
        return out

    stdout, stderr = proc.stdout, proc.stderr
    if stdout is None or stderr is None:  # spawned with pipes: never
        proc.kill()
        proc.wait()
        registry.forget(proc)
        out.error = f"{PROBE_NAME} started without its output pipes"
        return out
    sel = selectors.DefaultSelector()
    sel.register(stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + setup_timeout_s
    buf = ""
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                phase = "sampling" if out.row else "set-up (key loading/generation)"
                out.error = f"timed out during {phase}"
                proc.kill()
                break
            if not sel.select(timeout=min(remaining, 1.0)):
                if proc.poll() is not None:
                    break
                continue
            line = stdout.readline()
            if not line:
                break
            line = line.strip()
            if not line:
                continue
            msg = parse_line(line)
            if msg is None:
                buf += line + "\n"
                continue
            kind = msg.get("type")
            if kind == "meta":
                out.meta = msg
            elif kind == "row":
                out.row = msg
                deadline = time.monotonic() + run_timeout_s
            elif kind == "sample":
                out.samples.append(msg)
                if on_sample:
                    on_sample(msg)
            elif kind == "end":
                out.end = msg
            elif kind == "error":
                out.error = msg.get("reason", "probe reported an error")
            elif kind == "unsupported":
                out.unsupported = msg.get("reason", "unsupported")
    finally:
        sel.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        registry.forget(proc)
        out.returncode = proc.returncode
        out.stderr = (stderr.read() or "").strip()
        stdout.close()
        stderr.close()
    if out.error is None and out.unsupported is None and out.returncode != 0:
        out.error = out.stderr.splitlines()[-1] if out.stderr else f"probe exited with {out.returncode}"
    if buf and out.error is None:
        out.error = f"probe printed a non-JSON line: {buf.splitlines()[0][:200]}"
    return out


def probe_json(args: list[str], timeout_s: float = 600) -> dict[str, Any]:
    """Run a one-shot probe command (list, sign, --version) and return its single JSON line."""
    proc = registry.run([str(find_probe()), *args], "probe", capture_output=True, text=True, timeout=timeout_s)
    if proc.returncode != 0:
        raise MeasurementError(
            proc.stderr.strip() or proc.stdout.strip() or f"{PROBE_NAME} {' '.join(args)} exited with {proc.returncode}"
        )
    for msg in parse_lines(proc.stdout):
        return msg
    raise MeasurementError(f"{PROBE_NAME} {' '.join(args)} printed nothing")
