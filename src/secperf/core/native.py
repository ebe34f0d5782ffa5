"""Where the native tools are: the probe, the secure-element shim, the link relay and friends.

Lookup order: an environment variable naming the file, else the copy installed inside the package
(secperf/bin, secperf/lib), else a local CMake build, else PATH (executables only)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from .errors import SetupError

PROBE_NAME = "secperf-probe"
SHIM_NAME = "libsecperf_se_shim.so"


class ProbeNotFound(SetupError):
    """A native tool is missing: build it with `make build`."""


def find_native(name: str, kind: str = "bin", env: str | None = None, build_subdir: str = "native/probe") -> Path:
    """A native artefact: $ENV, else the copy installed inside the package (secperf/bin or
    secperf/lib), else a local CMake build, else PATH (executables only)."""
    if env and os.environ.get(env):
        p = Path(os.environ[env])
        if p.is_file():
            return p
        raise ProbeNotFound(f"{env}={p} is not a file")
    pkg = Path(__file__).resolve().parents[1]
    # a local build, never the sanitizer one (build/asan): its shared libraries cannot load into a
    # process without libasan first, and `make test-asan` reaches its tools through the $ENV overrides
    local = [
        c
        for c in sorted(pkg.parents[1].glob(f"build/*/{build_subdir}/{name}"))
        if c.parts[-len(Path(build_subdir).parts) - 2] != "asan"
    ]
    candidates = [pkg / kind / name] + local
    for c in candidates:
        if c.is_file() and (kind != "bin" or os.access(c, os.X_OK)):
            return c
    which = shutil.which(name) if kind == "bin" else None
    if which:
        return Path(which)
    raise ProbeNotFound(f"{name} not found: build it with `make build`" + (f" (or set {env})" if env else ""))


def shipped_sources(share: str, tree: str, *required: str) -> Path | None:
    """Native sources the package ships to build at first use: the installed copy (secperf/share/SHARE,
    put there by CMake's install rules), else the source tree's (TREE, relative to the checkout) — the
    first that holds every REQUIRED file; None when neither does (the caller names what is missing)."""
    pkg = Path(__file__).resolve().parents[1]
    for cand in (pkg / "share" / share, pkg.parents[1] / tree):
        if all((cand / r).is_file() for r in required):
            return cand
    return None


def find_probe() -> Path:
    """$SECPERF_PROBE, else the copy installed inside the package, else a local CMake build."""
    return find_native(PROBE_NAME, "bin", "SECPERF_PROBE")


def find_shim() -> Path:
    """The secure-element latency shim (a PKCS#11 module)."""
    return find_native(SHIM_NAME, "lib", "SECPERF_SE_SHIM", "native/se_shim")
