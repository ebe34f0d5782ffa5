"""Where the device builds' third-party sources come from: one lookup (`locate`, `sysroot`,
`qemu_plugin_include`) for the whole of `secperf device` and the what-ifs that count on it.

Decision. Two places hold them, tried in this order:
1. `$SECPERF_HOME/device` -- the user's own copy, written by secperf on first use;
2. the installation's source cache, `<venv>/share/secperf/device` (or `$SECPERF_DEVICE_CACHE`): made
   by scripts/bootstrap (which runs this module with `--into`), world-readable, read in place and
   never written at run time. A second user, a CI job or a new SECPERF_HOME uses it as it is.
When neither holds a part, secperf fetches it now, as the user running it, with the registries' own
clients into `$SECPERF_HOME/device` (a line per step on stderr): `apt-get source` (Debian's wolfssl,
mbedtls, qemu: deb-src lines must be configured, as bootstrap does), `apt-get download` + `dpkg-deb -x`
(the armhf sysroot), `cargo fetch` (the mbedtls-rs-sys, wolfssl-sys, pqcrypto-*, xkcp-sys crates from
crates.io). Nothing is ever written into the checkout or the installation.

The parts, each a path relative to a root:
  src/wolfssl-5.5.4, src/mbedtls-2.28.3          Debian source packages (Cortex-M builds of 5.5 / 2.28)
  src/mbedtls-rs-sys-0.3.1/mbedtls               Mbed TLS 3.6 (also p256-m, under 3rdparty/)
  src/wolfssl-sys-5.3.0/wolfssl-src              wolfSSL 5.9 (also the DTLS 1.3 pair and EDHOC's crypto)
  src/wolfssl-sys-1.2.0/wolfssl-src              wolfSSL 5.6.6 (boards' logs of the 5.6 series, primitives)
  src/pqclean-mlkem-0.1.1-mldsa-0.1.2            PQClean's clean ML-KEM / ML-DSA
  src/xkcp-armv7m-0.0.5                          XKCP's ARMv7-M Keccak
  sysroot-armhf                                  Debian's armhf TLS, ngtcp2 and GnuTLS libraries (Cortex-A rows, QUIC)
  qemu-src/include/qemu-plugin.h                 QEMU's plugin header (else the shared declarations)
"""

from __future__ import annotations

import argparse
import fcntl
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from ..core.errors import SetupError
from ..core.paths import secperf_home
from ..lab import registry


class DeviceSetupError(SetupError):
    """A cross compiler, emulator or armhf library is missing, or the build failed."""


# stack (or part) -> (what it is, directory glob under src/, a file that proves it whole)
SOURCES = {
    "wolfssl": ("Debian's source package wolfssl (apt-get source)", "wolfssl-[0-9]*", "wolfcrypt/src"),
    "mbedtls": ("Debian's source package mbedtls (apt-get source)", "mbedtls-[0-9]*", "library"),
    "mbedtls3": ("the mbedtls-rs-sys crate from crates.io (cargo fetch)", "mbedtls-rs-sys-*/mbedtls", "library"),
    "wolfssl59": (
        "the wolfssl-sys crate 5.x from crates.io (cargo fetch)",
        "wolfssl-sys-5.*/wolfssl-src",
        "wolfcrypt/src",
    ),
    "wolfssl56": (
        "the wolfssl-sys crate 1.2.0 from crates.io (cargo fetch): wolfSSL 5.6.6",
        "wolfssl-sys-1.*/wolfssl-src",
        "wolfcrypt/src",
    ),
    "p256m": (
        "the mbedtls-rs-sys crate from crates.io (cargo fetch)",
        "mbedtls-rs-sys-*/mbedtls/3rdparty/p256-m/p256-m",
        "p256-m.c",
    ),
    "pqclean": (
        "the pqcrypto-mlkem and pqcrypto-mldsa crates from crates.io (cargo fetch)",
        "pqclean-mlkem-*-mldsa-*",
        "VERSION",
    ),
    "xkcp": (
        "the xkcp-sys crate from crates.io (cargo fetch): XKCP's ARMv7-M Keccak",
        "xkcp-armv7m-*",
        "KeccakP-1600-inplace-32bi-armv7m-le-gcc.s",
    ),
}
# pinned versions fetched when no root holds a part
MBED3 = ("mbedtls-rs-sys", "0.3.1")
WOLF59 = ("wolfssl-sys", "5.3.0")
WOLF56 = ("wolfssl-sys", "1.2.0")  # its wolfssl-src is wolfSSL 5.6.6 (wolfssl/version.h)
PQ_KEM, PQ_DSA = ("pqcrypto-mlkem", "0.1.1"), ("pqcrypto-mldsa", "0.1.2")
XKCP = ("xkcp-sys", "0.0.5")
ARMHF_DEBS = (
    "libwolfssl35",
    "libwolfssl-dev",
    "libmbedcrypto7",
    "libmbedx509-1",
    "libmbedtls14",
    "libmbedtls-dev",
    "libssl3",
    "libssl-dev",
)
ARMHF_QUIC_DEBS = (
    "libngtcp2-dev",
    "libngtcp2-crypto-gnutls-dev",
    "libgnutls28-dev",
    "libgnutls30",
    "libnettle8",
    "libhogweed6",
    "libgmp10",
    "libidn2-0",
    "libunistring2",
    "libtasn1-6",
    "libp11-kit0",
    "libffi8",
)

