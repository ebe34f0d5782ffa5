"""A described system (`--system FILE.toml`): the device, its secure element and key policy, the
network, the protocol and its handshake policy, the communication pattern and its budgets in ONE
validated file, read by `secperf whatif --system FILE` and `secperf plan --system FILE`
(`secperf schema system` prints its JSON Schema).

    name = "stm32l4-nbiot-mqtt"
    [device]     core = "cortex-m4-80", stack = "wolfssl", config = "sp-asm"
    [security]   key = "se:iot-safe-sim:cold"             # software | se:PROFILE | se:PROFILE:cold
    [network]    link = "nb-iot", radio = "nb-iot"        # a profile or a spec; radio: energy profile
    [protocol]   name = "mqtt", handshakes = ["full", "resumed"], groups = ["x25519"], server_cert = "ecdsa-p256"
    [pattern]    use = "periodic-collection"             # and/or inline [pattern.traffic], [pattern.connection]
    [budgets]    latency = "3 s", latency_percentile = 95, energy_per_day = "9 J"

Decisions:

- Names are those of the command line, checked against the same catalogues, with the key path in
  every error (`[device].core: unknown core 'm4'; known: ...`): the core is a `secperf device list`
  profile (or a cost table such as host-default), the stack and configuration are
  data/device_builds.toml's, the key is `--key`'s vocabulary (inputs/vocabulary.py), the link is a
  `secperf netem list` profile or a spec string, the protocol and handshakes are whatif's.
- Unknown keys are errors naming the key path and the keys allowed there (a misspelt `budget`
  table would otherwise be ignored and the verdict judged against the pattern's own numbers).
- The pattern is a built-in one (`use`), inline tables as a pattern file writes them (traffic,
  connection, requirements, name, description, source, measures, battery ...), or both: inline
  tables replace the built-in's table of that name. Its [stack] is not written here: it is made
  from [protocol], [security], [network] and [device], so the file says each thing once.
  [budgets] replace the pattern's requirements key by key (latency, its percentile, determinism,
  energy per day).
- The file is read like every other input: a regular file of at most 1 MiB, TOML nested at most
  32 levels (core/files.py).
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from ..core.errors import InputError
from ..core.files import parse_toml, read_text_input
from . import devices as D
from . import netspec as NS
from . import patterns as PS
from . import se_profiles as SE
from . import vocabulary as V
from .core_profiles import DEVICE_ALIASES
from .field_errors import Loc, describe
from .patterns import ENERGY_UNITS, TIME_UNITS, parse_quantity

if TYPE_CHECKING:  # read lazily: a system file without [pattern] never loads the pattern schema
    from .devices import DeviceChoice
    from .netspec import NetSpec
    from .patterns import Pattern
    from .se_profiles import Profile as SEProfile

# whatif's protocols and their handshakes: the one table in inputs/vocabulary.py (model/flights.py
# reads it too), so the spec layer need not import the model
HANDSHAKES = V.HANDSHAKES
PROTOCOLS = tuple(HANDSHAKES)
# a what-if protocol as a pattern's [stack] protocol and authentication (plan/design.py's table read
# backwards); the bare (D)TLS protocols carry no application messages, so no pattern judges them
PLAN_PROTOCOL = {
    "mqtt": ("mqtt", "mtls"),
    "https": ("https", "mtls"),
    "coap": ("coap", "mtls"),
    "openvpn": ("vpn", "mtls"),
    "jwt": ("https", "jwt"),
}

Name = Annotated[str, Field(min_length=1, max_length=200)]
MAX_BACKLOG = 10_000_000  # as `fleet --backlog` (model/fleet.py); the kernel caps it at somaxconn
Source = Annotated[str, Field(min_length=3, max_length=2000)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class DeviceSection(_Section):
    """The client's core and TLS library build."""

    core: Name = Field(
        description="a core profile of `secperf device list` (e.g. cortex-m4-80) or a cost table (host-default)"
    )
    stack: Name | None = Field(None, description="the TLS library (wolfssl, mbedtls, mbedtls3, wolfssl59, ...)")
    config: Name | None = Field(
        None,
        description="the library's build configuration (e.g. sp-asm; `secperf "
        "device list`); default: the stack's default",
    )
    source: Source | None = None


