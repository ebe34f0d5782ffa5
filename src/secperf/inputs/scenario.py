"""Scenarios: TOML files saying what to run. Every CLI command is a scenario with defaults."""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import InputError
from ..core.files import parse_toml, read_text_input
from . import netspec as NS
from .algorithms import Row, SelectionError, for_libraries, parse_libraries, select
from .schema import WhatifSection, validate_scenario
from .se_profiles import load_profiles

if TYPE_CHECKING:
    from .se_profiles import Profile


class ScenarioError(InputError):
    pass


ScenarioDoc = dict[str, Any]  # a scenario file's parsed TOML, checked by schema.validate_scenario


def builtin_names() -> list[str]:
    files = resources.files("secperf.scenarios").iterdir()
    return sorted(f.name.removesuffix(".toml") for f in files if f.name.endswith(".toml"))


def load(name_or_path: str) -> ScenarioDoc:
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.exists():
        try:
            text = read_text_input(p, "scenario", f"scenario {name_or_path}")
        except InputError as exc:
            raise ScenarioError(str(exc)) from None
    else:
        res = resources.files("secperf.scenarios").joinpath(f"{name_or_path}.toml")
        if not res.is_file():
            raise ScenarioError(
                f"unknown scenario {name_or_path!r}; built in: {', '.join(builtin_names())} "
                f"(or pass a path to a .toml file)"
            )
        text = res.read_text(encoding="utf-8")

    try:
        doc = parse_toml(text, f"scenario {name_or_path}")
    except tomllib.TOMLDecodeError as exc:
        raise ScenarioError(f"scenario {name_or_path}: invalid TOML: {exc}") from None
    except InputError as exc:
        raise ScenarioError(str(exc)) from None
    try:
        validate_scenario(doc)
    except InputError as exc:
        raise ScenarioError(f"scenario {name_or_path}: {exc}") from None
    return doc


def crypto_rows(scn: ScenarioDoc, strength: int | None = None) -> list[Row]:
    """The [crypto] selection's rows (none when the scenario has no [crypto] table)."""
    if "crypto" not in scn:
        return []
    sel = scn["crypto"].get("select") or [{}]
    rows: list[Row] = []
    seen: set[str] = set()
    for i, block in enumerate(sel):
        unknown = set(block) - {"alg", "op", "size"}
        if unknown:
            raise ScenarioError(
                f"scenario {scn.get('name', '?')}: [[crypto.select]] #{i + 1} has unknown "
                f"keys {sorted(unknown)}; allowed: alg, op, size"
            )
        try:
            got = select(block.get("alg"), block.get("op"), block.get("size"), strength)
        except SelectionError as exc:
            if strength is not None and "select nothing" in str(exc):
                continue
            raise ScenarioError(f"scenario {scn.get('name', '?')}: [[crypto.select]] #{i + 1}: {exc}") from None
        for r in got:
            if r.series_id not in seen:
                seen.add(r.series_id)
                rows.append(r)
    if not rows:
        raise ScenarioError("the scenario selects nothing to measure with these filters")
    msg = scn["crypto"].get("message_bytes")
    if msg is not None:  # the signed message of signature rows (S5 signed 3 bytes); bulk rows keep their sizes
        if not isinstance(msg, int) or msg < 1:
            raise ScenarioError(f"scenario {scn.get('name', '?')}: [crypto] message_bytes must be a whole number >= 1")

        rows = [r if r.alg.bulk else replace(r, size_bytes=msg) for r in rows]
    libs = scn["crypto"].get("libraries")
    if libs:
        try:
            rows = for_libraries(rows, parse_libraries(libs))
        except SelectionError as exc:
            raise ScenarioError(f"scenario {scn.get('name', '?')}: [crypto] libraries: {exc}") from None
    return rows


def check_keys(scn: ScenarioDoc, section: str, allowed: set[str]) -> None:
    """A section's keys must all be known: a misspelt key is an input error, never ignored."""
    unknown = set(scn.get(section) or {}) - allowed
    if unknown:
        raise ScenarioError(
            f"scenario {scn.get('name', '?')}: [{section}] has unknown keys {sorted(unknown)}; "
            f"allowed: {', '.join(sorted(allowed))}"
        )


def networks_setting(scn: ScenarioDoc, section: str) -> list[str]:
    """`networks = [...]` of a [handshake], [jwt] or [connect] section: --network values (profiles, specs, sweeps,
    comma lists), expanded and checked; a bad one names its section and field. Default: loopback."""

    raw = scn.get(section, {}).get("networks", ["loopback"])
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw or not all(isinstance(x, str) for x in raw):
        raise ScenarioError(
            f"scenario {scn.get('name', '?')}: [{section}] networks must be a list of network "
            f"profiles or specs, e.g. [\"loopback\", \"lte-m\", \"delay=50ms,loss=1%\"]"
        )
    try:
        return [n.name for n in NS.parse_networks(raw)]
    except NS.NetSpecError as exc:
        raise ScenarioError(f"scenario {scn.get('name', '?')}: [{section}] networks: {exc}") from None


