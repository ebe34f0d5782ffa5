"""What `secperf whatif` is asked (WhatifOptions) and the scenarios the options make: protocols,
handshakes, groups, server certificates and key sources checked by name (InputError naming what is
known), one scenario per combination; a secure-element key on a protocol whose client signs nothing
is refused or dropped with a note. app/whatif.py predicts them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.errors import InputError
from ..inputs import se_profiles as SE
from ..inputs.core_profiles import Core
from ..model import flights as F
from ..model import network as N
from ..sim import sweep as SW
from .reporter import reporter

if TYPE_CHECKING:
    from ..inputs.devices import DeviceChoice
    from ..inputs.netspec import NetSpec


@dataclass
class WhatifOptions:
    protocols: list[str]
    networks: list[str] = field(default_factory=lambda: ["loopback"])
    keys: list[str] = field(default_factory=lambda: ["software"])
    groups: list[str] = field(default_factory=lambda: ["x25519"])
    certs: list[str] = field(default_factory=list)
    handshakes: list[str] = field(default_factory=list)
    sweep: str | None = None
    calibrate: str | None = None
    device: str | None = None
    stack: str | None = None  # the device's libraries (comma list, in order of preference)
    config: str | None = None  # with --device CORE: the library's build configuration
    stack_from: str | None = None  # the system file's key --stack came from (a preference there)
    config_from: str | None = None  # ... and --config's
    n: int = 100_000
    seed: int = 1
    s1: bool = False
    coap_random_factor: float = N.COAP_ACK_RANDOM_FACTOR
    path_floor_ms: float = 0.0
    host_scheduling: str | float = "off"  # off, measure, or a fixed lateness in ms
    wakeup_samples_ms: tuple[float, ...] = ()  # filled by host_wakeups() from host_scheduling
    json: bool = False
    out: str = "results"
    no_report: bool = False
    command: list[str] = field(default_factory=lambda: ["secperf", "whatif"])
    allow_partial: bool = False  # --calibrate may name a running or abandoned run
    max_draws: int = SW.DEFAULT_MAX_DRAWS  # cells x n at most (--max-draws)
    max_cells: int = SW.DEFAULT_MAX_CELLS  # cells at most (--max-cells)
    baseline: bool = False  # --baseline: each row next to no security and a software key
    csv: str | None = None  # --csv FILE: every number in tidy long format (report/export.py)
    until: str = "response"  # --until: the end point (response | handshake)
    host_costs: str | None = None  # --host-costs: measured (this host, cached) | shipped (app/host_costs.py)
    cluster: str | None = None  # --cluster: the cells as Ray tasks (app/cluster.py); same Result
    not_counted: dict[str, str] = field(default_factory=dict)  # protocol -> why the device cannot run it
    core: Core | None = None  # --device's emulated core, resolved once by run(); the rows' energy takes it
    # --key's secure-element profiles by name, looked up once (key_profiles()); the model takes them
    key_profiles: dict[str, SE.Profile] | None = None
    # a --system file's link and device as its reader resolved them (inputs/system.LoadedSystem), when
    # the command line did not override them: the run takes these objects instead of the names again
    links: list[NetSpec] | None = None
    device_choice: DeviceChoice | None = None


def count_scenarios(o: WhatifOptions) -> list[F.Scenario]:
    """The scenarios whose client costs a device prediction needs counted (S1 adds its PSK handshake)."""
    return list(context(o, counted=True).given)


def key_profiles(o: WhatifOptions) -> dict[str, SE.Profile]:
    """The secure-element profiles --key names, checked and looked up once per run (kept on `o`):
    the rows' model charges a secure element from these objects."""
    if o.key_profiles is None:
        o.key_profiles = _key_profiles(o.keys)
    return o.key_profiles


def key_profile(o: WhatifOptions, sc: F.Scenario) -> SE.Profile | None:
    """The profile of a scenario's key (None: a software key)."""
    return key_profiles(o)[sc.se_profile] if sc.se_profile else None


def _key_profiles(keys: list[str]) -> dict[str, SE.Profile]:
    out: dict[str, SE.Profile] = {}
    profiles = None
    for k in keys:
        if k == "software":
            continue
        if not k.startswith("se:"):
            raise InputError(
                f"--key: {k!r} must be software or se:PROFILE[:cold] (see `secperf signer --profile list`)"
            )
        parts = k.split(":")
        if len(parts) > 3 or (len(parts) == 3 and parts[2] != "cold"):
            raise InputError(f"--key: {k!r}: write se:PROFILE for a warm key (session kept) or se:PROFILE:cold")
        profiles = profiles or SE.load_profiles()
        if parts[1] not in profiles:
            raise InputError(f"--key: unknown secure-element profile {parts[1]!r}; known: {', '.join(profiles)}")
        out[parts[1]] = profiles[parts[1]]
    return out


