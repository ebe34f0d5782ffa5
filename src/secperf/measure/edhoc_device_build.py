"""The EDHOC initiator's build (native/device/edhoc_c) for one target on one stack's crypto: compiled
with the flags and against the library objects of that stack's TLS client (device_build.ensure_built),
cached by a fingerprint of its sources, flags, library and compiler. measure/edhoc_device.py runs
and counts what this builds."""

from __future__ import annotations

import fcntl
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import build_stage
from .device_build import (
    ARMHF_SOURCE_FLAGS,
    NEWLIB_TARGETS,
    TARGETS,
    Build,
    DeviceSetupError,
    _run,
    check_config,
    device_home,
    ensure_built,
    footprint,
    source_dir,
    sources_dir,
    tool,
)

# the stacks whose crypto the initiator runs on: stack -> (crypto source, library archive, what it uses)
CRYPTO = {
    "wolfssl59": (
        "crypto_wolfssl.c",
        "libwolfssl.a",
        "wolfCrypt 5.9's P-256 (SP maths, Cortex-M assembly on "
        "the M cores), SHA-256, HKDF and AES (CCM mode on its AES block function)",
    ),
    "mbedtls3": (
        "crypto_mbedtls.c",
        "libmbedtls3.a",
        "Mbed TLS 3.6's P-256 (its generic ECP code), SHA-256, HKDF and AES-CCM",
    ),
}


DEFAULT_STACK = "mbedtls3"


OWN_OBJECTS = ("main.o", "edhoc.o", "oscore.o", "crypto_mbedtls.o", "crypto_wolfssl.o", "marker.o")


@dataclass(frozen=True)
class EdhocBuild:
    binary: Path
    lib: Build  # the stack's build whose library objects the initiator links
    library: str  # "wolfSSL 5.9.4 (cortex-m4 build)"
    offers: dict[str, Any]
    footprint: dict[str, Any] | None


def _archive(lib: Build) -> Path:
    """The library archive the stack's TLS client was linked with (named in its link map)."""
    mp = Path(f"{lib.client}.map")
    text = mp.read_text(errors="replace") if mp.is_file() else ""
    m = re.search(r"(/\S*/" + re.escape(CRYPTO[lib.stack][1]) + r")\(", text)
    if not m or not Path(m.group(1)).is_file():
        raise DeviceSetupError(
            f"the {lib.stack} library of the {lib.target} build was not found through {mp}: "
            f"rebuild with `secperf device build --stack {lib.stack} --target {lib.target}`"
        )
    return Path(m.group(1))


def build(target: str, config: str | None = None, stack: str = DEFAULT_STACK) -> EdhocBuild:
    """The initiator for `target` on the stack's crypto, built once per source, flags, library and
    compiler into $SECPERF_HOME/device/build/edhoc-<stack>-<target>-<hash>."""
    lib = ensure_built(stack, target, config)
    src = sources_dir()
    own = src / "edhoc_c"
    if not (own / "Makefile").is_file():
        raise DeviceSetupError(f"the EDHOC initiator's sources ({own}) were not found: reinstall with `make build`")
    archive = _archive(lib)
    cfg = check_config(stack, target, config)
    flags = TARGETS[target][0] or ARMHF_SOURCE_FLAGS
    link = "newlib" if target in NEWLIB_TARGETS else "glibc"
    tool("make", "make")
    tool(
        "arm-none-eabi-gcc" if link == "newlib" else "arm-linux-gnueabihf-gcc",
        "gcc-arm-none-eabi" if link == "newlib" else "gcc-arm-linux-gnueabihf",
    )
    h = hashlib.sha256()
    # its sources, the marker, and the libraries' embedded configurations it compiles against
    files = sorted(own.iterdir()) + [src / "marker.c", src / "marker.h"] + sorted((src / "mcu").rglob("*"))
    files += sorted((src / "m0").rglob("*")) if link == "newlib" else []
    for p in files:
        if p.is_file():
            h.update(p.name.encode() + p.read_bytes())
    st = archive.stat()
    h.update(f"{flags}|{cfg.make_defs}|{link}|{archive}|{st.st_size}|{st.st_mtime_ns}|{lib.cross_cc}".encode())
    out = device_home() / "build" / f"edhoc-{stack}-{target}-{h.hexdigest()[:16]}"
    binary, offers = out / "sp-edhoc", out / "offers.json"
    if not (build_stage.is_complete(out) and binary.is_file() and offers.is_file()):
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(device_home() / "build" / ".lock", "w") as lock:  # one build at a time (shared cache)
            fcntl.flock(lock, fcntl.LOCK_EX)
            build_stage.remove_stale(out.parent)
            if build_stage.is_complete(out) and binary.is_file() and offers.is_file():  # built meanwhile
                return build(target, config, stack)
            build_stage.invalidate(out)  # stamped but missing a file: rebuilt and replaced
            # wolfSSL's generated options.h sits beside the library's objects (the M0+ archive one level down)
            gen = next(
                (d for d in (archive.parent / "wolfssl-inc", archive.parent.parent / "wolfssl-inc") if d.is_dir()),
                archive.parent,
            )
            tmp = build_stage.stage(out)  # built apart, renamed into place when it succeeded (build_stage)
            try:
                argv = [
                    "make",
                    "-s",
                    "-f",
                    str(own / "Makefile"),
                    f"OUT={tmp}",
                    f"CRYPTO={stack}",
                    f"LIB={archive}",
                    f"LIB_SRC={source_dir(stack)}",
                    f"LIB_GEN={gen}",
                    f"FLAGS={flags}",
                    f"DEFS={cfg.make_defs}",
                    f"LINK={link}",
                ]
                _run(argv, f"building the EDHOC initiator for {target}", 300)
                said = _run(  # a hang or a crash is a build failure naming the tool (and its limit)
                    [lib.qemu, "-cpu", lib.run_cpu or "max", str(tmp / binary.name), "--offers"],
                    f"asking the EDHOC initiator for {target} what it offers (qemu-arm)",
                    60,
                )
                if not said.startswith("{"):
                    raise DeviceSetupError(
                        f"the EDHOC initiator for {target} does not run under qemu-arm: {said.strip()[-400:]}"
                    )
                (tmp / offers.name).write_text(said.splitlines()[0])
                build_stage.publish(tmp, out, {tmp: out})
            finally:
                build_stage.discard(tmp)
    mp = Path(f"{binary}.map")
    fp = footprint(mp.read_text(errors="replace"), (CRYPTO[stack][1], *OWN_OBJECTS)) if mp.is_file() else None
    if fp:
        fp["rule"] = f"the initiator's objects and the {stack} objects it links; " + fp["rule"]
    return EdhocBuild(binary, lib, lib.library, json.loads(offers.read_text()), fp)
