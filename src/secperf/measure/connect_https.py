"""curl as the HTTPS client of `secperf connect`, timed by its own timers (time_connect,
time_appconnect, time_total)."""

from __future__ import annotations

import json
import os
import shutil

from ..core import result as R
from ..core import stats
from ..core.result_schema import Series
from ..lab.pki import CertSet
from .connect_config import ConnectConfig, ConnectParams
from .connect_keys import KeyMaterial
from .connect_series import record_run
from .connect_servers import Dial
from .connect_spawn import timed_run


def curl_run(
    cfg: ConnectConfig, p: ConnectParams, port: int, certs: CertSet, km: KeyMaterial, s: Series, dial: Dial
) -> float | None:
    exe = shutil.which("curl")
    if exe is None:
        R.add_failure(s, "curl is not installed: run scripts/bootstrap")
        return None
    url = f"https://localhost:{port}/"  # the lab certificate's name, resolved to the server's address
    argv = [
        exe,
        "-sS",
        "-o",
        os.devnull,
        "-w",
        "%{json}",
        "--resolve",
        f"localhost:{port}:{dial.host}",
        "--cacert",
        str(certs.ca),
        "--cert",
        str(km.cert),
        "--max-time",
        str(dial.timeout_ms / 1000),
    ]
    if km.uri:
        argv += ["--engine", "pkcs11", "--key-type", "ENG", "--key", km.uri]
    else:
        argv += ["--key", str(km.key)]
    if cfg.tls == "1.3":
        argv += ["--tlsv1.3"]
    else:
        argv += ["--tlsv1.2", "--tls-max", "1.2"]
    argv = dial.argv(argv + [url])
    startup = []
    for i in range(p.warmup + p.n):
        r, wall, bracket = timed_run(argv, km.env, dial.timeout_ms / 1000 + 30)
        warm = i < p.warmup
        try:
            w = json.loads(r.stdout)
        except json.JSONDecodeError:
            w = {}
        if r.returncode != 0 or w.get("http_code") != 200:
            record_run(
                s,
                i - p.warmup,
                warm,
                {
                    "ok": False,
                    "reason": f"curl exited {r.returncode} (HTTP {w.get('http_code')}): {r.stderr.strip()[-300:]}",
                },
            )
            continue
        tc, ta, tt = (float(w[k]) * 1e6 for k in ("time_connect", "time_appconnect", "time_total"))
        phases = [
            {"phase": "socket connect", "us": tc},
            {"phase": "TLS handshake", "us": ta - tc},
            {"phase": "protocol step", "us": tt - ta},
        ]
        if not warm:
            startup.append(wall - tt)
        record_run(
            s,
            i - p.warmup,
            warm,
            {
                "ok": True,
                "usable_us": tt,
                "phases": phases,
                "process_wall_us": wall,
                "time_appconnect_us": ta,
                "resumed": False,
                **bracket,
            },
        )
    return stats.median(startup) if startup else None
