#!/usr/bin/env python3
"""Each library backend against that library's own benchmark tool, side by side in one run.

Cases: RSA-2048 and ECDSA P-256, sign and verify. Target: ratio (secperf's time per operation /
the tool's) within 0.95-1.05. Rounds alternate the tool and secperf (the order flips every
round) so the machine's load hits both alike; the gate is the ratio of the best figures over the
rounds (the least-disturbed run of each, as "fastest of a few attempts"); the median of the
per-round ratios is printed beside it.

- wolfCrypt: `wolfcrypt-benchmark -rsa_sign -rsa -ecc -p256` (wolfcrypt/benchmark/benchmark.c,
  built by scripts/bootstrap from Debian's wolfssl source package against the installed
  libwolfssl). Its figure: ops/s = operations / wall time of a >= 1 s loop. Its operations sign a
  prepared digest (wc_RsaSSL_Sign of a short string, wc_ecc_sign_hash of a 32-byte digest), so
  secperf's rows run with --prehashed (same calls: wc_RsaSSL_Sign/Verify, wc_ecc_sign/verify_hash).
- Mbed TLS: `mbedtls-benchmark rsa` and `mbedtls-benchmark ecdsa secp256r1` (programs/test/
  benchmark.c, from Debian's mbedtls source package, against the installed libmbedcrypto). Its
  figure: operations in a 3 s alarm window / 3. ECDSA: mbedtls_ecdsa_write_signature/read_signature
  of a prepared digest (secperf --prehashed, same calls). RSA: the program times the raw
  primitives mbedtls_rsa_private and mbedtls_rsa_public; Mbed TLS's PKCS#1 v1.5 signature (what
  secperf times) is the private operation followed by a public-key check of the result (rsa.c,
  against Lenstra's fault attack), so the reference for sign is 1 / (1/private + 1/public) from
  the program's own two figures, and for verify its public figure.
- JVM (jce, bouncycastle): secperf's JVM rows (JMH measurement iterations with per-iteration
  clocks in secperf's Bench) against secperf.jmh.Reference, a plain JMH benchmark written
  independently of secperf's Ops (JCA default providers or Bouncy Castle; SHA256withRSA /
  SHA256withECDSA over a 32-byte message, hashing included) run through JMH's own command line
  (org.openjdk.jmh.Main). Both with the same forks, warm-up and 1 s iterations. Figures: JMH's
  avgt score (mean of the iterations' averages) and secperf's mean of its samples (the same
  definition); best = the fastest iteration. Fork stability: each fork's mean, and the spread
  (max - min) / median over forks, for both.

Usage: python benchmarks/libraries.py [--rounds 3] [--jvm-rounds 2] [--forks 2] [--libraries ...] [--nice N] [--json OUT]
Exit status: 0 when every library's ratio of bests is inside the band, 1 otherwise (a missing
reference tool counts as a failure: the target cannot be checked).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from secperf.core.errors import SetupError
from secperf.inputs.algorithms import for_libraries, select
from secperf.measure import backends
from secperf.measure.crypto import CryptoParams, measure_row

CASES = (("rsa-2048", "sign"), ("rsa-2048", "verify"), ("ecdsa-p256", "sign"), ("ecdsa-p256", "verify"))
BAND = (0.95, 1.05)
LIBBENCH = Path(sys.prefix, "share", "secperf", "libbench")
NATIVE_TOOLS = {
    "wolfcrypt": ("SECPERF_WOLFCRYPT_BENCH", "wolfcrypt-benchmark"),
    "mbedtls": ("SECPERF_MBEDTLS_BENCH", "mbedtls-benchmark"),
}


def reference_tool(lib: str) -> Path | None:
    env, name = NATIVE_TOOLS[lib]
    p = Path(os.environ.get(env) or LIBBENCH / name)
    return p if p.is_file() and os.access(p, os.X_OK) else None


def _run(argv: list[str], timeout: float = 600) -> str:
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"{argv[0]} exited {r.returncode}: {r.stderr[-500:] or r.stdout[-500:]}")
    return r.stdout


def cpu_build(tool: Path) -> Path | None:
    """The CPU-clock build of a tool (scripts/bootstrap builds NAME-cpu beside NAME)."""
    p = tool.with_name(tool.name + "-cpu")
    return p if p.is_file() and os.access(p, os.X_OK) else None


def wolfcrypt_reference(tool: Path) -> dict:
    """ops/s per case from wolfCrypt's benchmark (its lines: 'RSA 2048 sign 500 ops took ... 435.8 ops/sec')."""
    out = _run([str(tool), "-rsa_sign", "-rsa", "-ecc", "-p256"])
    got = {}
    for line in out.splitlines():
        m = re.match(r"\s*RSA\s+2048\s+(sign|verify)\s.*?([\d.]+)\s+ops/sec", line)
        if m:
            got[("rsa-2048", m.group(1))] = float(m.group(2))
        m = re.match(r"\s*ECDSA\s+\[\s*SECP256R1\]\s+256\s+(sign|verify)\s.*?([\d.]+)\s+ops/sec", line)
        if m:
            got[("ecdsa-p256", m.group(1))] = float(m.group(2))
    return got


