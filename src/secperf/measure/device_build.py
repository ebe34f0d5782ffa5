"""Building what `secperf device` runs: the guest TLS clients cross-compiled for armhf (static,
against Debian's armhf wolfSSL and Mbed TLS) and the host TCG plugin that counts instructions
(native/device). Built at first use into $SECPERF_HOME/device/build/<hash of sources and flags>,
so a rebuild happens only when a source, the toolchain or the libraries change. Every build is staged
apart and renamed into place, stamped, only when it succeeded (measure/build_stage): a build cut off
by its time limit or killed is never reused, and two cores never share an object directory.

Where the armhf libraries and every third-party source come from: measure/device_sources (one
lookup: the user's $SECPERF_HOME/device, then the installation's read-only cache that
scripts/bootstrap fills, else fetched now with apt-get/cargo as the user). The armhf libraries are
Debian's packages unpacked into a private sysroot (sysroot-armhf; libwolfssl-dev is not Multi-Arch: same,
so its armhf package cannot be installed next to the host's), or installed system-wide
(/usr/lib/arm-linux-gnueabihf). QEMU's qemu-plugin.h comes from Debian's qemu source package
(also fetched by bootstrap; GPL, never copied into this repository); without it the plugin is
built against the declarations shared with native/mac/cortexm.

Microcontroller targets (profile M cores): Debian's armhf libraries are Cortex-A code, so for a
Cortex-M core the library is compiled from its sources (device_sources) with -mcpu=cortex-m4 -mthumb
and the embedded configuration in native/device/mcu, linked statically with armhf glibc and run
under `qemu-arm -cpu max` (qemu-user has no M-profile CPU): the library's instruction stream is
real Cortex-M4 code; the C library's (memcpy, the socket calls' wrappers) is not.
Footprint: each client is linked with --gc-sections and a link map; the library's share of
text, read-only data, data and bss is read from the map (the objects the client pulls in).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import re
import shutil
import subprocess
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..core.errors import InputError
from ..core.native import shipped_sources
from ..core.paths import secperf_home
from ..lab import registry
from . import build_stage, device_sources
from .device_sources import (
    DeviceSetupError as DeviceSetupError,  # raised here, imported from here by the device modules
)

STACKS = {  # stack -> (make target, binary, static libraries it needs, Debian package)
    "wolfssl": ("wolfssl", "sp-device-wolfssl", ("libwolfssl.a",), "libwolfssl-dev:armhf"),
    "mbedtls": (
        "mbedtls",
        "sp-device-mbedtls",
        ("libmbedtls.a", "libmbedx509.a", "libmbedcrypto.a"),
        "libmbedtls-dev:armhf",
    ),
    # Mbed TLS 3.6 (TLS 1.3): no Debian package here; built from source for every target
    "mbedtls3": ("mbedtls3", "sp-device-mbedtls3", (), None),
    # OpenSSL 3.0 (Debian's armhf libssl-dev): the host's library on the emulated core, for comparison
    # with the host probe; Debian's armhf build only (A profile: its assembly is ARMv7-A/NEON code)
    "openssl": ("openssl", "sp-device-openssl", ("libssl.a", "libcrypto.a"), "libssl-dev:armhf"),
    # wolfSSL 5.9 (sources from the wolfssl-sys crate): the embedded configuration of the M builds,
    # built from source for every target, next to Debian's 5.5
    "wolfssl59": ("wolfssl", "sp-device-wolfssl", (), None),
    # wolfSSL 5.6.6 (the wolfssl-sys 1.2.0 crate), as wolfssl59: for boards' 5.6 logs (app/device_stacks)
    "wolfssl56": ("wolfssl", "sp-device-wolfssl", (), None),
    # PQClean's portable "clean" ML-KEM and ML-DSA (sources from the pqcrypto-mlkem and pqcrypto-mldsa
    # crates), built from source for every target; primitives only (no TLS)
    "pqclean": ("pqclean", "sp-device-pqclean", (), None),
    # p256-m (Mbed TLS 3.6's 3rdparty/p256-m, from the mbedtls-rs-sys crate): P-256 primitives only,
    # the one code base with its author's published timings on a Cortex-M0, a Cortex-M4 and a Cortex-A7
    "p256m": ("p256m", "sp-device-p256m", (), None),
}
# source builds: stack -> (make variable naming its sources, make target of the build, sources' origin)
SOURCE_BUILDS = {
    "wolfssl": ("WOLFSSL_SRC", "mcu-wolfssl", "Debian's source package"),
    "mbedtls": ("MBEDTLS_SRC", "mcu-mbedtls", "Debian's source package"),
    "mbedtls3": ("MBED3_SRC", "mcu-mbedtls3", "the mbedtls-rs-sys crate's Mbed TLS sources"),
    "wolfssl59": ("WOLFSSL_SRC", "mcu-wolfssl", "the wolfssl-sys crate's wolfSSL sources"),
    "wolfssl56": ("WOLFSSL_SRC", "mcu-wolfssl", "the wolfssl-sys 1.2.0 crate's wolfSSL 5.6.6 sources"),
    "pqclean": ("PQCLEAN_SRC", "mcu-pqclean", "the pqcrypto-mlkem and pqcrypto-mldsa crates' PQClean sources"),
    "p256m": ("P256M_SRC", "mcu-p256m", "the mbedtls-rs-sys crate's Mbed TLS 3.6 3rdparty/p256-m"),
}
# stacks with no Debian armhf package: their A-profile build is a source build too
SOURCE_ONLY = ("mbedtls3", "wolfssl59", "wolfssl56", "pqclean", "p256m")
# stacks built for some targets only: stack -> targets
STACK_TARGETS: dict[str, tuple[str, ...]] = {"openssl": ("armhf",)}
# compiler flags of a source build for the A profile (the same as Debian's armhf packages)
ARMHF_SOURCE_FLAGS = "-march=armv7-a -mthumb -mfloat-abi=hard -mfpu=vfpv3-d16"
# library functions whose first instruction marks an event (wolfSSL): id -> function
WATCH = {
    1: "SendTls13ClientHello",
    2: "SendClientHello",
    3: "SendTls13Certificate",
    4: "SendTls13CertificateVerify",
    5: "SendTls13Finished",
    6: "SendCertificate",
    7: "SendCertificateVerify",
    8: "SendClientKeyExchange",
    9: "SendChangeCipher",
    10: "SendFinished",
    11: "DoTls13HandShakeMsgType",
    12: "DoHandShakeMsgType",
}
# OpenSSL 3.0: the client's message constructors (ids as wolfSSL's, same labels) and its dispatcher
# of received messages (called once per message, so a record with several messages is split)
WATCH_OPENSSL = {
    2: "tls_construct_client_hello",
    6: "tls_construct_client_certificate",
    7: "tls_construct_cert_verify",
    8: "tls_construct_client_key_exchange",
    9: "tls_construct_change_cipher_spec",
    10: "tls_construct_finished",
    12: "ossl_statem_client_process_message",
    13: "dtls_construct_change_cipher_spec",
}
WATCH_BY_STACK = {"wolfssl": WATCH, "wolfssl59": WATCH, "wolfssl56": WATCH, "openssl": WATCH_OPENSSL}
# build targets: name -> (compiler flags or None for Debian's prebuilt armhf libraries, description)
TARGETS = {
    "armhf": (None, "Debian's armhf package (ARMv7-A, Thumb-2, VFPv3-D16), linked statically"),
    "cortex-m4": (
        "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16",
        "built from Debian's source package for Cortex-M4 (Thumb-2, -O2, embedded configuration "
        "native/device/mcu), linked statically with armhf glibc",
    ),
    # ARMv8-M Mainline with the DSP extension and single-precision FPv5: the same embedded
    # configuration, code generated for the M33's pipeline
    "cortex-m33": (
        "-mcpu=cortex-m33 -mthumb -mfloat-abi=hard -mfpu=fpv5-sp-d16",
        "built from Debian's source package for Cortex-M33 (ARMv8-M Mainline, Thumb-2, -O2, embedded "
        "configuration native/device/mcu), linked statically with armhf glibc",
    ),
}
# Cortex-M0+ (ARMv6-M, Thumb-1, no FPU): its code takes the soft-float ABI, which cannot be linked
# with armhf glibc (hard-float), so this target is linked with newlib (arm-none-eabi) and a system-call
# layer of ours (native/device/m0: process entry, newlib's stubs, sockets as Linux system calls); it
# runs under `qemu-arm -cpu max` like the other M builds, every instruction ARMv6-M code.
TARGETS["cortex-m0plus"] = (
    "-mcpu=cortex-m0plus -mthumb -mfloat-abi=soft",
    "built from Debian's source package for Cortex-M0+ (ARMv6-M, Thumb-1, soft float, -O2, embedded "
    "configuration native/device/mcu with Thumb-1 SP maths), linked statically with newlib",
)
# targets linked with newlib instead of armhf glibc: target -> (make target prefix, binary suffix)
NEWLIB_TARGETS = {"cortex-m0plus": ("m0-", "-m0")}
# the stacks built for a newlib target (the others are not: STACK_TARGETS leaves the target out)
NEWLIB_STACKS = {"cortex-m0plus": ("wolfssl59", "wolfssl56", "wolfssl", "mbedtls3", "mbedtls", "p256m")}
for _s in STACKS:
    for _t, _built in NEWLIB_STACKS.items():
        if _s not in _built:
            STACK_TARGETS[_s] = tuple(t for t in STACK_TARGETS.get(_s, tuple(TARGETS)) if t != _t)
# archive of the library in the link map: (target kind, stack) -> archive names
ARCHIVES = {
    "wolfssl": ("libwolfssl.a",),
    "mbedtls": ("libmbedtls.a", "libmbedx509.a", "libmbedcrypto.a", "libmbedall.a"),
    "mbedtls3": ("libmbedtls3.a",),
    "openssl": ("libssl.a", "libcrypto.a"),
    **dict.fromkeys(("wolfssl59", "wolfssl56"), ("libwolfssl.a",)),
    "p256m": ("libp256m.a",),
    "pqclean": tuple(
        f"libpq-{s}.a" for s in ("ml-kem-512", "ml-kem-768", "ml-kem-1024", "ml-dsa-44", "ml-dsa-65", "common")
    ),
}
MARKER_NR = 1516
BUILD_TIMEOUT_S = 300
# configuration headers a build configuration's `undef` names must be guarded in (SECPERF_NO_<NAME>)
CONFIG_HEADERS = {
    "wolfssl": "mcu/wolfssl/user_settings.h",
    **dict.fromkeys(("wolfssl59", "wolfssl56"), "mcu/wolfssl/user_settings.h"),
    "mbedtls": "mcu/mbedtls_user_config.h",
    "mbedtls3": "mcu/mbedtls_user_config.h",
}


@dataclass(frozen=True)
class BuildConfig:
    """A named library build configuration (data/device_builds.toml)."""

    name: str
    stacks: tuple[str, ...]
    description: str
    source: str
    define: tuple[str, ...] = ()
    undef: tuple[str, ...] = ()
    opt: str = "-O2"
    prebuilt: bool = False  # Debian's armhf package as it is (no flags of ours)

    @property
    def make_defs(self) -> str:
        """MCU_DEFS of native/device/Makefile: the -D flags, removals as -DSECPERF_NO_<NAME>."""
        return " ".join([f"-D{d}" for d in self.define] + [f"-DSECPERF_NO_{u}" for u in self.undef])


@lru_cache(maxsize=1)
def build_configs() -> dict[str, BuildConfig]:
    """Every named configuration of data/device_builds.toml, checked."""
    raw = tomllib.loads(resources.files("secperf.data").joinpath("device_builds.toml").read_text(encoding="utf-8"))
    out = {}
    for name, c in raw["configs"].items():
        unknown = set(c) - {"stacks", "description", "source", "define", "undef", "opt", "prebuilt"}
        if unknown or not set(c.get("stacks", ())) <= set(STACKS) or not c.get("description") or not c.get("source"):
            raise DeviceSetupError(
                f"data/device_builds.toml: configuration {name!r} needs stacks (of {', '.join(STACKS)}), "
                f"description and source{'; unknown keys ' + ', '.join(sorted(unknown)) if unknown else ''}"
            )
        out[name] = BuildConfig(
            name,
            tuple(c["stacks"]),
            c["description"],
            c["source"],
            tuple(c.get("define", ())),
            tuple(c.get("undef", ())),
            c.get("opt", "-O2"),
            bool(c.get("prebuilt", False)),
        )
    for stack, name in raw["defaults"].items():
        if name not in out or stack not in out[name].stacks:
            raise DeviceSetupError(f"data/device_builds.toml: default {name!r} of {stack} is no configuration of it")
    return out


@lru_cache(maxsize=1)
def default_configs() -> dict[str, str]:
    raw = tomllib.loads(resources.files("secperf.data").joinpath("device_builds.toml").read_text(encoding="utf-8"))
    return dict(raw["defaults"])


def is_prebuilt(stack: str, target: str) -> bool:
    """Debian's armhf package (A profile) rather than a build from source."""
    return TARGETS.get(target, (None,))[0] is None and stack not in SOURCE_ONLY