# how fetch steps are told: one line each (the CLI's stderr); a front end may replace it
say: Callable[[str], None] = lambda text: print(text, file=sys.stderr, flush=True)


def home_root() -> Path:
    return secperf_home() / "device"


def install_cache() -> Path:
    """The installation's read-only source cache (scripts/bootstrap fills it)."""
    env = os.environ.get("SECPERF_DEVICE_CACHE")
    return Path(env) if env else Path(sys.prefix) / "share" / "secperf" / "device"


def roots(home: Path | None = None) -> list[Path]:
    """The user's root (home: $SECPERF_HOME/device as the caller already resolved it), then the installation's."""
    return [home or home_root(), install_cache()]


def _find(part: str, root: Path) -> Path | None:
    _what, pattern, proof = SOURCES[part]
    base = root / "src"
    try:
        found = sorted(d for d in base.glob(pattern) if (d / proof).exists())
    except OSError:
        return None
    return found[-1] if found else None


def locate(part: str, fetch: bool = True, home: Path | None = None) -> Path:
    """The directory of a device build's sources (SOURCES), from the first root holding it; fetched
    into $SECPERF_HOME/device now when none does (DeviceSetupError saying what failed). home: that
    directory when the caller resolved it (roots)."""
    if part not in SOURCES:
        raise DeviceSetupError(f"no source part {part!r}; known: {', '.join(SOURCES)}")
    for root in roots(home):
        hit = _find(part, root)
        if hit is not None:
            return hit
    what = SOURCES[part][0]
    if not fetch:
        raise DeviceSetupError(f"{what} was not found in {' or '.join(str(r / 'src') for r in roots(home))}")
    with _locked(home) as root:
        hit = _find(part, root)
        if hit is None:
            FETCHERS[part](root)
            hit = _find(part, root)
    if hit is None:
        raise DeviceSetupError(f"{what} was fetched but {SOURCES[part][1]} is not under {root / 'src'}")
    return hit


def sysroot(libs: tuple[str, ...], what: str, home: Path | None = None) -> Path:
    """The first sysroot holding all `libs` (usr/lib/arm-linux-gnueabihf): $SECPERF_ARMHF_SYSROOT,
    the user's, the installation's, the system's; Debian's armhf packages fetched into the user's
    otherwise. home: the user's root when the caller resolved it (roots)."""
    cands = [Path(p) for p in (os.environ.get("SECPERF_ARMHF_SYSROOT"),) if p]
    cands += [r / "sysroot-armhf" for r in roots(home)] + [Path("/")]

    def holds(root: Path) -> bool:
        libdir = root / "usr" / "lib" / "arm-linux-gnueabihf"
        return all((libdir / lib).exists() for lib in libs)

    for root in cands:
        if holds(root):
            return root
    with _locked(home) as home:
        if not holds(home / "sysroot-armhf"):
            _fetch_sysroot(home)
    if holds(home / "sysroot-armhf"):
        return home / "sysroot-armhf"
    raise DeviceSetupError(
        f"{what} ({', '.join(libs)}) was not found in {', '.join(str(c) for c in cands)}, "
        f"nor in Debian's armhf packages fetched into {home / 'sysroot-armhf'}"
    )