def mbedtls_reference(tool: Path) -> dict:
    """ops/s per case from Mbed TLS's benchmark ('RSA-2048 : 363 private/s', 'ECDSA-secp256r1 : 1920 sign/s')."""
    raw = {}
    pattern = re.compile(r"(RSA-2048|ECDSA-secp256r1)\s*:\s*(\d+)\s+(public|private|sign|verify)/s")
    for args, want in ((["rsa"], 2), (["ecdsa", "secp256r1"], 2)):
        # `rsa` goes on to RSA-4096 (key generation and two more 3 s windows): stop the program
        # (our child, by its pid) once its RSA-2048 figures are out
        with subprocess.Popen([str(tool)] + args, stdout=subprocess.PIPE, text=True) as proc:
            found = 0
            try:
                for line in proc.stdout:
                    for m in pattern.finditer(line):
                        raw[(m.group(1), m.group(3))] = float(m.group(2))
                        found += 1
                    if found >= want:
                        break
            finally:
                if proc.poll() is None:
                    proc.kill()
                proc.wait(timeout=60)
    got = {}
    if ("RSA-2048", "private") in raw and ("RSA-2048", "public") in raw:
        priv, pub = raw[("RSA-2048", "private")], raw[("RSA-2048", "public")]
        got[("rsa-2048", "sign")] = 1 / (1 / priv + 1 / pub)  # PKCS#1 v1.5 sign = private + public check
        got[("rsa-2048", "verify")] = pub
    for op in ("sign", "verify"):
        if ("ECDSA-secp256r1", op) in raw:
            got[("ecdsa-p256", op)] = raw[("ECDSA-secp256r1", op)]
    return got


def secperf_series(lib: str, alg: str, op: str, p: CryptoParams) -> dict | None:
    s, _ = measure_row(for_libraries(select([alg], [op]), [lib])[0], p)
    return s if s["status"] == "ok" else None


def native_library(lib: str, rounds: int) -> tuple[list[dict], bool]:
    tool = reference_tool(lib)
    if tool is None:
        env, name = NATIVE_TOOLS[lib]
        print(
            f"{lib:13} reference benchmark missing ({LIBBENCH / name}): run scripts/bootstrap "
            f"(builds it from Debian's source package) or set {env}"
        )
        return [], False
    ref_fn = wolfcrypt_reference if lib == "wolfcrypt" else mbedtls_reference
    cpu_tool = cpu_build(tool)
    # secperf's samples: ~ the tool's window per case (wolfCrypt 1 s, Mbed TLS 3 s)
    p = CryptoParams(
        n=10, warmup=1, duration_s=120, prehashed=True, min_sample_us=100_000 if lib == "wolfcrypt" else 300_000
    )
    figs: dict = {k: {c: [] for c in CASES} for k in ("tool", "tool_cpu", "ours", "ours_cpu", "share")}
    for r in range(rounds):

        def tool_round():
            for c, v in ref_fn(tool).items():
                figs["tool"][c].append(v)
            if cpu_tool:
                for c, v in ref_fn(cpu_tool).items():
                    figs["tool_cpu"][c].append(v)

        def secperf_round():
            for alg, op in CASES:
                s = secperf_series(lib, alg, op, p)
                if s:
                    d = s["derived"]
                    figs["ours"][(alg, op)].append(d["ops_per_s"])
                    figs["ours_cpu"][(alg, op)].append(d["cpu_ops_per_s"])
                    figs["share"][(alg, op)].append(d["ops_per_s"] / d["cpu_ops_per_s"])

        for step in (tool_round, secperf_round) if r % 2 == 0 else (secperf_round, tool_round):
            step()
    return _report(lib, figs, rate=True)


