"""One function replaced in every secperf module that bound it, for the tests and the benchmarks alike.

secperf's modules import what they use at their tops (`from .runner import measure_and_write`), so each
such name is the importing module's own attribute: replacing it in the module that defines it never
reaches a command that calls it through another module. `replace_everywhere` first imports every module
of the package (a module loaded after the replacement would bind the replaced value and keep it), then
sets the new value wherever a module holds the very object the source module holds.

Users: tests/conftest.patch_everywhere (through pytest's monkeypatch, undone after each test),
benchmarks/campaign.install_stub and the child process of benchmarks/bad_inputs.py (for the life of the
process). This file imports nothing but the standard library and secperf; it is loaded by path from the
tests and as a sibling module by the benchmarks (their own directory is first on sys.path).
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import types
from collections.abc import Callable

Setter = Callable[[object, str, object], None]

PACKAGE = "secperf"


def import_all(package: str = PACKAGE) -> None:
    """Every module of the package imported once (its __main__ is left out: it runs the CLI)."""
    root = importlib.import_module(package)
    for info in pkgutil.walk_packages(root.__path__, f"{package}."):
        if info.name not in sys.modules and not info.name.endswith("__main__"):
            importlib.import_module(info.name)


def bindings(module: types.ModuleType, name: str, package: str = PACKAGE) -> list[types.ModuleType]:
    """The modules of the package (all of them loaded first) whose attribute `name` is the object
    `module.name` is now."""
    import_all(package)
    original = getattr(module, name)
    return [
        mod
        for mod in list(sys.modules.values())
        if isinstance(mod, types.ModuleType)
        and (mod.__name__ == package or mod.__name__.startswith(f"{package}."))
        and getattr(mod, name, None) is original
    ]


def replace_everywhere(module: types.ModuleType, name: str, value: object, setter: Setter = setattr) -> int:
    """`module.name` replaced by `value` in every module of secperf that bound it (all of them loaded
    first); `setter` does each replacement (pytest's `monkeypatch.setattr` to undo it after a test).
    Returns how many modules got the new value (at least the source module)."""
    found = bindings(module, name)
    for mod in found:
        setter(mod, name, value)
    return len(found)
