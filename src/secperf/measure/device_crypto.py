"""Single primitive operations counted on an emulated core (`secperf device crypto`): the keygen,
derive, sign, verify, AEAD and hash operations a stack's build counts, each in a guest run of the
device client's `--crypto` mode, instructions (and the timing model's cycles) between the
OP_BEGIN/OP_END markers; the first operation is the cold one, the rest warm."""

from __future__ import annotations

import json
import statistics
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..core import result as R
from ..core.errors import InputError, MeasurementError
from ..core.result_schema import DeviceCryptoDerived, DeviceTime, Series
from ..inputs.core_profiles import Core
from ..lab import registry
from ..lab.pki import LabPKI
from . import device_attrib as A
from . import device_timing as T
from .device_build import Build, ensure_built, op_footprint
from .device_plan import RUN_TIMEOUT_S, build_labels, check_stacks, qemu_cpu, split_values, stack_tag, target_for


def check_ops(ops: str | Iterable[str], build: Build, stack: str) -> list[str]:
    """--op values this stack's build counts (InputError naming the known ones otherwise)."""
    known = list(build.crypto_ops)
    if not known:
        raise InputError(f"--stack {stack}: this build has no primitive counts")
    return split_values(ops, "op", known)


def route_ops(
    ops: str | Iterable[str], builds: dict[tuple[str, str | None], Build]
) -> dict[tuple[str, str | None], list[str]]:
    """--op values spread over several stacks' builds: each build runs the operations it counts (an
    operation two stacks count runs on both: a comparison); a build that counts none of them runs
    nothing. An operation no build counts is an InputError naming each stack's operations."""
    names = list(
        dict.fromkeys(v.strip().lower() for v in (ops.split(",") if isinstance(ops, str) else ops) if v.strip())
    )
    if not names:
        raise InputError("--op: give at least one operation (`secperf device crypto --stack S` counts all of them)")
    counted = {k: list(b.crypto_ops) for k, b in builds.items()}
    if not any(counted.values()):
        raise InputError(
            f"--stack {', '.join(dict.fromkeys(s for s, _ in builds))}: these builds have no primitive counts"
        )
    missing = [n for n in names if not any(n in known for known in counted.values())]
    if missing:
        have = "; ".join(f"{stack_tag(s, b)}: {', '.join(counted[(s, c)]) or 'none'}" for (s, c), b in builds.items())
        raise InputError(
            f"--op {', '.join(missing)}: no stack given counts {'it' if len(missing) == 1 else 'them'}; "
            f"operations per stack: {have}"
        )
    return {k: [n for n in names if n in counted[k]] for k in builds}


def measure_crypto(
    dev: Core,
    stack: str,
    ops: list[str] | None,
    n: int,
    build: Build | None = None,
    build_config: str | None = None,
    timed: bool = True,
) -> list[Series]:
    """Instruction counts of single primitive operations (keygen, derive, sign, verify, AEAD, hash)."""
    device = dev.name
    check_stacks(stack, dev)
    build = build or ensure_built(stack, target_for(dev), build_config)
    known = list(build.crypto_ops)
    if not known:
        raise InputError(f"--stack {stack}: this build has no primitive counts")
    ops = split_values(ops, "op", known) if ops else known
    out = []

    pem = LabPKI().ensure().server("rsa-2048")  # the RSA and certificate operations' inputs (the lab leaf)
    with tempfile.TemporaryDirectory(prefix="secperf-device-") as tmp:
        for op in ops:
            ev = Path(tmp) / f"ops-{op}.txt"
            argv = [
                build.qemu,
                "-cpu",
                qemu_cpu(dev, build),
                "-plugin",
                f"{build.plugin},out={ev}{T.plugin_arg(dev, build.client, Path(tmp), timed)}",
                str(build.client),
                "--crypto",
                op,
                "--n",
                str(n + 1),
                "--cert",
                str(pem.cert),
                "--key",
                str(pem.key),
            ]
            try:
                p = registry.run(argv, "qemu device emulator", capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
            except subprocess.TimeoutExpired as exc:  # registry.ChildTimeout: a failed series with the reason
                p = subprocess.CompletedProcess(argv, -9, "", str(exc))
            s = R.new_series(
                f"device-crypto/{device}/{stack_tag(stack, build)}/{op}",
                kind="device_crypto",
                labels={
                    "device": device,
                    "stack": stack,
                    "library": build.library,
                    "op": op,
                    "qemu_cpu": qemu_cpu(dev, build),
                    "build_target": build.target,
                    **build_labels(build),
                },
                timer={
                    "name": "guest instructions per operation",
                    "start": "marker OP_BEGIN",
                    "end": "marker OP_END",
                    "unit": "instructions",
                },
            )
            cycles: list[T.Cycles3] = []
            classes: list[dict[str, Any]] = []
            try:
                events = A.read_events(ev)[1]
                counts = [c for _, c in A.op_counts(events)]
                if events and events[0].timed is not None:
                    per_set = [[c for _, c in A.op_counts(A.in_cycles(events, k))] for k in range(3)]
                    cycles = list(zip(per_set[0], per_set[1], per_set[2]))
                    classes = A.op_classes(events)
            except MeasurementError as exc:
                counts = []
                R.add_failure(s, str(exc))
            if p.returncode != 0 or not counts:
                R.add_failure(s, f"exit {p.returncode}: {p.stdout.strip()[-300:]} {p.stderr.strip()[-300:]}")
            if counts:
                warm = counts[1:] or counts
                med = statistics.median(warm)
                s.samples = [
                    {
                        "i": i,
                        "instructions": c,
                        "phase": "cold" if i == 0 else "warm",
                        **({"cycles": list(cycles[i])} if i < len(cycles) else {}),
                    }
                    for i, c in enumerate(counts)
                ]
                line: dict[str, Any] = next(
                    (json.loads(x) for x in p.stdout.splitlines() if x.startswith('{"crypto"')), {}
                )
                d = DeviceCryptoDerived(
                    instructions_cold=counts[0],
                    instructions_median=med,
                    # the deepest stack the operation's repetitions wrote (painted, marker call incl.)
                    stack_bytes_max=line.get("stack_bytes"),
                    derived_ms={
                        **T.cpi_ms(dev, med),
                        "clock_mhz": dev.clock_mhz,
                        "cpi": list(dev.cpi),
                        "cpi_estimate": dev.cpi_estimate,
                    },
                )
                warm_cyc = cycles[1:] or cycles
                if warm_cyc:
                    # where the cycles come from: the last (warm) operation's classes and stall events
                    d.time = DeviceTime.model_validate(
                        {
                            **T.figure(T.median3(warm_cyc), dev),
                            **T.model_note(dev),
                            "counters": classes[-1] if classes else {},
                        }
                    )
                    d.time_cold = T.figure(cycles[0], dev)
                if line.get("check"):  # what the guest checked of the results outside the markers
                    d.check = line["check"]

                fp = op_footprint(build, op) or build.footprint  # the scheme's code (PQClean), else the library's
                if fp:
                    d.footprint = fp
                s.derived = d
                s.status = "partial" if s.failures else "ok"
            else:
                s.status = "failed"
            out.append(s)
    return out