BUSY = 0.9  # secperf's rows got less than this share of a CPU: wall times include waiting


def _compare(ours: list, tool: list, rate: bool) -> tuple[float, float] | None:
    """(ratio of bests, median of per-round ratios) as secperf's time / the tool's time."""
    if not ours or not tool:
        return None
    if rate:  # ops/s per round: best is the highest; then the median of the per-round ratios
        return max(tool) / max(ours), statistics.median(t / o for t, o in zip(tool, ours))
    # µs per iteration (JVM): the fastest iterations; then the ratio of means (JMH's score is the mean)
    return min(ours) / min(tool), statistics.fmean(ours) / statistics.fmean(tool)


def _report(lib: str, figs: dict, rate: bool, forks: dict | None = None) -> tuple[list[dict], bool]:
    """One line per case: wall ratio (the tools' own figures), CPU ratio (their CPU-clock figures),
    the CPU share secperf's rows had; gate on wall, or on CPU where the machine was busy."""
    out, ok = [], True
    for c in CASES:
        alg, op = c
        wall = _compare(figs["ours"][c], figs["tool"][c], rate)
        cpu = _compare(figs["ours_cpu"][c], figs["tool_cpu"][c], rate)
        share = min(figs["share"][c]) if figs["share"][c] else None
        if wall is None:
            print(
                f"{lib:13} {alg + ' ' + op:18} failed (tool {len(figs['tool'][c])}, secperf {len(figs['ours'][c])} rounds)"
            )
            ok = False
            continue
        busy = share is not None and share < BUSY
        gated, basis = (cpu[0], "cpu") if busy and cpu else (wall[0], "wall")
        inside = BAND[0] <= gated <= BAND[1]
        ok &= inside
        fmt = lambda xs: ", ".join(f"{x:.0f}" for x in xs)
        second = "median" if rate else "means"
        line = (
            f"{lib:13} {alg + ' ' + op:18} wall {wall[0]:6.3f} ({second} {wall[1]:.3f})  cpu "
            + (f"{cpu[0]:6.3f} ({second} {cpu[1]:.3f})" if cpu else "   n/a              ")
            + f"  share {share:.0%}  gate {basis} {gated:.3f}{'' if inside else ' !'}"
        )
        unit = "ops/s" if rate else "µs"
        line += (
            f"   [{unit}: tool {fmt(figs['tool'][c])}, secperf {fmt(figs['ours'][c])}; CPU: tool "
            f"{fmt(figs['tool_cpu'][c])}, secperf {fmt(figs['ours_cpu'][c])}]"
        )
        print(line)
        row = {
            "library": lib,
            "alg": alg,
            "op": op,
            "figures": {k: v[c] for k, v in figs.items()},
            "unit": unit,
            "ratio_wall_best": wall[0],
            "ratio_wall_median": wall[1],
            "ratio_cpu_best": cpu[0] if cpu else None,
            "ratio_cpu_median": cpu[1] if cpu else None,
            "min_cpu_share": share,
            "gate": basis,
            "inside": inside,
        }
        if forks:
            fs, ft = forks["ours"][c], forks["tool"][c]
            print(
                f"{'':13} {'':18} fork means (wall): secperf "
                + ", ".join(f"{x:.1f}" for x in fs)
                + f" µs (spread {_spread(fs):.1%}); JMH "
                + ", ".join(f"{x:.1f}" for x in ft)
                + f" µs (spread {_spread(ft):.1%})"
            )
            fcs, fct = forks["ours_cpu"][c], forks["tool_cpu"][c]
            if fcs and fct:
                print(
                    f"{'':13} {'':18} fork means (CPU):  secperf "
                    + ", ".join(f"{x:.1f}" for x in fcs)
                    + f" µs (spread {_spread(fcs):.1%}); JMH "
                    + ", ".join(f"{x:.1f}" for x in fct)
                    + f" µs (spread {_spread(fct):.1%})"
                )
            row.update(
                fork_means_secperf_us=fs,
                fork_means_reference_us=ft,
                fork_spread_secperf=_spread(fs),
                fork_spread_reference=_spread(ft),
                fork_means_secperf_cpu_us=fcs,
                fork_means_reference_cpu_us=fct,
            )
        out.append(row)
    return out, ok