def qemu_plugin_include(fetch: bool = True, home: Path | None = None) -> Path | None:
    """QEMU's qemu-plugin.h directory, fetched from Debian's qemu source package when no root holds it
    (None when that fails too: the plugin then uses the declarations shared with native/mac, said).
    home: the user's root when the caller resolved it (roots)."""
    for root in roots(home):
        d = root / "qemu-src" / "include"
        if (d / "qemu-plugin.h").is_file():
            return d
    if not fetch:
        return None
    try:
        with _locked(home) as home:
            _fetch_qemu_header(home)
    except (DeviceSetupError, OSError, StopIteration, IndexError, tarfile.TarError) as exc:
        say(f"secperf: qemu-plugin.h not fetched ({exc}); the plugin is built against the shared declarations")
        return None
    d = home / "qemu-src" / "include"
    return d if (d / "qemu-plugin.h").is_file() else None


class _locked:
    """The user's root, created, under an exclusive lock: two commands never fetch into it at once."""

    def __init__(self, home: Path | None = None) -> None:
        self._home = home

    def __enter__(self) -> Path:
        root = self._home or home_root()
        try:
            root.mkdir(parents=True, exist_ok=True)
            self._f = open(root / ".fetch.lock", "w")  # noqa: SIM115 - held across the block
        except OSError as exc:
            raise DeviceSetupError(
                f"cannot write the device sources into {root}: {exc.strerror or exc}; "
                f"point SECPERF_HOME at a writable directory"
            ) from None
        fcntl.flock(self._f, fcntl.LOCK_EX)
        return root

    def __exit__(self, *exc: object) -> None:
        self._f.close()


def _run(cmd: list[str], cwd: Path, what: str, env: dict[str, str] | None = None, timeout: float = 1800) -> None:
    if shutil.which(cmd[0]) is None:
        raise DeviceSetupError(
            f"{what}: {cmd[0]} is not installed (scripts/bootstrap installs it); or use an "
            f"installation whose source cache holds it ({install_cache()})"
        )
    # in a process group of its own, killed whole past its limit (apt-get's methods, cargo's children);
    # not through the run registry: scripts/bootstrap runs this too, outside any run (in a run, the
    # child carries the run's mark from secperf's environment: a killed secperf's watchdog stops it)
    limit = registry.scaled(timeout)
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        registry.kill_tree(proc)
        raise DeviceSetupError(
            f"{what}: {' '.join(cmd[:3])} did not finish within {limit:g} s and was stopped"
        ) from None
    except BaseException:
        registry.kill_tree(proc)
        raise
    if proc.returncode != 0:
        raise DeviceSetupError(f"{what} failed (exit {proc.returncode}): {(err or out).strip()[-800:]}")


def _fetch_debian_source(pkg: str) -> Callable[[Path], None]:
    def fetch(root: Path) -> None:
        dest = root / "src"
        dest.mkdir(parents=True, exist_ok=True)
        say(f"secperf: fetching Debian's {pkg} source package (apt-get source) into {dest} [1/2]")
        what = f"apt-get source {pkg} (needs deb-src lines in the apt sources, as scripts/bootstrap adds)"
        _run(["apt-get", "source", "--download-only", "-qq", pkg], dest, what)
        dsc = sorted(dest.glob(f"{pkg}_*.dsc"))
        if not dsc:
            raise DeviceSetupError(f"{what}: no {pkg}_*.dsc was downloaded into {dest}")
        say(f"secperf: unpacking {dsc[-1].name} (dpkg-source -x) [2/2]")
        _run(["dpkg-source", "-x", "--no-check", dsc[-1].name], dest, f"dpkg-source -x {dsc[-1].name}")

    return fetch