def configs_for(stack: str, target: str | None = None) -> list[str]:
    """The configuration names of a stack: of its build for target, or of any of its builds (None)."""
    cfgs = build_configs()
    if target is not None and is_prebuilt(stack, target):
        return [n for n, c in cfgs.items() if c.prebuilt and stack in c.stacks]
    return [n for n, c in cfgs.items() if stack in c.stacks and (target is None or not c.prebuilt)]


def default_config(stack: str, target: str) -> str:
    """The configuration a stack's build for target has when none is named."""
    return configs_for(stack, target)[0] if is_prebuilt(stack, target) else default_configs()[stack]


def check_config(stack: str, target: str, name: str | None) -> BuildConfig:
    """The named configuration of the stack's build for target (its default when None); InputError
    naming the configurations there are otherwise."""
    if name is None:
        name = default_config(stack, target)
    cfgs = build_configs()
    here = configs_for(stack, target)
    if name not in cfgs or stack not in cfgs[name].stacks:
        raise InputError(
            f"--config {name}: no configuration {name!r} of {stack}; its configurations: "
            f"{', '.join(configs_for(stack))} (`secperf device list`)"
        )
    if name not in here:
        kind = "Debian's prebuilt armhf package" if is_prebuilt(stack, target) else f"the {target} build from source"
        raise InputError(
            f"--config {name}: {stack} on this core is {kind}, whose configurations are "
            f"{', '.join(here)}; {name} applies to "
            + (
                "Debian's prebuilt armhf packages (A-profile cores)"
                if cfgs[name].prebuilt
                else "source builds (M-profile cores; wolfssl59 and mbedtls3 on every core)"
            )
        )
    return cfgs[name]


