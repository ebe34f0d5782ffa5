"""One vocabulary across subcommands: key sources, key-exchange group names, and the spellings
earlier releases used, mapped to today's with a printed note.

Decisions (issue 29, "one vocabulary"):

- A client key is chosen with `--key software | se:PROFILE | se:PROFILE:cold` wherever a command
  chooses one (whatif, plan, connect, a system file's [security].key). `plan --se PROFILE` was the
  old spelling: still accepted for one release, with a note on stderr.
- Key-exchange groups are written as TLS names them in RFC 8446 / RFC 7748, lower case with a dash:
  `x25519`, `x448`, `p-256`, `p-384`, `ml-kem-768`, `x25519mlkem768`. The primitive's names in
  `secperf crypto` (`ecdh-p256`), the curve names of OpenSSL/SEC 2 (`secp256r1`, `prime256v1`), the
  device operation prefix (`p256` of `p256-keygen`) and upper case (`P-256`) are accepted wherever a
  group is chosen and mapped to the group's name with a note (they are unambiguous; refusing them
  would be a dead end, taking them silently would leave two names in labels).
- The server certificate's key type is `--server-cert TYPE[:DEPTH]` everywhere; whatif's old
  `--cert` is accepted for one release with a note.

Notes go to stderr, so `--json` keeps stdout for the Result alone.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Collection

from ..core.errors import InputError
from . import se_profiles as SE
from .handshakes import HANDSHAKES as HANDSHAKES  # the table lives apart: the parser reads it without the catalogue

# old or foreign spellings of a key-exchange group -> the group's name
GROUP_ALIASES = {
    "ecdh-p256": "p-256",
    "p256": "p-256",
    "secp256r1": "p-256",
    "prime256v1": "p-256",
    "ecdh-p384": "p-384",
    "p384": "p-384",
    "secp384r1": "p-384",
    "ecdh-x25519": "x25519",
    "ecdh-x448": "x448",
    "mlkem768": "ml-kem-768",
    "mlkem512": "ml-kem-512",
    "mlkem1024": "ml-kem-1024",
    "x25519-mlkem768": "x25519mlkem768",
    "x25519_mlkem768": "x25519mlkem768",
}

KEY_FORM = (
    "software, se:PROFILE (a warm key: session kept) or se:PROFILE:cold (open a session, log in, find the "
    "key and sign per connection); profiles: `secperf signer --profile list`"
)


def note(text: str) -> None:
    """A one-line note on stderr (a renamed option or value, a default applied)."""
    print(f"note: {text}", file=sys.stderr)


def group(name: str, opt: str = "--group", notes: bool = True) -> str:
    """The group's name for any accepted spelling; old spellings are mapped with a note. Unknown
    names pass through unchanged: the catalogue that uses them refuses them with its own list."""
    low = name.strip().lower()
    if low in GROUP_ALIASES:
        new = GROUP_ALIASES[low]
        if notes:
            note(f"{opt} {name}: the group is named {new} (RFC 8446); {name!r} is accepted for this release")
        return new
    if low != name.strip() and notes:
        note(f"{opt} {name}: group names are lower case ({low})")
    return low


def groups(names: list[str], opt: str = "--group", notes: bool = True) -> list[str]:
    return list(dict.fromkeys(group(n, opt, notes) for n in names))


def key(value: str, opt: str = "--key", profiles: Collection[str] | None = None) -> str:
    """A client key source checked: software, se:PROFILE or se:PROFILE:cold with a known profile
    (`profiles`: the known profile names; default the secure-element catalogue)."""
    v = value.strip()
    if v == "software":
        return v
    if not v.startswith("se:"):
        raise InputError(f"{opt}: {value!r} must be {KEY_FORM}")
    parts = v.split(":")
    if (
        len(parts) > 3
        or len(parts) < 2
        or not parts[1]
        or (len(parts) == 3 and parts[2] != "cold")
        or not re.fullmatch(r"[a-z0-9][a-z0-9-]*", parts[1])
    ):
        raise InputError(f"{opt}: {value!r}: write se:PROFILE for a warm key (session kept) or se:PROFILE:cold")
    if profiles is None:
        profiles = SE.load_profiles()
    if parts[1] not in profiles:
        raise InputError(f"{opt}: unknown secure-element profile {parts[1]!r}; known: {', '.join(profiles)}")
    return v


def key_from_se(profile: str) -> str:
    """`plan --se PROFILE` (the old spelling) as a --key value: software stays software, a profile
    becomes se:PROFILE, a value already written se:... is kept."""
    p = profile.strip()
    if p in ("software", "none"):
        return "software"
    return p if p.startswith("se:") else f"se:{p}"
