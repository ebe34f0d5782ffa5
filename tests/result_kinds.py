"""Small Results of every kind, for the export and compare tests.

The model kinds (whatif, plan, fleet, can) and crypto are real runs of the CLI (each well under a
few seconds). The kinds that need servers, a token or QEMU (handshake, signer, jwt, connect,
server, device, mac's Cortex-M counts) are written here with the series shape and labels their
measure modules write (measure/handshake.py, signer.py, connect.py, server.py, device.py,
cortexm.py) and seeded values: export and compare read nothing else of a Result.
`shift` scales every timed value (and divides rates), so a test knows the change it must find.
"""

from __future__ import annotations

import contextlib
import io
import json
import random

from secperf.core import result as R
from secperf.core.result_schema import (
    ConnectDerived,
    CortexmDerived,
    DeviceCryptoDerived,
    DeviceDerived,
    HandshakeDerived,
    JwtDerived,
    ServerDerived,
)

TIMER = {"name": "t", "start": "a named start", "end": "a named end"}


def _doc(kind: str, run_id: str) -> R.Result:
    return R.new_result(kind=kind, command=["secperf", kind], params={}, host={"cpu_model": "test"}, run_id=run_id)


def _values(n: int, centre: float, spread: float, seed: int, shift: float) -> list[float]:
    rng = random.Random(seed)
    return [rng.gauss(centre, spread) * shift for _ in range(n)]


def _measured(
    kind: str, sid: str, labels: dict, n: int, centre: float, seed: int, shift: float, cpu: bool = True
) -> R.Series:
    s = R.new_series(sid, kind=kind, labels=labels, timer=TIMER)
    s.values_us = _values(n, centre, centre * 0.05, seed, shift)
    if cpu:
        s.cpu_values_us = _values(n, centre / 3, centre * 0.02, seed + 1, shift)
    return R.finalize_series(s)


def handshake(run_id="h", n=40, shift=1.0, seed=1) -> R.Result:
    doc = _doc("handshake", run_id)
    for i, (mode, net) in enumerate((("full", "loopback"), ("resume-ticket", "lte-m"))):
        lab = {
            "label": f"tls1.3 {mode}",
            "server": "probe",
            "tls": "1.3",
            "proto": "tls",
            "mode": mode,
            "ciphersuites": "TLS_AES_128_GCM_SHA256",
            "groups": "x25519",
            "cert_type": "ecdsa-p256",
            "mtls": False,
            "network": net,
        }
        s = _measured("handshake", f"handshake/probe/tls1.3 {mode} @ {net}", lab, n, 2000.0 + 500 * i, seed + i, shift)
        s.derived = HandshakeDerived(tcp_connect_p50_us=80.0, wait_p50_us=900.0 * shift, server_cpu_p50_us=700.0)
        doc.series.append(s)
    return R.finish(doc)


def signer(run_id="s", n=30, shift=1.0, seed=1) -> R.Result:
    doc = _doc("signer", run_id)
    for i, mode in enumerate(("sign_only", "total")):
        lab = {"profile": "iot-safe-sim", "key_type": "ecdsa-p256", "mode": mode, "message_bytes": 32}
        doc.series.append(
            _measured(
                "signer",
                f"signer/iot-safe-sim/ecdsa-p256/{mode}",
                lab,
                n,
                475_000.0 + 200_000 * i,
                seed + i,
                shift,
                cpu=False,
            )
        )
    return R.finish(doc)


def jwt(run_id="j", n=30, shift=1.0, seed=1) -> R.Result:
    doc = _doc("jwt", run_id)
    lab = {
        "profile": "iot-safe-sim",
        "key_type": "ecdsa-p256",
        "mode": "fresh",
        "lifetime_s": 3600,
        "network": "loopback",
        "key_session": "warm",
    }
    s = _measured("jwt", "jwt/iot-safe-sim/ecdsa-p256/fresh", lab, n, 480_000.0, seed, shift)
    s.derived = JwtDerived(sign_p50_us=476_000.0 * shift, request_p50_us=4000.0)
    doc.series.append(s)
    return R.finish(doc)


def connect(run_id="c", n=30, shift=1.0, seed=1) -> R.Result:
    doc = _doc("connect", run_id)
    lab = {
        "protocol": "mqtt",
        "client": "probe",
        "key_source": "se:iot-safe-sim",
        "handshake": "full",
        "auth": "mtls",
        "tls": "1.3",
        "server": "mosquitto",
        "network": "loopback",
    }
    s = _measured("connect", "connect/mqtt/probe/se:iot-safe-sim/full", lab, n, 490_000.0, seed, shift)
    s.derived = ConnectDerived(
        resumed=0,
        phases_p50_us=[
            {"phase": "socket connect", "p50_us": 40.0},
            {"phase": "secure element", "p50_us": 476_000.0 * shift},
        ],
    )
    doc.series.append(s)
    return R.finish(doc)


