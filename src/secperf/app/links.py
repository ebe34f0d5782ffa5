"""Which emulated links a command or scenario asks for, and whether this machine can build them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..core.errors import InputError
from ..inputs import netspec as NS
from ..lab import netns
from .reporter import reporter

if TYPE_CHECKING:
    from ..inputs.netspec import NetSpec


def check_no_network(network: str, why: str | None = None) -> None:
    """Commands that send nothing over a network accept only --network loopback; `why` says what
    the command measures instead (default: primitive benchmarks)."""
    if network in ("loopback", "none"):
        return
    raise InputError(
        f"--network {network!r}: "
        + (
            why
            or "primitive benchmarks send nothing over a network; "
            "drop --network (it applies to the handshake, connect and jwt experiments)"
        )
    )


def networks(values: list[str] | None) -> list[NetSpec]:
    """--network values -> NetSpecs; a bad spec is bad input naming the field; a link that cannot
    be built here (no root, no TUN) is said plainly with its fix before anything runs."""

    try:
        nets = NS.parse_networks(values)
    except NS.NetSpecError as exc:
        raise InputError(f"--network: {exc}") from None
    check_links([n.name for n in nets], "--network")
    return nets


def link_problem(names: Iterable[str]) -> str | None:
    """Why links cannot be built here, if any of `names` needs one (is not loopback); else None."""

    return netns.check() if any(n not in NS.LOOPBACK_NAMES for n in names) else None


def check_links(names: Iterable[str], what: str = "networks") -> None:
    """Links needed (any name not loopback) but not buildable here: say why and the fix, up front."""

    problem = link_problem(names)
    if problem:
        raise netns.LinkError(f"{what}: cannot emulate links here: {problem}")


def links_unavailable(names: Iterable[str]) -> dict[str, Any] | None:
    """A scenario's links that cannot be built here (no root and no usable user namespace, no TUN
    device): {"networks": [...], "reason": ...}, said once on stderr and kept in the result's
    parameters; the run goes on without them. Decision: a scenario (the default one included) is
    meant to run anywhere, so a missing capability of the machine skips its link rows instead of
    failing the run; `--network` on handshake/connect/jwt, where the user asked for a link, stops
    with the reason and the fix instead."""

    links = list(dict.fromkeys(n for n in names if n not in NS.LOOPBACK_NAMES))
    problem = link_problem(links)
    if not problem:
        return None
    reporter().note(
        f"secperf: note: skipping the scenario's rows over emulated links ({', '.join(links)}): links cannot "
        f"be built here: {problem}"
    )
    return {"networks": links, "reason": problem}
