"""Other libraries' tools for `secperf crypto --library`: where each tool is, how to call it, and
what to install when it is missing. Every tool speaks secperf-probe's `speed` protocol (the same
options and JSON lines), so measure/crypto.py reads them all alike.

- wolfcrypt, mbedtls: native/libs (C), built by CMake into the package next to the probe;
- go: go/ (standard library only), built by `make build` into the venv's bin/;
- jce, bouncycastle: java/ (JMH; Bouncy Castle from Maven Central), built by `make build` into
  the venv's share/secperf/java/ and run with the JDK's `java`.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import SetupError
from ...core.native import ProbeNotFound, find_native


@dataclass(frozen=True)
class Tool:
    library: str  # --library name
    title: str  # for messages: "wolfCrypt"
    install: str  # what to install or run when the tool is missing


TOOLS = {
    "wolfcrypt": Tool(
        "wolfcrypt", "wolfCrypt", "apt-get install libwolfssl-dev, then `make build` (builds secperf-wolfcrypt)"
    ),
    "mbedtls": Tool(
        "mbedtls", "Mbed TLS", "apt-get install libmbedtls-dev, then `make build` (builds secperf-mbedtls)"
    ),
    "go": Tool(
        "go", "Go", "a Go 1.21+ toolchain (Debian: golang-go; scripts/bootstrap), then `make build` (builds secperf-go)"
    ),
    "jce": Tool(
        "jce",
        "Java JCE",
        "apt-get install openjdk-17-jdk-headless maven, then `make build` (builds secperf-jmh.jar from Maven Central)",
    ),
    "bouncycastle": Tool(
        "bouncycastle",
        "Bouncy Castle",
        "apt-get install openjdk-17-jdk-headless maven, then "
        "`make build` (fetches bcprov-jdk18on and JMH from Maven Central)",
    ),
}


class LibraryUnavailable(SetupError):
    """A library's tool is not built or its runtime is missing; the message names what to install."""


def _venv_file(*parts: str) -> Path:
    return Path(sys.prefix).joinpath(*parts)


def _find_exe(name: str, env: str) -> Path:
    if os.environ.get(env):
        p = Path(os.environ[env])
        if p.is_file():
            return p
        raise LibraryUnavailable(f"{env}={p} is not a file")
    c = _venv_file("bin", name)
    if c.is_file() and os.access(c, os.X_OK):
        return c
    which = shutil.which(name)
    if which:
        return Path(which)
    raise ProbeNotFound(f"{name} not found (set {env} or put it on PATH)")


def jmh_jar() -> Path:
    if os.environ.get("SECPERF_JMH_JAR"):
        return Path(os.environ["SECPERF_JMH_JAR"])
    return _venv_file("share", "secperf", "java", "secperf-jmh.jar")


def command(library: str) -> list[str]:
    """The argv prefix that runs `library`'s speed tool (the caller appends `speed ARGS`)."""
    t = TOOLS[library]
    try:
        if library in ("wolfcrypt", "mbedtls"):
            env = "SECPERF_WOLFCRYPT" if library == "wolfcrypt" else "SECPERF_MBEDTLS"
            return [str(find_native(f"secperf-{library}", "bin", env, "native/libs"))]
        if library == "go":
            return [str(_find_exe("secperf-go", "SECPERF_GO_TOOL"))]
        java = shutil.which("java")
        jar = jmh_jar()
        if not java:
            raise FileNotFoundError("java")
        if not jar.is_file():
            raise FileNotFoundError(str(jar))
        return [java, "-jar", str(jar)]
    except (FileNotFoundError, ProbeNotFound) as exc:
        raise LibraryUnavailable(
            f"--library {library}: {t.title}'s speed tool is not available ({exc}); install: {t.install}"
        ) from None


def check_available(libraries: list[str]) -> None:
    """Every named library can run here; else a SetupError naming what to install (all at once)."""
    problems = []
    for lib in libraries:
        if lib in TOOLS:
            try:
                command(lib)
            except LibraryUnavailable as exc:
                problems.append(str(exc))
    if problems:
        raise LibraryUnavailable("; ".join(problems))


def tool_args(library: str) -> list[str]:
    """Arguments a tool needs before the shared ones (the JVM tool serves two providers)."""
    return ["--provider", library] if library in ("jce", "bouncycastle") else []


def version_of(text: str | None) -> str | None:
    """The first dotted version number in a library's name: 'wolfCrypt 5.5.4' -> '5.5.4'."""
    m = re.search(r"\d+\.\d+(?:\.\d+)*[a-z]?", text or "")
    return m.group(0) if m else None