def jmh_reference(lib: str, forks: int, warmup_s: int, iterations: int) -> dict:
    """JMH's own command line on secperf.jmh.Reference; per case: score (µs) and rawData per fork."""
    jar = backends.jmh_jar()
    cp = f"{jar}{os.pathsep}{jar.parent / 'lib'}/*"
    with tempfile.TemporaryDirectory(prefix="secperf-jmh-ref-") as d:
        rff = Path(d, "ref.json")
        # -Djmh.ignoreLock is not used: another JMH run (a secperf JVM row) holds the lock; wait for it
        _wait_for_jmh_lock()
        _run(
            [
                "java",
                "-cp",
                cp,
                "org.openjdk.jmh.Main",
                r"secperf\.jmh\.Reference\.(sign|verify)$",
                "-p",
                "alg=" + ",".join(sorted({a for a, _ in CASES})),
                "-p",
                f"provider={lib}",
                "-f",
                str(forks),
                "-wi",
                str(warmup_s),
                "-w",
                "1s",
                "-i",
                str(iterations),
                "-r",
                "1s",
                "-tu",
                "us",
                "-bm",
                "avgt",
                "-prof",
                "secperf.jmh.CpuProfiler",
                "-rf",
                "json",
                "-rff",
                str(rff),
            ],
            timeout=3600,
        )
        res = json.loads(rff.read_text())
    got = {}
    for r in res:
        op = r["benchmark"].rsplit(".", 1)[1]
        cpu = r.get("secondaryMetrics", {}).get("cpu.us/op", {})
        got[(r["params"]["alg"], op)] = {
            "score": r["primaryMetric"]["score"],
            "forks": r["primaryMetric"]["rawData"],
            "cpu_forks": cpu.get("rawData") or [],
        }
    return got


def _wait_for_jmh_lock(limit_s: float = 600) -> None:
    """JMH refuses to start while another JMH run holds its lock file; wait until it is free."""
    import fcntl

    lock = Path(tempfile.gettempdir(), "jmh.lock")
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        try:
            with open(lock, "a") as f:
                fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.lockf(f, fcntl.LOCK_UN)
                return
        except OSError:
            time.sleep(1)


def _spread(per_fork: list[float]) -> float:
    return (max(per_fork) - min(per_fork)) / statistics.median(per_fork) if len(per_fork) > 1 else 0.0