class SecuritySection(_Section):
    """Where the client's key lives and how its session is kept."""

    key: Name = Field(
        "software",
        description="software, se:PROFILE (warm: session kept) or se:PROFILE:cold "
        "(session opened, login, key found and signed per connection)",
    )
    source: Source | None = None


class NetworkSection(_Section):
    link: Name = Field(
        description="a link profile (`secperf netem list`: nb-iot, lte-m, ...) or a spec such as "
        "'delay=50ms,loss=1%,rate=250kbit'"
    )
    radio: Name | None = Field(None, description="radio energy profile (default: the link profile's own)")
    source: Source | None = None


class ProtocolSection(_Section):
    name: Literal["tls1.3", "tls1.2", "dtls1.2", "https", "mqtt", "coap", "openvpn", "jwt"]
    handshakes: list[Name] = Field(
        default_factory=lambda: [],
        description="the handshake policy: full, resumed, psk, ... (default: the protocol's first, full)",
    )
    groups: list[Name] = Field(
        default_factory=lambda: ["x25519"], description="key-exchange groups (x25519, p-256, ml-kem-768, ...)"
    )
    server_cert: Name | None = Field(
        None, description="the server certificate's key type and chain depth, e.g. ecdsa-p256 or rsa-2048:2"
    )
    source: Source | None = None


class BudgetsSection(_Section):
    """The requirements the pattern must meet; each replaces the pattern's own."""

    latency: str | None = Field(None, description="e.g. \"3 s\": the percentile below must stay under it")
    latency_percentile: Annotated[float, Field(ge=50, le=99.9)] | None = None
    determinism: str | None = None
    energy_per_day: str | None = Field(None, description="e.g. \"9 J\"")
    source: Source | None = None


class PatternSection(BaseModel):
    """A built-in pattern (`use`) and/or a pattern's own tables (as a pattern file writes them,
    without [stack]); checked by inputs/patterns.py once the stack is made from the system."""

    model_config = ConfigDict(extra="forbid", strict=True)
    use: Name | None = Field(None, description="a built-in pattern: periodic-collection, event-driven, ...")
    name: Name | None = None
    description: str | None = None
    source: Source | None = None
    traffic: dict[str, Any] | None = None
    connection: dict[str, Any] | None = None
    requirements: dict[str, Any] | None = None
    measures: list[Name] | None = Field(None, description="the design measures the planner may use (default all)")
    jwt_lifetime_s: float | None = None
    battery: str | None = Field(None, description="e.g. \"2600 mAh\"")
    battery_voltage_v: float | None = None


class ServerSection(_Section):
    """The user's own server the load generators aim at (`secperf server --system FILE`, `fleet
    --replay --system FILE`: its --target and companions). Paths are relative to the system file."""

    target: Annotated[str, Field(min_length=3, max_length=300)] = Field(
        description="HOST:PORT of the server (TLS; DTLS with protocol dtls1.2 or coap)"
    )
    ca: Name | None = Field(None, description="CA certificate(s) that verify the server (PEM file)")
    servername: Name | None = Field(None, description="SNI and the name checked (default: the host)")
    client_cert: Name | None = Field(None, description="client certificate (PEM file) the generators show")
    client_key: Name | None = Field(None, description="its key: a PEM file only its owner reads (0600)")
    backlog: Annotated[int, Field(ge=1, le=MAX_BACKLOG)] | None = Field(
        None,
        description="the server's listen(2) backlog (`ss -ltn` shows it as Send-Q of the listening "
        "socket); `fleet --replay` models the storm with it (the kernel caps it at somaxconn). "
        "Without it the replay's model assumes max(512, clients + 64) and says so",
    )
    accept_per_s: Annotated[float, Field(gt=0, le=1e9)] | None = Field(
        None,
        description="connections per second the idle server takes off its accept queue; `fleet --replay` "
        "and `mqtt-load` model a storm with it instead of probing the target (a probe gives a lower bound)",
    )
    source: Source | None = None