def _crate_file(root: Path, name: str, version: str) -> Path:
    """`cargo fetch` of one crate into a scratch package; the .crate from cargo's own cache."""
    scratch = root / f"crate-fetch-{name}"
    (scratch / "src").mkdir(parents=True, exist_ok=True)
    (scratch / "Cargo.toml").write_text(
        f'[package]\nname = "secperf-fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\n'
        f'{name} = {{ version = "={version}", default-features = false }}\n'
    )
    (scratch / "src" / "lib.rs").write_text("")
    say(f"secperf: fetching the {name} {version} crate from crates.io (cargo fetch)")
    _run(["cargo", "fetch", "-q"], scratch, f"cargo fetch {name} {version}")
    cargo_home = Path(os.environ.get("CARGO_HOME") or Path.home() / ".cargo")
    found = sorted(cargo_home.glob(f"registry/cache/*/{name}-{version}.crate"))
    if not found:
        raise DeviceSetupError(f"cargo fetch {name} {version}: the crate is not in {cargo_home}/registry/cache")
    return found[-1]


def _extract(crate: Path, dest: Path, keep: Callable[[str], str | None]) -> None:
    """Unpack the members `keep` maps to a relative path (None: skipped) into dest."""
    with tarfile.open(crate, "r:gz") as tf:
        for m in tf.getmembers():
            rel = keep(m.name)
            if rel is None or not (m.isfile() or m.isdir()):
                continue
            m.name = rel
            tf.extract(m, dest, filter="data")


