#!/usr/bin/env python3
"""The adversarial bad-input sweep of issue 17, reproducible: well over 200 distinct bad inputs across
every subcommand (options, positionals, scenario and pattern files, result files, environment),
each run as the user would run it -- `secperf ...` in its own process -- and counted:

  named      exit 2, a message on stderr, no traceback (what every bad input must give)
  traceback  a Python traceback on stderr (whatever the exit code)
  wrong code exit 1 or another non-zero code, no traceback (a bad input counted as a measurement
             failure), or an empty run directory left behind
  silent     exit 0: the bad input was accepted
  hang       still running at the time-out (a FIFO read forever, a grid of a million cells)
  data loss  a file the case named as input changed (an output written over an input)
  leak       a file left in the case's TMPDIR, or a link or key file left in its results
  read       (generated hostile Results only) exit 0: the document validated and was rendered;
             counted as fine, since a mutation may leave a document valid

Round three added, as a generated corpus: hostile Results (real Results of five kinds with fields
replaced by wrong types and extreme values) for every reader; unbounded inputs (FIFO, /dev/zero, a
3 GiB sparse file, deep TOML) for every file option; outputs naming inputs or Results; writes that
cannot succeed (/dev/full, /sys, a name over 255 bytes); running and abandoned Results; ports with
non-ASCII digits, duplicate link fields, endless sweeps and run budgets over their limits.

Everything before the measuring step is the real code; the measuring itself is replaced (as in
tests/test_cli_fuzz.py) so an accepted bad input is seen at once instead of starting an hour of
measurement: the phases run empty and the process says it got there. With --real nothing is
replaced (slow, starts real servers for accepted inputs). Exit code: 1 if any case was not
`named`, else 0.

    python benchmarks/bad_inputs.py [--jobs 2] [--only SUBSTRING] [--list] [--json FILE] [--verbose]
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MARK = "SECPERF-BAD-INPUT-SWEEP: accepted"

# The child: the real CLI, with only the measuring replaced (runners of every phase do nothing; the
# real measure_and_write still checks and writes the outputs), plan's simulation, device build and
# the server-side measurement of fleet. It prints MARK when a command got past its validation.
STUB = rf'''
import sys
MARK = {MARK!r}

def accepted():
    print(MARK, file=sys.stderr, flush=True)

sys.path.append({str(Path(__file__).resolve().parent)!r})  # this directory, last: the shared _patching
from _patching import replace_everywhere as everywhere  # every module first, then every binding
from secperf import cli
from secperf.app import runner

real = runner.measure_and_write

def measure_and_write(kind, params, phases, output):
    accepted()
    empty = [runner.Phase([], ph.label, lambda items, doc, run, progress: None) for ph in phases]
    return real(kind, params, empty, output)

everywhere(runner, "measure_and_write", measure_and_write)
from secperf.app import plan as plan_app
_check = plan_app.check
def plan_all(o):
    _check(o)
    accepted()
    return []
everywhere(plan_app, "plan_all", plan_all)
if sys.argv[1:3] == ["device", "build"]:  # building is the whole command: stop once it was asked for
    from secperf.measure import device_build
    def ensure_built(stack, *a, **k):
        accepted()
        raise SystemExit(0)
    everywhere(device_build, "ensure_built", ensure_built)
sys.exit(cli.main(sys.argv[1:]))
'''


def _fixtures(d: Path) -> None:
    """Files the cases point at: a plain file, a directory, broken results, scenarios, patterns."""
    (d / "afile").write_text("not a directory\n")
    (d / "adir").mkdir(exist_ok=True)
    (d / "ro").mkdir(exist_ok=True)
    (d / "empty.json").write_text("")
    (d / "notjson.json").write_text("{not json")
    (d / "binary.json").write_bytes(b"\xff\xfe\x00garbage\x80")
    (d / "list.json").write_text("[1, 2, 3]")
    good = {
        "schema": "secperf.result",
        "schema_version": 2,
        "run_id": "x",
        "kind": "crypto",
        "command": [],
        "started": "2026-01-01T00:00:00+00:00",
        "finished": None,
        "status": "complete",
        "params": {},
        "host": {},
        "series": [],
        "analysis": {},
    }
    bad_results = {
        "series-dict": {**good, "series": {"a": 1}},
        "series-str": {**good, "series": "many"},
        "values-str": {
            **good,
            "series": [
                {
                    "id": "a",
                    "kind": "crypto",
                    "labels": {},
                    "values_us": ["fast"],
                    "samples": [],
                    "failures": [],
                    "status": "ok",
                    "summary": {},
                }
            ],
        },
        "values-huge": {
            **good,
            "series": [
                {
                    "id": "a",
                    "kind": "crypto",
                    "labels": {},
                    "values_us": [1e308, -1e308],
                    "samples": [],
                    "failures": [],
                    "status": "ok",
                    "summary": {},
                }
            ],
        },
        "summary-str": {
            **good,
            "series": [
                {
                    "id": "a",
                    "kind": "crypto",
                    "labels": {},
                    "values_us": [1.0],
                    "samples": [],
                    "failures": [],
                    "status": "ok",
                    "summary": "p50",
                }
            ],
        },
        "labels-list": {
            **good,
            "series": [
                {
                    "id": "a",
                    "kind": "crypto",
                    "labels": [1],
                    "values_us": [1.0],
                    "samples": [],
                    "failures": [],
                    "status": "ok",
                    "summary": {},
                }
            ],
        },
        "series-nulls": {**good, "series": [None, 3]},
        "status-int": {**good, "status": 7},
        "version-99": {**good, "schema_version": 99},
        "schema-other": {**good, "schema": "something.else"},
        "params-list": {**good, "params": [1, 2]},
        "id-missing": {**good, "series": [{"kind": "crypto", "values_us": [1.0]}]},
        "connect-derived-str": {
            **good,
            "kind": "connect",
            "series": [
                {
                    "id": "connect/https/probe/software/full",
                    "kind": "connect",
                    "labels": {"protocol": "https"},
                    "values_us": [1.0],
                    "samples": [],
                    "failures": [],
                    "status": "ok",
                    "summary": {},
                    "derived": "lots",
                }
            ],
        },
    }
    for name, doc in bad_results.items():
        (d / f"{name}.json").write_text(json.dumps(doc))
    (d / "deep.json").write_text("[" * 100000 + "]" * 100000)
    scenarios = {
        "n-three": '[crypto]\nn = "three"\n[[crypto.select]]\nalg = ["sha256"]\n',
        "crypto-yes": 'crypto = "yes"\n',
        "unknown-key": '[crypto]\nnn = 3\n[[crypto.select]]\nalg = ["sha256"]\n',
        "unknown-table": '[cryptoo]\nn = 3\n',
        "duration-inf": '[crypto]\nduration_s = inf\n[[crypto.select]]\nalg = ["sha256"]\n',
        "n-huge": '[crypto]\nn = 99999999999999999999\n[[crypto.select]]\nalg = ["sha256"]\n',
        "n-negative": '[crypto]\nn = -5\n[[crypto.select]]\nalg = ["sha256"]\n',
        "bad-toml": '[crypto\nn = 3\n',
        "empty": '',
        "select-str": '[crypto]\nselect = "all"\n',
        "alg-unknown": '[crypto]\n[[crypto.select]]\nalg = ["rot13"]\n',
        "handshake-typo": '[handshake]\nexperiments = ["versions"]\ntypo = 1\n',
        "handshake-exp-bad": '[handshake]\nexperiments = ["telepathy"]\n',
        "connect-proto-bad": '[connect]\nprotocols = ["smtp"]\n',
        "connect-n-float": '[connect]\nprotocols = ["https"]\nn = 2.5\n',
        "connect-network-bad": '[connect]\nprotocols = ["https"]\nnetworks = ["delay=-5ms"]\n',
        "signer-profile-bad": '[signer]\nprofiles = ["nope"]\n',
        "jwt-lifetime-neg": '[jwt]\nlifetime_s = -1\n',
        "whatif-n-zero": '[whatif]\nprotocols = ["https"]\nn = 0\n',
        "device-bad": '[device]\ndevice = "pdp-11"\n',
        "name-int": 'name = 3\n[crypto]\n[[crypto.select]]\nalg = ["sha256"]\n',
        "binary": None,
    }
    for name, text in scenarios.items():
        p = d / f"scn-{name}.toml"
        if text is None:
            p.write_bytes(b"\xff\xfe[crypto]\x00")
        else:
            p.write_text(text)
    patterns = {
        "pat-empty": "",
        "pat-schedule-bad": 'name = "p"\n[traffic]\nschedule = "whenever"\n',
        "pat-negative": (
            'name = "p"\ndescription = "d"\nsource = "s"\n[traffic]\nschedule = "periodic"\n'
            'period_s = -5\npayload_up_bytes = 10\npayload_down_bytes = 10\nsource = "s"\n'
        ),
        "pat-bad-toml": "[traffic\n",
    }
    for name, text in patterns.items():
        (d / f"{name}.toml").write_text(text)


SEEDS = {
    "can": ["can"],
    "whatif": ["whatif", "https", "--n", "200"],
    "plan": ["plan", "--pattern", "periodic-collection", "--n", "200"],
    "fleet": ["fleet", "--capacity", "100", "--devices", "100"],
    "crypto": ["crypto", "--alg", "sha256,ecdsa-p256", "--size", "16", "--n", "3", "--duration", "0.05"],
}
EXTREME = [
    None,
    "",
    "x" * 300,
    "nope-unknown",
    -1,
    -1e308,
    1e308,
    0,
    True,
    [],
    {},
    [None],
    {"a": None},
    2**70,
    1e15 + 1,
    "rsa-\u00b2",
]
HOSTILE_PER_SEED = 5
READERS = {
    "report": lambda f: ["report", f, "-o", "{O}/r.html"],
    "compare": lambda f: ["compare", f, f],
    "metrics": lambda f: ["metrics", f, "-o", "{O}/m.prom"],
    "whatif --calibrate": lambda f: ["whatif", "https", "--calibrate", f, "--n", "50", "--no-report"],
    "fleet --from": lambda f: ["fleet", "--from", f, "--devices", "50", "--no-report"],
}


def _leaves(v, p=()):
    if isinstance(v, dict) and v:
        for k, x in v.items():
            yield from _leaves(x, p + (k,))
    elif isinstance(v, list) and v:
        for i, x in enumerate(v[:3]):
            yield from _leaves(x, p + (i,))
    elif p:
        yield p


def hostile_docs(seeds: dict[str, dict]) -> dict[str, dict]:
    """HOSTILE_PER_SEED documents per seed Result, each with 1-3 fields replaced (deterministic), plus
    the header variants every reader must refuse."""
    import copy
    import random

    out = {}
    for kind, seed in sorted(seeds.items()):
        rnd = random.Random(kind)
        paths = list(_leaves(seed))
        for i in range(HOSTILE_PER_SEED):
            doc = copy.deepcopy(seed)
            for _ in range(rnd.randint(1, 3)):
                node, p = doc, rnd.choice(paths)
                try:
                    for k in p[:-1]:
                        node = node[k]
                    node[p[-1]] = copy.deepcopy(rnd.choice(EXTREME))
                except (KeyError, IndexError, TypeError):
                    pass
            out[f"hostile-{kind}-{i}"] = doc
    base = seeds["crypto"]
    for name, change in {
        "version-true": {"schema_version": True},
        "version-0": {"schema_version": 0},
        "version-neg": {"schema_version": -1},
        "kind-unknown": {"kind": "telepathy"},
        "plan-str": {"kind": "plan", "analysis": {"plan": "everything is fine"}},
        "fleet-list": {"kind": "fleet", "analysis": {"fleet": [1, 2]}},
        "whatif-str": {"kind": "whatif", "analysis": {"whatif": "x"}},
    }.items():
        out[f"header-{name}"] = {**copy.deepcopy(base), **change}
    neg = copy.deepcopy(base)
    neg["series"][0]["values_us"] = [-5.0, 3.0]
    out["header-negative-time"] = neg
    return out


def _fixtures_round3(d: Path, real_exe: list[str]) -> None:
    """Round three's fixtures: real Results as seeds and the hostile corpus made from them, partial
    runs, unbounded inputs (FIFO, sparse file), deep and huge TOML, key material."""
    seeds = {}
    for kind, argv in SEEDS.items():
        p = subprocess.run(
            [*real_exe, *argv, "--out", str(d / "seedruns"), "--json", "--no-report"],
            capture_output=True,
            text=True,
            timeout=300,
        )
        seeds[kind] = json.loads(p.stdout)
    (d / "good.json").write_text(json.dumps(seeds["crypto"]))
    (d / "good2.json").write_text(json.dumps(seeds["can"]))
    for name, doc in hostile_docs(seeds).items():
        (d / f"{name}.json").write_text(json.dumps(doc))
    gone = subprocess.Popen(["true"])
    gone.wait()
    for name, owner in (
        ("running", {"pid": os.getpid(), "start_ticks": _ticks(os.getpid())}),
        ("abandoned", {"pid": gone.pid, "start_ticks": 1}),
    ):
        doc = {**seeds["fleet"], "status": "running", "finished": None, "owner": owner}
        (d / f"{name}.json").write_text(json.dumps(doc))
    os.mkfifo(d / "fifo.json")
    with open(d / "sparse.json", "wb") as f:
        f.truncate(3 << 30)
    (d / "deep.toml").write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    (d / "deep-tables.toml").write_text("[" + ".".join(["t"] * 80) + "]\nx = 1\n")
    (d / "many-keys.toml").write_text("[crypto]\n" + "".join(f"k{i} = 1\n" for i in range(90_000)))
    (d / "scenario.toml").write_text('[crypto]\n[[crypto.select]]\nalg = ["sha256"]\nsize = [16]\n')
    import datetime as dt

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    def pair(cn):
        k = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(x509.oid.NameOID.COMMON_NAME, cn)])
        now = dt.datetime.now(dt.UTC)
        c = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(k.public_key())
            .serial_number(1)
            .not_valid_before(now)
            .not_valid_after(now + dt.timedelta(days=1))
            .sign(k, hashes.SHA256())
        )
        return (
            c.public_bytes(serialization.Encoding.PEM),
            k.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            ),
        )

    (ca, ka), (_cb, kb) = pair("a"), pair("b")
    (d / "a.pem").write_bytes(ca)
    (d / "a.key").write_bytes(ka)
    (d / "b.key").write_bytes(kb)


def _ticks(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except OSError:
        return None


def cases_round3() -> list[tuple[str, list[str], dict]]:
    """Round three: at least 200 cases in the classes of the third adversarial run."""
    out: list[tuple[str, list[str], dict]] = []

    def add(argv, env=None, name=None):
        n = name or " ".join(argv)
        out.append((n if n.startswith("R3 ") else f"R3 {n}", argv, env or {}))

    # hostile Results, every reader (a generated corpus: 5 per seed kind + header variants)
    names = [f"hostile-{k}-{i}" for k in sorted(SEEDS) for i in range(HOSTILE_PER_SEED)]
    names += [
        "header-version-true",
        "header-version-0",
        "header-version-neg",
        "header-kind-unknown",
        "header-plan-str",
        "header-fleet-list",
        "header-whatif-str",
        "header-negative-time",
    ]
    for n in names:
        for reader, argv in READERS.items():
            add(argv(f"{{D}}/{n}.json"), name=f"R3 {reader} {n}")
    # unbounded inputs for every file option
    file_options = {
        **{r: (lambda a: lambda f: a(f))(argv) for r, argv in READERS.items()},
        "run --scenario": lambda f: ["run", "--scenario", f],
        "plan --pattern": lambda f: ["plan", "--pattern", f],
        "handshake --ca": lambda f: ["handshake", "versions", "--connect", "127.0.0.1:443", "--ca", f],
        "connect --client-cert": lambda f: [
            "connect",
            "https",
            "--connect",
            "127.0.0.1:443",
            "--client-cert",
            f,
            "--client-key",
            "{D}/a.key",
        ],
        "connect --client-key": lambda f: [
            "connect",
            "https",
            "--connect",
            "127.0.0.1:443",
            "--client-cert",
            "{D}/a.pem",
            "--client-key",
            f,
        ],
    }
    for what, argv in file_options.items():
        for src in ("{D}/fifo.json", "/dev/zero", "{D}/sparse.json", "/dev/null"):
            add(argv(src), name=f"R3 {what} {src.replace('{D}/', '')}")
    for what in ("run --scenario", "plan --pattern"):
        for src in ("deep.toml", "deep-tables.toml", "many-keys.toml"):
            add(file_options[what](f"{{D}}/{src}"), name=f"R3 {what} {src}")
    # outputs naming inputs, Results or each other
    for argv in (
        ["report", "{D}/good.json", "-o", "{D}/good.json"],
        ["metrics", "{D}/good.json", "-o", "{D}/good.json"],
        ["report", "{D}/good.json", "-o", "{D}/good2.json"],
        ["metrics", "{D}/good.json", "-o", "{D}/good2.json"],
        ["crypto", "--alg", "sha256", "--size", "16", "--csv", "{D}/good.json"],
        ["crypto", "--alg", "sha256", "--size", "16", "--metrics", "{D}/good.json"],
        ["crypto", "--alg", "sha256", "--size", "16", "--csv", "{O}/x", "--metrics", "{O}/x"],
        ["mac", "--alg", "chaskey", "--cortexm-table", "{D}/good.json"],
        ["plan", "--metrics", "{D}/good.json"],
        ["server", "--csv", "{D}/good.json"],
        ["run", "--scenario", "{D}/scenario.toml", "--csv", "{D}/scenario.toml"],
        ["run", "--scenario", "{D}/scenario.toml", "--metrics", "{D}/scenario.toml"],
        ["handshake", "versions", "--connect", "127.0.0.1:443", "--ca", "{D}/a.pem", "--csv", "{D}/a.pem"],
        [
            "connect",
            "https",
            "--connect",
            "127.0.0.1:443",
            "--client-cert",
            "{D}/a.pem",
            "--client-key",
            "{D}/a.key",
            "--metrics",
            "{D}/a.key",
        ],
        ["whatif", "https", "--calibrate", "{D}/good.json", "--out", "{D}/good.json"],
    ):
        add(argv, name="R3 overwrite " + " ".join(argv))
    # writes that cannot succeed
    long = "{O}/" + "n" * 300
    writers = {
        "report -o": lambda t: ["report", "{D}/good.json", "-o", t],
        "metrics -o": lambda t: ["metrics", "{D}/good.json", "-o", t],
        "crypto --csv": lambda t: ["crypto", "--alg", "sha256", "--size", "16", "--csv", t],
        "crypto --metrics": lambda t: ["crypto", "--alg", "sha256", "--size", "16", "--metrics", t],
        "mac --cortexm-table": lambda t: ["mac", "--alg", "chaskey", "--cortexm", "m3", "--cortexm-table", t],
        "report --figures": lambda t: ["report", "{D}/good.json", "-o", "{O}/r.html", "--figures", t],
        "plan --metrics": lambda t: ["plan", "--metrics", t],
        "server --csv": lambda t: ["server", "--csv", t],
    }
    for what, argv in writers.items():
        for target in (
            "/dev/full",
            "/sys/kernel/secperf-out",
            long,
            "/proc/self/secperf-out",
            "{O}/no/such/dir/f",
            "/dev/zero",
        ):
            if what == "report --figures" and target.startswith("{O}/no/"):
                continue  # a figures directory is created with its parents: not a bad input
            add(argv(target), name=f"R3 {what} {target.replace('{O}/', '')[:40]}")
    # running and abandoned Results
    for state in ("running", "abandoned"):
        for reader, argv in READERS.items():
            add(argv(f"{{D}}/{state}.json"), name=f"R3 {reader} {state} run")
    # ports, link specs, sweeps, budgets
    for port in ("44\u00b3", "\u0664\u0664\u0663", "\uff14\uff14\uff13", "4\u00b943"):
        add(["handshake", "versions", "--connect", f"127.0.0.1:{port}"])
        add(["connect", "https", "--connect", f"127.0.0.1:{port}"])
    for spec in (
        "delay=50ms,delay=5ms",
        "loss=1%,LOSS=2%",
        "lte-m,rate=1mbit,rate=2mbit",
        "up.delay=1ms,up.delay=2ms",
        "ge=1%/20%,ge=2%/20%",
    ):
        add(["handshake", "versions", "--network", spec])
        add(["whatif", "https", "--network", spec, "--n", "100"])
        add(["netem", "run", spec, "--", "true"])
    for sweep in (
        "rtt=0..inf:1",
        "rtt=nan",
        "loss=0..1e12:1",
        "rtt=0..999:1,loss=0..99:0.1",
        "rtt=0..inf",
        "jitter=0..1e300:1e-300",
    ):
        add(["whatif", "https", "--sweep", sweep, "--n", "1"])
    add(["whatif", "https", "--sweep", "rtt=0..400:1,loss=0..40:1", "--n", "100000"], name="R3 whatif draws over limit")
    for argv in (
        [
            "crypto",
            "--alg",
            "sha256",
            "--size",
            "16,64",
            "--n",
            "1000000",
            "--min-sample-us",
            "10000000",
            "--duration",
            "86400",
        ],
        ["crypto", "--n", "1000000", "--min-sample-us", "10000000", "--duration", "86400"],
        [
            "mac",
            "--alg",
            "chaskey",
            "--size",
            "16,64",
            "--n",
            "1000000",
            "--min-sample-us",
            "10000000",
            "--duration",
            "86400",
        ],
        ["crypto", "--alg", "sha256", "--size", "16", "--max-hours", "0"],
    ):
        add(argv, name="R3 budget " + " ".join(argv))
    return out


def cases() -> list[tuple[str, list[str], dict]]:
    """(name, argv after `secperf`, extra environment). {D} is the fixtures directory, {O} a fresh
    output directory for the case."""
    out: list[tuple[str, list[str], dict]] = []

    def add(argv, env=None, name=None):
        out.append((name or " ".join(argv), argv, env or {}))

    measuring = {
        "crypto": ["crypto", "--alg", "sha256", "--size", "16"],
        "handshake": ["handshake", "versions"],
        "signer": ["signer"],
        "jwt": ["jwt"],
        "connect": ["connect", "https"],
        "mac": ["mac", "--alg", "chaskey"],
        "run": ["run"],
    }
    common = [
        ["--n", "0"],
        ["--n", "-1"],
        ["--n", "inf"],
        ["--n", "99999999999999999999"],
        ["--n", "x"],
        ["--n", ""],
        ["--warmup", "-1"],
        ["--warmup", "99999999999999999999"],
        ["--duration", "inf"],
        ["--duration", "nan"],
        ["--duration", "-1"],
        ["--duration", "0"],
        ["--seed", "-1"],
        ["--seed", "18446744073709551616"],
        ["--min-sample-us", "inf"],
        ["--min-sample-us", "-5"],
        ["--min-sample-us", "1e12", "--duration", "0.5"],
        ["--network", "nowhere"],
        ["--network", "delay=-5ms"],
        ["--network", "loss=150%"],
        ["--network", ""],
        ["--out", "{D}/afile"],
        ["--out", "/proc/nope/x"],
        ["--out", ""],
        ["--csv", "{D}/adir"],
        ["--csv", "/proc/nope/x.csv"],
        ["--metrics", "{D}/adir"],
        ["--figures", "{D}/afile"],
        ["--max-failure-share", "2"],
        ["--max-failure-share", "nan"],
    ]
    for _cmd, base in measuring.items():
        for opt in common:
            add(base + opt)
    # crypto
    for v in (
        ["--alg", ""],
        ["--alg", ","],
        ["--alg", "rsa-999"],
        ["--alg", "md5"],
        ["--op", "fly"],
        ["--op", ""],
        ["--size", "-16"],
        ["--size", "1e30"],
        ["--size", "x"],
        ["--size", ""],
        ["--library", ""],
        ["--library", "boringssl9"],
        ["--strength", "999"],
        ["--strength", "-1"],
    ):
        add(["crypto"] + v)
    # handshake
    for v in (
        ["handshake", "telepathy"],
        ["handshake", ""],
        ["handshake", "versions", "--server", "nowhere"],
        ["handshake", "dtls", "--server", "nginx"],
        ["handshake", "versions", "--server", ""],
        ["handshake", "versions", "--timeout-ms", "0"],
        ["handshake", "versions", "--timeout-ms", "inf"],
        ["handshake", "versions", "--connect", "nohost"],
        ["handshake", "versions", "--connect", "h:99999"],
        ["handshake", "versions", "--connect", "127.0.0.1:0"],
        ["handshake", "versions", "--connect", ":443"],
        ["handshake", "versions", "--connect", "127.0.0.1:443", "--ca", "{D}/nope.pem"],
        ["handshake", "versions", "--connect", "127.0.0.1:443", "--ca", "{D}/afile"],
        ["handshake", "versions", "--connect", "127.0.0.1:443", "--client-cert", "{D}/afile"],
        ["handshake", "versions", "--ca", "{D}/afile"],
        ["handshake", "versions", "--connect", "127.0.0.1:443", "--servername", ""],
    ):
        add(v)
    # signer, jwt
    for v in (
        ["signer", "--profile", ""],
        ["signer", "--profile", "nope"],
        ["signer", "--key", "rsa-999"],
        ["signer", "--key", ""],
        ["signer", "--mode", "wish"],
        ["signer", "--mode", ""],
        ["jwt", "--profile", "nope"],
        ["jwt", "--key", "ed448"],
        ["jwt", "--lifetime", "-1"],
        ["jwt", "--lifetime", "inf"],
        ["jwt", "--lifetime", "0"],
        ["jwt", "--requests-per-hour", "-3"],
        ["jwt", "--requests-per-hour", "inf"],
        ["jwt", "--key-session", "lukewarm"],
        ["jwt", "--key-session", ""],
    ):
        add(v)
    # connect
    for v in (
        ["connect", "smtp"],
        ["connect", ""],
        ["connect", ","],
        ["connect", "https", "--key", ""],
        ["connect", "https", "--key", "se:"],
        ["connect", "https", "--key", "se:nope"],
        ["connect", "https", "--key", "hsm"],
        ["connect", "https", "--handshake", "half"],
        ["connect", "https", "--client", "mosquitto_pub"],
        ["connect", "https", "--client", ""],
        ["connect", "https", "--client", "wget"],
        ["connect", "mqtt", "--client", "paho", "--key", "token"],
        ["connect", "https", "--auth", "basic"],
        ["connect", "coap", "--coap-security", "none"],
        ["connect", "https", "--timeout-ms", "0"],
        ["connect", "https", "--timeout-ms", "-1"],
        ["connect", "https", "--key-session", "hot"],
        ["connect", "https", "--coap-server", "californium"],
        ["connect", "coap", "--coap-server", "nope"],
        ["connect", "https", "--connect", "x"],
        ["connect", "https", "--connect", "127.0.0.1:70000"],
        ["connect", "https", "--connect", "127.0.0.1:443", "--client-key", "{D}/afile"],
        ["connect", "vpn", "--handshake", "resumed", "--key", "software"],
        ["connect", "https", "--client", "curl", "--handshake", "resumed"],
    ):
        add(v)
    # mac, can
    for v in (
        ["mac", "--alg", ""],
        ["mac", "--alg", "md5"],
        ["mac", "--size", "0"],
        ["mac", "--cortexm", "z80"],
        ["mac", "--cortexm-table", "/proc/nope/table.json"],
        ["mac", "--cortexm-table", "{D}/adir"],
        ["mac", "--device", "nope"],
        ["can", "--mac", "md5"],
        ["can", "--mac", ""],
        ["can", "--device", ""],
        ["can", "--device", "nope"],
        ["can", "--frame-bits", "1"],
        ["can", "--frames", "1000000000"],
        ["can", "--clock-mhz", "inf"],
        ["can", "--clock-mhz", "0"],
        ["can", "--period-ms", "inf"],
        ["can", "--period-ms", "0"],
        ["can", "--bitrate-kbps", "-500"],
        ["can", "--usable-share", "1.5"],
        ["can", "--usable-share", "0"],
        ["can", "--data-bytes", "65"],
        ["can", "--data-bytes", "-1"],
        ["can", "--tag-bytes", "0"],
        ["can", "--tag-bytes", "99"],
        ["can", "--k", "-1"],
        ["can", "--cpu-budget", "2"],
        ["can", "--cpu-budget", "nan"],
        ["can", "--cycles-per-block", "-3"],
        ["can", "--frame-limit-kbps", "inf"],
        ["can", "--out", "{D}/afile"],
    ):
        add(v)
    # report, compare, metrics, schema
    for f in (
        "nope",
        "empty",
        "notjson",
        "binary",
        "list",
        "series-dict",
        "series-str",
        "values-str",
        "values-huge",
        "summary-str",
        "labels-list",
        "series-nulls",
        "status-int",
        "version-99",
        "schema-other",
        "params-list",
        "id-missing",
        "connect-derived-str",
        "deep",
    ):
        add(["report", f"{{D}}/{f}.json", "-o", "{O}/r.html"], name=f"report {f}.json")
    for v in (
        ["report", "{D}/adir"],
        ["report", "{D}/values-huge.json", "-o", "{D}/adir"],
        ["report", "{D}/values-huge.json", "-o", "/proc/nope/r.html"],
        ["report", "{D}/values-huge.json", "--figures", "{D}/afile"],
    ):
        add(v)
    for v in (
        ["compare", "{D}/nope.json", "{D}/nope.json"],
        ["compare", "{D}/notjson.json", "{D}/empty.json"],
        ["compare", "{D}/values-str.json", "{D}/values-huge.json"],
        ["compare", "{D}/series-dict.json", "{D}/series-dict.json"],
        ["compare", "{D}/values-huge.json", "{D}/values-huge.json", "--alpha", "2"],
        ["compare", "{D}/values-huge.json", "{D}/values-huge.json", "--alpha", "nan"],
        ["compare", "{D}/values-huge.json", "{D}/values-huge.json", "--min-change", "-1"],
        ["compare", "{D}/list.json", "{D}/list.json"],
    ):
        add(v)
    for v in (
        ["metrics", "{D}/nope.json"],
        ["metrics", "{D}/notjson.json"],
        ["metrics", "{D}/series-dict.json"],
        ["metrics", "{D}/values-str.json"],
        ["metrics", "{D}/connect-derived-str.json"],
        ["metrics", "{D}/values-huge.json", "-o", "{D}/adir"],
        ["metrics", "{D}/values-huge.json", "-o", "/proc/x/y"],
        ["schema", "nothing"],
        ["schema", ""],
    ):
        add(v)
    # run --scenario
    for s in (
        "nope",
        "n-three",
        "crypto-yes",
        "unknown-key",
        "unknown-table",
        "duration-inf",
        "n-huge",
        "n-negative",
        "bad-toml",
        "empty",
        "select-str",
        "alg-unknown",
        "handshake-typo",
        "handshake-exp-bad",
        "connect-proto-bad",
        "connect-n-float",
        "connect-network-bad",
        "signer-profile-bad",
        "jwt-lifetime-neg",
        "whatif-n-zero",
        "device-bad",
        "name-int",
        "binary",
    ):
        add(["run", "--scenario", f"{{D}}/scn-{s}.toml"], name=f"run --scenario {s}")
    add(["run", "--scenario", "{D}/adir"])
    add(["run", "--scenario", "no-such-builtin"])
    # netem
    for v in (
        ["netem", "run", "nowhere", "--", "true"],
        ["netem", "run", "delay=-1ms", "--", "true"],
        ["netem", "run", "lte"],
        ["netem", "run", "lte", "--wait-port", "0", "--server", "true", "--", "true"],
        ["netem", "run", "lte", "--wait-port", "80", "--", "true"],
        ["netem", "run", "lte", "--wait-timeout", "inf", "--", "true"],
        ["netem", "run", "lte", "--seed", "-1", "--", "true"],
        ["netem", "run", "", "--", "true"],
        ["netem", "fly"],
    ):
        add(v)
    # whatif
    for v in (
        ["whatif", "smtp"],
        ["whatif", "https", "--network", "nowhere"],
        ["whatif", "https", "--key", "se:nope"],
        ["whatif", "https", "--key", ""],
        ["whatif", "https", "--group", "p-999"],
        ["whatif", "https", "--group", ""],
        ["whatif", "https", "--cert", "dsa"],
        ["whatif", "https", "--cert", "ecdsa-p256:0"],
        ["whatif", "https", "--cert", "ecdsa-p256:999"],
        ["whatif", "https", "--cert", "ecdsa-p256:x"],
        ["whatif", "https", "--handshake", "half"],
        ["whatif", "https", "--device", "nope"],
        ["whatif", "https", "--sweep", "nonsense"],
        ["whatif", "https", "--sweep", "rtt=1..0"],
        ["whatif", "https", "--calibrate", "{D}/nope.json"],
        ["whatif", "https", "--calibrate", "{D}/notjson.json"],
        ["whatif", "https", "--calibrate", "{D}/values-str.json"],
        ["whatif", "https", "--n", "0"],
        ["whatif", "https", "--n", "99999999999999999999"],
        ["whatif", "https", "--seed", "-1"],
        ["whatif", "https", "--coap-random-factor", "0.5"],
        ["whatif", "https", "--coap-random-factor", "inf"],
        ["whatif", "https", "--out", "{D}/afile"],
    ):
        add(v)
    # plan
    for v in (
        ["plan", "--pattern", "nope"],
        ["plan", "--pattern", ""],
        ["plan", "--pattern", "{D}/pat-empty.toml"],
        ["plan", "--pattern", "{D}/pat-schedule-bad.toml"],
        ["plan", "--pattern", "{D}/pat-negative.toml"],
        ["plan", "--pattern", "{D}/pat-bad-toml.toml"],
        ["plan", "--pattern", "{D}/adir"],
        ["plan", "--device", "nope"],
        ["plan", "--se", "nope"],
        ["plan", "--se", ""],
        ["plan", "--network", "nowhere"],
        ["plan", "--radio", "nope"],
        ["plan", "--n", "0"],
        ["plan", "--n", "inf"],
        ["plan", "--seed", "-1"],
        ["plan", "--verify-n", "0"],
        ["plan", "--metrics", "{D}/adir"],
        ["plan", "--out", "{D}/afile"],
    ):
        add(v)
    # server, fleet
    for v in (
        ["server", "--server", "apache"],
        ["server", "--server", ""],
        ["server", "--key", "dsa-512"],
        ["server", "--key-source", "offload:nope:busy"],
        ["server", "--key-source", "offload:rsa-card-1998:spin"],
        ["server", "--client-auth", "maybe"],
        ["server", "--resume-ratio", "1.5"],
        ["server", "--resume-ratio", "nan"],
        ["server", "--chain-depth", "0"],
        ["server", "--chain-depth", "99"],
        ["server", "--tls", "1.1"],
        ["server", "--concurrency", "0"],
        ["server", "--concurrency", "1000000"],
        ["server", "--duration", "inf"],
        ["server", "--duration", "0"],
        ["server", "--warmup", "-1"],
        ["server", "--core", "-1"],
        ["server", "--core", "9999"],
        ["server", "--procs", "0"],
        ["server", "--out", "{D}/afile"],
        ["server", "--csv", "{D}/adir"],
        ["fleet", "--devices", "0"],
        ["fleet", "--devices", "-5"],
        ["fleet", "--devices", "1e30"],
        ["fleet", "--policy", "panic"],
        ["fleet", "--capacity", "0"],
        ["fleet", "--capacity", "inf"],
        ["fleet", "--resumed-capacity", "-1"],
        ["fleet", "--from", "{D}/nope.json"],
        ["fleet", "--from", "{D}/values-str.json"],
        ["fleet", "--resumed-share", "1.5"],
        ["fleet", "--base", "-1"],
        ["fleet", "--cap", "0"],
        ["fleet", "--timeout", "0"],
        ["fleet", "--backlog", "-1"],
        ["fleet", "--spread", "-1"],
        ["fleet", "--device-handshake", "-1"],
        ["fleet", "--horizon", "0"],
        ["fleet", "--horizon", "inf"],
        ["fleet", "--server", "apache"],
        ["fleet", "--measure-seconds", "0"],
        ["fleet", "--out", "{D}/afile"],
    ):
        add(v)
    # device
    for v in (
        ["device"],
        ["device", "handshake", "--device", "pdp-11"],
        ["device", "handshake", "--stack", "nope"],
        ["device", "handshake", "--tls", "1.1"],
        ["device", "handshake", "--group", "p-999"],
        ["device", "handshake", "--suite", "rot13"],
        ["device", "handshake", "--mode", "half"],
        ["device", "handshake", "--server-cert", "dsa"],
        ["device", "handshake", "--n", "0"],
        ["device", "handshake", "--warmup", "-1"],
        ["device", "handshake", "--out", "{D}/afile"],
        ["device", "handshake", "--csv", "{D}/adir"],
        ["device", "handshake", "--device", "cortex-m0plus-64", "--stack", "openssl"],
        ["device", "crypto", "--op", "fly"],
        ["device", "crypto", "--stack", ""],
        ["device", "crypto", "--n", "-1"],
        ["device", "build", "--stack", "nope"],
        ["device", "build", "--stack", ""],
    ):
        add(v)
    # clean; the environment
    add(["clean", "--json", "extra"])
    add(
        ["crypto", "--alg", "sha256", "--size", "16", "--n", "1"],
        {"SECPERF_HOME": "{D}/afile"},
        name="SECPERF_HOME is a file",
    )
    add(
        ["crypto", "--alg", "sha256", "--size", "16", "--n", "1"],
        {"SECPERF_HOME": "/proc/nope"},
        name="SECPERF_HOME unwritable",
    )
    add(
        ["crypto", "--alg", "µs", "--n", "1"],
        {"PYTHONIOENCODING": "ascii", "LC_ALL": "C"},
        name="non-UTF-8 terminal, non-ASCII bad value",
    )
    add(
        ["report", "{D}/values-huge.json", "-o", "{O}/r.html"],
        {"PYTHONIOENCODING": "latin-1", "LC_ALL": "C"},
        name="latin-1 terminal, report of extreme values",
    )
    return out + cases_round3()


def _fill(argv: list[str], d: Path, o: Path) -> list[str]:
    return [a.replace("{D}", str(d)).replace("{O}", str(o)) for a in argv]


VERDICTS = ("named", "read", "traceback", "hang", "data loss", "leak", "wrong code", "silent")
FINE = ("named", "read")


def classify(
    rc: int | None,
    err: str,
    out_dir: Path,
    *,
    name: str = "",
    changed: list[str] = (),
    leaked: list[str] = (),
    measured: bool = False,
) -> str:
    if "Traceback (most recent call last)" in err:
        return "traceback"
    if changed:
        return "data loss"
    if leaked:
        return "leak"
    if rc is None:
        # still running at the time-out: a round-three case hangs (FIFO, a huge grid); an older one was measuring
        return "hang" if name.startswith("R3 ") or not measured else "silent"
    if name.startswith("R3 ") and "hostile-" in name and rc == 0:
        return "read"  # a mutation may leave a Result valid: read and rendered is the right outcome
    empty = [p for p in out_dir.rglob("*") if p.is_dir() and not any(p.iterdir()) and p != out_dir / "tmp"]
    if rc == 0:
        return "silent"
    if rc != 2 or not err.strip() or empty:
        return "wrong code"
    return "named"


def _digest(path: str) -> str | None:
    import hashlib

    try:
        if not os.path.isfile(path) or os.path.getsize(path) > 64 << 20:
            return None
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def _leftovers(o: Path) -> list[str]:
    """What a case must not leave: anything in its TMPDIR, links (other than `latest`) and key or
    PIN files in its results."""
    out = [str(p) for p in (o / "tmp").rglob("*")] if (o / "tmp").is_dir() else []
    for p in o.rglob("*"):
        if "tmp" in p.relative_to(o).parts[:1]:
            continue
        if (p.is_symlink() and p.name != "latest") or p.name.endswith((".pin", ".p8.pem", ".key")):
            out.append(str(p))
    return out


def run_case(case, d: Path, exe: list[str], timeout_s: float) -> dict:
    name, argv, env_extra = case
    o = Path(tempfile.mkdtemp(prefix="case-", dir=d / "out"))
    (o / "tmp").mkdir()
    argv = _fill(argv, d, o)
    inputs = {a: _digest(a) for a in argv if a.startswith(str(d)) and "/out/" not in a}
    # every case writes its results into its own directory unless it names --out itself
    if (
        argv
        and argv[0] not in ("report", "compare", "metrics", "schema", "clean", "netem", "device")
        and "--out" not in argv
        and "--list" not in argv
    ):
        argv = argv + ["--out", str(o / "res")]
    if argv[:2] in (["device", "handshake"], ["device", "crypto"]) and "--out" not in argv:
        argv = argv + ["--out", str(o / "res")]
    env = {**os.environ, "TMPDIR": str(o / "tmp"), **{k: _fill([v], d, o)[0] for k, v in env_extra.items()}}
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [*exe, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        env=env,
        cwd=o,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        _out, err = proc.communicate(timeout=timeout_s)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGTERM)  # secperf stops what it started on SIGTERM
        try:
            _out, err = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            _out, err = proc.communicate()
        rc = None
    changed = [a for a, h in inputs.items() if h is not None and _digest(a) != h]
    leaked = _leftovers(o)
    verdict = classify(rc, err, o, name=name, changed=changed, leaked=leaked, measured=MARK in err)
    line = next((ln for ln in reversed(err.strip().splitlines()) if ln.strip()), "")
    shutil.rmtree(o, ignore_errors=True)
    if changed or leaked:
        line = f"changed {changed[:2]} left {leaked[:2]} | {line}"
    return {
        "case": name,
        "argv": argv,
        "rc": rc,
        "verdict": verdict,
        "stderr_last": line[:300],
        "seconds": round(time.monotonic() - t0, 2),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default="", help="run the cases whose name contains this")
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per case")
    ap.add_argument("--real", action="store_true", help="do not replace the measuring step")
    ap.add_argument("--list", action="store_true", help="list the cases and exit")
    ap.add_argument("--json", help="write every case's outcome to this file")
    ap.add_argument("--verbose", action="store_true", help="print every case, not only the failing ones")
    a = ap.parse_args()
    all_cases = cases()
    names = [c[0] for c in all_cases]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        print(f"duplicate case names: {sorted(dupes)}", file=sys.stderr)
        return 2
    chosen = [c for c in all_cases if a.only in c[0]]
    if a.list:
        for c in chosen:
            print(c[0])
        print(f"{len(chosen)} cases", file=sys.stderr)
        return 0
    d = Path(tempfile.mkdtemp(prefix="secperf-bad-inputs-"))
    (d / "out").mkdir()
    _fixtures(d)
    if any(c[0].startswith("R3 ") for c in chosen):
        _fixtures_round3(d, [sys.executable, "-m", "secperf"])
    os.chmod(d / "ro", 0o500)
    if a.real:
        exe = [shutil.which("secperf", path=str(Path(sys.executable).parent)) or "secperf"]
    else:
        stub = d / "stub.py"
        stub.write_text(STUB)
        exe = [sys.executable, str(stub)]
    results = []
    with cf.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        for r in pool.map(lambda c: run_case(c, d, exe, a.timeout), chosen):
            results.append(r)
            if a.verbose or r["verdict"] not in FINE:
                print(f"{r['verdict']:10} rc={r['rc']!s:4} {r['case']}  | {r['stderr_last']}", flush=True)
    os.chmod(d / "ro", 0o700)
    shutil.rmtree(d, ignore_errors=True)
    counts = {k: sum(1 for r in results if r["verdict"] == k) for k in VERDICTS}
    r3 = sum(1 for r in results if r["case"].startswith("R3 "))
    print(
        f"\ntried {len(results)} ({r3} of round three): named exit 2 {counts['named']}, hostile Result read "
        f"{counts['read']}, traceback {counts['traceback']}, hang {counts['hang']}, data loss {counts['data loss']}, "
        f"leak {counts['leak']}, wrong code {counts['wrong code']}, silent {counts['silent']}"
    )
    if a.json:
        Path(a.json).write_text(json.dumps({"counts": {"tried": len(results), **counts}, "cases": results}, indent=1))
    return 0 if counts["named"] + counts["read"] == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
