"""Secure-element latency profiles (data/secure_elements.toml): what a real chip adds to each
PKCS#11 call, as a delay distribution in milliseconds per function, each figure with its source.

The native shim (a PKCS#11 module wrapping SoftHSM2) sleeps or busy-waits for the sampled delay on
every call; this module loads and validates the profiles, writes the shim's plain-text config, and
simulates study S2's two token modes without hardware so a profile's calibration can be checked.

Sampling semantics: ONE definition, written here (``Dist.sample_ms``, numpy) and in the shim
(``se_draw_delay_ms`` in native/se_shim/profile.c, on the native tools' xoshiro256**); both say so,
and tests/test_delay_sampler.py draws from both and checks that their distributions agree.

- ``fixed V``: always V.
- ``normal MEAN SD``: MEAN + SD * z, z standard normal, truncated at 0 by redrawing: a negative
  draw is drawn again, at most ``REDRAW_LIMIT`` (64) draws per delay; if all are negative (only
  possible with MEAN far below 0, which profiles cannot set) the delay is 0. SD = 0: MEAN.
- ``lognormal MEDIAN SIGMA``: MEDIAN * exp(SIGMA * z), z standard normal (SIGMA = sd of ln).
- ``empirical V1 V2 ...``: one of the values, uniformly.
- a tail ``P DIST ...``: with probability P the delay is drawn from the tail distribution
  *instead of* the body (first a uniform draw u; u < P -> tail).
- the clamp: every delay, body or tail, ends in [0, ``DELAY_MAX_MS``] (one hour; far above any
  secure element's call, it keeps a wide lognormal's rare draw from overflowing the shim's
  nanosecond clock arithmetic).

All figures are milliseconds. The draws come from a numpy ``Generator`` (``Dist.sample_ms``,
vectorised; the Monte Carlo of sim/montecarlo.py uses it too); ``Dist.sample`` draws one value and
also takes a seeded ``random.Random`` (it seeds a Generator from it). The distribution functions
(CDF, quantile, mean) are scipy.stats distributions of the same semantics, and the KS checks use
scipy.stats.kstest / ks_2samp. The tests check the samplers against those scipy CDFs.
"""

from __future__ import annotations

import functools
import math
import random
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, overload

import numpy as np

from ..core.errors import InputError
from ..core.files import parse_toml, read_text_input

SHIM_ENV = "SECPERF_SE_PROFILE"  # env var the shim reads at C_Initialize: path of the config file
WAIT_MODES = ("sleep", "busy")  # busy: spin (a CPU-bound 1998 card driver without interrupts)
OVER_MS = 1000.0  # S2 counts runs over 1 s

# Every function of PKCS#11 v2.40 (OASIS, "PKCS #11 Cryptographic Token Interface Base
# Specification Version 2.40", section 5), in the specification's order.
PKCS11_FUNCTIONS: tuple[str, ...] = (
    "C_Initialize",
    "C_Finalize",
    "C_GetInfo",
    "C_GetFunctionList",
    "C_GetSlotList",
    "C_GetSlotInfo",
    "C_GetTokenInfo",
    "C_WaitForSlotEvent",
    "C_GetMechanismList",
    "C_GetMechanismInfo",
    "C_InitToken",
    "C_InitPIN",
    "C_SetPIN",
    "C_OpenSession",
    "C_CloseSession",
    "C_CloseAllSessions",
    "C_GetSessionInfo",
    "C_GetOperationState",
    "C_SetOperationState",
    "C_Login",
    "C_Logout",
    "C_CreateObject",
    "C_CopyObject",
    "C_DestroyObject",
    "C_GetObjectSize",
    "C_GetAttributeValue",
    "C_SetAttributeValue",
    "C_FindObjectsInit",
    "C_FindObjects",
    "C_FindObjectsFinal",
    "C_EncryptInit",
    "C_Encrypt",
    "C_EncryptUpdate",
    "C_EncryptFinal",
    "C_DecryptInit",
    "C_Decrypt",
    "C_DecryptUpdate",
    "C_DecryptFinal",
    "C_DigestInit",
    "C_Digest",
    "C_DigestUpdate",
    "C_DigestKey",
    "C_DigestFinal",
    "C_SignInit",
    "C_Sign",
    "C_SignUpdate",
    "C_SignFinal",
    "C_SignRecoverInit",
    "C_SignRecover",
    "C_VerifyInit",
    "C_Verify",
    "C_VerifyUpdate",
    "C_VerifyFinal",
    "C_VerifyRecoverInit",
    "C_VerifyRecover",
    "C_DigestEncryptUpdate",
    "C_DecryptDigestUpdate",
    "C_SignEncryptUpdate",
    "C_DecryptVerifyUpdate",
    "C_GenerateKey",
    "C_GenerateKeyPair",
    "C_WrapKey",
    "C_UnwrapKey",
    "C_DeriveKey",
    "C_SeedRandom",
    "C_GenerateRandom",
    "C_GetFunctionStatus",
    "C_CancelFunction",
)
_FUNCTION_SET = frozenset(PKCS11_FUNCTIONS)

