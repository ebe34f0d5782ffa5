"""What a server secperf starts is (provenance for a server Result): its version and the TLS library
it runs with and was built against, as the program itself prints them (nginx -V, mosquitto -h,
coap-server-openssl's usage text, secperf-probe --version, openssl version), never guessed."""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Any

from ..core.native import find_probe


# --- what each server is: version and TLS library (provenance for a server Result) ----------------
def _version_output(argv: list[str]) -> str:
    """stdout + stderr of a version query; '' when the program is missing or hangs."""
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return ""
    return (r.stdout or "") + (r.stderr or "")


def _linked_libssl(exe: str | None) -> str | None:
    """The libssl a dynamically linked program loads (from ldd), e.g. libssl.so.3; None if static."""
    if not exe:
        return None
    m = re.search(r"(libssl\.so[.\d]*)\s+=>\s+(\S+)", _version_output(["ldd", exe]))
    return m.group(2) if m else None


def system_openssl() -> str | None:
    """The system OpenSSL library's version text ("OpenSSL 3.0.19 27 Jan 2026"), as `openssl version`
    reports the library it runs with."""
    out = _version_output(["openssl", "version"]).strip()
    m = re.search(r"\(Library: ([^)]+)\)", out)
    return m.group(1) if m else (out or None)


def server_software(server: str) -> dict[str, Any]:
    """What a server started by secperf is: {"server", "version", "tls_library", "build", "source"}.
    Version strings come from the program itself (nginx -V, mosquitto -h, coap-server-openssl's
    usage text, secperf-probe --version, openssl version); a field it does not print is None, never
    guessed. `tls_library` is the library the server runs with; `build` what it was built against."""
    out: dict[str, Any] = {"server": server, "version": None, "tls_library": None, "build": None, "source": None}
    if server == "nginx":
        exe = shutil.which("nginx") or "/usr/sbin/nginx"
        text = _version_output([exe, "-V"])
        m = re.search(r"nginx version: nginx/(\S+)", text)
        b = re.search(r"built with (OpenSSL [^\n(]+?)\s*(?:\(running with ([^)]+)\))?\n", text)
        out.update(
            version=m.group(1) if m else None,
            source="nginx -V",
            build=b.group(1).strip() if b else None,
            tls_library=(b.group(2) or b.group(1)).strip() if b else None,
        )
    elif server == "mosquitto":
        exe = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        m = re.search(r"mosquitto version (\S+)", _version_output([exe, "-h"]))
        lib = _linked_libssl(exe)
        sys_ssl = system_openssl()
        out.update(
            version=m.group(1) if m else None,
            source="mosquitto -h; ldd",
            tls_library=f"{sys_ssl}, linked as {lib}" if lib and sys_ssl else lib,
        )
    elif server == "coap-server":
        exe = shutil.which("coap-server-openssl") or "/usr/bin/coap-server-openssl"
        text = _version_output([exe, "-h"])
        m = re.search(r"coap-server-openssl v(\S+)", text)
        t = re.search(r"TLS Library: (.+)", text)
        lib = t.group(1).strip() if t else None
        rt = re.search(r"runtime ([^\s,]+)", lib or "")
        bt = re.search(r"built for ([^\s,]+)", lib or "")
        sys_ssl = system_openssl()
        out.update(
            version=f"libcoap {m.group(1)}" if m else None,
            source="coap-server-openssl -h; openssl version",
            # libcoap prints OpenSSL's version number as hex-decoded text ("3.0.0s-dev" for 3.0.19):
            # the library actually loaded is the system one
            tls_library=(f"{sys_ssl} (libcoap reports runtime {rt.group(1)})" if rt and sys_ssl else lib or sys_ssl),
            build=f"libcoap built for OpenSSL {bt.group(1)}" if bt else None,
        )
    elif server == "probe":
        text = _version_output([str(find_probe()), "--version"])
        m = re.search(r"secperf-probe (\S+) \(([^)]+)\)", text)
        out.update(
            version=f"secperf-probe {m.group(1)}" if m else None,
            tls_library=m.group(2) if m else None,
            source="secperf-probe --version",
        )
    elif server == "s_server":
        lib = system_openssl()
        out.update(version=f"openssl s_server ({lib})" if lib else None, tls_library=lib, source="openssl version")
    return out
