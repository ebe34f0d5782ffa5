"""The C sources the CMake build does not compile, added to its compile database for `make lint-c`.

    python scripts/lint_compile_db.py BUILD_DIR

BUILD_DIR/all/compile_commands.json: CMake's BUILD_DIR/compile_commands.json (the host build) and one
entry per source of the device clients (native/device/Makefile), the QEMU counting plugin, the EDHOC
initiator (native/device/edhoc_c/Makefile), the QUIC client (native/device/quic/Makefile), the
Cortex-M0+ newlib layer (native/device/m0/Makefile) and the DTLS pair (measure/dtls13.py). Each
entry's flags come from the real build rule: the Makefiles are asked for their commands (`make -n -B`)
with the cross compiler and target-core flags replaced by the host's (clang-tidy parses for this
machine; the M0+ layer, which exists only for its target, is parsed for ARMv6-M against newlib's
headers), and the pair's command from dtls13.pair_compile_argv. Library
headers that exist only after first use (the source packages and crates under $SECPERF_HOME/device
or the installation's cache, the armhf sysroot, the pair's wolfSSL 5.9 build) are never fetched here:
a source whose headers are absent is left out with one printed line saying why.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from secperf.measure import device_sources, dtls13  # noqa: E402
from secperf.measure.device_sources import DeviceSetupError  # noqa: E402

DEVICE = ROOT / "native" / "device"
# compiler flags kept from a build command (everything else: outputs, link flags, archives, libraries)
KEEP_PREFIX = ("-I", "-D", "-U", "-std=", "-W", "-O", "-f", "-g", "-include")
HOST = {"CROSS": "", "HOSTCC": "gcc"}


def _entries(command: str, directory: Path) -> list[dict]:
    """One entry per .c file of a compiler command line (compile or compile-and-link)."""
    argv = shlex.split(command)
    if not argv or not argv[0].endswith(("gcc", "cc")):
        return []
    flags, sources, i = [], [], 1
    while i < len(argv):
        a = argv[i]
        if a in ("-o", "-include", "-I", "-D"):
            if a != "-o":
                flags += [a, argv[i + 1]]
            i += 2
            continue
        if a.endswith(".c"):
            sources.append(str((directory / a).resolve()))
        elif a.startswith(KEEP_PREFIX) and not a.startswith("-Wl,"):
            flags.append(a)
        i += 1
    return [{"directory": str(directory), "file": src, "arguments": ["gcc", *flags, "-c", src]} for src in sources]


def _make(makefile: Path, targets: list[str], variables: dict[str, str]) -> list[dict]:
    """The entries of `make -n -B` for targets (the commands it would run, none run)."""
    with tempfile.TemporaryDirectory() as out:
        argv = [
            "make",
            "-n",
            "-B",
            "-s",
            "-f",
            str(makefile),
            f"OUT={out}",
            *(f"{k}={v}" for k, v in variables.items()),
            *targets,
        ]
        p = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=120)
    if p.returncode != 0:
        raise SystemExit(f"lint_compile_db: {' '.join(argv)} failed: {p.stderr.strip()[-800:]}")
    found: list[dict] = []
    for line in p.stdout.replace("\\\n", " ").splitlines():  # a rule's continued lines are one command
        found += _entries(line, ROOT)
    return found


def _skip(what: str, why: str) -> None:
    print(f"lint-c: skipped {what}: {why}", flush=True)


def _host_headers(header: str, package: str, what: str) -> bool:
    if (Path("/usr/include") / header).is_file():
        return True
    _skip(what, f"/usr/include/{header} is absent (Debian package {package}; scripts/bootstrap installs it)")
    return False


def device() -> list[dict]:
    """The guest client (every backend, with host flags), its host build and the counting plugin."""
    inc = device_sources.qemu_plugin_include(fetch=False)
    plugin = {"QEMU_PLUGIN_INCLUDE": str(inc)} if inc else {}
    if not inc:
        _skip(
            "the plugin against QEMU's qemu-plugin.h",
            "not fetched yet (first `secperf device` use fetches it); "
            "checked against the declarations shared with native/mac/cortexm instead",
        )
    libs = {
        "wolfssl": ("wolfssl/options.h", "libwolfssl-dev"),
        "mbedtls": ("mbedtls/version.h", "libmbedtls-dev"),
        "openssl": ("openssl/ssl.h", "libssl-dev"),
    }
    have = [s for s, (h, pkg) in libs.items() if _host_headers(h, pkg, f"the device client's {s} backend")]
    found = _make(DEVICE / "Makefile", ["plugin", *(f"host-{s}" for s in have if s != "openssl")], {**HOST, **plugin})
    # the guest build of each backend: marker.c (the plugin's markers) and OpenSSL's backend
    found += _make(DEVICE / "Makefile", have, {**HOST, "ARCH_FLAGS": "", "SYSROOT": "/"}) if have else []
    return found


def primitives() -> list[dict]:
    """The primitives-only clients (PQClean's ML-KEM/ML-DSA with the assembly Keccak's FIPS 202 layer,
    p256-m): their M-profile rules with host flags; only this project's sources are kept."""
    parts = {}
    for part in ("pqclean", "p256m", "xkcp"):
        try:
            parts[part] = str(device_sources.locate(part, fetch=False))
        except DeviceSetupError as exc:
            _skip(f"the {part} client's sources", str(exc))
    targets = [
        t
        for t, need in (("mcu-pqclean", ("pqclean", "xkcp")), ("mcu-p256m", ("p256m",)))
        if all(p in parts for p in need)
    ]
    if not targets:
        return []
    found = _make(
        DEVICE / "Makefile",
        targets,
        {
            **HOST,
            "MCU_FLAGS": "",
            "OBJCOPY": "true",
            "PQCLEAN_SRC": parts.get("pqclean", ""),
            "P256M_SRC": parts.get("p256m", ""),
            "XKCP_SRC": parts.get("xkcp", ""),
            "MCU_DEFS": "-DSECPERF_PQ_ASM_KECCAK",
        },
    )
    return [e for e in found if e["file"].startswith(str(ROOT / "native"))]