def server(run_id="v", shift=1.0, intervals=3, seed=1, noise=0.01) -> R.Result:
    """A server series as measure/server.py writes it: per-interval CPU per handshake in values_us,
    the generator's interval lines in samples, the level's totals in derived."""
    doc = _doc("server", run_id)
    rng = random.Random(seed)
    lab = {
        "server": "nginx",
        "key": "rsa-2048",
        "key_source": "software",
        "client_auth": False,
        "resume_ratio": 0.0,
        "chain_depth": 1,
        "tls": "1.3",
        "protocol": "tls",
        "concurrency": 4,
        "loop": "closed",
        "offered_per_s": None,
    }
    s = R.new_series("server/nginx/rsa-2048/software/auth-off/resume-0/d1@c4", kind="server", labels=lab, timer=TIMER)
    hs_total, lines = 0, []
    for i in range(intervals):
        hs = int(rng.gauss(400, 400 * noise) / shift)
        hs_total += hs
        p95 = rng.gauss(20.0, 20.0 * noise) * shift
        lines.append(
            {
                "type": "interval",
                "proc": 0,
                "t_s": float(i + 1),
                "handshakes": hs,
                "failed": 0,
                "p50_ms": p95 * 0.6,
                "p95_ms": p95,
                "p99_ms": p95 * 1.2,
            }
        )
    s.samples = lines
    s.values_us = [rng.gauss(2500.0, 2500.0 * noise) * shift for _ in range(intervals)]
    s.derived = ServerDerived.model_validate(
        {
            "handshakes": hs_total,
            "full": hs_total,
            "resumed": 0,
            "failed": 0,
            "errors": {},
            "elapsed_s": float(intervals),
            "handshakes_per_s": hs_total / intervals,
            "started_per_s": hs_total / intervals,
            "resumed_share": 0.0,
            "server_utilisation": 0.97,
            "server_cpu_us_per_handshake": 2500.0 * shift,
            "loadgen_cpu_us_per_handshake": 2400.0,
            "latency_ms": {
                "p50_ms": 12.0 * shift,
                "p90_ms": 18.0,
                "p95_ms": 20.0 * shift,
                "p99_ms": 24.0,
                "max_ms": 31.0,
            },
            "handshake_ms": {"p50_ms": 9.0, "p95_ms": 15.0, "p99_ms": 19.0},
            "split": {"total_us": 2500.0, "key_op_us": 1400.0, "rest_us": 1100.0},
        }
    )
    doc.series.append(R.finalize_series(s))
    return R.finish(doc)


def device(run_id="d", shift=1.0) -> R.Result:
    """A device series as measure/device.py writes it: instruction counts per handshake under QEMU
    (exact, so deterministic), the timing model's cycles and milliseconds, the footprint."""
    doc = _doc("device", run_id)
    lab = {
        "device": "cortex-m33-128",
        "stack": "wolfssl",
        "tls": "1.3",
        "group": "x25519",
        "suite": "aes128gcm",
        "mode": "full",
        "server_cert": "ecdsa-p256",
        "client_cert": "none",
        "phase": "warm",
        "config": "sp-asm",
    }
    s = R.new_series(
        "device/cortex-m33-128/wolfssl/tls1.3/x25519/aes128gcm/full/ecdsa-p256/warm",
        kind="device",
        labels=lab,
        timer={**TIMER, "unit": "instructions"},
    )
    ins = int(30_000_000 * shift)
    s.samples = [{"handshake": i + 1, "instructions": ins} for i in range(3)]
    s.derived = DeviceDerived.model_validate(
        {
            "instructions_median": ins,
            "instructions_min": ins,
            "instructions_max": ins,
            "app_instructions_median": 400_000,
            "stack_bytes_max": 2340,
            "time": {
                "cycles": int(ins * 1.3),
                "cycles_low": int(ins * 1.2),
                "cycles_high": int(ins * 1.5),
                "ms": ins * 1.3 / 128e3,
                "ms_low": ins * 1.2 / 128e3,
                "ms_high": ins * 1.5 / 128e3,
            },
            "footprint": {"flash": 322_995, "ram_static": 31_116},
        }
    )
    s.status = "ok"
    doc.series.append(s)
    c = R.new_series(
        "device-crypto/cortex-m33-128/wolfssl/sign",
        kind="device_crypto",
        labels={"device": "cortex-m33-128", "stack": "wolfssl", "op": "sign", "config": "sp-asm"},
        timer={**TIMER, "unit": "instructions"},
    )
    c.derived = DeviceCryptoDerived.model_validate(
        {"instructions_cold": int(9e6 * shift), "instructions_median": int(8e6 * shift), "stack_bytes_max": 1900}
    )
    c.status = "ok"
    doc.series.append(c)
    return R.finish(doc)


def mac(run_id="m", shift=1.0) -> R.Result:
    """Cortex-M instruction counts (measure/cortexm.py's series) and the real CAN model."""
    from secperf.app.can import CanOptions, can_analysis

    doc = _doc("mac", run_id)
    for size in (8, 64):
        lab = {
            "target": "m3",
            "cpu": "cortex-m3",
            "mac": "chaskey",
            "op": "mac",
            "size_bytes": size,
            "unit": "instructions",
        }
        s = R.new_series(f"cortexm/m3/chaskey/mac/{size}", kind="cortexm", labels=lab, timer=TIMER)
        ins = int((300 + 17 * size) * shift)
        s.derived = CortexmDerived(instructions=ins, stack_bytes=92, instructions_per_byte=ins / size)
        s.status = "ok"
        doc.series.append(s)
    doc.analysis.can = can_analysis(CanOptions(), "rl78", "chaskey")
    return R.finish(doc)


def cli(argv: list[str], out) -> dict:
    """A real run of the CLI in this process; its Result from --json."""
    from secperf.cli import main

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main([*argv, "--no-report", "--out", str(out), "--json"])
    assert rc == 0, (argv, rc)
    return json.loads(buf.getvalue())


REAL = {
    "crypto": ["crypto", "--alg", "sha256", "--op", "hash", "--size", "16", "--n", "3", "--duration", "0.2"],
    "whatif": ["whatif", "https", "--n", "300"],
    "plan": ["plan", "--n", "100", "--pattern", "periodic-collection,real-time-control"],
    "fleet": ["fleet", "--devices", "100", "--capacity", "100"],
    "can": ["can"],
}
BUILT = {
    "handshake": handshake,
    "signer": signer,
    "jwt": jwt,
    "connect": connect,
    "server": server,
    "device": device,
    "mac": mac,
}
KINDS = sorted([*REAL, *BUILT])