def signer_settings(
    scn: ScenarioDoc, section: str, known: Mapping[str, Profile] | None = None
) -> dict[str, Any] | None:
    """[signer] / [jwt]: profiles, keys, (modes), n, warmup, ([jwt] networks) — validated names, or
    None if absent. known: the secure-element profiles the command read for the whole scenario (read
    here when not given)."""
    sec = scn.get(section)
    if not sec:
        return None
    allowed = {"profiles", "keys", "n", "warmup"} | (
        {"modes"} if section == "signer" else {"lifetime_s", "networks", "key_sessions"}
    )
    unknown = set(sec) - allowed
    if unknown:
        raise ScenarioError(
            f"scenario {scn.get('name', '?')}: [{section}] has unknown keys {sorted(unknown)}; "
            f"allowed: {', '.join(sorted(allowed))}"
        )
    if known is None:
        known = load_profiles()
    for pr in sec.get("profiles", []):
        if pr not in known:
            raise ScenarioError(
                f"scenario {scn.get('name', '?')}: [{section}] unknown profile {pr!r}; known: {', '.join(known)}"
            )
    out = {
        "profiles": list(sec.get("profiles", ["iot-safe-sim"])),
        "keys": list(sec.get("keys", ["ecdsa-p256"])),
        "modes": list(sec.get("modes", ["local_sw", "sign_only", "total"])),
        "n": int(sec.get("n", 10)),
        "warmup": int(sec.get("warmup", 1)),
        "lifetime_s": int(sec.get("lifetime_s", 3600)),
    }
    if section == "jwt":
        out["networks"] = networks_setting(scn, section)
        out["key_sessions"] = key_sessions_setting(scn, section)
    return out


def connect_settings(scn: ScenarioDoc) -> dict[str, Any] | None:
    """[connect]: protocols, keys, handshakes, n, warmup, networks — or None if absent. Names are
    checked by the connect command's own validation when the configurations are built."""
    sec = scn.get("connect")
    if not sec:
        return None
    allowed = {"protocols", "keys", "handshakes", "n", "warmup", "networks", "key_sessions"}
    unknown = set(sec) - allowed
    if unknown:
        raise ScenarioError(
            f"scenario {scn.get('name', '?')}: [connect] has unknown keys {sorted(unknown)}; "
            f"allowed: {', '.join(sorted(allowed))}"
        )
    lists = {
        "protocols": ["https", "mqtt", "coap"],
        "keys": ["software", "se:iot-safe-sim"],
        "handshakes": ["full", "resumed"],
    }
    for field, default in lists.items():
        v = sec.get(field, default)
        if not isinstance(v, list) or not v or not all(isinstance(x, str) and x.strip() for x in v):
            raise ScenarioError(
                f"scenario {scn.get('name', '?')}: [connect] {field} must be a non-empty list of "
                f"names, e.g. {default!r}"
            )
    return {
        "protocols": list(sec.get("protocols", lists["protocols"])),
        "keys": list(sec.get("keys", lists["keys"])),
        "handshakes": list(sec.get("handshakes", lists["handshakes"])),
        "n": int(sec.get("n", 10)),
        "warmup": int(sec.get("warmup", 1)),
        "networks": networks_setting(scn, "connect"),
        "key_sessions": key_sessions_setting(scn, "connect"),
    }


def key_sessions_setting(scn: ScenarioDoc, section: str) -> list[str]:
    """`key_sessions = ["warm", "cold"]` of [jwt] / [connect]: how the token's key session is held
    (warm: once per client; cold: opened, logged in and searched per connection). Default warm."""
    raw = scn.get(section, {}).get("key_sessions", ["warm"])
    if not isinstance(raw, list) or not raw or any(x not in ("warm", "cold") for x in raw):
        raise ScenarioError(
            f"scenario {scn.get('name', '?')}: [{section}] key_sessions must be a list of "
            f"\"warm\" and/or \"cold\", not {raw!r}"
        )
    return list(dict.fromkeys(raw))


def whatif_settings(scn: ScenarioDoc) -> dict[str, Any] | None:
    """[whatif]: protocols, keys, handshakes, networks, n (simulated connections per cell), or None."""
    sec = scn.get("whatif")
    if not sec:
        return None

    w = WhatifSection.model_validate(sec)
    return {
        "protocols": list(w.protocols),
        "keys": list(w.keys),
        "handshakes": list(w.handshakes),
        "networks": networks_setting(scn, "whatif"),
        "n": w.n,
    }