def check_config_guards(src: Path, stack: str, cfg: BuildConfig) -> None:
    """Every default a configuration removes is guarded in the stack's configuration header (else the
    build would silently keep it)."""
    if not cfg.undef:
        return
    # the M0+ build's header (native/device/m0) adds its own defaults on top of the M one
    text = "".join(
        p.read_text()
        for p in (src / CONFIG_HEADERS[stack], src / "m0" / CONFIG_HEADERS[stack].split("/", 1)[1])
        if p.is_file()
    )
    missing = [u for u in cfg.undef if f"SECPERF_NO_{u}" not in text]
    if missing:
        raise DeviceSetupError(
            f"build configuration {cfg.name}: {CONFIG_HEADERS[stack]} has no SECPERF_NO_ guard for "
            f"{', '.join(missing)} (data/device_builds.toml)"
        )


@dataclass(frozen=True)
class Build:
    stack: str
    client: Path  # the static armhf client
    plugin: Path  # libinsn_events.so
    watch: Path  # "0xADDR ID" lines for the plugin (empty for stacks without watch points)
    library: str  # "wolfSSL 5.5.4"
    offers: dict[str, Any]  # what the build can do (from the client's --offers)
    crypto_ops: tuple[str, ...]
    qemu: str  # qemu-arm path
    qemu_version: str
    cross_cc: str  # compiler version line
    plugin_header: str  # "qemu-plugin.h (Debian qemu source)" or "shared declarations"
    sysroot: Path
    target: str = "armhf"  # TARGETS key
    run_cpu: str | None = None  # qemu -cpu for this build (None: the core profile's)
    build_note: str = ""  # how the library was built
    footprint: dict[str, Any] | None = None  # library bytes linked: text, rodata, data, bss (link map)
    config: str = "debian"  # build configuration (data/device_builds.toml)
    config_note: str = ""  # its description