def jvm_library(lib: str, rounds: int, forks_n: int, warmup_s: int, iterations: int) -> tuple[list[dict], bool]:
    try:
        backends.command(lib)
    except SetupError as exc:
        print(f"{lib:13} unavailable: {exc}")
        return [], False
    p = CryptoParams(
        n=forks_n * iterations,
        warmup=1,
        duration_s=forks_n * iterations * 3,
        min_sample_us=1000,
        jmh_forks=forks_n,
        jmh_iteration_ms=1000,
        jmh_warmup_ms=warmup_s * 1000,
    )
    figs: dict = {k: {c: [] for c in CASES} for k in ("tool", "tool_cpu", "ours", "ours_cpu", "share")}
    forks: dict = {k: {c: [] for c in CASES} for k in ("tool", "tool_cpu", "ours", "ours_cpu")}
    detail = None
    for r in range(rounds):

        def ref_round():
            for c, v in jmh_reference(lib, forks_n, warmup_s, iterations).items():
                if c not in figs["tool"]:
                    continue
                figs["tool"][c] += [x for f in v["forks"] for x in f]  # every iteration, µs
                figs["tool_cpu"][c] += [x for f in v["cpu_forks"] for x in f]
                forks["tool"][c] += [statistics.fmean(f) for f in v["forks"]]
                forks["tool_cpu"][c] += [statistics.fmean(f) for f in v["cpu_forks"]]

        def secperf_round():
            nonlocal detail
            for alg, op in CASES:
                s = secperf_series(lib, alg, op, p)
                if not s:
                    continue
                c = (alg, op)
                figs["ours"][c] += s["values_us"]
                figs["ours_cpu"][c] += s["cpu_values_us"]
                figs["share"][c].append(statistics.fmean(s["cpu_values_us"]) / statistics.fmean(s["values_us"]))
                by_fork: dict = {}
                for smp, w, cp in zip(s["samples"], s["values_us"], s["cpu_values_us"]):
                    by_fork.setdefault(smp.get("fork", 0), []).append((w, cp))
                forks["ours"][c] += [statistics.fmean(w for w, _ in f) for f in by_fork.values()]
                forks["ours_cpu"][c] += [statistics.fmean(cp for _, cp in f) for f in by_fork.values()]
                detail = s["timer"].get("detail")

        for step in (ref_round, secperf_round) if r % 2 == 0 else (secperf_round, ref_round):
            step()
    # per-iteration values: best = fastest iteration; "median" = median iteration on each side
    out, ok = _report(lib, figs, rate=False, forks=forks)
    if detail:
        print(f"{'':13} secperf's last operation: {detail}")
    return out, ok


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="rounds for wolfcrypt and mbedtls")
    ap.add_argument("--jvm-rounds", type=int, default=2, help="rounds for jce and bouncycastle")
    ap.add_argument("--forks", type=int, default=2, help="forked JVMs per JVM row (both sides)")
    ap.add_argument("--warmup-s", type=int, default=3, help="JMH warm-up: this many 1 s iterations per fork")
    ap.add_argument("--iterations", type=int, default=5, help="JMH measurement iterations (1 s) per fork")
    ap.add_argument("--libraries", default="wolfcrypt,mbedtls,jce,bouncycastle")
    ap.add_argument(
        "--nice",
        type=int,
        default=0,
        help="scheduling priority for this bench and everything it starts (negative needs root): on a "
        "machine shared with other work, e.g. -10 keeps both sides' windows less disturbed",
    )
    ap.add_argument("--json")
    a = ap.parse_args()
    if a.nice:
        os.setpriority(os.PRIO_PROCESS, 0, a.nice)  # inherited by the tools, secperf's tools and the JVMs
    out, ok = [], True
    print(
        "ratio = secperf's time per operation / the tool's: of the best rounds (native: median of the per-round "
        "ratios; JVM: ratio of means) by wall clock and by CPU clock; share = the least CPU share secperf's rows had"
    )
    for lib in a.libraries.split(","):
        if lib in NATIVE_TOOLS:
            rows, good = native_library(lib, a.rounds)
        else:
            rows, good = jvm_library(lib, a.jvm_rounds, a.forks, a.warmup_s, a.iterations)
        out += rows
        ok &= good
    print(
        f"target: ratio of bests within {BAND[0]}-{BAND[1]} (by wall clock; by CPU clock where secperf's rows had "
        f"less than {BUSY:.0%} of a CPU): {'met' if ok else 'NOT met'}"
    )
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