class System(_Section):
    name: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]*$", max_length=100)]
    description: str = ""
    source: Source | None = None
    device: DeviceSection
    security: SecuritySection = Field(default_factory=SecuritySection)
    network: NetworkSection
    protocol: ProtocolSection
    pattern: PatternSection | None = None
    budgets: BudgetsSection | None = None
    server: ServerSection | None = None


SECTIONS = ("device", "security", "network", "protocol", "pattern", "budgets", "server")
_MODELS: dict[str, type[BaseModel]] = {
    "device": DeviceSection,
    "security": SecuritySection,
    "network": NetworkSection,
    "protocol": ProtocolSection,
    "pattern": PatternSection,
    "budgets": BudgetsSection,
    "server": ServerSection,
}
SHOWN_PROBLEMS = 6


# what reading a system file resolved: the checked model, its link, its key's profile, its device
_Resolved = tuple["System", "NetSpec | None", "SEProfile | None", "DeviceChoice | None"]


@dataclass(frozen=True)
class LoadedSystem:
    """A system file checked: the model plus where it came from (for messages and the Result), and
    the names it gives resolved while it was read, once: its [network].link as a NetSpec, its
    [security].key's secure-element profile (None for a software key) and its [device].core. The command hands these
    objects on instead of looking the names up again."""

    system: System
    path: str
    link: NetSpec | None = None
    key_profile: SEProfile | None = None
    device: DeviceChoice | None = None  # [device].core: a cost table or an emulated core (choose_device)

    @property
    def s(self) -> System:
        return self.system


# --- messages ------------------------------------------------------------------------------------
def _allowed_values(loc: Loc) -> str:
    return ", ".join(PROTOCOLS) if loc[-1] == "name" and loc[0] == "protocol" else ""


def _describe(err: ErrorDetails) -> str:
    return describe(err, root=System, models=_MODELS, sections=SECTIONS, allowed_values=_allowed_values)


def _validate(raw: Mapping[str, Any], where: str) -> System:
    try:
        return System.model_validate(raw)
    except ValidationError as exc:
        shown: list[str] = []
        more = 0
        for err in exc.errors():
            if len(shown) >= SHOWN_PROBLEMS:
                more += 1
                continue
            text = _describe(err)
            if text not in shown:
                shown.append(text)
        raise InputError(f"{where}: " + "; ".join(shown) + (f" (and {more} more)" if more else "")) from None


# --- catalogues (data files read directly: the spec layer imports no model) ----------------------
@lru_cache(maxsize=8)
def _data(name: str) -> dict[str, Any]:
    return tomllib.loads(resources.files("secperf.data").joinpath(name).read_text(encoding="utf-8"))


def cost_tables() -> list[str]:
    return list(_data("whatif_costs.toml").get("tables", {}))


def radios() -> list[str]:
    return list(_data("energy.toml").get("links", {}))


def stacks() -> list[str]:
    b = _data("device_builds.toml")
    names = list(b.get("defaults", {}))
    for c in b.get("configs", {}).values():
        names += [s for s in c.get("stacks", ()) if s not in names]
    return names


def configs(stack: str) -> list[str]:
    return [n for n, c in _data("device_builds.toml").get("configs", {}).items() if stack in c.get("stacks", ())]


def _check_names(s: System, where: str) -> System:
    """Every name checked against its catalogue, the key path in the message; old spellings
    (groups) mapped with a note."""
    return _resolve_names(s, where)[0]