def sources_dir() -> Path:
    """native/device as installed in the package (secperf/share/device), else the source tree."""
    found = shipped_sources("device", "native/device", "client.c", "Makefile")
    if found:
        return found
    raise DeviceSetupError("the device client sources (native/device) were not found: reinstall with `make build`")


def shared_decls_dir(src: Path) -> Path:
    for cand in (src.parent / "mac" / "cortexm",):
        if (cand / "qemu_plugin_api.h").is_file():
            return cand
    raise DeviceSetupError("qemu_plugin_api.h (native/mac/cortexm) was not found: reinstall with `make build`")


def device_home() -> Path:
    return secperf_home() / "device"


def tool(name: str, debian: str) -> str:
    exe = shutil.which(name)
    if not exe:
        raise DeviceSetupError(f"{name} not found: install the Debian package {debian} (scripts/bootstrap installs it)")
    return exe


def sysroot_for(stack: str, home: Path | None = None) -> Path:
    """The first sysroot holding the stack's armhf static libraries (device_sources.sysroot)."""
    libs, pkg = STACKS[stack][2], STACKS[stack][3]
    return device_sources.sysroot(libs, f"the armhf {stack} library ({pkg})", home=home)


def qemu_plugin_include(home: Path | None = None) -> Path | None:
    return device_sources.qemu_plugin_include(home=home)


