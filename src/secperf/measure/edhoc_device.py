"""EDHOC on the emulated Cortex-M cores: instruction counts per initiator message.

lakers (0.6.2, its RustCrypto backend: p256, sha2, hkdf, aes + ccm) is cross-built with cargo for
thumbv7em-none-eabihf (Cortex-M4F: Thumb-2, DSP, FPv4-SP, hard-float ABI) as a static library with
one C entry point (native/device/edhoc/src/lib.rs), linked into a small guest program
(native/device/edhoc/main.c) against armhf glibc as the TLS stacks' M-profile clients are (their
ARM attribute sections removed so the linker accepts M-profile code next to the A-profile C
library), and run under `qemu-arm -cpu max` with secperf's counting plugin (libinsn_events.so,
built by `secperf device`). The plugin records the instruction count at each marker; the guest
marks each initiator step (message_1, message_2 processed, message_3, OSCORE export), so the
responder's work, run in the same process, is outside the counts.

Cortex-M33: no thumbv8m.main Rust target is installed here, so the M33 rows run the same ARMv7E-M
code (the M33 executes it unchanged; v8-M code would differ by a few instructions at most); the
row's labels say so. Counts are exact for the code run; time is the core's CPI model's business
(model/costs.device_us).

Sources: the crates come from crates.io through `cargo fetch` (scripts/bootstrap's way for the
device builds' crates); with no network and no cached crates the build fails, naming that.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
from pathlib import Path

from ..core.errors import InputError
from ..core.native import shipped_sources
from ..lab import registry

RUST_TARGET = "thumbv7em-none-eabihf"
M_FLAGS = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16", "-O2"]
STEPS = {1: "message_1", 2: "message_2", 3: "message_3", 4: "oscore_export"}
CORES = {"cortex-m4": "ARMv7E-M code built for the Cortex-M4F",
         "cortex-m33": "the same ARMv7E-M code (no thumbv8m.main Rust target installed), run as the M33 runs it"}


class EdhocDeviceError(InputError):
    """The EDHOC device build or run cannot be done here; the message says what is missing."""


def _src() -> Path:
    found = shipped_sources("device/edhoc", "native/device/edhoc", "Cargo.toml", "main.c")
    if found:
        return found
    raise EdhocDeviceError("the EDHOC device sources (native/device/edhoc) were not found: reinstall with `make build`")


def _tool(name: str, hint: str) -> str:
    exe = shutil.which(name)
    if not exe:
        raise EdhocDeviceError(f"{name} not found: {hint}")
    return exe


def _home() -> Path:
    from ..core.paths import secperf_home
    return secperf_home() / "device"


def plugin() -> Path:
    """The counting plugin `secperf device` built (the newest), or an error saying how to build it."""
    found = sorted((_home() / "build").glob("*/libinsn_events.so"), key=lambda p: p.stat().st_mtime)
    if not found:
        raise EdhocDeviceError("the instruction-counting plugin is not built yet: run `secperf device crypto "
                               "--device cortex-m4-80` once (it builds the plugin), then count EDHOC")
    return found[-1]


def build() -> Path:
    """The guest binary (built once per source version into $SECPERF_HOME/device/build/edhoc-HASH)."""
    src = _src()
    digest = hashlib.sha256(b"".join((src / f).read_bytes() for f in ("Cargo.toml", "Cargo.lock", "main.c", "src/lib.rs"))
                            + " ".join(M_FLAGS).encode()).hexdigest()[:16]
    out = _home() / "build" / f"edhoc-{digest}"
    binary = out / "sp-edhoc-m4"
    if binary.is_file():
        return binary
    cargo = _tool("cargo", "install Rust (rustup) with the thumbv7em-none-eabihf target")
    cc = _tool("arm-linux-gnueabihf-gcc", "install the Debian package gcc-arm-linux-gnueabihf")
    objcopy = _tool("arm-linux-gnueabihf-objcopy", "install the Debian package binutils-arm-linux-gnueabihf")
    out.mkdir(parents=True, exist_ok=True)
    work = out / "crate"
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(src, work)
    env = {**os.environ, "CARGO_TARGET_DIR": str(out / "target")}
    r = registry.run([cargo, "build", "--release", "--target", RUST_TARGET], "cargo (EDHOC device library)",
                     capture_output=True, text=True, cwd=work, env=env, timeout=900)
    if r.returncode != 0:
        tail = (r.stderr or "").strip().splitlines()[-6:]
        hint = (f"; add the target: rustup target add {RUST_TARGET}" if "target may not be installed" in (r.stderr or "")
                else "; the crates come from crates.io (cargo fetch) -- offline without a cache they cannot")
        raise EdhocDeviceError("building lakers for the Cortex-M failed: " + " | ".join(tail) + hint)
    lib = out / "target" / RUST_TARGET / "release" / "libsecperf_edhoc_device.a"
    noattr = out / "libedhoc-noattr.a"
    shutil.copyfile(lib, noattr)
    obj = out / "main.o"
    steps = [[objcopy, "--remove-section=.ARM.attributes", str(noattr)],
             [cc, *M_FLAGS, "-I", str(src.parent), "-c", str(work / "main.c"), "-o", str(obj)],
             [objcopy, "--remove-section=.ARM.attributes", str(obj)],
             [cc, "-static", "-o", str(binary), str(obj), str(noattr)]]
    for argv in steps:
        r = registry.run(argv, "EDHOC device link", capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            binary.unlink(missing_ok=True)
            raise EdhocDeviceError(f"{Path(argv[0]).name} failed: {(r.stderr or '').strip()[-400:]}")
    return binary


def parse_events(text: str) -> list[dict]:
    """Per handshake: instructions per initiator step, from the plugin's marker lines
    ("COUNT M KIND ARG"; kinds as native/device/marker.h)."""
    out: list[dict] = []
    cur: dict | None = None
    begin: dict[int, int] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 4 or parts[1] != "M":
            continue
        count, kind, arg = int(parts[0]), int(parts[2]), int(parts[3])
        if kind == 1:                                # HS_BEGIN
            cur, begin = {"begin": count, "steps": {}}, {}
        elif cur is not None and kind == 9:          # OP_BEGIN
            begin[arg] = count
        elif cur is not None and kind == 10 and arg in begin:
            cur["steps"][STEPS.get(arg, str(arg))] = count - begin.pop(arg)
        elif cur is not None and kind == 2:          # HS_END
            cur["handshake_total"] = count - cur.pop("begin")
            cur["ok"] = arg == 1
            out.append(cur)
            cur = None
    return out


def count(core: str = "cortex-m4", n: int = 3) -> dict:
    """Instruction counts of n EDHOC handshakes on the emulated core (the first is cold: reported
    apart); medians of the warm ones per initiator step."""
    family = next((f for f in CORES if core == f or core.startswith(f + "-")), None)
    if family is None:
        raise EdhocDeviceError(f"--device {core}: EDHOC is built for {', '.join(CORES)} cores only")
    if n < 2:
        raise EdhocDeviceError("count at least 2 handshakes (the first is the cold one)")
    qemu = _tool("qemu-arm", "install the Debian package qemu-user")
    binary, plug = build(), plugin()
    ev = binary.parent / f"events-{os.getpid()}.txt"
    try:
        r = registry.run([qemu, "-cpu", "max", "-plugin", f"{plug},out={ev}", str(binary), str(n)],
                         "qemu (EDHOC device)", capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            raise EdhocDeviceError(f"the EDHOC guest failed under qemu-arm (exit {r.returncode}): {r.stderr[-300:]}")
        lines = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
        hs = parse_events(ev.read_text())
    finally:
        ev.unlink(missing_ok=True)
    if len(hs) != n or not all(h["ok"] for h in hs) or not all(x["ok"] for x in lines):
        raise EdhocDeviceError(f"the EDHOC guest completed {sum(1 for x in lines if x['ok'])} of {n} handshakes")
    warm = hs[1:]
    steps = {k: statistics.median(h["steps"][k] for h in warm) for k in STEPS.values()}
    return {"core": core, "code": CORES[family], "rust_target": RUST_TARGET, "implementation": "lakers 0.6.2 (RustCrypto)",
            "variant": "method 3, suite 2, kid (RFC 9529 trace 2 keys)", "handshakes": n,
            "sizes": {k: lines[0][k] for k in ("message_1", "message_2", "message_3")},
            "instructions": steps, "initiator_total": sum(steps.values()),
            "cold": hs[0]["steps"], "process_total_per_handshake": statistics.median(h["handshake_total"] for h in warm),
            "boundaries": "initiator only: message_1 = ephemeral key pair + message_1; message_2 = parse + verify "
                          "(lakers does all three remaining ECDHs here: X*G_Y, X*G_R and the static I*G_Y; MAC_2); "
                          "message_3 = prepare (MAC_3, AEAD); oscore_export = master secret + salt"}
