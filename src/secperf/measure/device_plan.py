"""What a device row is asked, checked before anything runs: the option vocabularies (groups, suites,
TLS versions, modes, certificates), the build target a core runs, the stacks and their build
configurations, one configuration (Config), and how a series names its stack and build.

Every name is checked here with an InputError naming what is known. measure/device.py (handshakes),
measure/device_crypto.py (primitives) and measure/device_dtls.py build on it; it imports none of them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from ..core.errors import InputError
from ..inputs.core_profiles import Core
from ..inputs.devices import core_names
from .device_build import STACK_TARGETS, STACKS, TARGETS, Build, check_config, configs_for, default_config

GROUPS = ("x25519", "p-256", "p-384")


SUITES = {"aes128gcm": "aes128gcm", "aes-128-gcm": "aes128gcm", "chacha20": "chacha20", "chacha20-poly1305": "chacha20"}


TLS_VERSIONS = {
    "1.3": "1.3",
    "13": "1.3",
    "tls1.3": "1.3",
    "1.2": "1.2",
    "12": "1.2",
    "tls1.2": "1.2",
    "dtls1.2": "dtls1.2",
    "dtls": "dtls1.2",
    "dtls1.3": "dtls1.3",
    "dtls13": "dtls1.3",
}


MODES = ("full", "resumed", "psk", "full-cid", "resumed-cid")  # -cid: a DTLS connection ID (measure/device_dtls.py)


SERVER_CERTS = ("rsa-2048", "ecdsa-p256")


CLIENT_CERTS = ("none", "ecdsa-p256", "rsa-2048")  # mutual TLS: the client's certificate (lab client CA)


RUN_TIMEOUT_S = 120


@dataclass(frozen=True)
class Config:
    core: Core  # the emulated core, resolved once where the command reads --device
    stack: str
    tls: str
    group: str
    suite: str
    mode: str
    server_cert: str
    client_cert: str = "none"
    build_config: str | None = None  # library build configuration (data/device_builds.toml); None: the default

    @property
    def device(self) -> str:
        """The core's name (series ids and labels)."""
        return self.core.name

    def __hash__(self) -> int:
        # the core holds dicts (its timing tables): it enters the hash by its name
        return hash((self.core.name, *(getattr(self, f.name) for f in fields(self) if f.name != "core")))

    @property
    def key(self) -> str:
        mtls = "" if self.client_cert == "none" else f"/client-{self.client_cert}"
        proto = self.tls if self.dtls else f"tls{self.tls}"
        stack = self.stack if self.build_config is None else f"{self.stack}[{self.build_config}]"
        return f"{stack}/{proto}/{self.group}/{self.suite}/{self.mode}/{self.server_cert}{mtls}"

    @property
    def dtls(self) -> bool:
        return self.tls.startswith("dtls")


def split_values(
    value: str | Iterable[str], what: str, known: Sequence[str], aliases: dict[str, str] | None = None, kind: str = ""
) -> list[str]:
    """The comma list's values (aliases mapped, repeats folded), or InputError naming the option, the
    value and, when the known values depend on it, the kind they were checked for (`kind`)."""
    scope = f" for {kind}" if kind else ""
    items = [v.strip().lower() for v in (value.split(",") if isinstance(value, str) else value) if v.strip()]
    if not items:
        raise InputError(f"--{what}: give at least one of {', '.join(known)}{scope}")
    out = []
    for v in items:
        v = (aliases or {}).get(v, v)
        if v not in known:
            raise InputError(f"--{what}: unknown {what} {v!r}{scope}; known: {', '.join(known)}")
        out.append(v)
    return list(dict.fromkeys(out))


# the build a core runs: profile A cores Debian's armhf libraries, Cortex-M4, M33 and M0+ cores their own
# build (M0+: linked with newlib, for the stacks in device_build.NEWLIB_STACKS)
CPU_TARGETS = {"cortex-m4": "cortex-m4", "cortex-m33": "cortex-m33", "cortex-m0": "cortex-m0plus"}


def target_for(dev: Core) -> str:
    """The build target for a core, or InputError naming the devices there are builds for."""
    if dev.profile == "A":
        return "armhf"
    if dev.qemu_cpu in CPU_TARGETS:
        return CPU_TARGETS[dev.qemu_cpu]
    runnable = ", ".join(core_names(lambda c: c.profile == "A" or c.qemu_cpu in CPU_TARGETS))
    raise InputError(
        f"--device {dev.name}: there is no {dev.qemu_cpu} build of the stacks (builds: "
        f"{', '.join(TARGETS)}); devices these builds run on: {runnable}"
    )


def qemu_cpu(dev: Core, build: Build) -> str:
    return build.run_cpu or dev.qemu_cpu


def check_stacks(value: str | Iterable[str], dev: Core | None = None) -> list[str]:
    """--stack values, each one built for the device's target (InputError naming the devices it runs on)."""
    stacks = split_values(value, "stack", tuple(STACKS))
    if dev is not None:
        target = target_for(dev)
        for s in stacks:
            if target not in STACK_TARGETS.get(s, (target,)):
                on = ", ".join(core_names(lambda c: c.profile == "A"))
                m_stacks = ", ".join(x for x in STACKS if target in STACK_TARGETS.get(x, (target,)))
                if target == "cortex-m0plus":
                    raise InputError(
                        f"--stack {s}: there is no Cortex-M0+ build of {s} (the M0+ builds are "
                        f"linked with newlib; built for it: {m_stacks})"
                    )
                raise InputError(
                    f"--stack {s}: there is no {target} build of {s} (Debian's armhf package runs on "
                    f"the A-profile cores only: {on}); this core runs {m_stacks}"
                )
    return stacks


def check_build_configs(value: str | Iterable[str] | None, stacks: list[str], dev: Core) -> dict[str, list[str | None]]:
    """--config names per stack for the device's core (None: the stack's default build). Each stack
    runs the named configurations it has; a name no stack has, or a stack none of the names apply
    to, is an InputError naming the stack's configurations."""
    if value is None:
        return {s: [None] for s in stacks}
    target = target_for(dev)
    names = list(
        dict.fromkeys(v.strip().lower() for v in (value.split(",") if isinstance(value, str) else value) if v.strip())
    )
    if not names:
        raise InputError("--config: give at least one configuration name (`secperf device list` shows them)")
    for n in names:
        if not any(n in configs_for(s, target) for s in stacks):
            if len(stacks) == 1:
                check_config(stacks[0], target, n)  # raises, naming the stack's configurations
            raise InputError(
                f"--config {n}: none of the stacks has it here; configurations: "
                + "; ".join(f"{s}: {', '.join(configs_for(s, target))}" for s in stacks)
            )
    out: dict[str, list[str | None]] = {}
    for s in stacks:
        mine = [n for n in names if n in configs_for(s, target)]
        if not mine:
            check_config(s, target, names[0])  # raises, naming the stack's configurations
        default = default_config(s, target)
        out[s] = [None if n == default else n for n in mine]
    return out


def stack_tag(stack: str, build: Build) -> str:
    """The stack as series ids name it: with its build configuration when that is not the default."""
    return stack if build.config == default_config(stack, build.target) else f"{stack}[{build.config}]"


def build_labels(build: Build) -> dict[str, Any]:
    """The library build configuration a series ran (data/device_builds.toml)."""
    return {"config": build.config, "config_description": build.config_note}
