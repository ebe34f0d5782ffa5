#!/usr/bin/env python3
"""The generated campaign of issue 42: cases made from the parser (build_parser: every command, every
option, every choice) and from the system file's JSON Schema (`secperf schema system`: every key of the
example system file given values of the wrong type and out of range), run through the real CLI with only
the measuring step replaced (phases run empty; the real writer writes the Result), and counted:

  traceback   an exception other than SystemExit left the command (or "Traceback" on its stderr)
  hang        the case ran past its time-out (SIGALRM); a case cut while it was building a toolchain
              (device_build, dtls13: once after a source change) runs again with a build's time-out first
  unreadable  a Result the case wrote that `secperf report` (the readers' checks) refuses
  ignored     connect: an option given to a protocol, exit 0, and the Result's parameters unchanged
  secrets     a PSK (the lab's demo keys, a device run's random key read from its 0600 file, or any
              `-psk HEX` / `--psk-hex HEX` / `-psk=HEX`) seen in /proc/*/cmdline during the campaign, which
              also runs real PSK handshakes (REAL_PSK: s_server and the probe over TLS 1.3 and 1.2, CoAP
              PSK with libcoap's client and the probe, and the emulated device's TLS 1.3 and DTLS 1.2 psk rows)

    python benchmarks/campaign.py [--timeout 20] [--only SUBSTRING] [--no-real] [--json FILE]

Exit code: 1 if any count is not 0.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

from _patching import replace_everywhere  # this directory is first on sys.path (or put there)

HOSTILE = ["0", "-1", "nan", "inf", "1e999", "", "x" * 300, "a,a", ",", "\u0663", "1;2", "../../etc/passwd"]
SKIP_OPTIONS = {"--help", "--version", "--cluster", "--out"}  # --cluster would reach for a Ray cluster
SKIP_COMMANDS = {("netem", "run"), ("device", "build")}  # run a command / build a toolchain: nothing to fuzz
BASE = {  # a valid argv per command (positional filled); options are added to it
    "crypto": ["crypto", "--alg", "ed25519", "--n", "2"],
    "handshake": ["handshake", "versions", "--n", "2"],
    "signer": ["signer", "--n", "2"],
    "jwt": ["jwt", "--n", "2"],
    "connect": ["connect", "https", "--n", "2"],
    "mac": ["mac", "--n", "2"],
    "can": ["can"],
    "whatif": ["whatif", "tls1.3", "--n", "200"],
    "server": ["server", "--duration", "1"],
    "fleet": ["fleet", "--devices", "100"],
    "plan": ["plan", "--pattern", "telemetry-hourly"],
    "run": ["run", "--scenario", "quick", "--n", "2"],
    "report": ["report", "{result}"],
    "compare": ["compare", "{result}", "{result}"],
    "metrics": ["metrics", "{result}"],
    "schema": ["schema", "system"],
    "clean": ["clean", "--results", "{out}"],
}
CONNECT_PROTOCOLS = ["https", "mqtt", "coap", "vpn", "quic", "dtls13", "dtls12", "edhoc"]


def subparsers(p):
    for a in p._actions:
        if isinstance(a, argparse._SubParsersAction):
            return dict(a.choices)
    return {}


def option_values(action) -> list[list[str]]:
    """The values a case gives an option: each choice, and the hostile set (none for a flag)."""
    if action.nargs == 0:
        return [[]]
    if action.choices:
        return [[str(c)] for c in list(action.choices)[:6]] + [["no-such-choice"]]
    return [[v] for v in HOSTILE]


def parser_cases() -> list[tuple[str, list[str]]]:
    from secperf.cli import build_parser

    out = []
    for name, p in subparsers(build_parser()).items():
        subs = subparsers(p)
        targets = (
            [([name, s], sp) for s, sp in subs.items() if (name, s) not in SKIP_COMMANDS]
            if subs
            else [(list(BASE.get(name, [name])), p)]
        )
        for base, sp in targets:
            for a in sp._actions:
                if not a.option_strings:
                    if a.choices and not isinstance(a, argparse._SubParsersAction) and name in ("schema",):
                        out += [(f"{name} {c}", [name, str(c)]) for c in a.choices]
                    continue
                opt = a.option_strings[-1]
                if opt in SKIP_OPTIONS:
                    continue
                for vals in option_values(a):
                    out.append((f"{' '.join(base[:2])} {opt} {' '.join(vals)[:20]}", base + [opt, *vals]))
    return out


def schema_cases(example: Path) -> list[tuple[str, list[str], str]]:
    """The example system file with each key its JSON Schema declares missing, of a wrong type, out of range,
    huge, nested, or beside an unknown key; and a Result mutated the same way by the Result's schema, read
    by `report` (generated in benchmarks/campaign_cases.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    try:
        from campaign_cases import result_cases, system_cases
    finally:
        sys.path.pop(0)
    return system_cases(example) + result_cases()


def _set(text: str, path: tuple, value: str) -> str | None:
    """The TOML text with key `path` set to `value` (line-based: the example keeps one key a line)."""
    section, key = ".".join(path[:-1]), path[-1]
    cur, lines = "", text.splitlines()
    for i, ln in enumerate(lines):
        m = re.match(r"\s*\[([^\]]+)\]", ln)
        if m:
            cur = m.group(1).strip()
            continue
        if cur == section and re.match(rf"\s*{re.escape(key)}\s*=", ln):
            lines[i] = f"{key} = {value}"
            return "\n".join(lines) + "\n"
    return None


class Hang(BaseException):
    pass


BUILDERS = ("measure/device_build.py", "measure/dtls13.py")  # modules that build a toolchain at first use
BUILD_TIMEOUT_S = 1800


def install_stub():
    """The measuring step replaced: phases run empty, the real writer writes the Result (as bad_inputs)."""
    from secperf.app import runner

    real = runner.measure_and_write
    params_seen: list[dict] = []

    def measure_and_write(kind, params, phases, output):
        params_seen.append(json.loads(json.dumps(params, default=str)))
        empty = [runner.Phase([], ph.label, lambda items, doc, run, progress: None) for ph in phases]
        return real(kind, params, empty, output)

    # every binding of each, every module of secperf loaded first (_patching: the imports sit at the
    # modules' tops, so a replacement reaches a command only through each module that bound the original)
    replace_everywhere(runner, "measure_and_write", measure_and_write)
    from secperf.app import plan as plan_app

    check = plan_app.check
    replace_everywhere(plan_app, "plan_all", lambda o: (check(o), [])[1])
    return params_seen


def run(argv: list[str], timeout_s: float) -> tuple[int | None, str, str | None]:
    from secperf import cli

    err = io.StringIO()

    def alarm(*_):
        raise Hang()

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    tb = None
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                code = cli.main(argv)
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 2
            except Hang as exc:
                code = None
                # a case cut while it built a toolchain (the device builds, the DTLS pair) is marked so: main()
                # runs it again with a build's time-out (a rebuild after a source change is once, not a hang)
                tb = (
                    "building"
                    if any(f.f_code.co_filename.endswith(BUILDERS) for f, _ in traceback.walk_tb(exc.__traceback__))
                    else None
                )
            except BaseException:  # noqa: BLE001 - the traceback a user would see
                code, tb = 1, traceback.format_exc()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return code, err.getvalue(), tb


# real PSK runs under the scan: every path that hands a PSK to a process (each needs a key on no command line)
REAL_PSK = [
    ["handshake", "psk", "--server", "s_server", "--n", "2"],  # s_server TLS 1.3 (session file)
    ["handshake", "psk", "--n", "2"],  # the probe, client and server (--psk-file)
    ["connect", "coap", "--coap-security", "psk", "--client", "probe,coap-client", "--n", "2"],  # libcoap's files
    [
        "device",
        "handshake",
        "--mode",
        "psk",
        "--tls",
        "1.3,dtls1.2",
        "--stack",
        "wolfssl59",
        "--group",
        "x25519",
        "--suite",
        "aes128gcm",
        "--n",
        "1",
        "--warmup",
        "0",
        "--timing",
        "off",
    ],  # s_server 1.3, probe DTLS 1.2
]
PSK_ON_ARGV = re.compile(r"(?:\s-?-psk(?:_hex|-hex)?[\s=]+[0-9a-f]{16,})")


def device_keys(tmp: Path) -> list[str]:
    """The random keys device PSK runs hold now: the guest's file (identity, hex) and the probe server's copy."""
    keys = []
    for f in [*tmp.glob("secperf-device-*/psk"), *tmp.glob("secperf-svc-*/psk.hex")]:
        with contextlib.suppress(OSError):
            keys += [w for w in f.read_text().split() if len(w) >= 32]
    return keys


class Scan(threading.Thread):
    def __init__(self, secrets, more=lambda: []):
        super().__init__(daemon=True)
        self.secrets, self.more, self.hits, self.stop = [s.lower() for s in secrets], more, [], threading.Event()
        self.watched: set[str] = set()  # the device runs' random keys the scan looked for (0: it could not fail)

    def run(self):
        import psutil

        me = psutil.Process(os.getpid())
        while not self.stop.is_set():  # the campaign's own processes (other users' tests are not its cases)
            more = [k.lower() for k in self.more()]
            self.watched.update(more)
            secrets = self.secrets + more
            for child in me.children(recursive=True):
                try:
                    line = " ".join(child.cmdline()).lower()
                except psutil.Error:
                    continue
                if any(s in line for s in secrets) or PSK_ON_ARGV.search(line):
                    self.hits.append(f"pid {child.pid}: {line[:200]}")
            self.stop.wait(0.05)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds per case")
    ap.add_argument("--only", default="")
    ap.add_argument("--no-real", action="store_true", help="skip the real PSK handshakes")
    ap.add_argument("--json")
    a = ap.parse_args()
    import secperf
    from secperf.measure.connect_config import COAP_PSK
    from secperf.measure.handshake import PSK_HEX

    # the real runs are child processes started from the campaign's directory: they import the secperf
    # this campaign imports (a relative PYTHONPATH=src would not resolve there, and an installed copy would
    # be run in its place)
    here = str(Path(secperf.__file__).resolve().parent.parent)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [here] + [str(Path(x).resolve()) for x in os.environ.get("PYTHONPATH", "").split(os.pathsep) if x]
    )
    work = Path(tempfile.mkdtemp(prefix="secperf-campaign-"))
    os.environ["TMPDIR"] = str(work / "tmp")
    (work / "tmp").mkdir()
    tempfile.tempdir = None  # this process's temporary files go there too
    scan = Scan([PSK_HEX, COAP_PSK.hex(), COAP_PSK.decode()], lambda: device_keys(work / "tmp"))
    scan.start()
    os.chdir(work)  # a case's relative output (--figures inf, --out ,) lands here, never in the checkout
    counts = {
        "cases": 0,
        "traceback": 0,
        "hang": 0,
        "unreadable": 0,
        "ignored": 0,
        "secrets": 0,
        "results": 0,
        "real_failed": 0,
        "rebuilt": 0,
    }
    bad: list[str] = []
    for argv in [] if a.no_real else REAL_PSK:  # real PSK handshakes under the scan
        p = subprocess.run(
            [sys.executable, "-m", "secperf", *argv, "--no-report", "--out", str(work / "real")],
            capture_output=True,
            text=True,
            timeout=900,
        )
        counts["cases"] += 1
        if "Traceback" in p.stderr:
            counts["traceback"] += 1
            bad.append(f"traceback: real {' '.join(argv)}")
        elif p.returncode != 0:  # a PSK path that did not run cannot show a key: its scan proves nothing
            counts["real_failed"] += 1
            bad.append(
                f"real run failed (exit {p.returncode}): {' '.join(argv)}: "
                f"{(p.stderr.strip().splitlines() or [''])[-1][:200]}"
            )
    params_seen = install_stub()
    result = _a_result(work)
    example = Path(__file__).resolve().parent.parent / "examples" / "stm32l4-nbiot-mqtt.toml"
    cases = [(n, v, None) for n, v in parser_cases()] + schema_cases(example)
    t0 = time.monotonic()
    for i, (name, argv, text) in enumerate(cases):
        if a.only not in name:
            continue
        out = work / f"c{i}"
        f = work / f"c{i}.toml"
        if text is not None:
            f.write_text(text)
        argv = [x.replace("{result}", str(result)).replace("{out}", str(out)).replace("{file}", str(f)) for x in argv]
        if argv[0] not in ("report", "compare", "metrics", "schema", "clean", "netem", "device") or argv[:2] in (
            ["device", "handshake"],
            ["device", "crypto"],
        ):
            argv = argv + ["--out", str(out)]
        code, err, tb = run(argv, a.timeout)
        if code is None and tb == "building":  # it was building when its time ran out: once more, with a build's time
            counts["rebuilt"] += 1
            code, err, tb = run(argv, BUILD_TIMEOUT_S)
        tb = None if tb == "building" else tb
        counts["cases"] += 1
        if tb or "Traceback" in err:
            counts["traceback"] += 1
            bad.append(f"traceback: {name}: {(tb or err).strip().splitlines()[-1][:200]}")
        if code is None:
            counts["hang"] += 1
            bad.append(f"hang: {name}")
        for r in out.glob("*/result.json") if out.exists() else []:
            if r.parent.is_symlink():
                continue
            counts["results"] += 1
            rc, rerr, rtb = run(["report", str(r), "--output", str(r.parent / "check.html")], a.timeout)
            if rc != 0:
                counts["unreadable"] += 1
                bad.append(f"unreadable: {name}: {rerr.strip().splitlines()[-1][:200] if rerr.strip() else rtb}")
    counts["ignored"], ignored = _ignored(work, params_seen, a.timeout)
    bad += ignored
    scan.stop.set()
    scan.join()
    hits = list(dict.fromkeys(scan.hits))  # each process once, however many scans saw it
    counts["secrets"] = len(hits)
    counts["device_keys_watched"] = len(scan.watched)
    bad += [f"secret: {h}" for h in hits]
    for line in bad:
        print(line)
    print(
        f"\ncampaign: {counts['cases']} cases in {time.monotonic() - t0:.0f} s, {counts['results']} Results read "
        f"back: traceback {counts['traceback']}, hang {counts['hang']}, unreadable {counts['unreadable']}, "
        f"ignored {counts['ignored']}, secrets {counts['secrets']} (device keys watched {counts['device_keys_watched']}), real PSK runs failed "
        f"{counts['real_failed']}; cases run again after a build cut them {counts['rebuilt']}"
    )
    if a.json:
        Path(a.json).write_text(json.dumps({"counts": counts, "bad": bad}, indent=1))
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    return (
        1 if any(counts.get(k) for k in ("traceback", "hang", "unreadable", "ignored", "secrets", "real_failed")) else 0
    )


