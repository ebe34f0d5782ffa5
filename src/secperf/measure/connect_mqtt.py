"""MQTT's own clients in `secperf connect`: mosquitto_pub per connection (timed to its CONNACK
line, minus its process start-up) and paho-mqtt in a worker process (timed in-process)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..core import result as R
from ..core.jsonlines import parse_lines
from ..core.paths import write_private
from ..core.result_schema import Series
from ..lab import registry
from ..lab.pki import CertSet
from .connect_config import ConnectConfig, ConnectError, ConnectParams
from .connect_keys import KeyMaterial
from .connect_series import record_run
from .connect_servers import Dial
from .connect_spawn import median_startup, stamp_lines


def mosquitto_pub_run(
    cfg: ConnectConfig, p: ConnectParams, port: int, certs: CertSet, km: KeyMaterial, s: Series, dial: Dial
) -> float | None:
    """mosquitto_pub per connection; with the token key from a private temporary directory that is
    removed at the end (it links to the token's PIN file, so it never lies inside results/)."""
    exe = shutil.which("mosquitto_pub")
    if exe is None:
        R.add_failure(s, "mosquitto_pub is not installed: run scripts/bootstrap (mosquitto-clients)")
        return None
    base = [
        exe,
        "-h",
        dial.host,
        "-p",
        str(port),
        "--cafile",
        str(certs.ca),
        "--insecure",
        "--cert",
        str(km.cert),
        "-t",
        "secperf/connect",
        "-m",
        "x",
        "-q",
        "0",
        "-d",
        "-i",
        f"secperf-pub-{os.getpid()}",
    ]
    cwd: Path | None = None
    if km.uri:
        cwd, key_id = engine_key_dir(km)
        base += ["--keyform", "engine", "--tls-engine", "pkcs11", "--key", key_id]
    else:
        base += ["--key", str(km.key)]
    try:
        return _mosquitto_pub_loop(cfg, p, km, s, dial, exe, base, cwd)
    finally:
        if cwd is not None:
            shutil.rmtree(cwd, ignore_errors=True)


def _mosquitto_pub_loop(
    cfg: ConnectConfig,
    p: ConnectParams,
    km: KeyMaterial,
    s: Series,
    dial: Dial,
    exe: str,
    base: list[str],
    cwd: Path | None,
) -> float:
    if cfg.tls in ("1.2", "1.3"):
        base += ["--tls-version", f"tlsv{cfg.tls}"]
    startup = median_startup(dial.argv([exe, "--help"]), p.n, km.env)
    for i in range(p.warmup + p.n):
        m0 = time.monotonic_ns()
        hit, wall, rc, tail = stamp_lines(
            base, km.env, "received CONNACK", dial.timeout_ms / 1000 + 10, dial.prefix, cwd=cwd
        )
        bracket = {"t0_ns": m0, "t1_ns": time.monotonic_ns()}
        warm = i < p.warmup
        if hit is None:
            record_run(
                s,
                i - p.warmup,
                warm,
                {"ok": False, "reason": f"mosquitto_pub exited {rc} without CONNACK: {tail[-300:]}"},
            )
            continue
        record_run(
            s,
            i - p.warmup,
            warm,
            {
                "ok": True,
                "usable_us": max(0.0, hit - startup),
                "connack_since_spawn_us": hit,
                "process_wall_us": wall,
                "resumed": False,
                **bracket,
                "phases": [
                    {"phase": "connect + TLS + CONNECT/CONNACK (spawn minus start-up)", "us": max(0.0, hit - startup)}
                ],
            },
        )
    return startup


def engine_key_dir(km: KeyMaterial) -> tuple[Path, str]:
    """mosquitto_pub with the token key: (a private working directory, the key id to pass).

    libmosquitto 2.0 (mosquitto_tls_set) opens the --key argument as a file before it looks at
    --keyform, so a pkcs11: URI fails there ('Problem setting TLS options: File not found') although
    the engine would load it. The URI is therefore made relative -- its PIN source a relative
    `user.pin`, a link to the token's 0600 PIN file -- and an empty file of that very name sits in a
    0700 directory the client runs in: the file check passes, and libp11 gets the URI (and reads
    the PIN from its file, never from argv)."""

    # outside the run directory: an archive of results/ (tar -h, zip) would copy the PIN through the link
    d = Path(tempfile.mkdtemp(prefix="secperf-engine-key-"))  # 0700
    pin = d / "user.pin"
    if not pin.is_symlink():
        pin.symlink_to(km.token_pin())
    key_id = (km.uri or "").split("?", 1)[0] + "?pin-source=file:user.pin"
    if "/" in key_id:
        raise ConnectError(f"the token URI {key_id!r} contains '/': it cannot name a file for mosquitto_pub")
    write_private(d / key_id, b"")
    return d, key_id


def paho_run(
    cfg: ConnectConfig, p: ConnectParams, port: int, certs: CertSet, km: KeyMaterial, s: Series, dial: Dial
) -> None:
    """paho-mqtt in a worker process (secperf.measure.paho_client) making all connections, under the
    link's device-namespace prefix over an emulated link (why a process: see that module)."""
    try:
        import paho.mqtt.client  # noqa: F401 - the worker runs with this interpreter  # reason: guarded: paho-mqtt may be missing
    except ImportError:
        R.add_failure(s, "paho-mqtt is not installed: run scripts/bootstrap")
        return None
    argv = dial.argv(
        [
            sys.executable,
            "-m",
            "secperf.measure.paho_client",
            "--host",
            dial.host,
            "--port",
            str(port),
            "--ca",
            str(certs.ca),
            "--cert",
            str(km.cert),
            "--key",
            str(km.key),
            "--n",
            str(p.n),
            "--warmup",
            str(p.warmup),
            "--timeout-ms",
            str(dial.timeout_ms),
            "--client-id",
            f"secperf-paho-{os.getpid()}",
        ]
    )
    budget = (p.n + p.warmup) * (dial.timeout_ms / 1000 + 5) + 30
    try:
        r = registry.run(argv, "paho worker", capture_output=True, text=True, env=km.env, timeout=budget)
    except subprocess.TimeoutExpired as exc:
        R.add_failure(s, f"paho-mqtt worker did not finish within {exc.timeout:g} s")
        return None
    for c in parse_lines(r.stdout):
        if c.get("type") == "error":
            R.add_failure(s, c.get("reason", "paho-mqtt worker failed"))
            continue
        if c.get("type") != "conn" or c.get("warmup"):
            continue
        sample = {k: v for k, v in c.items() if k in ("ok", "reason", "usable_us", "rc", "t0_ns", "t1_ns")}
        if c.get("ok"):
            sample.update(
                resumed=False,
                phases=[
                    {"phase": "socket connect + TLS handshake", "us": c["connect_us"]},
                    {"phase": "protocol step", "us": c["step_us"]},
                ],
            )
        record_run(s, c["i"], False, sample)
    if r.returncode != 0:
        R.add_failure(s, f"paho-mqtt worker exited {r.returncode}: {r.stderr.strip()[-300:]}")
    return None