def _resolve_names(s: System, where: str) -> _Resolved:
    """_check_names, keeping what the checks resolved: the link's NetSpec, the key's profile and the
    device (inputs.devices.choose_device: a cost table, else a core), each looked up once here."""

    problems: list[str] = []
    cores = list(D.cores())
    # an old spelling is no name of a file (a table takes precedence over a core of the same name)
    device = D.choose_device(s.device.core) if s.device.core not in DEVICE_ALIASES else None
    if device is None or not device.known:
        device = None
        problems.append(
            f"[device].core: unknown core {s.device.core!r}; cores (`secperf device list`): "
            f"{', '.join(cores)}; cost tables: {', '.join(cost_tables())}"
        )
    if s.device.stack is not None and s.device.stack not in stacks():
        problems.append(f"[device].stack: unknown stack {s.device.stack!r}; known: {', '.join(stacks())}")
    if s.device.config is not None:
        if s.device.stack is None:
            problems.append(f"[device].config: {s.device.config!r} is a build of a stack: give [device].stack too")
        elif s.device.stack in stacks() and s.device.config not in configs(s.device.stack):
            problems.append(
                f"[device].config: {s.device.stack} has no configuration {s.device.config!r}; "
                f"known: {', '.join(configs(s.device.stack))}"
            )
    if (s.device.stack or s.device.config) and s.device.core not in cores:
        problems.append(
            f"[device].stack/config: {s.device.core} is a cost table, not an emulated core; a stack and "
            f"its build apply to a core of `secperf device list`"
        )
    key_profile: SEProfile | None = None
    link: NetSpec | None = None
    try:
        if s.security.key.strip().startswith("se:"):  # the catalogue read once: checked and resolved
            profiles = SE.load_profiles()
            V.key(s.security.key, "[security].key", profiles)
            key_profile = profiles[s.security.key.strip().split(":")[1]]
        else:
            V.key(s.security.key, "[security].key")
    except InputError as exc:
        problems.append(str(exc))
    try:
        specs = NS.parse_networks([s.network.link])
        if len(specs) != 1:
            problems.append(f"[network].link: {s.network.link!r} names {len(specs)} links; a system has one")
        link = specs[0]
    except InputError as exc:
        problems.append(f"[network].link: {exc}")
    if s.network.radio is not None and s.network.radio not in radios():
        problems.append(
            f"[network].radio: unknown radio energy profile {s.network.radio!r}; known: {', '.join(radios())}"
        )
    p = s.protocol
    bad = [h for h in p.handshakes if h not in HANDSHAKES[p.name]]
    if bad:
        problems.append(
            f"[protocol].handshakes: {p.name} has no {', '.join(bad)} handshake; known: {', '.join(HANDSHAKES[p.name])}"
        )
    if s.pattern is not None and p.name not in PLAN_PROTOCOL:
        problems.append(
            f"[pattern]: a pattern judges application messages; {p.name} carries none: name one of "
            f"{', '.join(PLAN_PROTOCOL)} in [protocol].name, or drop [pattern]"
        )
    b = s.budgets
    if b is not None:
        for k, units, what in (
            ("latency", TIME_UNITS, "time"),
            ("determinism", TIME_UNITS, "time"),
            ("energy_per_day", ENERGY_UNITS, "energy"),
        ):
            if getattr(b, k) is not None:
                try:
                    parse_quantity(getattr(b, k), units, what)
                except ValueError as exc:
                    problems.append(f"[budgets].{k}: {exc}")
    if s.budgets is not None and s.pattern is None:
        problems.append("[budgets]: budgets are a pattern's requirements; add [pattern] (use = \"NAME\" or its tables)")
    if problems:
        raise InputError(f"{where}: " + "; ".join(problems))
    groups = V.groups(_unique(p.groups, "[protocol].groups"), "[protocol].groups")
    handshakes = _unique(p.handshakes, "[protocol].handshakes")
    s = s.model_copy(update={"protocol": p.model_copy(update={"groups": groups, "handshakes": handshakes})})
    return s, link, key_profile, device


def _unique(names: list[str], key: str) -> list[str]:
    """A list of the file with each repeated name used once, with a note (a repeat asks for the same
    row twice: two series of one id, a Result the readers refuse; the intent is plain, so folded,
    not refused, like the command line's comma lists)."""
    out = list(dict.fromkeys(n.strip().lower() for n in names))
    if len(out) < len(names):
        rep = sorted({n for n in out if [x.strip().lower() for x in names].count(n) > 1})
        V.note(f"{key}: {', '.join(rep)} given more than once; each is used once")
    return out


def validate_system(raw: Mapping[str, Any], where: str = "system") -> System:
    """Parsed TOML checked: structure, every name against its catalogue, and the pattern it makes
    (whichever command reads the file: one file, validated once and whole)."""
    return _validated(raw, where)[0]


def _validated(raw: Mapping[str, Any], where: str) -> _Resolved:
    """validate_system, keeping the link, key profile and device the checks resolved."""
    r = _resolve_names(_validate(raw, where), where)
    if r[0].pattern is not None:
        _pattern(r[0], where)
    return r