# the Cortex-M0+ layer is parsed for its own target: clang's ARMv6-M soft-float triple against newlib's
# headers (Debian's libnewlib-arm-none-eabi), as arm-none-eabi-gcc compiles it
M0_TARGET = ["--target=armv6m-none-eabi", "-mcpu=cortex-m0plus", "-mthumb", "-mfloat-abi=soft"]
NEWLIB_INCLUDE = Path("/usr/lib/arm-none-eabi/include")


def m0() -> list[dict]:
    """The Cortex-M0+ system layer for newlib (native/device/m0/sys.c: process entry, newlib's stubs,
    sockets as Linux system calls) and Mbed TLS's bare-metal hooks (m0/mbedtls_port.c): their rules'
    flags (native/device/m0/Makefile, `make -n`), parsed for the real target (ARMv6-M Thumb, soft
    float) against newlib's headers, since they are inline assembly and newlib's hooks with no host
    equivalent."""
    if not (NEWLIB_INCLUDE / "newlib.h").is_file():
        _skip(
            "native/device/m0/sys.c, m0/mbedtls_port.c",
            f"{NEWLIB_INCLUDE}/newlib.h is absent (Debian package libnewlib-arm-none-eabi; scripts/bootstrap installs it)",
        )
        return []
    with tempfile.TemporaryDirectory() as out:
        targets = [f"{out}/m0-wolfssl-client/sys.o"]
        variables = {**HOST, "OUT": out, "MCU_FLAGS": ""}
        try:
            variables["MBED3_SRC"] = str(device_sources.locate("mbedtls3", fetch=False))
            targets.append(f"{out}/m0-mbedtls3-client/mbedtls_port.o")
        except DeviceSetupError as exc:
            _skip("native/device/m0/mbedtls_port.c", str(exc))
        found = _make(DEVICE / "Makefile", targets, variables)
    for e in found:
        e["arguments"] = ["clang", *M0_TARGET, "-isystem", str(NEWLIB_INCLUDE), *e["arguments"][1:]]
    return found


def by_hand() -> list[dict]:
    """The sources built by commands in the code rather than a Makefile rule, with those commands'
    flags on the host: the user-code harness and the instruction limiter (measure/device_user.py) and
    the FIPS 202 known-answer check (tests/test_device_timing.py, against PQClean's fips202.h)."""
    user = DEVICE / "user"
    inc = device_sources.qemu_plugin_include(fetch=False)
    plugin_hdr = ["-DSECPERF_QEMU_PLUGIN_HEADER", f"-I{inc}"] if inc else [f"-I{ROOT / 'native' / 'mac' / 'cortexm'}"]
    found = [
        {
            "directory": str(ROOT),
            "file": str(user / "harness.c"),
            "arguments": ["gcc", "-O2", "-std=gnu11", "-D_GNU_SOURCE", f"-I{DEVICE}", "-c", str(user / "harness.c")],
        },
        {
            "directory": str(ROOT),
            "file": str(user / "limit.c"),
            "arguments": [
                "gcc",
                "-O2",
                "-Wall",
                "-Wextra",
                "-fPIC",
                "-fvisibility=hidden",
                *plugin_hdr,
                "-c",
                str(user / "limit.c"),
            ],
        },
    ]
    try:
        pq = device_sources.locate("pqclean", fetch=False)
    except DeviceSetupError as exc:
        _skip("native/device/pq/fips202_check.c", str(exc))
        return found
    check = DEVICE / "pq" / "fips202_check.c"
    found.append(
        {
            "directory": str(ROOT),
            "file": str(check),
            "arguments": ["gcc", "-O2", f"-I{Path(pq) / 'common'}", "-c", str(check)],
        }
    )
    return found


