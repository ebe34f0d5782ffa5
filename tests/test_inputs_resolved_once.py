"""Every input a command names is resolved once, where the command reads it (app/, subcommands/):
`--device` to its Core, `--network` (and a pattern's link) to a NetSpec, `--key se:NAME` / `--se` to
the secure element's Profile, `--system FILE` to a System. The layers below (measure, model, sim,
plan) take the objects and never look a core, a link, a profile or a system file up by its name
again. The scan reads the source (imports and calls), as test_architecture does; the count of a
real run is benchmarks/input_lookups.py."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from conftest import patch_everywhere
from secperf.core.errors import InputError
from secperf.inputs.core_profiles import Core
from secperf.inputs.devices import resolve_core
from secperf.measure import device as D
from secperf.measure import quic_device as QD

SRC = Path(__file__).resolve().parent.parent / "src" / "secperf"
LOWER = ("measure", "model", "sim", "plan")
# per registry module (as imported: `..inputs.netspec`, `from ..inputs import netspec as NS`), the
# functions that look an input up by its name (the readers and the command edge's resolvers)
LOOKUPS = {
    "inputs.devices": {"core", "cores", "resolve_device", "resolve_core", "check_device", "temporary_core"},
    "inputs.netspec": {"parse", "parse_networks", "load_profiles", "load_sweeps", "profile_table"},
    "inputs.se_profiles": {"get_profile", "load_profiles", "profiles_with", "profile_of_key"},
    "inputs.system": {"load_system", "validate_system"},
    "model.network": {"parse"},  # a link model from its text (gone: model/ takes a NetSpec, from_spec)
}
# not yet moved up, each with the lookup it still makes: none left (the server and mqtt-load key
# sources, measure_vpn called by its name alone and the link model's text parser were the last)
NOT_YET: set[tuple[str, str]] = set()


def _lookups(path: Path) -> set[str]:
    """The name-lookup functions a module imports from a registry or calls through the registry's
    module (`devices.core`, `NS.parse`, `SE.get_profile`), as `registry.function`."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases: dict[str, str] = {"devices": "inputs.devices", "D": "inputs.devices"}  # how modules name a registry
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            for reg, names in LOOKUPS.items():
                pkg, leaf = reg.split(".")
                if mod.endswith(reg) or (node.level and mod == leaf):  # from ..inputs.netspec import parse
                    found |= {f"{reg}.{a.name}" for a in node.names if a.name in names}
                if mod.endswith(pkg) or (node.level and not mod):  # from ..inputs import netspec as NS
                    aliases |= {a.asname or a.name: reg for a in node.names if a.name == leaf}
        elif isinstance(node, ast.Import):  # import secperf.inputs.netspec as NS
            for a in node.names:
                for reg in LOOKUPS:
                    if a.asname and a.name.endswith(reg):
                        aliases[a.asname] = reg
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id in aliases:
            reg = aliases[f.value.id]
            if f.attr in LOOKUPS[reg]:
                found.add(f"{reg}.{f.attr}")
        elif isinstance(f, ast.Attribute) and (dotted := _dotted(f.value)):  # secperf.inputs.netspec.parse(t)
            for reg, names in LOOKUPS.items():
                if f.attr in names and (dotted == reg or dotted.endswith("." + reg)):
                    found.add(f"{reg}.{f.attr}")
        elif isinstance(f, ast.Name) and f.id == "check_device":
            found.add("inputs.devices.check_device")
    return found