def load_system(path: str | Path, where: str | None = None) -> LoadedSystem:
    """A system file read with the input bounds and validated; InputError naming the key path."""

    where = where or f"--system {path}"
    text = read_text_input(path, "system", where)
    try:
        doc = parse_toml(text, where)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{where}: not valid TOML: {exc}") from None
    s, link, key_profile, device = _validated(doc, where)
    return LoadedSystem(s, str(path), link, key_profile, device)


# --- the pattern the planner judges --------------------------------------------------------------
def plan_auth(s: System) -> tuple[str, str]:
    """The pattern's [stack] protocol and authentication: the protocol's own (mutual TLS, a JWT),
    or psk when the handshake policy is PSK only."""
    proto, auth = PLAN_PROTOCOL[s.protocol.name]
    if s.protocol.handshakes and set(s.protocol.handshakes) == {"psk"} and auth == "mtls":
        auth = "psk"
    return proto, auth


def pattern_doc(ls: LoadedSystem) -> dict[str, Any]:
    """The pattern as a pattern file would write it: the built-in's tables (if `use`), the inline
    tables over them, [stack] from the system, [budgets] over the requirements."""
    return _pattern_doc(ls.system, f"--system {ls.path}")


def _pattern_doc(s: System, where: str) -> dict[str, Any]:
    ps = s.pattern
    if ps is None:
        raise InputError(
            f"{where}: no [pattern]: `plan` judges a pattern; add [pattern] use = \"NAME\" "
            f"({', '.join(PS.builtin_names())}) or its tables, with [budgets]"
        )
    doc: dict[str, Any] = {}
    if ps.use is not None:
        if ps.use not in PS.builtin_names():
            raise InputError(
                f"{where}: [pattern].use: unknown pattern {ps.use!r}; built-in: {', '.join(PS.builtin_names())}"
            )

        doc = parse_toml(PS._builtin_text(ps.use), f"pattern {ps.use}")
    base_stack = doc.get("stack", {})
    for k in ("name", "description", "source", "traffic", "connection", "requirements"):
        v = getattr(ps, k)
        if v is not None:
            doc[k] = v
    doc.setdefault("name", s.name)
    doc.setdefault("source", s.source or f"system file {s.name}")
    proto, auth = plan_auth(s)
    stack = {
        k: base_stack[k] for k in ("measures", "jwt_lifetime_s", "battery", "battery_voltage_v") if k in base_stack
    }
    for k in ("measures", "jwt_lifetime_s", "battery", "battery_voltage_v"):
        if getattr(ps, k) is not None:
            stack[k] = getattr(ps, k)
    stack.update(
        protocol=proto,
        auth=auth,
        key=s.security.key,
        network=s.network.link,
        source=f"system file {s.name}: [protocol], [security], [network], [device]",
    )
    if s.network.radio:
        stack["radio"] = s.network.radio
    doc["stack"] = stack
    if s.budgets is not None:
        req = dict(doc.get("requirements") or {})
        budget_source = s.budgets.source or f"system file {s.name}: [budgets]"
        # a requirement's own source (latency_source, ...), where patterns carry one, follows its value
        own = {
            "latency": "latency_source",
            "latency_percentile": "latency_source",
            "determinism": "determinism_source",
            "energy_per_day": "energy_source",
        }
        for k in ("latency", "latency_percentile", "determinism", "energy_per_day"):
            v = getattr(s.budgets, k)
            if v is not None:
                req[k] = v
                if own[k] in PS.Requirements.model_fields:
                    req[own[k]] = budget_source
        req["source"] = req.get("source") or budget_source
        doc["requirements"] = req
    return doc


def pattern(ls: LoadedSystem) -> Pattern:
    """The system's pattern validated as inputs/patterns.py validates a pattern file."""
    return _pattern(ls.system, f"--system {ls.path}")


def _pattern(s: System, where: str) -> Pattern:
    return PS.validate_pattern(_pattern_doc(s, where), f"{where} [pattern]")


def json_schema() -> dict[str, Any]:
    doc = System.model_json_schema()
    doc["$id"] = "secperf.system"
    doc["title"] = "secperf system file (--system FILE.toml)"
    return doc
