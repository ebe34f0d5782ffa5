"""What iproute2 says about namespaces and interfaces, read from its JSON (`ip -j`) into typed records.

The lab asks `ip` for two things: which named network namespaces exist (the sweepers of the link, the
VPN pair and the run's watchdog) and how an interface inside a namespace came up (a Link reads its TUN
device back after configuring it). Both come from `ip -j ...`, never from its text layout: each entry
becomes a frozen dataclass, and an entry without a field secperf reads is an `IpOutputError` naming the
command, the entry and the field, not a KeyError or a line split at the wrong place.

This module imports only the standard library and core.errors: lab/reaper.py runs it as a script.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..core.errors import SetupError

IP_TIMEOUT_S = 10.0


class IpOutputError(SetupError):
    """`ip -j` gave output secperf cannot read (not JSON, not a list, an entry without a field it needs),
    or `ip` could not be run; the message names the command and what is wrong."""


@dataclass(frozen=True)
class Netns:
    """One entry of `ip -j netns list`: the name, and the id the current namespace gave it (None if none)."""

    name: str
    id: int | None = None


@dataclass(frozen=True)
class IpAddress:
    """One entry of an interface's addr_info: family (inet, inet6), the local address, the prefix length."""

    family: str
    local: str
    prefixlen: int

    @property
    def cidr(self) -> str:
        return f"{self.local}/{self.prefixlen}"


@dataclass(frozen=True)
class Interface:
    """One entry of `ip -j addr show`: name, index, MTU, operational state, flags and addresses."""

    ifname: str
    ifindex: int
    mtu: int
    operstate: str
    flags: tuple[str, ...]
    addresses: tuple[IpAddress, ...]

    @property
    def up(self) -> bool:
        return "UP" in self.flags

    def inet(self) -> list[str]:
        """The IPv4 addresses as ADDR/PREFIX."""
        return [a.cidr for a in self.addresses if a.family == "inet"]


def _field(entry: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    if key not in entry:
        raise IpOutputError(f"{where} has no {key!r} field (it has {', '.join(sorted(entry)) or 'none'})")
    value = entry[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise IpOutputError(f"{where}: {key!r} is {value!r}, not a {_kind_name(kind)}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(
        {"str": "string", "int": "whole number", "list": "list"}.get(k.__name__, k.__name__) for k in kinds
    )


def _entries(doc: Any, command: str) -> list[dict[str, Any]]:
    if not isinstance(doc, list):
        raise IpOutputError(f"`{command}` gave {type(doc).__name__}, not a list of entries")
    for i, entry in enumerate(doc):
        if not isinstance(entry, dict):
            raise IpOutputError(f"`{command}` entry {i} is {entry!r}, not an object")
    return doc


def parse_netns(doc: Any, command: str = "ip -j netns list") -> list[Netns]:
    """The namespaces of an `ip -j netns list` document (already decoded)."""
    out = []
    for i, e in enumerate(_entries(doc, command)):
        where = f"`{command}` entry {i}"
        nsid = e.get("id")
        if nsid is not None and (not isinstance(nsid, int) or isinstance(nsid, bool)):
            raise IpOutputError(f"{where}: 'id' is {nsid!r}, not a whole number")
        out.append(Netns(_field(e, "name", str, where), nsid))
    return out


def parse_interfaces(doc: Any, command: str = "ip -j addr show") -> list[Interface]:
    """The interfaces of an `ip -j addr show` document (already decoded)."""
    out = []
    for i, e in enumerate(_entries(doc, command)):
        where = f"`{command}` entry {i}"
        name = _field(e, "ifname", str, where)
        where = f"`{command}` interface {name}"
        flags = _field(e, "flags", list, where)
        addrs = []
        for j, a in enumerate(_field(e, "addr_info", list, where)):
            at = f"{where} address {j}"
            if not isinstance(a, dict):
                raise IpOutputError(f"{at} is {a!r}, not an object")
            addrs.append(
                IpAddress(_field(a, "family", str, at), _field(a, "local", str, at), _field(a, "prefixlen", int, at))
            )
        out.append(
            Interface(
                ifname=name,
                ifindex=_field(e, "ifindex", int, where),
                mtu=_field(e, "mtu", int, where),
                operstate=_field(e, "operstate", str, where),
                flags=tuple(str(f) for f in flags),
                addresses=tuple(addrs),
            )
        )
    return out


def run_ip_json(args: Sequence[str], prefix: Sequence[str] = (), check: bool = True) -> Any:
    """`[*prefix, "ip", "-j", *args]` run and its JSON decoded; None when it failed and check is False.
    Empty output (older iproute2 with nothing to list) reads as an empty list."""
    argv = [*prefix, "ip", "-j", *args]
    command = " ".join(["ip", "-j", *args])
    try:
        p = subprocess.run(
            argv, capture_output=True, text=True, timeout=IP_TIMEOUT_S, stdin=subprocess.DEVNULL, cwd="/"
        )
    except FileNotFoundError:
        raise IpOutputError(f"`{command}`: {argv[0]} is missing (iproute2 installs ip)") from None
    except subprocess.TimeoutExpired:
        raise IpOutputError(f"`{command}` did not finish within {IP_TIMEOUT_S:g} s") from None
    if p.returncode != 0:
        if not check:
            return None
        raise IpOutputError(f"`{command}` failed (exit {p.returncode}): {p.stderr.strip()[-300:] or 'no message'}")
    if not p.stdout.strip():
        return []
    try:
        return json.loads(p.stdout)
    except ValueError as exc:
        raise IpOutputError(f"`{command}` did not print JSON ({exc}): {p.stdout[:120]!r}") from None


def netns_list(check: bool = False) -> list[Netns]:
    """The named network namespaces (`ip -j netns list`); empty when ip fails and check is False (a
    sweeper lists what it can and leaves the rest)."""
    doc = run_ip_json(["netns", "list"], check=check)
    return [] if doc is None else parse_netns(doc)


def interfaces(prefix: Sequence[str] = (), dev: str | None = None, netns: str | None = None) -> list[Interface]:
    """The interfaces (one, with dev) of the namespace that `prefix` runs ip in (e.g. nsenter ...), or of
    the named namespace `netns` (`ip -n NAME`), or of the current one."""
    args = (["-n", netns] if netns else []) + ["addr", "show"] + (["dev", dev] if dev else [])
    return parse_interfaces(run_ip_json(args, prefix), "ip -j " + " ".join(args))
