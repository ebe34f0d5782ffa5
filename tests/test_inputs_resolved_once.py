"""`--device NAME` is resolved to its core once, where the command reads it (app/, subcommands/):
the layers below (measure, model, sim, plan) take the Core object and never look a core up by its
name again. The scan reads the source (imports and calls), as test_architecture does."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from secperf.core.errors import InputError
from secperf.inputs.core_profiles import Core
from secperf.inputs.devices import resolve_core
from secperf.measure import device as D
from secperf.measure import quic_device as QD

SRC = Path(__file__).resolve().parent.parent / "src" / "secperf"
LOWER = ("measure", "model", "sim", "plan")
# what looks a core up by its name: the registry's reader and the command edge's resolvers
LOOKUPS = {"core", "cores", "resolve_device", "resolve_core", "check_device", "temporary_core"}
# not yet moved up (said in the closing note): the energy model still reads a core by its name
# for a caller that hands it a name (the planner used as a library, without app/plan.py's overrides)
NOT_YET = {("model/energy.py", "core"), ("model/energy.py", "cores")}


def _lookups(path: Path) -> set[str]:
    """The name-lookup functions a module imports from inputs.devices or calls as devices.X / D.X."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases = {"devices", "D"}  # how modules name inputs.devices
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").endswith("inputs.devices"):
            found |= {a.name for a in node.names if a.name in LOOKUPS}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").endswith("inputs"):
            aliases |= {a.asname or a.name for a in node.names if a.name == "devices"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in LOOKUPS:
            base = node.func.value
            if isinstance(base, ast.Name) and base.id in aliases:
                found.add(node.func.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "check_device":
            found.add("check_device")
    return found


def test_the_lower_layers_take_the_core_not_its_name():
    seen = set()
    bad = []
    for layer in LOWER:
        for path in sorted((SRC / layer).rglob("*.py")):
            rel = path.relative_to(SRC).as_posix()
            for name in _lookups(path):
                seen.add((rel, name))
                if (rel, name) not in NOT_YET:
                    bad.append(f"{rel}: {name}")
    assert not bad, "a lower layer looks a device up by name (resolve it in app/ and pass the Core): " + ", ".join(bad)
    assert NOT_YET <= seen, f"no longer there, take it off NOT_YET: {sorted(NOT_YET - seen)}"


def test_the_scan_finds_a_lookup(tmp_path):
    """The scan is not blind: each spelling of a lookup in a module is found."""
    p = tmp_path / "m.py"
    p.write_text(
        "from ..inputs.devices import core\nfrom ..inputs import devices as DV\n"
        "def f(n):\n    return DV.resolve_device(n), check_device(n)\n"
    )
    assert _lookups(p) == {"core", "resolve_device", "check_device"}


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
