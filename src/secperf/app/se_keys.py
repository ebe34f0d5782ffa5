"""The secure-element profiles the server-side commands' key options name, resolved once at the
command's edge: `server --key-source offload:PROFILE:busy|sleep` (the server's key in the lab token
behind the shim) and `mqtt-load --se PROFILE` / `--key-source offload:...` (the clients' signing
wait, the broker's key). One read of the profile catalogue per command; the measurements below take
the Profile objects (measure/server_config.ServerConfig.profile, measure/mqtt_load.MqttLoadConfig)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..core.errors import InputError
from ..inputs.se_profiles import load_profiles

if TYPE_CHECKING:
    from ..inputs.se_profiles import Profile


def offload_name(source: str) -> str | None:
    """The profile an offloaded key source names (offload:PROFILE:WAIT), None for another source
    (its form is checked by measure/server_config.check_offload)."""
    parts = source.split(":")
    return parts[1] if len(parts) == 3 and parts[0] == "offload" and parts[1] else None


def profiles_named(wanted: Mapping[str, str]) -> dict[str, Profile]:
    """Each profile of `wanted` (name -> the option that names it, for the message) looked up in one
    read of the catalogue; an unknown one is an InputError naming the option and the known ones."""
    if not wanted:
        return {}

    known = load_profiles()
    for name, option in wanted.items():
        if name not in known:
            raise InputError(f"{option}: unknown secure-element profile {name!r}; known: {', '.join(known)}")
    return {n: known[n] for n in wanted}