def _version_line(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return out.splitlines()[0].strip() if out else "unknown"


def _fingerprint(src: Path, parts: list[str]) -> str:
    """The build's cache key: every source of the device directory and of the common parts its
    Makefile compiles in (../common: options, JSON), and the build's own parameters."""
    h = hashlib.sha256()
    common = src.parent / "common"
    for base in (src, common):
        for p in sorted(base.rglob("*")) if base.is_dir() else ():
            if p.is_file() and p.suffix in (".c", ".h", ".mk") or p.name == "Makefile":
                h.update(str(p.relative_to(base.parent)).encode())
                h.update(p.read_bytes())
    for part in parts:
        h.update(part.encode())
    return h.hexdigest()[:16]


def _run(cmd: list[str], what: str, timeout: float, cwd: Path | None = None) -> str:
    try:
        # in the run registry, under the parent-death signal: a build started at first use dies with
        # secperf (kill -9 included) and `secperf clean` finds it; its process group is killed whole
        p = build_stage.run_group(cmd, what, timeout, cwd=cwd)
    except subprocess.TimeoutExpired as exc:  # registry.ChildTimeout: the group is killed already
        raise DeviceSetupError(
            f"{what} did not finish within {exc.timeout:g} s and was stopped (a slow or loaded host: "
            f"raise {registry.LIMIT_SCALE_ENV}, e.g. 3)"
        ) from None
    if p.returncode != 0:
        raise DeviceSetupError(f"{what} failed (exit {p.returncode}): {(p.stderr or p.stdout).strip()[-1200:]}")
    return str(p.stdout)


def source_dir(stack: str, home: Path | None = None) -> Path:
    """The sources of a stack's source build (microcontroller builds): device_sources.locate."""
    return device_sources.locate(stack, home=home)


def xkcp_dir(home: Path | None = None) -> Path:
    """XKCP's ARMv7-M Keccak-p[1600] (the xkcp-sys crate): device_sources.locate."""
    return device_sources.locate("xkcp", home=home)


def footprint(map_text: str, archives: tuple[str, ...]) -> dict[str, Any]:
    """Bytes of the input sections the link kept from the given archives, by kind (GNU ld map)."""
    start = map_text.find("Linker script and memory map")
    body = map_text[start:] if start >= 0 else map_text
    sizes = {"text": 0, "rodata": 0, "data": 0, "bss": 0}
    for m in re.finditer(r"^ (\.[\w.$-]+)\s+0x[0-9a-f]+\s+0x([0-9a-f]+) (\S+)$", body, re.M):
        name, size, origin = m.group(1), int(m.group(2), 16), m.group(3)
        arch = origin.split("(")[0].rsplit("/", 1)[-1]
        if arch not in archives:
            continue
        for kind in ("text", "rodata", "data", "bss"):
            if name == f".{kind}" or name.startswith(f".{kind}."):
                sizes[kind] += size
                break
    return {
        **sizes,
        "flash": sizes["text"] + sizes["rodata"] + sizes["data"],
        "ram_static": sizes["data"] + sizes["bss"],
        "rule": "library input sections kept by the linker (--gc-sections), from the link map; "
        "flash = text + rodata + data, static RAM = data + bss (stack and heap not included)",
    }


def op_footprint(build: Build, op: str) -> dict[str, Any] | None:
    """The code of one operation's scheme (PQClean: its parameter set's archive and the shared Keccak
    code) from the client's link map; None for stacks whose library is one archive (Build.footprint)."""
    m = re.match(r"(ml-kem-\d+|ml-dsa-\d+)-", op)
    mp = Path(f"{build.client}.map")
    if build.stack != "pqclean" or m is None or not mp.is_file():
        return None
    fp = footprint(mp.read_text(errors="replace"), (f"libpq-{m.group(1)}.a", "libpq-common.a"))
    fp["rule"] = f"{m.group(1)}'s code and the shared Keccak (FIPS 202) code; " + fp["rule"]
    return fp


def watch_lines(client: Path, nm: str, stack: str = "wolfssl") -> str:
    """'0xADDR ID' for each watched function of the stack present in the static client's symbol table."""
    watch = WATCH_BY_STACK.get(stack, {})
    out = _run([nm, str(client)], "reading the client's symbols", 60)
    addr: dict[str, int] = {}
    for m in re.finditer(r"^([0-9a-fA-F]+) [Tt] (\w+)$", out, re.M):
        addr.setdefault(m.group(2), int(m.group(1), 16))
    return "".join(f"{addr[f]:#x} {i}\n" for i, f in watch.items() if f in addr)


def _make(
    out: Path,
    src: Path,
    decls: Path,
    inc: Path | None,
    extra: list[str],
    stack: str,
    target: str,
    binary: str,
    lib: Path | None,
    nm: str,
    qemu: str,
    run_cpu: str | None,
) -> None:
    """Build into staging directories (measure/build_stage), published only when all succeeded."""
    build_stage.remove_stale(out.parent)
    if build_stage.is_complete(out) and all(
        (out / f).is_file() for f in (binary, f"{stack}.json", "libinsn_events.so")
    ):
        return  # another process built it while this one waited for the lock
    build_stage.invalidate(out)  # stamped but missing a file: rebuilt and replaced
    tmp = lib_tmp = None
    try:
        tmp = build_stage.stage(out)
        lib_tmp = build_stage.stage(lib, seed=lib) if lib is not None else None
        args = ["make", "-s", "-f", str(src / "Makefile"), f"OUT={tmp}", f"SHARED_DECLS={decls}", "plugin", *extra]
        args += [f"MCU={lib_tmp}"] if lib_tmp is not None else []
        if inc is not None:
            args.append(f"QEMU_PLUGIN_INCLUDE={inc}")
        _run(args, f"building the {stack} guest client for {target} (native/device/Makefile)", BUILD_TIMEOUT_S)
        client = tmp / binary
        (tmp / f"watch-{stack}.txt").write_text(watch_lines(client, nm, stack) if stack in WATCH_BY_STACK else "")
        info = _run(
            [qemu, *(["-cpu", run_cpu] if run_cpu else []), str(client), "--offers"],
            f"asking the {stack} client what it offers",
            60,
        )
        (tmp / f"{stack}.json").write_text(info)
        if lib is not None and lib_tmp is not None:
            build_stage.publish(lib_tmp, lib)
        build_stage.publish(tmp, out, {tmp: out, **({lib_tmp: lib} if lib and lib_tmp else {})})
    finally:
        build_stage.discard(tmp, lib_tmp)  # what was not published (an error, a time-out, a kill)


def ensure_built(stack: str, target: str = "armhf", config: str | None = None, home: Path | None = None) -> Build:
    """The build of `stack` for `target` in the named configuration (data/device_builds.toml; the
    stack's default when None), made now if the sources, flags, configuration or libraries changed.
    home: $SECPERF_HOME/device when the caller already resolved it (device_home)."""
    if stack not in STACKS:
        raise DeviceSetupError(f"no build recipe for stack {stack!r}")
    if target not in TARGETS:
        raise DeviceSetupError(f"no build target {target!r}; known: {', '.join(TARGETS)}")
    if target not in STACK_TARGETS.get(stack, (target,)):
        raise DeviceSetupError(f"no {target} build of {stack} (it is built for {', '.join(STACK_TARGETS[stack])})")
    bcfg = check_config(stack, target, config)
    flags, note = TARGETS[target]
    make_target, binary, libs, _pkg = STACKS[stack]
    cc = tool("arm-linux-gnueabihf-gcc", "gcc-arm-linux-gnueabihf")
    nm = tool("arm-linux-gnueabihf-nm", "binutils-arm-linux-gnueabihf")
    qemu = tool("qemu-arm", "qemu-user")
    tool("gcc", "build-essential")
    tool("make", "make")
    if target in NEWLIB_TARGETS:
        cc = tool("arm-none-eabi-gcc", "gcc-arm-none-eabi")
        if (
            not Path("/usr/lib/arm-none-eabi/newlib/libc.a").is_file()
            and not Path("/usr/lib/arm-none-eabi/lib/libc.a").is_file()
        ):
            raise DeviceSetupError(
                "newlib for arm-none-eabi is missing: install the Debian package libnewlib-arm-none-eabi"
            )
    if not Path("/usr/arm-linux-gnueabihf/lib/libc.a").is_file():
        raise DeviceSetupError(
            "the armhf C library (/usr/arm-linux-gnueabihf/lib/libc.a) is missing: "
            "install the Debian package libc6-dev-armhf-cross"
        )
    home = home or device_home()  # $SECPERF_HOME/device, read once for the build's paths and sources
    src = sources_dir()
    decls = shared_decls_dir(src)
    inc = qemu_plugin_include(home)
    cc_line = _version_line([cc, "--version"])
    if flags is None and stack in SOURCE_ONLY:
        flags = ARMHF_SOURCE_FLAGS
        note = (
            f"built from {SOURCE_BUILDS[stack][2]} for ARMv7-A (Thumb-2, -O2, embedded configuration "
            f"native/device/mcu), linked statically"
        )
    elif flags is not None:
        note = note.replace("Debian's source package", SOURCE_BUILDS[stack][2])
    if flags is None:
        root = sysroot_for(stack, home)
        libdir = root / "usr" / "lib" / "arm-linux-gnueabihf"
        parts = [stack, cc_line, str(root), str(inc)] + [f"{lib}:{(libdir / lib).stat().st_size}" for lib in libs]
        extra, lib = [f"SYSROOT={root}", make_target], None
    else:
        root = source_dir(stack, home)
        binary = f"{binary}-src"
        parts = [stack, target, flags, cc_line, str(root), str(inc)]
        if bcfg.name != default_configs()[stack]:  # the default keeps its key; another one gets its own
            check_config_guards(src, stack, bcfg)
            parts += [f"config={bcfg.name}", bcfg.make_defs, bcfg.opt]
        var, mk, _origin = SOURCE_BUILDS[stack]
        if target in NEWLIB_TARGETS:  # native/device/m0: its own make targets, binary and system layer
            prefix, suffix = NEWLIB_TARGETS[target]
            mk, binary = mk.replace("mcu-", prefix), f"{STACKS[stack][1]}{suffix}"
            parts += [p.read_text() for p in sorted((src / "m0").rglob("*")) if p.is_file()]
        # the library objects are cached apart from the clients: keyed by compiler, flags, sources, config
        lib_key = hashlib.sha256(
            "|".join(parts + [p.read_text() for p in sorted((src / "mcu").rglob("*.h"))]).encode()
        ).hexdigest()[:16]
        extra = [f"{var}={root}", f"MCU_FLAGS={flags}", f"MCU_DEFS={bcfg.make_defs}", f"MCU_OPT={bcfg.opt}", mk, "-j2"]
        lib = home / "build" / f"lib-{stack}-{target}-{lib_key}"  # staged and published by _make
        if bcfg.opt != "-O2":
            note = note.replace("-O2", f"{bcfg.opt} library, -O2 client")
    if stack == "pqclean":  # no embedded configuration of ours: PQClean's code at its own -O3
        note = note.replace("-O2, embedded configuration native/device/mcu", "PQClean's C at -O3, client -O2")
        if "SECPERF_PQ_ASM_KECCAK" in bcfg.define and flags is not None:
            extra.insert(0, f"XKCP_SRC={xkcp_dir(home)}")
            note += "; Keccak: XKCP's ARMv7-M assembly (the xkcp-sys crate)"
    out = home / "build" / _fingerprint(src, parts + [(decls / "qemu_plugin_api.h").read_text()])
    client, plugin, watch, meta = (
        out / binary,
        out / "libinsn_events.so",
        out / f"watch-{stack}.txt",
        out / f"{stack}.json",
    )
    run_cpu = "max" if target != "armhf" else None
    if not (build_stage.is_complete(out) and client.is_file() and plugin.is_file() and meta.is_file()):
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(home / "build" / ".lock", "w") as lock:  # one build at a time (shared cache)
            fcntl.flock(lock, fcntl.LOCK_EX)
            _make(out, src, decls, inc, extra, stack, target, binary, lib, nm, qemu, run_cpu)
    info = json.loads(meta.read_text().splitlines()[0])
    mp = Path(f"{client}.map")
    fp = footprint(mp.read_text(errors="replace"), ARCHIVES[stack]) if mp.is_file() else None
    label = info["library"] + ("" if target == "armhf" else f" ({target} build)")  # the config: labels' "config"
    return Build(
        stack=stack,
        client=client,
        plugin=plugin,
        watch=watch,
        library=label,
        offers=info["offers"],
        crypto_ops=tuple(info.get("crypto_ops", ())),
        qemu=qemu,
        qemu_version=_version_line([qemu, "--version"]),
        cross_cc=cc_line,
        plugin_header="qemu-plugin.h from Debian's qemu source package"
        if inc
        else "declarations shared with native/mac/cortexm (qemu_plugin_api.h)",
        sysroot=root,
        target=target,
        run_cpu=run_cpu,
        build_note=note,
        footprint=fp,
        config=bcfg.name,
        config_note=bcfg.description,
    )