def edhoc(build: Path) -> list[dict]:
    """The EDHOC initiator over each of its crypto layers (the M-profile build rule, host flags)."""
    found: list[dict] = []
    gen = build / "device-gen"
    for crypto in ("mbedtls3", "wolfssl59"):
        try:
            src = device_sources.locate(crypto, fetch=False)
        except DeviceSetupError as exc:
            _skip(f"native/device/edhoc_c over {crypto}", str(exc))
            continue
        if crypto == "wolfssl59":
            # wolfSSL's options.h for the M build, generated by the device Makefile's own rule
            _run_make(DEVICE / "Makefile", [f"{gen}/wolfssl-inc/wolfssl/options.h"], {"MCU": str(gen)})
        found += _make(
            DEVICE / "edhoc_c" / "Makefile",
            [],
            {
                **HOST,
                "CRYPTO": crypto,
                "LIB_SRC": str(src),
                "LIB_GEN": f"{gen}/wolfssl-inc",
                "LIB": "",
                "FLAGS": "",
                "LINK": "glibc",
            },
        )
    return found


def _run_make(makefile: Path, targets: list[str], variables: dict[str, str]) -> None:
    argv = ["make", "-s", "-f", str(makefile), *(f"{k}={v}" for k, v in variables.items()), *targets]
    p = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=120)
    if p.returncode != 0:
        raise SystemExit(f"lint_compile_db: {' '.join(argv)} failed: {p.stderr.strip()[-800:]}")


def quic() -> list[dict]:
    """The QUIC client against ngtcp2's headers (Debian's armhf packages, fetched at first use)."""
    roots = [r / "sysroot-armhf" for r in device_sources.roots()] + [Path("/")]
    sysroot = next((r for r in roots if (r / "usr" / "include" / "ngtcp2" / "ngtcp2.h").is_file()), None)
    if sysroot is None:
        _skip(
            "native/device/quic/client.c",
            "ngtcp2's headers are not unpacked yet (the first `secperf device handshake --stack ngtcp2` fetches them)",
        )
        return []
    return _make(DEVICE / "quic" / "Makefile", ["quic"], {**HOST, "ARCH_FLAGS": "", "SYSROOT": str(sysroot)})


def dtls_pair() -> list[dict]:
    """The DTLS pair against the wolfSSL 5.9 that measure/dtls13.py builds for it."""
    try:
        inst = dtls13.library_dir(device_sources.locate("wolfssl59", fetch=False)) / "wolfssl"
    except DeviceSetupError as exc:
        _skip("native/dtls13/dtls_pair.c", str(exc))
        return []
    if not (inst / "include" / "wolfssl" / "options.h").is_file():
        _skip(
            "native/dtls13/dtls_pair.c",
            "wolfSSL 5.9 for the pair is not built yet (the first `secperf dtls` builds it)",
        )
        return []
    argv = dtls13.pair_compile_argv(inst, Path("dtls_pair"))
    own = str(ROOT / "native" / "dtls13" / "dtls_pair.c")  # the source tree's copy, not the installed one
    return _entries(shlex.join([own if a == str(dtls13.SOURCE) else a for a in argv]), ROOT)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    build = Path(argv[0])
    db = json.loads((build / "compile_commands.json").read_text())
    seen = {e["file"] for e in db}
    before = len(seen)
    for part in (device, primitives, m0, by_hand, lambda: edhoc(build), quic, dtls_pair):
        for e in part():
            if e["file"] not in seen:  # the first rule naming a file gives its flags
                seen.add(e["file"])
                db.append(e)
    (build / "all").mkdir(exist_ok=True)
    (build / "all" / "compile_commands.json").write_text(json.dumps(db, indent=1))
    print(f"lint-c: {before} sources of the CMake build and {len(seen) - before} of the first-use builds")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
