"""libcoap's coap-client as the CoAP client of `secperf connect` (DTLS with a certificate, the
token key through the pkcs11 engine, or the lab's pre-shared key)."""

from __future__ import annotations

import shutil
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding

from ..core import result as R
from ..core.paths import private_dir, secperf_home, write_private
from ..core.result_schema import Series
from ..lab.iot_services import PSK_DECOY
from ..lab.pki import CertSet
from .connect_config import COAP_PSK, COAP_PSK_IDENTITY, ConnectConfig, ConnectError, ConnectParams
from .connect_keys import KeyMaterial
from .connect_series import record_run
from .connect_servers import Dial
from .connect_spawn import median_startup, timed_run


def coap_client_run(
    cfg: ConnectConfig, p: ConnectParams, port: int, certs: CertSet, km: KeyMaterial, s: Series, dial: Dial
) -> float | None:
    exe = shutil.which("coap-client-openssl")
    if exe is None:
        R.add_failure(s, "coap-client-openssl is not installed: run scripts/bootstrap (libcoap3-bin)")
        return None
    argv = [exe, "-m", "get", "-B", str(max(1, -(-dial.timeout_ms // 1000))), "-v", "0"]
    if cfg.security == "psk":
        # the key through libcoap's hint match file (0600: hint,identity,key), never the command line;
        # -k holds a decoy libcoap requires (a server with another hint gets it and fails the handshake)

        match = private_dir(secperf_home() / "psk" / "coap-client") / "match_hint"
        write_private(match, f"secperf,{COAP_PSK_IDENTITY},{COAP_PSK.decode()}\n".encode())
        argv += ["-u", COAP_PSK_IDENTITY, "-k", PSK_DECOY, "-h", str(match)]
    else:
        if km.uri:
            # libcoap: once one of -c/-j/-C is a PKCS#11 URI the others must be DER files; the URI
            # goes to the pkcs11 engine, which reads the PIN from its file
            if km.shim_log is None:
                raise ConnectError(f"{cfg.key_source}: a token key without its shim log")
            der = private_dir(km.shim_log.parent / "der")
            argv += [
                "-c",
                str(_der(km.cert, der / "client.der")),
                "-C",
                str(_der(certs.ca, der / "ca.der")),
                "-j",
                km.uri,
            ]
        else:
            argv += ["-c", str(km.cert), "-C", str(certs.ca)]
            argv += ["-j", str(km.key)]
    argv = dial.argv(argv + [f"coaps://{dial.host}:{port}/"])
    startup = median_startup(dial.argv([exe, "-h"]), p.n, km.env)
    for i in range(p.warmup + p.n):
        r, wall, bracket = timed_run(argv, km.env, dial.timeout_ms / 1000 + 30)
        warm = i < p.warmup
        if r.returncode != 0 or not r.stdout.strip():
            record_run(
                s,
                i - p.warmup,
                warm,
                {
                    "ok": False,
                    "reason": f"coap-client exited {r.returncode} "
                    f"without a response: {(r.stderr or r.stdout).strip()[-300:]}",
                },
            )
            continue
        est = max(0.0, wall - startup)
        record_run(
            s,
            i - p.warmup,
            warm,
            {
                "ok": True,
                "usable_us": est,
                "process_wall_us": wall,
                "resumed": False,
                **bracket,
                "phases": [{"phase": "DTLS + GET/response + exit (spawn minus start-up)", "us": est}],
            },
        )
    return startup


def _der(pem: Path, out: Path) -> Path:
    out.write_bytes(x509.load_pem_x509_certificate(Path(pem).read_bytes()).public_bytes(Encoding.DER))
    return out
