"""The QUIC device client's build (native/device/quic): ngtcp2 0.12.1 with its GnuTLS crypto back end
from Debian's armhf packages, and the counting plugin, cross-compiled once and cached.

Build: cached by a fingerprint of the sources, flags and libraries in
$SECPERF_HOME/device/build/quic-<hash>. ngtcp2 is linked statically; GnuTLS dynamically (Debian's
libgnutls.a needs p11-kit, shipped as a shared library only), loaded from the armhf sysroot
scripts/bootstrap unpacks, with the loader and glibc of libc6-armhf-cross. measure/quic_device.py
runs what this builds."""

from __future__ import annotations

import fcntl
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.native import shipped_sources
from . import build_stage, device_sources
from .device_build import (
    DeviceSetupError,
    _run,
    _version_line,
    device_home,
    footprint,
    qemu_plugin_include,
    shared_decls_dir,
    tool,
)

ARMHF_LIBS = ("libngtcp2.a", "libngtcp2_crypto_gnutls.a", "libgnutls.so.30", "libnettle.so.8", "libp11-kit.so.0")


ARMHF_DEBS = ("libngtcp2-dev", "libngtcp2-crypto-gnutls-dev", "libgnutls28-dev", "libgnutls30")


CROSS_LIBC = Path("/usr/arm-linux-gnueabihf")


@dataclass(frozen=True)
class QuicBuild:
    client: Path
    plugin: Path
    library: str
    offers: dict[str, Any]
    qemu: str
    qemu_version: str
    cross_cc: str
    sysroot: Path
    footprint: dict[str, Any] | None


def _sources() -> Path:
    found = shipped_sources("device/quic", "native/device/quic", "client.c", "Makefile")
    if found:
        return found
    raise DeviceSetupError(
        "the QUIC device client sources (native/device/quic) were not found: reinstall with `make build`"
    )


def sysroot() -> Path:
    """The armhf sysroot with Debian's ngtcp2 and GnuTLS (device_sources.sysroot: fetched when missing)."""

    return device_sources.sysroot(tuple(ARMHF_LIBS), f"Debian's armhf ngtcp2 and GnuTLS ({', '.join(ARMHF_DEBS)})")


def _fingerprint(src: Path, parts: list[str]) -> str:
    h = hashlib.sha256()
    dev = src.parent
    files = sorted(src.glob("*")) + [
        dev / "marker.c",
        dev / "marker.h",
        dev / "Makefile",
        *sorted((dev / "plugin").glob("*")),
        *sorted((dev.parent / "common").glob("json.*")),
    ]
    decls = dev.parent / "mac" / "cortexm" / "qemu_plugin_api.h"
    for p in [*files, decls]:
        if p.is_file():
            h.update(p.name.encode())
            h.update(p.read_bytes())
    for part in parts:
        h.update(part.encode())
    return h.hexdigest()[:16]


def ensure_built() -> QuicBuild:
    """The QUIC client and the counting plugin, built now when a source, the compiler or a library changed."""

    cc = tool("arm-linux-gnueabihf-gcc", "gcc-arm-linux-gnueabihf")
    qemu = tool("qemu-arm", "qemu-user")
    tool("make", "make")
    if not (CROSS_LIBC / "lib" / "ld-linux-armhf.so.3").is_file():
        raise DeviceSetupError(
            f"the armhf loader ({CROSS_LIBC}/lib/ld-linux-armhf.so.3) is missing: install the "
            "Debian package libc6-armhf-cross (scripts/bootstrap installs it)"
        )
    src = _sources()
    root = sysroot()
    libdir = root / "usr" / "lib" / "arm-linux-gnueabihf"
    inc = qemu_plugin_include()
    cc_line = _version_line([cc, "--version"])
    parts = [cc_line, str(root), str(inc)] + [f"{lib}:{(libdir / lib).stat().st_size}" for lib in ARMHF_LIBS]
    out = device_home() / "build" / f"quic-{_fingerprint(src, parts)}"
    client, plugin, meta = out / "sp-device-quic", out / "libinsn_events.so", out / "quic.json"
    if not (build_stage.is_complete(out) and client.is_file() and plugin.is_file() and meta.is_file()):
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(device_home() / "build" / ".lock", "w") as lock:  # one build at a time (shared cache)
            fcntl.flock(lock, fcntl.LOCK_EX)
            build_stage.remove_stale(out.parent)
            if not (build_stage.is_complete(out) and client.is_file() and plugin.is_file() and meta.is_file()):
                build_stage.invalidate(out)
                tmp = build_stage.stage(out)  # built apart, renamed into place when it succeeded
                try:
                    args = [
                        "make",
                        "-s",
                        "-f",
                        str(src / "Makefile"),
                        f"OUT={tmp}",
                        f"SYSROOT={root}",
                        f"SHARED_DECLS={shared_decls_dir(src.parent)}",
                        "plugin",
                        "quic",
                    ]
                    if inc is not None:
                        args.append(f"QEMU_PLUGIN_INCLUDE={inc}")
                    _run(args, "building the QUIC guest client (native/device/quic/Makefile)", 300)
                    offers = _run(  # a hang is a build failure naming the tool and its limit
                        [qemu, "-L", str(CROSS_LIBC), str(tmp / client.name), "--offers"],
                        "asking the QUIC client what it offers (qemu-arm)",
                        60,
                    )
                    (tmp / meta.name).write_text(offers)
                    build_stage.publish(tmp, out, {tmp: out})
                finally:
                    build_stage.discard(tmp)
    info = json.loads(meta.read_text().splitlines()[0])
    mp = Path(f"{client}.map")

    fp = (
        footprint(mp.read_text(errors="replace"), ("libngtcp2.a", "libngtcp2_crypto_gnutls.a"))
        if mp.is_file()
        else None
    )
    if fp:
        fp["rule"] = (
            "ngtcp2 and its GnuTLS glue (static); GnuTLS itself is a shared library, not included. " + fp["rule"]
        )
    return QuicBuild(
        client,
        plugin,
        f"{info['library']} (Debian armhf)",
        info["offers"],
        qemu,
        _version_line([qemu, "--version"]),
        cc_line,
        root,
        fp,
    )