def _a_result(work: Path) -> Path:
    code, err, tb = run(["whatif", "tls1.3", "--n", "200", "--no-report", "--out", str(work / "seed")], 120)
    assert code == 0, (err, tb)
    return next(p for p in (work / "seed").glob("*/result.json") if not p.parent.is_symlink())


def _ignored(work: Path, params_seen: list[dict], timeout_s: float) -> tuple[int, list[str]]:
    """connect's options x protocols: exit 0 with the parameters of the run without the option."""
    from secperf.cli import build_parser

    sub = subparsers(build_parser())["connect"]
    values = {
        "--key": "token",
        "--handshake": "resumed",
        "--lost": "client-hello",
        "--cid": "on",
        "--client": "curl",
        "--auth": "jwt_fresh",
        "--coap-security": "psk",
        "--tls": "1.2",
        "--timeout-ms": "1234",
        "--edhoc-method": "0",
        "--edhoc-suite": "0",
        "--edhoc-cred": "value",
        "--edhoc-flow": "combined",
        "--oscore-requests": "3",
        "--key-session": "cold",
        "--coap-server": "californium",
        "--n": "3",
        "--warmup": "1",
        "--seed": "7",
        "--network": "delay=5ms",
        "--duration": "2",
        "--min-sample-us": "50",
        "--max-hours": "0.5",
        "--connect": "127.0.0.1:5999",
        "--servername": "example.org",
    }
    hits = []
    for proto in CONNECT_PROTOCOLS:
        base_argv = ["connect", proto, "--out", str(work / "ign"), "--no-report"]
        run(base_argv, timeout_s)
        base = params_seen[-1] if params_seen else None
        for a in sub._actions:
            opt = a.option_strings[-1] if a.option_strings else None
            if opt not in values and not (opt == "--nagle"):
                continue
            n = len(params_seen)
            code, err, _tb = run(base_argv + [opt] + ([] if opt == "--nagle" else [values[opt]]), timeout_s)
            if code == 0 and (len(params_seen) == n or params_seen[-1] == base):
                hits.append(f"ignored: connect {proto} {opt}")
    return len(hits), hits


if __name__ == "__main__":
    sys.exit(main())
