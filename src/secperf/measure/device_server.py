"""The host peer of the device's TLS and DTLS 1.2 rows: `openssl s_server` on loopback (the DTLS 1.2
psk row: the probe server, device_dtls.psk_server), with the lab's certificates and an external PSK
made for it, every key in a 0600 file. DTLS 1.3 and connection-ID rows have a peer of their own
(device_dtls.PairServer)."""

from __future__ import annotations

import secrets
import tempfile
from pathlib import Path

from ..core.errors import MeasurementError
from ..core.paths import private_dir, write_private
from ..lab.pki import LabPKI
from ..lab.services import ProbeServer, SServer
from . import device_dtls as DT


class Server:
    """`openssl s_server` on loopback for one server certificate type (lab/services.SServer), asking
    for a client certificate of the lab client CA when client_cert is not "none", and holding an
    external PSK made for this server (32 random bytes), always in 0600 files: s_server reads TLS
    1.3's as a session file, the DTLS 1.2 psk row's peer is the probe server reading a key file
    (device_dtls.psk_server says why), the guest client reads its own private file."""

    PSK_IDENTITY = "secperf-device"

    def __init__(self, cert_type: str, client_cert: str = "none", proto: str = "tls", psk_dtls: bool = False):
        pki = LabPKI().ensure()
        self.certs = pki.server(cert_type)
        self.client = None if client_cert == "none" else pki.client(client_cert)
        psk = secrets.token_hex(32)
        self._tmp = tempfile.TemporaryDirectory(prefix="secperf-device-psk-")
        self.psk_file = Path(private_dir(Path(self._tmp.name))) / "psk"
        write_private(self.psk_file, f"{self.PSK_IDENTITY}\n{psk}\n".encode())
        # the server's copy: a TLS 1.3 session file (lab/psk_session), or the probe's key file (DTLS 1.2)
        ca = self.client.ca if self.client else None
        self.svc: SServer | ProbeServer = (
            DT.psk_server(self.certs, ca, self.PSK_IDENTITY, psk)
            if proto == "dtls" and psk_dtls
            else SServer(
                self.certs,
                psk=(self.PSK_IDENTITY, bytes.fromhex(psk)) if proto == "tls" else None,
                client_ca=ca,
                proto=proto,
            )
        )

    def __enter__(self) -> Server:
        self.svc.start()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.svc.stop()
        finally:
            self._tmp.cleanup()

    @property
    def port(self) -> int:
        if self.svc.port is None:
            raise MeasurementError(f"{self.svc.name} has no port: it was not started")
        return self.svc.port
