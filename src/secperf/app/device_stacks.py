"""Which library counts which protocol on an emulated core, for a device prediction.

A what-if or a plan on `--device CORE` costs every protocol from the device's own counts of that
protocol. No one library runs them all: TLS and DTLS come from the TLS stacks (wolfSSL 5.5 and 5.9,
Mbed TLS 2.28 and 3.6, OpenSSL on the A-profile cores), EDHOC + OSCORE from secperf's C initiator on
wolfCrypt 5.9's or Mbed TLS 3.6's crypto (measure/edhoc_device.py), QUIC from ngtcp2 + GnuTLS on the A-profile cores
(measure/quic_device.py). This module picks, per protocol family, the stack that counts it, and says
so: every row of a table names its stack, and the table says when its rows differ.

Decisions (written down because nobody else decides them):
- Without --stack, one stack serves as many of the asked families as it can (the first stack of
  STACK_ORDER among those that cover the most families), so a comparison of TLS 1.3, DTLS 1.2 and
  DTLS 1.3 reads one library's figures (wolfSSL 5.9 has all three) rather than a library difference;
  a family that stack lacks takes the first stack of STACK_ORDER that has it, with a note. With one
  protocol this is the first stack of STACK_ORDER that runs it (wolfSSL for TLS, as before).
- `--stack A[,B...]` (explicit, on the command line) lists the stacks allowed, in order of
  preference: each family takes the first listed stack that has it; a family none of them has exits
  2 naming the stacks that have it on this core.
- A system file's [device].stack is a preference, not a demand: a protocol it cannot run (the file
  says wolfssl, the question is about EDHOC) takes the default choice, with a note naming the file's
  key; never an error about an option the user did not give. The same holds for its [device].config:
  a stack the configuration does not apply to uses its default build, with a note.
- What each stack runs is declared here (DECLARED) so that a prediction never builds a library it
  will not use; the build's own --offers answer is checked when it is built, and a declared family
  the build lacks is refused naming what it offers (tests/test_device_stacks.py keeps the two true).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..core.errors import InputError
from ..measure.device_build import STACK_TARGETS, configs_for, default_config
from ..measure.quic_device import why_not_here

# the protocol family whose device rows cost each what-if protocol
FAMILY = {
    "tls1.3": "1.3",
    "https": "1.3",
    "mqtt": "1.3",
    "jwt": "1.3",
    "openvpn": "1.3",
    "tls1.2": "1.2",
    "dtls1.2": "dtls1.2",
    "coap": "dtls1.2",
    "dtls1.3": "dtls1.3",
    "edhoc": "edhoc",
    "quic": "quic",
}
FAMILY_NAME = {
    "1.3": "TLS 1.3",
    "1.2": "TLS 1.2",
    "dtls1.2": "DTLS 1.2",
    "dtls1.3": "DTLS 1.3",
    "edhoc": "EDHOC + OSCORE",
    "quic": "QUIC",
}
STACK_ORDER = ("wolfssl", "wolfssl59", "mbedtls3", "mbedtls", "openssl", "ngtcp2")
# what each stack's device client counts (families), per build target ("m": the Cortex-M builds)
DECLARED: dict[str, dict[str, tuple[str, ...]]] = {
    "wolfssl": {"armhf": ("1.3", "1.2", "dtls1.2"), "m": ("1.3", "1.2", "dtls1.2")},
    "wolfssl59": {
        "armhf": ("1.3", "1.2", "dtls1.2", "dtls1.3", "edhoc"),
        "m": ("1.3", "1.2", "dtls1.2", "dtls1.3", "edhoc"),
    },
    "mbedtls3": {"armhf": ("1.3", "1.2", "dtls1.2", "edhoc"), "m": ("1.3", "1.2", "dtls1.2", "edhoc")},
    "mbedtls": {"armhf": ("1.2", "dtls1.2"), "m": ("1.2", "dtls1.2")},
    "openssl": {"armhf": ("1.3", "1.2", "dtls1.2")},
    "ngtcp2": {"armhf": ("quic",)},
}
# the wolfSSL releases secperf builds for the emulated cores (sources: measure/device_sources.py)
WOLFSSL_BUILDS = {"wolfssl": (5, 5, 4), "wolfssl56": (5, 6, 6), "wolfssl59": (5, 9, 4)}


def wolfssl_build_for(version: str | None) -> tuple[str, str]:
    """The wolfSSL build that stands for a release a board's log names: (stack, "exact" | "nearest" |
    "old"). Decision: the build of that very release; else the build of its release series (5.6.0
    and 5.6.4 are counted on 5.6.6); else the nearest series of the same major version (5.3 on 5.5,
    5.7 on 5.6, 5.8 on 5.9; a tie takes the older); a 4.x or unreadable version on the oldest or
    newest build, "old" (other code: printed apart, never counted toward a target). Why the series
    first: wolfSSL's code changes within 5.x in ways a board's figures show (in the STM32Cube pack's
    pure-C configuration 5.6's SHA-256 takes 1.46 times 5.5's instructions, and the STM32L4A6 5.6.4
    log's SHA-256 is within 1 % of 5.6.6's count where 5.5.4's ran 25 % fast; 5.6.4 rewrote the
    Thumb-2 SP maths around UMAAL), and a patch release of the same series is the closest code a
    registry serves."""
    m = re.match(r"v?(\d+)\.(\d+)(?:\.(\d+))?", (version or "").strip())  # "5.6.4", "v5.6.4-stable"
    if m is None:
        return "wolfssl59", "old"
    want = tuple(int(x) for x in m.groups() if x is not None)
    for stack, v in WOLFSSL_BUILDS.items():
        if want == v:
            return stack, "exact"
    major, minor = want[0], want[1]
    same = [s for s, v in WOLFSSL_BUILDS.items() if v[:2] == (major, minor)]
    if same:
        return same[0], "nearest"
    inside = sorted((abs(v[1] - minor), v, s) for s, v in WOLFSSL_BUILDS.items() if v[0] == major)
    if inside:
        return inside[0][2], "nearest"
    ordered = sorted(WOLFSSL_BUILDS.items(), key=lambda kv: kv[1])
    return (ordered[0][0] if (major, minor) < ordered[0][1][:2] else ordered[-1][0]), "old"


# stacks that count whole protocols but no primitives: their client operations are priced with the
# primitives of the table's main stack (said in the table's source)
NO_PRIMITIVES = ("ngtcp2",)


def family(protocol: str) -> str:
    try:
        return FAMILY[protocol]
    except KeyError:
        raise InputError(f"PROTOCOL: {protocol!r} has no device rows; protocols: {', '.join(FAMILY)}") from None


def _kind(target: str) -> str:
    return "armhf" if target == "armhf" else "m"


def built_for(stack: str, target: str) -> bool:
    """The stack has a build for the target (measure/device_build.STACK_TARGETS; ngtcp2: armhf)."""
    if stack == "ngtcp2":
        return target == "armhf"

    return target in STACK_TARGETS.get(stack, (target,))


def declared(stack: str, target: str) -> tuple[str, ...]:
    if not built_for(stack, target):
        return ()
    return DECLARED.get(stack, {}).get(_kind(target), ())


def stacks_with(fam: str, target: str) -> list[str]:
    return [s for s in STACK_ORDER if fam in declared(s, target)]


def why_not(fam: str, core: str, target: str) -> str:
    """Why no stack counts a family on this core (the named error's text)."""
    if fam == "quic":
        return why_not_here()
    return f"no stack built for {core} counts {FAMILY_NAME[fam]}"


@dataclass
class Choice:
    """The stack per family, and the notes that say what was chosen and why."""

    by_family: dict[str, str]
    notes: list[str] = field(default_factory=list)

    @property
    def stacks(self) -> list[str]:
        return list(dict.fromkeys(self.by_family.values()))

    @property
    def main(self) -> str:
        """The stack serving the most families (the table's name and its primitives' source)."""
        vals = list(self.by_family.values())
        return max(self.stacks, key=lambda s: (vals.count(s) - (s in NO_PRIMITIVES) * 100, -self.stacks.index(s)))


def choose(
    core: str,
    target: str,
    families: list[str],
    asked: list[str] | None = None,
    asked_from: str | None = None,
    optional: tuple[str, ...] = (),
) -> Choice:
    """The stack of each family (module docstring). `asked`: --stack's list; `asked_from`: where it
    came from when that is not the command line (a system file's key), which makes it a preference.
    `optional`: families that are left out, with a note, when the asked stacks lack them (the
    planner's measures: a measure without costs is listed with the reason, not an error)."""
    fams = list(dict.fromkeys(families))
    notes: list[str] = []
    if asked and optional:
        skip = [f for f in fams if f in optional and not any(f in declared(s, target) for s in asked)]
        fams = [f for f in fams if f not in skip]
        notes += [
            f"note: --stack {','.join(asked)} has no {FAMILY_NAME[f]} on {core}; the measures that switch "
            f"to it are not costed"
            for f in skip
        ]
    for f in fams:
        if not stacks_with(f, target):
            raise InputError(f"{FAMILY_NAME[f]} on --device {core}: {why_not(f, core, target)}")
    if asked:
        unknown = [s for s in asked if s not in DECLARED]
        if unknown:
            raise InputError(f"--stack {','.join(unknown)}: unknown stack; stacks: {', '.join(STACK_ORDER)}")
        out: dict[str, str] = {}
        for f in fams:
            have = [s for s in asked if f in declared(s, target)]
            if have:
                out[f] = have[0]
                continue
            others = ", ".join(stacks_with(f, target))
            if asked_from is None:
                raise InputError(
                    f"--stack {','.join(asked)}: {'it has' if len(asked) == 1 else 'none has'} no "
                    f"{FAMILY_NAME[f]} on {core}; stacks that have it: {others} (give --stack "
                    f"{','.join(asked + [stacks_with(f, target)[0]])}, or leave --stack out)"
                )
            out[f] = stacks_with(f, target)[0]
            notes.append(
                f"note: {asked_from} = {','.join(asked)} has no {FAMILY_NAME[f]} on {core}; "
                f"{FAMILY_NAME[f]} is counted with {out[f]}"
            )
        return Choice(out, notes)
    cover = {s: sum(f in declared(s, target) for f in fams) for s in STACK_ORDER if built_for(s, target)}
    main = max(cover, key=lambda s: (cover[s], -STACK_ORDER.index(s)))
    out = {f: (main if f in declared(main, target) else stacks_with(f, target)[0]) for f in fams}
    ch = Choice(out, notes)
    if len(ch.stacks) > 1:
        notes.append(
            "note: the rows differ in library: "
            + "; ".join(f"{', '.join(FAMILY_NAME[f] for f in fams if out[f] == s)} on {s}" for s in ch.stacks)
            + " (no one stack built for "
            + core
            + " runs them all; --stack picks others)"
        )
    return ch


def primitives_stack(choice: Choice, target: str, asked: list[str] | None) -> str:
    """The stack whose counted primitives price the client's operations: the main stack, or (when it
    counts whole handshakes only, as ngtcp2) a chosen stack with primitives, else the first one asked,
    else the first of STACK_ORDER built for the core."""
    if choice.main not in NO_PRIMITIVES:
        return choice.main
    for s in choice.stacks + list(asked or []) + list(STACK_ORDER):
        if s not in NO_PRIMITIVES and s in DECLARED and built_for(s, target):
            return s
    raise InputError(f"no stack with counted primitives is built for {target}")


def configs(
    stacks: list[str], target: str, config: list[str] | None, from_file: str | None, notes: list[str]
) -> dict[str, str | None]:
    """The build configuration each stack counts with (None: its default). `config` names builds; each
    stack takes the one it has. A name no chosen stack has is an InputError naming their
    configurations when it came from the command line, and dropped with a note when it came from a
    system file (`from_file` names the key); a stack none of the names fit counts with its default
    build, with a note."""

    out: dict[str, str | None] = {s: None for s in stacks}
    if not config:
        return out
    have = {s: (configs_for(s, target) if s != "ngtcp2" else []) for s in stacks}
    unused = [c for c in config if not any(c in h for h in have.values())]
    if unused:
        listing = "; ".join(f"{s}: {', '.join(h)}" for s, h in have.items() if h)
        if from_file is None:
            raise InputError(
                f"--config {','.join(unused)}: no build of {', '.join(stacks)} by that name here; "
                f"configurations: {listing}"
            )
        notes.append(
            f"note: {from_file} = {','.join(unused)} is no build of {', '.join(stacks)}; not used "
            f"(configurations: {listing})"
        )
    for s in stacks:
        mine = [c for c in config if c in have[s]]
        if len(mine) > 1:
            raise InputError(f"--config {','.join(mine)}: a prediction takes one build configuration of {s}")
        if mine:
            out[s] = None if mine[0] == default_config(s, target) else mine[0]
        elif have[s] and not unused:
            notes.append(
                f"note: --config {','.join(config)} does not apply to {s}; {s} is counted with its "
                f"default build {default_config(s, target)}"
            )
    return out


def unrunnable(protocols: list[str], core: str, target: str) -> dict[str, str]:
    """Per protocol that no stack built for the core counts, why (a comparison lists it with the reason)."""
    fams = {p: family(p) for p in protocols}
    return {p: why_not(f, core, target) for p, f in fams.items() if not stacks_with(f, target)}


@dataclass
class StackPlan:
    """Which stack counts what for one prediction, worked out in one call (device_counts.device_counts):
    the stack per family, each stack's build configuration, the stack whose primitives price the
    client's operations, the order the stacks are counted in, and the notes to show."""

    by_family: dict[str, str]  # protocol family -> stack
    family_of: dict[str, str]  # protocol -> family (every protocol asked, optional ones included)
    main: str  # the stack serving the most families: the table's name
    prim: str  # primitives_stack
    order: list[str]  # prim first, then the others (those without primitives last)
    priced_by: dict[str, str]  # family -> the stack whose primitives price its client operations
    configs: dict[str, str | None]
    notes: list[str]


def plan(
    core: str,
    target: str,
    protocols: list[str],
    optional: list[str],
    families: list[str],
    asked: list[str] | None,
    asked_from: str | None,
    config: list[str] | None,
    config_from: str | None,
) -> StackPlan:
    """The StackPlan of a prediction. protocols / optional: the scenarios' protocols, the ones asked
    and the optional ones (the planner's measures, left out with a note when the asked stacks lack
    them; a family an asked scenario has is never optional); a protocol without device rows is an
    InputError; families: the
    families of the rows to count (in their order); asked / asked_from: --stack and where it came
    from (choose); config / config_from: --config and where it came from (configs)."""
    family_of = {p: family(p) for p in dict.fromkeys(protocols + optional)}
    opt = tuple({family_of[p] for p in optional} - {family_of[p] for p in protocols})
    choice = choose(core, target, families, asked, asked_from, opt)
    notes = list(choice.notes)
    confs = configs(choice.stacks, target, config, config_from, notes)
    prim = primitives_stack(choice, target, asked)
    order = [prim] + [s for s in sorted(choice.stacks, key=lambda s: s in NO_PRIMITIVES) if s != prim]
    priced_by = {f: prim if st in NO_PRIMITIVES else st for f, st in choice.by_family.items()}
    return StackPlan(choice.by_family, family_of, choice.main, prim, order, priced_by, confs, notes)