# protocols whose client presents no certificate: a client key (software or in a secure element)
# signs nothing there (DESIGN.md, known traps); jwt signs its token with the key, so it is not here
NO_CLIENT_AUTH = ("tls1.3", "tls1.2", "dtls1.2")


CLIENT_AUTH_HINT = (
    "https, mqtt or coap (mutual TLS, the client signs CertificateVerify) or jwt (the key signs the token)"
)


def _client_keys(protocol: str, keys: list[str], protocols: list[str]) -> list[str]:
    """The keys a protocol's rows use. A secure-element key on a protocol without client
    authentication would change nothing and still stand in the row's label (a silent no-op): with
    that protocol alone it is an input error naming both; next to protocols that do use it, that
    protocol's rows take the software key, with a note."""
    se = [k for k in keys if k.startswith("se:")]
    if protocol not in NO_CLIENT_AUTH or not se:
        return keys
    if all(p in NO_CLIENT_AUTH for p in protocols):
        raise InputError(
            f"--key {','.join(se)}: {protocol} has no client certificate, so the client's key signs "
            f"nothing and the secure element would add 0 µs; use --key software, or a protocol whose "
            f"client signs: {CLIENT_AUTH_HINT}"
        )
    rest = [k for k in keys if not k.startswith("se:")] or ["software"]
    reporter().note(
        f"note: --key {','.join(se)}: {protocol} has no client certificate (the key signs nothing); its rows use "
        f"the software key only"
    )
    return rest


def scenarios(o: WhatifOptions) -> list[F.Scenario]:
    """One scenario per combination of the options, every name checked (InputError naming what is known)."""
    return list(context(o).given)


def context(o: WhatifOptions, counted: bool = False) -> F.Context:
    """The options' scenarios with what the model says about them, asked in one call (flights.context):
    the groups and server certificates checked against its tables, each scenario resolved and its
    flight model. counted: with the scenarios a device prediction counts besides (count_scenarios: S1's
    PSK handshake, --baseline's software-key twins). The errors keep their order: protocol, group,
    server certificate, key, handshake."""
    for p in o.protocols:
        if p not in F.PROTOCOLS:
            raise InputError(f"PROTOCOL: unknown protocol {p!r}; known: {', '.join(F.PROTOCOLS)}")
    certs: list[tuple[str | None, int]] = [SW.parse_cert(c) for c in o.certs] or [(None, 1)]
    out: list[F.Scenario] = []
    later: InputError | None = None  # a key's or a handshake's error: said after the model's checks
    try:
        out = _combinations(o, certs)
        if counted:
            out += _counted_too(o, out)
    except InputError as exc:
        later = exc
    ctx = F.context(out, o.groups, [t for t, _ in certs if t is not None])
    if later is not None:
        raise later
    return ctx


def _counted_too(o: WhatifOptions, scs: list[F.Scenario]) -> list[F.Scenario]:
    """The scenarios a device prediction counts besides the options' own (S1's PSK handshake, --baseline's
    software-key twin of a secure-element row, which signs on the device)."""
    out = []
    if o.s1:
        out += [
            F.Scenario(sc.protocol, "psk-dhe", sc.group, sc.cert, sc.depth, sc.key)
            for sc in scs
            if "psk-dhe" in F.HANDSHAKES.get(sc.protocol, ())
        ]
    if o.baseline:  # the S1 rows' twins too
        out += [F.software_key(sc) for sc in scs + out if sc.key != "software"]
    return out


def _combinations(o: WhatifOptions, certs: list[tuple[str | None, int]]) -> list[F.Scenario]:
    key_profiles(o)  # every --key checked (and its profile looked up) once
    keys = list(o.keys)
    out = []
    for p in o.protocols:
        hss = o.handshakes or [F.HANDSHAKES[p][0]]
        known = [h for h in hss if h in F.HANDSHAKES[p]]
        if not known and len(o.protocols) == 1:
            raise InputError(f"--handshake: {p} has no {', '.join(hss)} handshake; known: {', '.join(F.HANDSHAKES[p])}")
        for h in known:
            for k in _client_keys(p, keys, o.protocols):
                for g in o.groups:
                    for t, d in certs:
                        out.append(F.Scenario(p, h, g, t, d, k))
    if not out:
        raise InputError(f"--handshake: none of {', '.join(o.handshakes)} applies to {', '.join(o.protocols)}")
    return out