# dist -> its parameters in the shim's order
DIST_PARAMS: dict[str, tuple[str, ...]] = {
    "fixed": ("value",),
    "normal": ("mean", "sd"),
    "lognormal": ("median", "sigma"),
    "empirical": ("samples",),
}

# Study S2's two token modes: the calls each run makes.
SIGN_ONLY_CALLS = ("C_SignInit", "C_Sign")
TOTAL_CALLS = (
    "C_OpenSession",
    "C_Login",
    "C_FindObjectsInit",
    "C_FindObjects",
    "C_FindObjectsFinal",
    "C_SignInit",
    "C_Sign",
)
TOTAL_OPTIONAL_CALLS = ("C_Logout", "C_CloseSession")  # counted only when the profile sets them

_PROFILE_KEYS = {"description", "wait", "source", "notes", "algorithm", "calibrated_to"}


# the delay sampler's two constants (native/se_shim/profile.h: SE_REDRAW_LIMIT, SE_DELAY_MAX_MS)
REDRAW_LIMIT = 64  # draws of a truncated normal per delay before it is 0
DELAY_MAX_MS = 3_600_000.0  # every delay is clamped into [0, one hour]


class ProfileError(InputError):
    """A secure-element profile that cannot be used; the message names profile, function, field."""


# --- distributions ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Tail:
    p: float
    dist: Dist
    source: str = ""