def _into(final: Path, build: Callable[[Path], None]) -> None:
    """Build a directory beside `final` and move it into place whole."""
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=final.parent))
    try:
        build(tmp)
        if final.exists():
            shutil.rmtree(final)
        tmp.rename(final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _crate_subdir(name: str, version: str, sub: str) -> Callable[[Path], None]:
    def fetch(root: Path) -> None:
        crate = _crate_file(root, name, version)
        top = f"{name}-{version}"

        def keep(n: str) -> str | None:
            return n[len(top) + 1 :] if n.startswith(f"{top}/{sub}/") or n == f"{top}/{sub}" else None

        _into(root / "src" / top, lambda tmp: _extract(crate, tmp, keep))

    return fetch


def _fetch_pqclean(root: Path) -> None:
    kem, dsa = _crate_file(root, *PQ_KEM), _crate_file(root, *PQ_DSA)

    def strip(top: str, wanted: Callable[[str], bool]) -> Callable[[str], str | None]:
        def keep(n: str) -> str | None:
            rel = n[len(top) + len("/pqclean/") :] if n.startswith(f"{top}/pqclean/") else None
            return rel if rel and wanted(rel) else None

        return keep

    def build(tmp: Path) -> None:
        _extract(
            kem,
            tmp,
            strip(
                f"{PQ_KEM[0]}-{PQ_KEM[1]}",
                lambda r: r.startswith("common/") or (r.startswith("crypto_kem/ml-kem-") and "/clean/" in r),
            ),
        )
        _extract(
            dsa,
            tmp,
            strip(f"{PQ_DSA[0]}-{PQ_DSA[1]}", lambda r: r.startswith("crypto_sign/ml-dsa-") and "/clean/" in r),
        )
        (tmp / "VERSION").write_text(f"{PQ_KEM[0]} {PQ_KEM[1]}, {PQ_DSA[0]} {PQ_DSA[1]}\n")

    _into(root / "src" / f"pqclean-mlkem-{PQ_KEM[1]}-mldsa-{PQ_DSA[1]}", build)


def _fetch_xkcp(root: Path) -> None:
    crate = _crate_file(root, *XKCP)
    top = f"{XKCP[0]}-{XKCP[1]}"
    asm = f"{top}/XKCP/lib/low/KeccakP-1600/ARM/KeccakP-1600-inplace-32bi-armv7m-le-gcc.s"

    def build(tmp: Path) -> None:
        _extract(crate, tmp, lambda n: n.rsplit("/", 1)[-1] if n in (asm, f"{top}/LICENSE") else None)
        (tmp / "VERSION").write_text(f"{XKCP[0]} {XKCP[1]}\n")

    _into(root / "src" / f"xkcp-armv7m-{XKCP[1]}", build)


def _fetch_sysroot(root: Path) -> None:
    for sub, debs in (("debs", ARMHF_DEBS), ("debs-quic", ARMHF_QUIC_DEBS)):
        d = root / sub
        d.mkdir(parents=True, exist_ok=True)
        say(f"secperf: fetching Debian's armhf {' '.join(debs)} (apt-get download) into {d}")
        _run(
            ["apt-get", "download", *(f"{p}:armhf" for p in debs)],
            d,
            "apt-get download (the armhf architecture must be added: dpkg --add-architecture armhf, as "
            "scripts/bootstrap does)",
        )
    pkgs = sorted((root / "debs").glob("*_armhf.deb")) + sorted((root / "debs-quic").glob("*_armhf.deb"))
    for i, deb in enumerate(pkgs, 1):
        say(f"secperf: unpacking into {root / 'sysroot-armhf'} [{i}/{len(pkgs)}] {deb.name}")
        _run(
            ["dpkg-deb", "-x", str(deb.resolve()), str((root / "sysroot-armhf").resolve())],
            root,
            f"dpkg-deb -x {deb.name}",
        )


def _fetch_qemu_header(root: Path) -> None:
    src = root / "qemu-src"
    (src / "include").mkdir(parents=True, exist_ok=True)
    if not list(src.glob("qemu_*.orig.tar.*")):
        say(f"secperf: fetching Debian's qemu source package (apt-get source --download-only) into {src}")
        _run(["apt-get", "source", "--download-only", "-qq", "qemu"], src, "apt-get source qemu")
    orig = sorted(p for p in src.glob("qemu_*.orig.tar.*") if not p.name.endswith(".asc"))[0]
    with tarfile.open(orig) as tf:
        member = next(m for m in tf.getmembers() if m.name.endswith("/include/qemu/qemu-plugin.h"))
        data = tf.extractfile(member)
        assert data is not None
        (src / "include" / "qemu-plugin.h").write_bytes(data.read())


FETCHERS: dict[str, Callable[[Path], None]] = {
    "wolfssl": _fetch_debian_source("wolfssl"),
    "mbedtls": _fetch_debian_source("mbedtls"),
    "mbedtls3": _crate_subdir(*MBED3, "mbedtls"),
    "p256m": _crate_subdir(*MBED3, "mbedtls"),
    "wolfssl59": _crate_subdir(*WOLF59, "wolfssl-src"),
    "wolfssl56": _crate_subdir(*WOLF56, "wolfssl-src"),
    "pqclean": _fetch_pqclean,
    "xkcp": _fetch_xkcp,
}


def fill(root: Path) -> tuple[list[str], list[str]]:
    """Every part into `root` (scripts/bootstrap's installation cache): (fetched now, failed with why);
    a part that fails is left to be fetched at first use."""
    done: list[str] = []
    failed: list[str] = []

    def step(name: str, fn: Callable[[Path], None]) -> None:
        try:
            fn(root)
            done.append(name)
        except (DeviceSetupError, OSError, StopIteration, tarfile.TarError) as exc:
            failed.append(f"{name}: {exc}")

    for part in ("wolfssl", "mbedtls", "mbedtls3", "wolfssl59", "wolfssl56", "pqclean", "xkcp"):
        if _find(part, root) is None:
            step(part, FETCHERS[part])
    libdir = root / "sysroot-armhf" / "usr" / "lib" / "arm-linux-gnueabihf"
    if not all(
        (libdir / lib).exists()
        for lib in ("libwolfssl.a", "libmbedtls.a", "libssl.a", "libngtcp2.a", "libp11-kit.so.0")
    ):
        step("sysroot-armhf", _fetch_sysroot)
    if not (root / "qemu-src" / "include" / "qemu-plugin.h").is_file():
        step("qemu-plugin.h", _fetch_qemu_header)
    return done, failed


def main(argv: list[str] | None = None) -> int:
    """`python -m secperf.measure.device_sources --into DIR`: fill an installation's source cache."""

    ap = argparse.ArgumentParser(prog="python -m secperf.measure.device_sources")
    ap.add_argument("--into", type=Path, default=None, help="the cache to fill (default: the installation's)")
    a = ap.parse_args(argv)
    root = (a.into or install_cache()).resolve()
    root.mkdir(parents=True, exist_ok=True)
    done, failed = fill(root)
    for why in failed:
        print(f"device sources: (optional) not in the cache, fetched at first use instead: {why}", file=sys.stderr)
    for p in [root, *root.rglob("*")]:  # world-readable: every user of the installation reads it in place
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | (0o555 if p.is_dir() else 0o444))
    print(f"device sources: {root}" + (f": fetched {', '.join(done)}" if done else ": complete"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