def _dotted(node: ast.expr) -> str | None:
    """`a.b.c` of a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


def test_the_lower_layers_take_the_objects_not_the_names():
    seen = set()
    bad = []
    for layer in LOWER:
        for path in sorted((SRC / layer).rglob("*.py")):
            rel = path.relative_to(SRC).as_posix()
            for name in _lookups(path):
                seen.add((rel, name))
                if (rel, name) not in NOT_YET:
                    bad.append(f"{rel}: {name}")
    assert not bad, (
        "a lower layer looks an input up by its name (resolve it in app/ or subcommands/ and pass the "
        "Core, NetSpec, Profile or System): " + ", ".join(bad)
    )
    assert NOT_YET <= seen, f"no longer there, take it off NOT_YET: {sorted(NOT_YET - seen)}"


def test_a_system_file_is_read_at_the_commands_edge_only():
    """`--system FILE` is read (load_system) by the subcommand that takes it, and nowhere else."""
    readers = sorted(
        path.relative_to(SRC).as_posix()
        for path in SRC.rglob("*.py")
        if any(n.startswith("inputs.system.") for n in _lookups(path))
    )
    assert readers and all(r.startswith(("subcommands/", "app/")) for r in readers), readers


@pytest.mark.parametrize(
    "source, found",
    [
        (
            "from ..inputs.devices import core\nfrom ..inputs import devices as DV\n"
            "def f(n):\n    return DV.resolve_device(n), check_device(n)\n",
            {"inputs.devices.core", "inputs.devices.resolve_device", "inputs.devices.check_device"},
        ),
        (
            "from ..inputs import netspec as NS\nfrom ..model import network as N\n"
            "def f(t):\n    return NS.parse_networks([t]), N.parse(t), NS.with_name(t, 'x')\n",
            {"inputs.netspec.parse_networks", "model.network.parse"},
        ),
        (
            "def f(k):\n    from ..inputs.se_profiles import get_profile\n    return get_profile(k)\n",
            {"inputs.se_profiles.get_profile"},
        ),
        ("import secperf.inputs.se_profiles as S\nS.load_profiles()\n", {"inputs.se_profiles.load_profiles"}),
        ("from . import network as N\nN.parse('lte-m')\n", {"model.network.parse"}),
        ("from ..inputs.system import load_system\n", {"inputs.system.load_system"}),
        (
            "import secperf.inputs.se_profiles\nfrom .. import inputs\n"
            "def f(k, p):\n    return secperf.inputs.se_profiles.profiles_with(p), inputs.netspec.parse(k)\n",
            {"inputs.se_profiles.profiles_with", "inputs.netspec.parse"},
        ),
        ("from ..inputs.se_profiles import profiles_with as known\n", {"inputs.se_profiles.profiles_with"}),
        ("from ..inputs import netspec as NS\ndef f(s):\n    return NS.LOOPBACK_NAMES, s.canonical()\n", set()),
    ],
)
def test_the_scan_finds_a_lookup(tmp_path, source, found):
    """The scan is not blind: each spelling of a lookup in a module is found (and an object's use is not)."""
    p = tmp_path / "m.py"
    p.write_text(source)
    assert _lookups(p) == found


def test_a_planted_lookup_fails_the_scan(tmp_path, monkeypatch):
    """A copy of the lower layers with one lookup planted in model/ fails the layer test."""
    import shutil

    root = tmp_path / "secperf"
    for layer in LOWER:
        shutil.copytree(SRC / layer, root / layer)
    (root / "model" / "planted.py").write_text(
        "from ..inputs import se_profiles as SE\n\ndef f(k):\n    return SE.get_profile(k)\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "SRC", root)
    with pytest.raises(AssertionError, match="model/planted.py: inputs.se_profiles.get_profile"):
        test_the_lower_layers_take_the_objects_not_the_names()


def test_measure_takes_a_core_object():
    dev = resolve_core("cortex-m4-80")
    assert isinstance(dev, Core)
    cfgs = D.plan(dev, "wolfssl59", "1.3", "x25519", "aes128gcm")
    assert cfgs and all(c.core is dev and c.device == "cortex-m4-80" for c in cfgs)
    assert len(set(cfgs)) == len(cfgs)  # hashable, one per configuration
    with pytest.raises(InputError, match="A-profile|application core|cortex-a"):
        QD.plan(dev, "ngtcp2", "full", "x25519", "aes128gcm", "rsa-2048")  # no QUIC on a microcontroller


def test_an_unknown_device_is_refused_where_it_is_read():
    with pytest.raises(InputError, match="unknown device 'cortex-z9'.*cortex-m4-80"):
        resolve_core("cortex-z9")


def test_the_model_and_the_planner_take_the_resolved_profile_and_link():
    """A secure-element key reaches the model as the Profile the command resolved; a caller that hands
    only the name is secperf's own slip (internal), not a lookup made below the command."""
    from secperf.app.plan import resolved
    from secperf.core.errors import InternalError
    from secperf.inputs import netspec as NS
    from secperf.inputs import patterns as PS
    from secperf.inputs import se_profiles as SE
    from secperf.model import costs as C
    from secperf.model import flights as F
    from secperf.model import network as N
    from secperf.model import predict as P
    from secperf.plan import planner as PL

    sc, table, link = (
        F.Scenario("mqtt", key="se:iot-safe-sim:cold"),
        C.load_table(),
        N.from_spec(NS.parse("delay=10ms")),
    )
    with pytest.raises(InternalError, match="resolved"):
        P.plan(sc, table, link)
    with pytest.raises(InternalError, match="resolved"):
        P.plan(sc, table, link, se=SE.get_profile("atecc608"))  # another key's profile
    pl = P.plan(sc, table, link, se=SE.get_profile("iot-safe-sim"))
    assert pl.se_profile is not None and pl.se_profile.name == "iot-safe-sim"
    p = PS.load_pattern("periodic-collection")
    with pytest.raises(InternalError, match="resolved"):
        PL.context(p, PL.Overrides(n=10))  # the pattern's link and key named, not resolved
    ov = resolved(p, PL.Overrides(n=10))
    assert ov.link is not None and ov.link.name == p.stack.network
    assert ov.key_profile is not None and f"se:{ov.key_profile.name}" == p.stack.key
    assert PL.context(p, ov).key_profile is ov.key_profile


def test_plan_resolves_each_core_once_and_takes_the_system_files_objects(monkeypatch):
    """`plan --system`: the file's reader resolves its link and key once (LoadedSystem.link,
    .key_profile); the plan chooses each device once (app/plan._devices: inputs.devices.choose_device) and hands the file's
    objects to the planner without parsing the link or reading the profiles again."""
    from secperf.app import plan as A
    from secperf.inputs import devices as DV
    from secperf.inputs.system import load_system, pattern

    ls = load_system(SRC.parent.parent / "examples" / "stm32l4-nbiot-mqtt.toml")
    assert ls.link is not None and ls.link.name == ls.system.network.link
    assert ls.key_profile is not None and f"se:{ls.key_profile.name}" in ls.system.security.key
    looked: list[str] = []
    real = DV.choose_device
    patch_everywhere(monkeypatch, DV, "choose_device", lambda name: looked.append(name) or real(name))
    o = A.PlanOptions(
        patterns=[pattern(ls).name],
        device=ls.system.device.core,
        se=ls.system.security.key,
        network=ls.system.network.link,
        n=50,
        system=ls.path,
        resolved=[pattern(ls)],
        link=ls.link,
        key_profile=ls.key_profile,
    )

    def again(*_a):
        raise AssertionError("looked up again")

    monkeypatch.setattr(A, "_link", again)
    monkeypatch.setattr(A, "_key_profile", again)
    pats, devices = A._checked(o)
    ov = A._overrides(o, None, pats[0], devices)
    core = devices[pats[0].name].core
    assert looked == [ls.system.device.core] and isinstance(core, Core)
    assert ov.core is core and ov.link is ls.link and ov.key_profile is ls.key_profile


def test_the_command_layer_reads_the_profile_catalogue_once(monkeypatch):
    """connect's matrix check and its run's key sources share one read of the profiles; server's
    offloaded key sources are resolved in one read for all rows; jwt's estimate takes the objects."""
    from secperf.app import bounds
    from secperf.app.connect import connect_configs, key_profiles
    from secperf.app.se_keys import profiles_named
    from secperf.app.server_plan import with_profiles
    from secperf.inputs import se_profiles as SE
    from secperf.measure import server as S

    known = SE.load_profiles()
    reads: list[object] = []
    real = SE.load_profiles
    patch_everywhere(monkeypatch, SE, "load_profiles", lambda *a: reads.append(a) or real(*a))
    cfgs = connect_configs(["mqtt"], ["se:iot-safe-sim", "token"], ["full"], None, ["mtls"], profiles=known)
    got = key_profiles(cfgs, known=known)
    assert reads == [] and {"iot-safe-sim", "softhsm"} <= set(got) and got["iot-safe-sim"] is known["iot-safe-sim"]
    rows = [
        S.ServerConfig("nginx", "rsa-2048", f"offload:{p}:{w}") for p in ("atecc608", "rsa-card-1998") for w in S.WAITS
    ]
    resolved = with_profiles([S.ServerConfig("nginx", "rsa-2048"), *rows])
    assert len(reads) == 1 and resolved[0].profile is None
    assert [c.offloaded()[0].name for c in resolved[1:]] == ["atecc608", "atecc608", "rsa-card-1998", "rsa-card-1998"]
    assert profiles_named({}) == {} and len(reads) == 1  # nothing named: nothing read
    assert bounds.se_sign_s(known["iot-safe-sim"]) > 0