@dataclass(frozen=True)
class Dist:
    """One delay distribution (ms). ``params`` are in the shim's order (see DIST_PARAMS); an
    empirical distribution's params are its samples."""

    kind: str
    params: tuple[float, ...]
    source: str = ""
    tail: Tail | None = None

    # body ------------------------------------------------------------------------------------------
    def sample_body_ms(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` draws of the body (ms), before the clamp (see the module's sampling semantics)."""
        k, p = self.kind, self.params
        if k == "fixed" or (k in ("normal", "lognormal") and p[1] <= 0):
            return np.full(n, float(p[0]))
        if k == "normal":
            x = p[0] + p[1] * rng.standard_normal(n)
            bad = np.flatnonzero(x < 0.0)
            for _ in range(REDRAW_LIMIT - 1):  # each delay gets at most REDRAW_LIMIT draws
                if bad.size == 0:
                    break
                x[bad] = p[0] + p[1] * rng.standard_normal(bad.size)
                bad = bad[x[bad] < 0.0]
            x[bad] = 0.0
            return x
        if k == "lognormal":
            return p[0] * np.exp(p[1] * rng.standard_normal(n))
        if k == "empirical":
            return np.asarray(p, dtype=float)[rng.integers(0, len(p), n)]
        raise AssertionError(k)

    @functools.cached_property
    def body_rv(self) -> Any:  # a frozen scipy.stats distribution (scipy ships no types for it)
        """The body as a frozen scipy.stats distribution: a point mass for ``fixed`` (and a spread of
        0), ``truncnorm`` on [0, inf) for ``normal``, ``lognorm`` for ``lognormal``, the samples'
        frequencies for ``empirical``."""
        from scipy import stats as sps  # reason: scipy.stats takes ~1 s to import, loading profiles must not

        k, p = self.kind, self.params
        if k == "fixed" or (k in ("normal", "lognormal") and p[1] == 0):
            return sps.rv_discrete(values=([p[0]], [1.0]))
        if k == "normal":  # redrawing negative draws = the normal truncated at 0
            return sps.truncnorm((0.0 - p[0]) / p[1], np.inf, loc=p[0], scale=p[1])
        if k == "lognormal":
            return sps.lognorm(p[1], scale=p[0])
        if k == "empirical":
            values, counts = np.unique(np.asarray(p, dtype=float), return_counts=True)
            return sps.rv_discrete(values=(values, counts / counts.sum()))
        raise AssertionError(k)

    @property
    def body_is_discrete(self) -> bool:
        return self.kind in ("fixed", "empirical") or self.params[1:2] == (0.0,)

    @overload
    def cdf_body(self, x: float, left: bool = False) -> float: ...
    @overload
    def cdf_body(self, x: np.ndarray, left: bool = False) -> np.ndarray: ...
    def cdf_body(self, x: float | np.ndarray, left: bool = False) -> float | np.ndarray:
        """P(X <= x) of the body (P(X < x) with left=True); vectorised over an array ``x``."""
        rv = self.body_rv
        f = rv.cdf(x)
        if left and self.body_is_discrete:  # the left limit: without the point mass at x
            f = f - rv.pmf(x)
        return float(f) if np.ndim(f) == 0 else f

    def ppf_body(self, q: float) -> float:
        q = min(max(q, 0.0), 1.0)
        if self.body_is_discrete and q <= 0.0:  # scipy puts a discrete ppf(0) one below the support
            return float(min(self.params) if self.kind == "empirical" else self.params[0])
        return float(self.body_rv.ppf(q))

    def mean_body(self) -> float:
        return float(self.body_rv.mean())

    # with the tail ---------------------------------------------------------------------------------
    def sample_ms(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` delays (ms): body or tail per draw, clamped into [0, DELAY_MAX_MS] — the one
        sampler; native/se_shim/profile.c's se_draw_delay_ms is the same definition."""
        x = self.sample_body_ms(rng, n)
        if self.tail is not None and self.tail.p > 0:
            t = np.flatnonzero(rng.random(n) < self.tail.p)
            if t.size:
                x[t] = self.tail.dist.sample_body_ms(rng, t.size)
        clamped: np.ndarray = np.clip(x, 0.0, DELAY_MAX_MS)
        return clamped

    def sample(self, rng: np.random.Generator | random.Random) -> float:
        """One delay (ms) by ``sample_ms``; a ``random.Random`` seeds the Generator it draws from."""
        if isinstance(rng, random.Random):
            rng = np.random.default_rng(rng.getrandbits(128))
        return float(self.sample_ms(rng, 1)[0])

    @property
    def has_atoms(self) -> bool:
        """True when the CDF jumps (a fixed or empirical body or tail)."""
        return self.body_is_discrete or (self.tail is not None and self.tail.p > 0 and self.tail.dist.body_is_discrete)

    @overload
    def cdf(self, x: float, left: bool = False) -> float: ...
    @overload
    def cdf(self, x: np.ndarray, left: bool = False) -> np.ndarray: ...
    def cdf(self, x: float | np.ndarray, left: bool = False) -> float | np.ndarray:
        """P(X <= x) of body and tail (P(X < x) with left=True); vectorised over an array ``x``."""
        if self.tail is None:
            return self.cdf_body(x, left)
        p = self.tail.p
        return (1 - p) * self.cdf_body(x, left) + p * self.tail.dist.cdf_body(x, left)

    def ppf(self, q: float) -> float:
        """Inverse CDF (smallest x with cdf(x) >= q): scipy's ppf of the body, or, for a body with a
        tail (a mixture, which scipy has no frozen form for when a part is a point mass), bisection
        on the mixture's CDF, which lands on the jump when q falls inside one."""
        if self.tail is None or self.tail.p == 0:
            return self.ppf_body(q)
        lo, hi = 0.0, max(self.ppf_body(0.999999), self.tail.dist.ppf_body(0.999999), 1.0)
        while self.cdf(hi) < q and hi < 1e12:
            hi *= 2
        for _ in range(200):
            mid = (lo + hi) / 2
            if self.cdf(mid) >= q:
                hi = mid
            else:
                lo = mid
        return hi

    def mean(self) -> float:
        if self.tail is None:
            return self.mean_body()
        p = self.tail.p
        return (1 - p) * self.mean_body() + p * self.tail.dist.mean_body()

    def shim_spec(self) -> str:
        """``lognormal 475.1 0.019``: the body as the shim reads it."""
        return " ".join([self.kind, *(_num(v) for v in self.params)])


def _num(x: float) -> str:
    """Shortest text that reads back as the same number (120.0 -> '120', 0.019 -> '0.019')."""
    x = float(x)
    if x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return repr(x)


# --- profiles --------------------------------------------------------------------------------------
@dataclass
class Profile:
    name: str
    description: str
    wait: str
    source: str
    functions: dict[str, Dist] = field(default_factory=dict)
    notes: str = ""
    algorithm: str = ""
    calibrated_to: dict[str, Any] = field(default_factory=dict)

    def dist(self, fn: str) -> Dist | None:
        if fn not in _FUNCTION_SET:
            raise ProfileError(f"{fn!r} is not a PKCS#11 v2.40 function name")
        return self.functions.get(fn)

    def sample(self, fn: str, rng: np.random.Generator | random.Random) -> float:
        """One delay (ms) for a call of ``fn``: body or tail; 0 for a function the profile leaves alone."""
        d = self.dist(fn)
        return 0.0 if d is None else d.sample(rng)

    def sample_ms(self, fn: str, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` delays (ms) for calls of ``fn`` (Dist.sample_ms); zeros for a function the profile leaves alone."""
        d = self.dist(fn)
        return np.zeros(n) if d is None else d.sample_ms(rng, n)

    def sampler(self, fn: str) -> Callable[[np.random.Generator | random.Random], float]:
        """A function rng -> delay (ms) for ``fn``."""
        d = self.dist(fn)
        if d is None:
            return lambda rng: 0.0
        return d.sample

    def cdf(self, fn: str, x: float) -> float:
        d = self.dist(fn)
        return (1.0 if x >= 0 else 0.0) if d is None else d.cdf(x)

    def ppf(self, fn: str, q: float) -> float:
        d = self.dist(fn)
        return 0.0 if d is None else d.ppf(q)

    def distribution_samples(self, fn: str, n: int, seed: int = 0) -> list[float]:
        """``n`` delays for ``fn`` from a seeded generator (for KS tests against the shim's log)."""
        out: list[float] = self.sample_ms(fn, np.random.default_rng(seed), n).tolist()
        return out


def _where(profile: str, fn: str | None, fld: str | None, origin: str) -> str:
    parts = [f"secure-element profile {profile!r}"]
    if fn:
        parts.append(fn)
    if fld:
        parts.append(f"field {fld!r}")
    return ", ".join(parts) + (f" ({origin})" if origin else "")


def _number(v: object, profile: str, fn: str | None, fld: str | None, origin: str, *, positive: bool = False) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise ProfileError(f"{_where(profile, fn, fld, origin)}: must be a number, got {v!r}")
    x = float(v)
    if not math.isfinite(x):
        raise ProfileError(f"{_where(profile, fn, fld, origin)}: must be finite, got {x}")
    if x < 0 or (positive and x == 0):
        need = "> 0" if positive else ">= 0"
        raise ProfileError(f"{_where(profile, fn, fld, origin)}: must be {need} (milliseconds or a spread), got {x:g}")
    return x


def _parse_dist(tbl: object, profile: str, fn: str, prefix: str, origin: str, allow_tail: bool) -> Dist:
    if not isinstance(tbl, Mapping):
        raise ProfileError(
            f"{_where(profile, fn, prefix.rstrip('.') or None, origin)}: must be a table like "
            f"{{dist = \"fixed\", value = 5}}, got {tbl!r}"
        )
    kind = tbl.get("dist")
    if kind is None:
        raise ProfileError(f"{_where(profile, fn, prefix + 'dist', origin)}: missing; one of {', '.join(DIST_PARAMS)}")
    if kind not in DIST_PARAMS:
        raise ProfileError(
            f"{_where(profile, fn, prefix + 'dist', origin)}: unknown distribution {kind!r}; "
            f"known: {', '.join(DIST_PARAMS)}"
        )
    names = DIST_PARAMS[kind]
    allowed = (
        {"dist", "source", "note", *names} | ({"tail"} if allow_tail else set()) | ({"p"} if not allow_tail else set())
    )
    unknown = sorted(set(tbl) - allowed)
    if unknown:
        raise ProfileError(
            f"{_where(profile, fn, prefix + unknown[0], origin)}: unknown field for a {kind} "
            f"distribution; allowed: {', '.join(sorted(allowed))}"
        )
    for nm in names:
        if nm not in tbl:
            raise ProfileError(
                f"{_where(profile, fn, prefix + nm, origin)}: missing (a {kind} distribution needs {', '.join(names)})"
            )
    if kind == "empirical":
        samples = tbl["samples"]
        if not isinstance(samples, list) or not samples:
            raise ProfileError(
                f"{_where(profile, fn, prefix + 'samples', origin)}: must be a non-empty list "
                f"of milliseconds, got {samples!r}"
            )
        params = tuple(_number(v, profile, fn, f"{prefix}samples[{i}]", origin) for i, v in enumerate(samples))
    else:
        params = tuple(_number(tbl[nm], profile, fn, prefix + nm, origin, positive=(nm == "median")) for nm in names)
    source = tbl.get("source", "")
    if not isinstance(source, str):
        raise ProfileError(f"{_where(profile, fn, prefix + 'source', origin)}: must be a string")
    tail = None
    if allow_tail and "tail" in tbl:
        t = tbl["tail"]
        if not isinstance(t, Mapping):
            raise ProfileError(
                f"{_where(profile, fn, prefix + 'tail', origin)}: must be a table {{p = 0.04, dist = ..., ...}}"
            )
        if "p" not in t:
            raise ProfileError(
                f"{_where(profile, fn, prefix + 'tail.p', origin)}: missing (the probability of a tail draw)"
            )
        p = _number(t["p"], profile, fn, prefix + "tail.p", origin)
        if p > 1:
            raise ProfileError(f"{_where(profile, fn, prefix + 'tail.p', origin)}: probability {p:g} is outside [0, 1]")
        tdist = _parse_dist(t, profile, fn, prefix + "tail.", origin, allow_tail=False)
        tail = Tail(p=p, dist=Dist(tdist.kind, tdist.params, tdist.source), source=tdist.source)
    return Dist(kind, params, source, tail)


def parse_profile(name: str, tbl: object, origin: str = "") -> Profile:
    if not isinstance(tbl, Mapping):
        raise ProfileError(f"{_where(name, None, None, origin)}: must be a table")
    for key in tbl:
        if key.startswith("C_"):
            if key not in _FUNCTION_SET:
                raise ProfileError(f"{_where(name, key, None, origin)}: not a PKCS#11 v2.40 function name")
        elif key not in _PROFILE_KEYS:
            raise ProfileError(
                f"{_where(name, None, key, origin)}: unknown field; allowed: "
                f"{', '.join(sorted(_PROFILE_KEYS))} and PKCS#11 function names (C_...)"
            )
    for key in ("description", "source"):
        v = tbl.get(key)
        if not isinstance(v, str) or not v.strip():
            raise ProfileError(
                f"{_where(name, None, key, origin)}: missing or empty (every profile says "
                f"what it is and where its figures come from)"
            )
    wait = tbl.get("wait")
    if wait not in WAIT_MODES:
        raise ProfileError(
            f"{_where(name, None, 'wait', origin)}: must be one of {', '.join(WAIT_MODES)}, got {wait!r}"
        )
    for key in ("notes", "algorithm"):
        if key in tbl and not isinstance(tbl[key], str):
            raise ProfileError(f"{_where(name, None, key, origin)}: must be a string")
    cal = tbl.get("calibrated_to", {})
    if not isinstance(cal, Mapping):
        raise ProfileError(f"{_where(name, None, 'calibrated_to', origin)}: must be a table")
    functions = {
        key: _parse_dist(v, name, key, "", origin, allow_tail=True) for key, v in tbl.items() if key.startswith("C_")
    }
    return Profile(
        name=name,
        description=tbl["description"],
        wait=wait,
        source=tbl["source"],
        functions=functions,
        notes=tbl.get("notes", ""),
        algorithm=tbl.get("algorithm", ""),
        calibrated_to=dict(cal),
    )


def load_profiles(path: str | Path | None = None) -> dict[str, Profile]:
    """All profiles of ``path`` (default: the built-in data/secure_elements.toml), validated."""
    if path is None:
        origin = "secperf/data/secure_elements.toml"
        text = resources.files("secperf.data").joinpath("secure_elements.toml").read_text(encoding="utf-8")
    else:
        origin = str(path)

        try:
            text = read_text_input(path, "profiles", f"cannot read secure-element profiles {path}")
        except ProfileError:
            raise
        except Exception as exc:  # InputError: said as a profile error
            raise ProfileError(str(exc)) from None

    try:
        doc = parse_toml(text, origin)
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{origin}: invalid TOML: {exc}") from None
    unknown = sorted(set(doc) - {"profiles"})
    if unknown:
        raise ProfileError(f"{origin}: unknown top-level table {unknown[0]!r}; profiles live under [profiles.NAME]")
    profiles = doc.get("profiles")
    if not isinstance(profiles, Mapping) or not profiles:
        raise ProfileError(f"{origin}: no [profiles.NAME] tables")
    return {name: parse_profile(name, tbl, origin) for name, tbl in profiles.items()}


def get_profile(name: str, path: str | Path | None = None) -> Profile:
    profiles = load_profiles(path)
    if name not in profiles:
        raise ProfileError(f"unknown secure-element profile {name!r}; known: {', '.join(profiles)}")
    return profiles[name]


def profiles_with(path: str | Path | None = None) -> dict[str, Profile]:
    """The built-in profiles and those of ``path`` (a TOML file of profiles; its own win on a shared name)."""
    return {**load_profiles(), **(load_profiles(path) if path else {})}


def profile_of_key(key: str) -> Profile | None:
    """The profile a client key names (`se:PROFILE[:cold]`), None for a software key: for a caller
    that holds a key as text (the model takes the object: model/predict.plan's `se`)."""
    return get_profile(key.split(":")[1]) if key.startswith("se:") else None


# --- the shim's config ---------------------------------------------------------------------------
def shim_config_text(profile: Profile, module_path: str | Path, log_path: str | Path, seed: int) -> str:
    """The plain-text config the native shim reads (one ``key = value`` per line)."""
    for label, v in (("module", module_path), ("log", log_path)):
        if "\n" in str(v):
            raise ProfileError(f"shim config: the {label} path must not contain a newline")
    lines = [f"module = {module_path}", f"log = {log_path}", f"seed = {int(seed)}", f"wait = {profile.wait}"]
    for fn, d in profile.functions.items():
        lines.append(f"{fn} = {d.shim_spec()}")
        if d.tail is not None:
            lines.append(f"{fn}.tail = {_num(d.tail.p)} {d.tail.dist.shim_spec()}")
    return "\n".join(lines) + "\n"


def write_shim_config(
    profile: Profile, module_path: str | Path, log_path: str | Path, seed: int, path: str | Path
) -> Path:
    """Write the shim's config to ``path``; point the shim at it with ``{SHIM_ENV: str(path)}``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(shim_config_text(profile, module_path, log_path, seed), encoding="utf-8")
    return path


# --- Monte Carlo of S2's token modes -------------------------------------------------------------
