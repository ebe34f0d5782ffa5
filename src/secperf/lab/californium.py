"""Eclipse Californium (Scandium DTLS 1.2) as a second real CoAP/DTLS server -- the one that
resumes DTLS sessions with a verified client certificate (libcoap's coap-server does not) and
speaks RFC 9146 connection IDs -- and its Java client for the connection-ID rows.

Both live in one jar built from java/californium by scripts/bootstrap with Maven (dependencies
from Maven Central): `$SECPERF_CALIFORNIUM_JAR`, else `<venv>/share/secperf/secperf-californium.jar`
(where the bootstrap installs it), else `java/californium/target/` of a checkout. The server runs
like the other servers: from a private work directory (its key as PKCS#8 there, mode 0600), on an
ephemeral loopback port it reports, stopped by its PID; it prints one line per DTLS handshake
saying whether it resumed a session, so resumption is verified on the server side too.
"""

from __future__ import annotations

import os
import queue
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization

from .pki import CertSet
from .services import Service, ServiceError, await_listening, drain_queue

JAR_NAME = "secperf-californium.jar"
JAR_ENV = "SECPERF_CALIFORNIUM_JAR"
CID_LENGTH = 6  # bytes of connection ID the server asks for


def find_jar() -> Path:
    env = os.environ.get(JAR_ENV)
    if env:
        if Path(env).is_file():
            return Path(env)
        raise ServiceError(f"{JAR_ENV}={env} is not a file")
    for c in (
        Path(sys.prefix) / "share" / "secperf" / JAR_NAME,
        Path.cwd() / "java" / "californium" / "target" / JAR_NAME,
        Path(__file__).resolve().parents[3] / "java" / "californium" / "target" / JAR_NAME,
    ):
        if c.is_file():
            return c
    raise ServiceError(
        "the Californium jar is not built: run scripts/bootstrap (builds java/californium with "
        f"Maven; needs a JDK 17 and mvn), or set {JAR_ENV}"
    )


def java_exe() -> str:
    exe = shutil.which("java")
    if exe is None:
        raise ServiceError("java is not installed: run scripts/bootstrap (Debian package openjdk-17-jdk-headless)")
    return exe


def pkcs8_pem(key_path: Path) -> bytes:
    """The lab's PEM key as unencrypted PKCS#8 (what the Java side reads)."""

    key = serialization.load_pem_private_key(Path(key_path).read_bytes(), None)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


class CaliforniumServer(Service):
    """Californium's CoapServer on a Scandium DTLSConnector: client certificate required (verified
    against the lab's client CA), session IDs for resumption, connection IDs of CID_LENGTH bytes."""

    name = "californium"
    proto = "dtls"

    def __init__(self, certs: CertSet, client_ca: Path, workdir: Path | None = None, cid_length: int = CID_LENGTH):
        super().__init__(workdir)
        self.certs, self.client_ca, self.cid_length = certs, client_ca, cid_length
        self.handshakes: queue.Queue[dict[str, Any]] = queue.Queue()

    def start(self) -> CaliforniumServer:
        key = self.write_secret(self.workdir / "server.p8.pem", pkcs8_pem(self.certs.key))
        argv = [
            java_exe(),
            "-jar",
            str(find_jar()),
            "server",
            "--bind",
            self.bind,
            "--port",
            "0",
            "--cert",
            str(self.certs.chain),
            "--key",
            str(key),
            "--client-ca",
            str(self.client_ca),
            "--cid-length",
            str(self.cid_length),
        ]
        proc = self._spawn(argv, stdout=subprocess.PIPE)
        self.port = await_listening(self, proc, "handshake", self.handshakes, 30)
        return self

    def drain(self) -> list[dict[str, Any]]:
        return drain_queue(self.handshakes)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "connection_id_bytes": self.cid_length, "session_resumption": "session ID"}


def sunpkcs11_config(module: Path | str, name: str = "secperf") -> str:
    """The JDK SunPKCS11 configuration for the Californium client with a token key: the module (the
    secure-element shim in front of SoftHSM2), the first slot, and only the mechanisms a client key
    signs with plus the KeyStore (so key agreement, digests and random numbers stay in the JDK's own
    providers; see the Java client's pkcs11Key)."""
    return (
        f"name = {name}\nlibrary = {module}\nslotListIndex = 0\n"
        "enabledMechanisms = {\n  CKM_ECDSA\n  CKM_RSA_PKCS\n  KeyStore\n}\n"
    )
