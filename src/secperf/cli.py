"""The `secperf` command: a thin layer over the library (measure → Result → report).

Exit codes: 0 done; 1 measurement failures beyond the allowed share; 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path

from . import __version__

EXIT_OK, EXIT_FAILURES, EXIT_BAD_INPUT = 0, 1, 2


class BadInput(Exception):
    """Input the user must fix; printed as one message, exit code 2."""


def _positive_int(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is not a whole number") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"{v} must be at least 1")
    return v


def _nonneg_int(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is not a whole number") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"{v} must not be negative")
    return v


def _positive_float(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{s!r} is not a number") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"{v} must be greater than 0")
    return v


def _share(s: str) -> float:
    v = float(s)
    if not 0 <= v <= 1:
        raise argparse.ArgumentTypeError(f"{v} must be a share between 0 and 1")
    return v


def _measure_options(p: argparse.ArgumentParser, links: bool = False, no_network: str | None = None) -> None:
    g = p.add_argument_group("measurement")
    g.add_argument("--n", type=_positive_int, help="samples per series (each a timed batch)")
    g.add_argument("--duration", type=_positive_float, metavar="S",
                   help="time budget per series in seconds (at least one sample is always taken)")
    g.add_argument("--warmup", type=_nonneg_int, help="samples run and discarded before counting")
    g.add_argument("--seed", type=int, default=1, help="seed for generated messages and keys' inputs")
    g.add_argument("--min-sample-us", type=_positive_float, default=1000.0,
                   help="batch operations until a sample lasts this long, so timer overhead stays < 1%%")
    if links:
        g.add_argument("--network", action="append", metavar="NETWORK",
                       help="emulated link: a profile (`secperf netem list`), a spec like "
                            "'delay=50ms,loss=1%%,rate=250kbit', a sweep (rtt-sweep, loss-sweep, iot-links) or a "
                            "comma list of profiles; repeat for several links (default: loopback)")
    else:
        g.add_argument("--network", default="loopback",
                       help="emulated link; " + (no_network or "primitives involve no network, so only "
                                                 "'loopback' is accepted here"))
    o = p.add_argument_group("output")
    o.add_argument("--out", default="results", metavar="DIR",
                   help="results directory; each run gets its own sub-directory (default: results)")
    o.add_argument("--json", action="store_true", help="print the Result JSON on stdout and nothing else")
    o.add_argument("--csv", metavar="FILE", help="also write one CSV row per series")
    o.add_argument("--no-report", action="store_true", help="skip writing report.html")
    o.add_argument("--max-failure-share", type=_share, default=0.0,
                   help="exit 1 when more than this share of series failed (default 0)")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="secperf", description=__doc__.splitlines()[0],
                                 epilog="Exit codes: 0 done, 1 measurement failures, 2 bad input.")
    ap.add_argument("--version", action="version", version=f"secperf {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")

    run = sub.add_parser("run", help="run the default evaluation and write result.json + report.html")
    run.add_argument("--scenario", default="quick", help="built-in scenario name or a TOML file (default: quick)")
    run.add_argument("--hash", choices=("sha256", "sha1"), default="sha256")
    _measure_options(run, no_network="only 'loopback' is accepted here: a scenario names its links in "
                                     "its [handshake], [jwt] and [connect] sections (networks = [...])")

    cr = sub.add_parser("crypto", help="primitive benchmarks: signatures, key agreement, AEAD, MACs, hashes, PQC")
    cr.add_argument("--alg", action="append", metavar="NAMES",
                    help="algorithms, comma-separated; globs allowed (rsa-*, ecdsa-p*)")
    cr.add_argument("--op", action="append", metavar="OPS", help="operations: keygen, sign, verify, derive, "
                    "encrypt, decrypt, mac, hash, encaps, decaps")
    cr.add_argument("--size", action="append", metavar="BYTES", help="message sizes for AEAD/MAC/hash")
    cr.add_argument("--strength", type=int, help="only algorithms at this SP 800-57 strength "
                    "(80, 112, 128, 192, 256), compared side by side")
    cr.add_argument("--hash", choices=("sha256", "sha1"), default="sha256",
                    help="hash for RSA/ECDSA signatures (sha1 reproduces older studies)")
    cr.add_argument("--prehashed", action="store_true",
                    help="sign a precomputed digest (matches `openssl speed`); default hashes in each operation")
    cr.add_argument("--list", action="store_true", help="list algorithms, operations and strengths, then exit")
    _measure_options(cr)

    hs = sub.add_parser("handshake", help="TLS 1.2/1.3 and DTLS handshakes with a per-message client CPU breakdown")
    hs.add_argument("experiment", help="versions, suites, groups, breakdown, appdata, resumption, psk, 0rtt, "
                    "certs, mtls, dtls")
    hs.add_argument("--server", action="append", metavar="NAMES",
                    help="probe (default), s_server, nginx; comma-separated or repeated")
    hs.add_argument("--mtls", action="store_true", help="mutual TLS with a lab client certificate")
    hs.add_argument("--timeout-ms", type=_positive_int, default=5000,
                    help="per-connection stage timeout (over an emulated link, plus ten of its round trips, "
                         "and 7 s of retransmission back-off if it loses packets)")
    _measure_options(hs, links=True)

    sg = sub.add_parser("signer", help="study S2's signing modes through a PKCS#11 token behind a secure-element profile")
    sg.add_argument("--profile", action="append", metavar="NAMES",
                    help="secure-element profiles (default iot-safe-sim); `--profile list` lists them")
    sg.add_argument("--key", action="append", metavar="TYPES",
                    help="token key types: ecdsa-p256 (default), ecdsa-brainpoolp256r1, rsa-2048")
    sg.add_argument("--mode", action="append", metavar="MODES",
                    help="local_sw, sign_only, total (default: all three)")
    _measure_options(sg, no_network="token operations alone involve no network, so only 'loopback' is "
                                    "accepted here (over a link: `secperf jwt --network`, `secperf connect --network`)")

    jw = sub.add_parser("jwt", help="JWT device authentication: token signed in software or by the secure element, "
                        "fresh vs cached, against a verifying HTTPS endpoint")
    jw.add_argument("--profile", action="append", metavar="NAMES", help="secure-element profiles (default iot-safe-sim)")
    jw.add_argument("--key", action="append", metavar="TYPES", help="ecdsa-p256 (ES256, default) or rsa-2048 (RS256)")
    jw.add_argument("--lifetime", type=_positive_int, default=3600, metavar="S", help="token lifetime in seconds")
    jw.add_argument("--requests-per-hour", type=_positive_float, default=60.0,
                    help="request rate for the signatures-per-hour estimate")
    _measure_options(jw, links=True)

    cn = sub.add_parser("connect", help="connection establishment on real servers (nginx, mosquitto, coap-server, "
                        "OpenVPN) with software, token and secure-element keys, full and resumed (study S2)")
    cn.add_argument("protocol", help="https, mqtt, coap, vpn or all (comma-separated allowed)")
    cn.add_argument("--key", action="append", metavar="SOURCES",
                    help="key sources: software, token (SoftHSM2, no added delay), se:PROFILE "
                         "(default: software,se:iot-safe-sim)")
    cn.add_argument("--handshake", action="append", metavar="KINDS", help="full, resumed (default: both)")
    cn.add_argument("--client", action="append", metavar="NAMES",
                    help="probe (default), curl, mosquitto_pub, paho, coap-client, openvpn, or 'all' "
                         "for every client of each protocol")
    cn.add_argument("--auth", action="append", metavar="KINDS",
                    help="HTTPS authentication: mtls, jwt_fresh, jwt_cached (default: all three)")
    cn.add_argument("--coap-security", action="append", metavar="KINDS", help="CoAP over DTLS: pki (default), psk")
    cn.add_argument("--tls", choices=("1.2", "1.3"), default="1.3", help="TLS version for HTTPS and MQTT")
    cn.add_argument("--nagle", action="store_true",
                    help="mosquitto without set_tcp_nodelay (shows Nagle + delayed ACK on CONNACK)")
    cn.add_argument("--timeout-ms", type=_positive_int, default=5000, help="per-connection stage timeout")
    _measure_options(cn, links=True)
    _mac_can_parsers(sub)

    rp = sub.add_parser("report", help="re-render the HTML report of a result.json")
    rp.add_argument("result", help="result.json (or its run directory)")
    rp.add_argument("-o", "--output", help="where to write the HTML (default: report.html next to the result)")

    cp = sub.add_parser("compare", help="per series: is B faster, slower, or not significantly different from A?")
    cp.add_argument("a", help="baseline result.json")
    cp.add_argument("b", help="result.json to judge against A")
    cp.add_argument("--alpha", type=_share, default=0.01, help="significance level (default 0.01)")
    cp.add_argument("--min-change", type=_share, default=0.02,
                    help="smallest relative median change that counts (default 0.02)")
    cp.add_argument("--json", action="store_true", help="print the comparison as JSON")
    _netem_parser(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    tail = None
    if argv[:2] == ["netem", "run"] and "--" in argv:  # everything after -- is the command, verbatim
        i = argv.index("--")
        argv, tail = argv[:i], argv[i + 1:]
    args = build_parser().parse_args(argv)
    if tail is not None:
        args.cmd = tail
    if not args.command:
        build_parser().print_help(sys.stderr)
        return EXIT_BAD_INPUT
    from .core.result import ResultError
    from .measure.catalog import SelectionError
    from .measure.probe import ProbeNotFound
    from .measure.scenario import ScenarioError
    from .measure.signer import SignerError
    try:
        handler = {"run": cmd_run, "crypto": cmd_crypto, "handshake": cmd_handshake, "signer": cmd_signer, "jwt": cmd_jwt,
                   "connect": cmd_connect, "mac": cmd_mac, "can": cmd_can,
                   "report": cmd_report, "compare": cmd_compare, "netem": cmd_netem}
        return handler[args.command](args)
    except (BadInput, SelectionError, ScenarioError, ResultError, SignerError) as exc:
        print(f"secperf {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except ProbeNotFound as exc:
        print(f"secperf {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_FAILURES
    except RuntimeError as exc:  # the lab could not be set up (token, servers): say why, exit 1
        if type(exc).__name__ not in ("TokenError", "ServiceError", "LinkError"):
            raise
        print(f"secperf {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_FAILURES
    except KeyboardInterrupt:
        print(f"secperf {args.command}: interrupted; partial results were kept", file=sys.stderr)
        return 130


# --- measuring commands -------------------------------------------------------------------------

def _check_network(args, why: str | None = None) -> None:
    """Commands that send nothing over a network accept only --network loopback; `why` says what
    the command measures instead (default: primitive benchmarks)."""
    if args.network in ("loopback", "none"):
        return
    raise BadInput(f"--network {args.network!r}: " + (why or "primitive benchmarks send nothing over a network; "
                   "drop --network (it applies to the handshake, connect and jwt experiments)"))


def _params(args, defaults: dict):
    from .measure.crypto import CryptoParams
    p = CryptoParams()
    p.n = args.n or defaults.get("n", p.n)
    p.warmup = args.warmup if args.warmup is not None else defaults.get("warmup", p.warmup)
    p.duration_s = args.duration or defaults.get("duration_s", p.duration_s)
    p.min_sample_us = args.min_sample_us
    p.seed = args.seed
    p.hash = args.hash
    p.prehashed = getattr(args, "prehashed", False)
    return p


class Phase:
    """One measuring step of a command: items to measure, how to label one, and the runner."""

    def __init__(self, items, label, runner):
        self.items, self.label, self.runner = list(items), label, runner


def _measure_and_write(args, kind: str, params: dict, phases: list[Phase]) -> int:
    from .core import host, result as R
    from .core.store import RunStore
    from .model import crypto_questions as Q
    from .report import terminal

    con = terminal.err_console()
    run = RunStore(args.out).create(kind)
    doc = R.new_result(kind=kind, command=["secperf", *sys.argv[1:]] if argv_is_cli() else ["secperf", kind],
                       params=params, host=host.collect(), run_id=run.run_id)
    run.save(doc)
    total = sum(len(ph.items) for ph in phases)
    if not args.json:
        con.print(f"[bold]secperf {kind}[/bold]: {total} series → {run.dir}")

    status = "complete"
    def on_sigterm(_sig, _frm):
        raise KeyboardInterrupt
    old = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        with terminal.progress_bar(con, total, "measuring") as update:
            for ph in phases:
                def progress(event, item, i, n, series, ph=ph):
                    if event == "start":
                        update(ph.label(item))
                    else:
                        update(advance=1)
                ph.runner(ph.items, doc, run, progress)
    except KeyboardInterrupt:
        status = "interrupted"
    finally:
        signal.signal(signal.SIGTERM, old)
    if any(s.get("kind") == "crypto" for s in doc["series"]):
        doc["analysis"]["s5"] = Q.answers(doc)
        if params.get("strength"):
            doc["analysis"]["strength"] = {"security_bits": params["strength"],
                                           "rows": Q.strength_table(doc, params["strength"])}
    failed = [s for s in doc["series"] if s["status"] in ("failed", "partial")]
    R.finish(doc, status)
    run.save(doc)
    if args.csv:
        from .report.export import write_csv
        write_csv(doc, Path(args.csv))
    if not args.no_report:
        from .report.html import render
        run.write_text("report.html", render(doc))

    if args.json:
        sys.stdout.write(R.dumps(doc))
    else:
        out = terminal.out_console()
        for t in (terminal.crypto_tables(doc) + terminal.handshake_tables(doc) + terminal.signer_tables(doc)
                  + terminal.connect_tables(doc)):
            out.print(t)
        if doc["analysis"].get("strength"):
            out.print(terminal.strength_table(doc["analysis"]["strength"]["rows"], params["strength"]))
        if doc["analysis"].get("s5"):
            out.print(terminal.answers_table(doc["analysis"]["s5"]))
        from .report import terminal_mac
        if doc["analysis"].get("cortexm"):
            out.print(terminal_mac.cortexm_table(doc["analysis"]["cortexm"]))
        for t in terminal_mac.can_tables(doc["analysis"]["can"]) if doc["analysis"].get("can") else []:
            out.print(t)
        con.print(f"result: {run.result_path}" + ("" if args.no_report else f"\nreport: {run.report_path}"))
    if status == "interrupted":
        return 130
    share = len(failed) / max(1, len(doc["series"]))
    if failed and share > args.max_failure_share:
        con.print(f"[red]{len(failed)} of {len(doc['series'])} series had failures[/red] "
                  f"(first: {failed[0]['id']}: {failed[0]['failures'][-1]['reason']})")
        return EXIT_FAILURES
    return EXIT_OK


def _crypto_phase(rows, params) -> Phase:
    from .measure import crypto as C
    return Phase(rows, lambda r: f"{r.alg.name} {r.op}" + (f" {r.size_bytes} B" if r.alg.bulk else ""),
                 lambda items, doc, run, progress: C.run_crypto(items, params, doc, run, progress))


def _handshake_phase(configs, hp, seed: int = 1) -> Phase:
    from .measure import handshake as H
    return Phase(configs, lambda c: f"{c.label} @ {c.server}" + ("" if c.network == "loopback" else f" / {c.network}"),
                 lambda items, doc, run, progress: H.run_handshakes(items, hp, doc, run, progress, seed))


def argv_is_cli() -> bool:
    return Path(sys.argv[0]).name in ("secperf", "__main__.py")


def cmd_run(args) -> int:
    from .measure import scenario
    _check_network(args, "a scenario names its links itself: `networks = [...]` in its [handshake], [jwt] or "
                         "[connect] section (or run `secperf handshake|connect|jwt --network`)")
    scn = scenario.load(args.scenario)
    rows = scenario.crypto_rows(scn)
    params = _params(args, scn["crypto"])
    phases = [_crypto_phase(rows, params)]
    hs = scenario.handshake_configs(scn)
    jw = scenario.signer_settings(scn, "jwt")
    cs = scenario.connect_settings(scn)
    skipped = _links_unavailable([c.network for c in hs] + [*(jw or {}).get("networks", []),
                                                           *(cs or {}).get("networks", [])])
    if skipped:
        hs = [c for c in hs if c.network not in skipped["networks"]]
        for sec in (jw, cs):
            if sec:
                sec["networks"] = [n for n in sec["networks"] if n not in skipped["networks"]]
        jw = jw if jw and jw["networks"] else None
        cs = cs if cs and cs["networks"] else None
    hp = None
    if hs:
        hp = _handshake_params(args, scn.get("handshake", {}))
        phases.append(_handshake_phase(hs, hp))
    from .measure import signer as S
    extra = {"skipped_links": skipped} if skipped else {}
    sg = scenario.signer_settings(scn, "signer")
    if sg:
        sp = S.SignerParams(n=args.n or sg["n"], warmup=sg["warmup"], seed=args.seed)
        phases.append(_signer_phase(sg["profiles"], sg["keys"], sg["modes"], sp))
        extra["signer"] = {**sg, **sp.as_dict()}
    if jw:
        jp = S.SignerParams(n=args.n or jw["n"], warmup=jw["warmup"], seed=args.seed)
        phases.append(_jwt_phase(jw["profiles"], jw["keys"], jp, jw["lifetime_s"], jw["networks"]))
        extra["jwt"] = {**jw, **jp.as_dict()}
    if cs:
        from .measure import connect as C
        cfgs = connect_configs(cs["protocols"], cs["keys"], cs["handshakes"], [], ["mtls"],
                               networks=cs["networks"])
        cp = C.ConnectParams(n=args.n or cs["n"], warmup=cs["warmup"], seed=args.seed)
        phases.append(_connect_phase(cfgs, cp))
        extra["connect"] = {**cs, **cp.as_dict()}
    return _measure_and_write(args, "run", {"scenario": scn.get("name", args.scenario), "crypto": params.as_dict(),
                                            "handshake": hp.as_dict() if hp else None, **extra}, phases)


def _handshake_params(args, defaults: dict):
    from .measure.handshake import HandshakeParams
    hp = HandshakeParams()
    hp.n = args.n or defaults.get("n", hp.n)
    hp.warmup = args.warmup if args.warmup is not None else defaults.get("warmup", hp.warmup)
    hp.timeout_ms = getattr(args, "timeout_ms", None) or defaults.get("timeout_ms", hp.timeout_ms)
    return hp


def _networks(args):
    """--network values -> NetSpecs; a bad spec is bad input naming the field; a link that cannot
    be built here (no root, no TUN) is said plainly with its fix before anything runs."""
    from .model import netspec as NS
    try:
        nets = NS.parse_networks(args.network)
    except NS.NetSpecError as exc:
        raise BadInput(f"--network: {exc}") from None
    _check_links([n.name for n in nets], "--network")
    return nets


def _links_unavailable(names) -> dict | None:
    """A scenario's links that cannot be built here (no root and no usable user namespace, no TUN
    device): {"networks": [...], "reason": ...}, said once on stderr and kept in the result's
    parameters; the run goes on without them. Decision: a scenario (the default one included) is
    meant to run anywhere, so a missing capability of the machine skips its link rows instead of
    failing the run; `--network` on handshake/connect/jwt, where the user asked for a link, stops
    with the reason and the fix instead."""
    from .model import netspec as NS
    links = list(dict.fromkeys(n for n in names if n not in NS.LOOPBACK_NAMES))
    problem = _link_problem(links)
    if not problem:
        return None
    print(f"secperf: note: skipping the scenario's rows over emulated links ({', '.join(links)}): links cannot "
          f"be built here: {problem}", file=sys.stderr)
    return {"networks": links, "reason": problem}


def _link_problem(names) -> str | None:
    """Why links cannot be built here, if any of `names` needs one (is not loopback); else None."""
    from .lab import netns
    from .model import netspec as NS
    return netns.check() if any(n not in NS.LOOPBACK_NAMES for n in names) else None


def _check_links(names, what: str = "networks") -> None:
    """Links needed (any name not loopback) but not buildable here: say why and the fix, up front."""
    from .lab import netns
    problem = _link_problem(names)
    if problem:
        raise netns.LinkError(f"{what}: cannot emulate links here: {problem}")


def cmd_handshake(args) -> int:
    from dataclasses import replace
    from .measure import handshake as H
    nets = _networks(args)
    servers = [x for v in (args.server or ["probe"]) for x in v.split(",") if x]
    for sv in servers:
        if sv not in H.SERVERS:
            raise BadInput(f"unknown --server {sv!r}; known: {', '.join(H.SERVERS)}")
    try:
        base = H.experiment(args.experiment)
    except H.HandshakeError as exc:
        raise BadInput(str(exc)) from None
    configs = [replace(c, server=sv, network=n.name) for n in nets for sv in servers for c in base]
    if "nginx" in servers:
        configs = [c for c in configs if c.server != "nginx" or (c.proto == "tls" and c.mode not in ("psk", "psk-dhe", "0rtt"))]
        # nginx runs as in studies S1/S2: with client-certificate verification on
        configs = [replace(c, mtls=True) if c.server == "nginx" else c for c in configs]
    if args.mtls:
        configs = [replace(c, mtls=True) for c in configs]
    hp = _handshake_params(args, {})
    return _measure_and_write(args, "handshake", {"experiment": args.experiment, "servers": servers,
                                                  "networks": [n.as_dict() for n in nets], **hp.as_dict()},
                              [_handshake_phase(configs, hp, args.seed)])


def _csv_list(values, default: list[str]) -> list[str]:
    out = [x.strip() for v in (values or []) for x in v.split(",") if x.strip()]
    return out or default


def _signer_phase(profiles, keys, modes, sp) -> Phase:
    from .measure import signer as S
    items = [(pr, kt, m) for pr in profiles for kt in keys for m in modes]
    return Phase(items, lambda it: f"{it[0]} {it[1]} {it[2]}",
                 lambda _items, doc, run, progress: S.run_signer(profiles, keys, modes, sp, doc, run, progress))


def _jwt_phase(profiles, keys, sp, lifetime_s: int, networks=("loopback",)) -> Phase:
    from .measure import signer as S
    nets = list(networks)
    return Phase(S.jwt_items(profiles, keys, nets), S.jwt_item_label,
                 lambda _i, doc, run, progress: S.run_jwt(profiles, keys, sp, doc, run, progress, lifetime_s,
                                                          networks=nets))


def cmd_signer(args) -> int:
    from .measure import signer as S
    from .model.se_profiles import ProfileError, load_profiles
    _check_network(args, "secperf signer times token operations alone, with no network path; drop --network. "
                         "For JWT-authenticated requests over an emulated link use `secperf jwt --network`; "
                         "for TLS/MQTT/CoAP connection set-up with the secure-element key, "
                         "`secperf connect --network`")
    try:
        known = load_profiles()
    except ProfileError as exc:
        raise BadInput(str(exc)) from None
    profiles = _csv_list(args.profile, ["iot-safe-sim"])
    if profiles == ["list"]:
        for name, pr in known.items():
            print(f"{name:16} {pr.description}  [source: {pr.source}]")
        return EXIT_OK
    for pr in profiles:
        if pr not in known:
            raise BadInput(f"unknown profile {pr!r}; known: {', '.join(known)}")
    keys = _csv_list(args.key, ["ecdsa-p256"])
    for kt in keys:
        if kt not in ("ecdsa-p256", "ecdsa-brainpoolp256r1", "rsa-2048"):
            raise BadInput(f"unknown key type {kt!r}; known: ecdsa-p256, ecdsa-brainpoolp256r1, rsa-2048")
    modes = _csv_list(args.mode, ["local_sw", "sign_only", "total"])
    for m in modes:
        if m not in ("local_sw", "sign_only", "total"):
            raise BadInput(f"unknown mode {m!r}; known: local_sw, sign_only, total")
    sp = S.SignerParams(n=args.n or 30, warmup=args.warmup if args.warmup is not None else 2, seed=args.seed)
    return _measure_and_write(args, "signer", {"profiles": profiles, "keys": keys, "modes": modes, **sp.as_dict()},
                              [_signer_phase(profiles, keys, modes, sp)])


def cmd_jwt(args) -> int:
    from .measure import jwt as J
    from .measure import signer as S
    from .model.se_profiles import load_profiles
    nets = _networks(args)
    known = load_profiles()
    profiles = _csv_list(args.profile, ["iot-safe-sim"])
    for pr in profiles:
        if pr not in known:
            raise BadInput(f"unknown profile {pr!r}; known: {', '.join(known)}")
    keys = _csv_list(args.key, ["ecdsa-p256"])
    for kt in keys:
        if kt not in ("ecdsa-p256", "rsa-2048"):
            raise BadInput(f"unknown JWT key type {kt!r}; known: ecdsa-p256 (ES256), rsa-2048 (RS256)")
    sp = S.SignerParams(n=args.n or 20, warmup=args.warmup if args.warmup is not None else 2, seed=args.seed)
    phase = _jwt_phase(profiles, keys, sp, args.lifetime, [n.name for n in nets])
    params = {"profiles": profiles, "keys": keys, "lifetime_s": args.lifetime,
              "requests_per_hour": args.requests_per_hour,
              "signatures_per_hour": J.signatures_per_hour(args.lifetime, args.requests_per_hour),
              "networks": [n.as_dict() for n in nets], **sp.as_dict()}
    return _measure_and_write(args, "jwt", params, [phase])


def _connect_phase(configs, cp) -> Phase:
    from .measure import connect as C
    return Phase(configs, lambda c: c.label,
                 lambda items, doc, run, progress: C.run_connect(items, cp, doc, run, progress))


def connect_configs(protocols, keys, handshakes, clients, auths, tls="1.3", nagle=False, coap_security=None,
                    networks=("loopback",)):
    """The `connect` matrix from command-line style lists; bad names raise BadInput."""
    from .measure import connect as C
    from .model.se_profiles import load_profiles
    if protocols == ["all"]:
        protocols = list(C.PROTOCOLS)
    for pr in protocols:
        if pr not in C.PROTOCOLS:
            raise BadInput(f"unknown protocol {pr!r}; known: {', '.join(C.PROTOCOLS)}, all")
    for h in handshakes:
        if h not in ("full", "resumed"):
            raise BadInput(f"unknown --handshake {h!r}; known: full, resumed")
    for a in auths:
        if a not in ("mtls", "jwt_fresh", "jwt_cached"):
            raise BadInput(f"unknown --auth {a!r}; known: mtls, jwt_fresh, jwt_cached")
    for sec in coap_security or []:
        if sec not in ("pki", "psk"):
            raise BadInput(f"unknown --coap-security {sec!r}; known: pki, psk")
    all_clients = sorted({c for v in C.CLIENTS.values() for c in v})
    if clients == ["all"]:
        clients = all_clients
    for c in clients or []:
        if c not in all_clients:
            raise BadInput(f"unknown --client {c!r}; known: {', '.join(all_clients)}, all")
    known = load_profiles()
    from dataclasses import replace
    base = C.configs_for(protocols, keys, handshakes, clients or None, auths, tls=tls, nodelay=not nagle,
                         coap_security=coap_security)
    configs = [replace(c, network=n) for n in networks for c in base]
    if not configs:
        raise BadInput("nothing to measure: the chosen --client values do not serve the chosen protocols")
    kept = []
    for cfg in configs:
        if cfg.client == "jwt-client":
            if cfg.key_source.startswith("se:") and cfg.profile not in known:
                raise BadInput(f"unknown secure-element profile {cfg.profile!r}; known: {', '.join(known)}")
            kept.append(cfg)
            continue
        try:
            C.validate(cfg, known)
        except C.ConnectError as exc:
            if clients and len(clients) > 1 and cfg.client != "probe":
                continue  # a combination this client cannot do, in a multi-client sweep: skip it
            raise BadInput(str(exc)) from None
        kept.append(cfg)
    return kept


def cmd_connect(args) -> int:
    from .measure import connect as C
    nets = _networks(args)
    protocols = _csv_list([args.protocol], [])
    keys = _csv_list(args.key, ["software", "se:iot-safe-sim"])
    handshakes = _csv_list(args.handshake, ["full", "resumed"])
    clients = _csv_list(args.client, [])
    auths = _csv_list(args.auth, ["mtls", "jwt_fresh", "jwt_cached"])
    configs = connect_configs(protocols, keys, handshakes, clients, auths, tls=args.tls, nagle=args.nagle,
                              coap_security=_csv_list(args.coap_security, ["pki"]),
                              networks=[n.name for n in nets])
    cp = C.ConnectParams(n=args.n or 20, warmup=args.warmup if args.warmup is not None else 2,
                         timeout_ms=args.timeout_ms, seed=args.seed)
    params = {"protocols": protocols, "keys": keys, "handshakes": handshakes, "clients": clients or ["probe"],
              "auth": auths, "tls": args.tls, "set_tcp_nodelay": not args.nagle,
              "networks": [n.as_dict() for n in nets], **cp.as_dict()}
    return _measure_and_write(args, "connect", params, [_connect_phase(configs, cp)])


def cmd_crypto(args) -> int:
    from .measure.catalog import catalog, select
    if args.list:
        return _list_algs()
    _check_network(args)
    rows = select(args.alg, args.op, args.size, args.strength)
    params = _params(args, {})
    extra = {"alg": args.alg, "op": args.op, "size": args.size, "strength": args.strength}
    return _measure_and_write(args, "crypto", {**params.as_dict(), **extra}, [_crypto_phase(rows, params)])


def _list_algs() -> int:
    from rich.table import Table
    from .measure.catalog import catalog
    from .report.terminal import out_console
    t = Table(title="secperf crypto: algorithms", title_justify="left", header_style="bold")
    for c in ("algorithm", "family", "operations", "bits", "engine", "strength note"):
        t.add_column(c)
    for a in catalog().values():
        t.add_row(a.name, a.family, ", ".join(a.ops), str(a.security_bits), a.engine, a.note)
    out_console().print(t)
    return EXIT_OK


# --- netem: emulated links -----------------------------------------------------------------------

def _netem_parser(sub) -> None:
    ne = sub.add_parser("netem", help="emulated network links (two namespaces, a native relay): profiles, "
                        "run a command over a link, checks, clean-up")
    nsub = ne.add_subparsers(dest="netem_command", metavar="ACTION")
    nsub.add_parser("list", help="link profiles and sweeps with their figures and sources")
    nsub.add_parser("check", help="can links be emulated here? (mode: root or rootless; TUN, namespaces, the relay)")
    nsub.add_parser("sweep", help="delete link namespaces left by dead secperf processes (root mode)")
    nr = nsub.add_parser("run", help="run CMD in the device namespace over a link: secperf netem run PROFILE -- CMD",
                         description="Runs CMD on the device side of an emulated link; the server side is at "
                                     "$SECPERF_SERVER_ADDR (10.77.0.2). Exit code: CMD's.")
    nr.add_argument("network", help="profile, spec string (delay=50ms,loss=1%%,...) or loopback")
    nr.add_argument("--server", metavar="CMD", help="a command to run in the server namespace meanwhile "
                    "(split like a shell would; stopped by PID at the end)")
    nr.add_argument("--seed", type=int, default=1, help="seed of the link's random draws")
    nr.add_argument("--poll", choices=("adaptive", "busy"), default="adaptive",
                    help="relay waiting: adaptive (spin 10 ms after activity, then sleep) or busy (spin always)")
    nr.add_argument("--stats", action="store_true", help="print the relay's final counters as JSON on stderr")
    nr.add_argument("cmd", nargs="*", help="-- CMD [ARGS...]")


def cmd_netem(args) -> int:
    from .lab import netns
    from .model import netspec as NS
    act = args.netem_command
    if act is None:
        raise BadInput("netem: give an action: list, check, sweep or run")
    if act == "list":
        try:
            table, sweeps = NS.profile_table(), NS.load_sweeps()
        except NS.NetSpecError as exc:
            raise BadInput(str(exc)) from None
        for name, pr in table.items():
            print(f"{name:14} {pr.spec or '(no emulation)'}\n{'':14} {pr.description}")
            for k, src in pr.sources.items():
                print(f"{'':16}{k}: {src}")
        for name, sw in sweeps.items():
            print(f"sweep {name}: {'; '.join(sw)}")
        return EXIT_OK
    if act == "check":
        problem = netns.check()
        print(f"mode: {netns.mode()}")
        if problem:
            print(f"emulated links: not available here: {problem}")
            return EXIT_FAILURES
        needs = "user and network namespaces, nsenter" if netns.rootless() else "network namespaces"
        print(f"emulated links: ok (TUN device {netns.tun_device()}, {needs}, secperf-netem)")
        return EXIT_OK
    if act == "sweep":
        if netns.rootless():
            print("mode: rootless (user namespace): links have no named namespaces (they end with their "
                  "holder processes); nothing to sweep")
            return EXIT_OK
        removed = netns.sweep_stale()
        print(f"removed {len(removed)} stale namespace(s)" + (": " + ", ".join(removed) if removed else ""))
        return EXIT_OK
    return _netem_run(args, netns, NS)


def _netem_run(args, netns, NS) -> int:
    import os
    import shlex
    import subprocess
    cmd = args.cmd
    if not cmd:
        raise BadInput("netem run: give the command after --, e.g. secperf netem run lte -- ping -c 3 10.77.0.2")
    try:
        spec = NS.parse(args.network)
    except NS.NetSpecError as exc:
        raise BadInput(f"network: {exc}") from None
    def on_sigterm(_sig, _frm):
        raise KeyboardInterrupt
    old = signal.signal(signal.SIGTERM, on_sigterm)
    child = None
    try:
        with netns.Link(spec, seed=args.seed, poll=args.poll) as link:
            env = {**os.environ, "SECPERF_SERVER_ADDR": link.server_addr, "SECPERF_DEVICE_ADDR": link.dev_addr}
            if args.server:
                link.popen("srv", shlex.split(args.server), env=env, stdin=subprocess.DEVNULL)
            try:
                child = subprocess.Popen(link.dev_exec(cmd), env=env)
            except OSError as exc:
                raise BadInput(f"netem run: cannot run {cmd[0]!r}: {exc}") from None
            rc = child.wait()
            child = None
        if args.stats and link.final_stats:
            print(json.dumps(link.final_stats), file=sys.stderr)
        return rc
    except KeyboardInterrupt:
        return 130
    finally:
        if child is not None and child.poll() is None:
            child.terminate()
            try:
                child.wait(timeout=5)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
        signal.signal(signal.SIGTERM, old)
# --- lightweight MACs and the CAN bus (issue 7) ------------------------------------------------

MAC_DEFAULT_ALGS = "chaskey,chaskey-12,hmac-sha256,aes-128-cmac,poly1305,siphash"
MAC_DEFAULT_SIZES = "8,16,64,256,1024"
CAN_DEFAULT_DEVICES = "rl78,rl78-small,rh850,cortex-m0,cortex-m3,cortex-m0-qemu,cortex-m3-qemu"
CAN_DEFAULT_MACS = "chaskey,chaskey-12,aes-128-cmac,hmac-sha256"


def _can_options(p: argparse.ArgumentParser, *, single: bool) -> None:
    g = p.add_argument_group("CAN bus (defaults: study S4)")
    g.add_argument("--device", metavar="NAMES", help="device profiles, comma-separated (data/devices.toml; "
                   "`secperf can --list-devices`)" + ("" if single else f"; default {CAN_DEFAULT_DEVICES}"))
    g.add_argument("--mac", metavar="NAMES", help=f"MACs, comma-separated (default {CAN_DEFAULT_MACS})")
    g.add_argument("--bitrate-kbps", type=_positive_float, default=1000.0, help="bus bit rate (S4: 1000)")
    g.add_argument("--usable-share", type=_share, default=0.5, help="usable share of the bus (S4: 0.5)")
    g.add_argument("--frame-bits", type=_positive_int, help="bits per frame (S4: 108; CAN FD 64 bytes: 579)")
    g.add_argument("--data-bytes", type=_positive_int, help="application data bytes per frame (S4: 8; CAN FD: 56)")
    g.add_argument("--period-ms", type=_positive_float, default=10.0, help="ECU cycle period (S4: 10 ms)")
    g.add_argument("--clock-mhz", type=_positive_float, default=32.0, help="MCU clock (S4: RL78 at 32 MHz)")
    g.add_argument("--frames", type=_positive_int, metavar="N",
                   help="frames per period (default: the chip's frame-handling limit decides)")
    g.add_argument("--frame-limit-kbps", type=_positive_float, default=216.0,
                   help="frames the chip can handle, in kbit/s (S4: RL78 about 216)")
    g.add_argument("--tag-bytes", type=_positive_int, default=8, help="tag length in bytes (default 8)")
    g.add_argument("--k", type=int, metavar="K", help="one tag every K frames (1..8); default: all of 1..8")
    g.add_argument("--cpu-budget", type=_share, default=0.10,
                   help="share of the CPU MAC computation may use (default 0.10, an assumption)")
    g.add_argument("--cycles-per-block", type=_positive_float,
                   help="override the device profile: cycles per 16-byte block")
    g.add_argument("--fd", action="store_true", help="CAN FD: 64-byte frames carrying the tag")


def _mac_can_parsers(sub) -> None:
    mc = sub.add_parser("mac", help="lightweight MACs: host speed (Chaskey vs OpenSSL's MACs), Cortex-M "
                        "instruction counts under QEMU, and the CAN bus load model")
    mc.add_argument("--alg", action="append", metavar="NAMES", help=f"MACs (default {MAC_DEFAULT_ALGS})")
    mc.add_argument("--size", action="append", metavar="BYTES", help=f"message sizes (default {MAC_DEFAULT_SIZES})")
    mc.add_argument("--cortexm", default="m0,m3", metavar="TARGETS",
                    help="Cortex-M targets counted under QEMU: m0, m3, m4 (comma-separated) or none")
    mc.add_argument("--cortexm-only", action="store_true", help="only the Cortex-M instruction counts")
    mc.add_argument("--cortexm-table", metavar="FILE",
                    help="write the instruction-count table as JSON (byte-identical across runs)")
    mc.set_defaults(hash="sha256", prehashed=False)
    _can_options(mc, single=False)
    _measure_options(mc)

    cn = sub.add_parser("can", help="CAN bus load of frame authentication (study S4): CPU load, extra bus "
                        "load, the k that fits a CPU budget")
    _can_options(cn, single=True)
    cn.add_argument("--list-devices", action="store_true", help="list device profiles with their MAC figures")
    cn.add_argument("--out", default="results", metavar="DIR", help="results directory (default: results)")
    cn.add_argument("--json", action="store_true", help="print the Result JSON on stdout and nothing else")
    cn.add_argument("--no-report", action="store_true", help="skip writing report.html")


def _can_analysis(args, devices: str, macs: str) -> dict:
    from dataclasses import replace
    from .model import can as CAN
    devs, mac_list = _csv_list([args.device or devices], []), _csv_list([args.mac or macs], [])
    if args.k is not None and args.k not in CAN.K_RANGE:
        raise BadInput(f"--k {args.k}: outside 1..8; send a tag at least once every 8 frames and at most once "
                       f"per frame (k = 1), or drop --k to see all of 1..8")
    base = CAN.CanParams(bitrate_bps=args.bitrate_kbps * 1e3, usable_share=args.usable_share,
                         period_s=args.period_ms / 1e3, clock_hz=args.clock_mhz * 1e6,
                         frames_per_period=args.frames, frame_limit_bps=args.frame_limit_kbps * 1e3,
                         tag_bytes=args.tag_bytes, cpu_budget=args.cpu_budget,
                         cycles_per_block=args.cycles_per_block)
    classic = replace(base, frame_bits=args.frame_bits or 108, data_bytes=args.data_bytes or 8)
    fd = replace(CAN.fd_defaults(), **{k: getattr(base, k) for k in (
        "bitrate_bps", "usable_share", "period_s", "clock_hz", "frames_per_period", "frame_limit_bps",
        "tag_bytes", "cpu_budget", "cycles_per_block")})
    if args.data_bytes:
        fd = replace(fd, data_bytes=args.data_bytes)
    if args.frame_bits:
        fd = replace(fd, frame_bits=args.frame_bits)
    ks = [args.k] if args.k else list(CAN.K_RANGE)

    def run(p):
        try:
            if args.cycles_per_block is not None:
                p = replace(p, device="given")
                return {"params": p.as_dict(), "sweeps": [CAN.sweep(replace(p, mac=m), ks) for m in mac_list],
                        "skipped": []}
            res = CAN.analysis(p, devs, mac_list)
            if ks != list(CAN.K_RANGE):
                for sw in res["sweeps"]:
                    sw["rows"] = [r for r in sw["rows"] if r["k"] in ks]
            return res
        except CAN.CanInputError as exc:
            raise BadInput(str(exc)) from None

    if args.fd:
        return run(fd)
    out = run(classic)
    if args.data_bytes is None and args.frame_bits is None:
        out["fd"] = run(fd)  # the same question for CAN FD, where the tag fits in the frame
    return out


def _cortexm_phase(targets: list[str], table_file: str | None) -> Phase:
    from .measure import cortexm as CM

    def runner(items, doc, run, progress):
        for t in items:
            progress("start", t, 0, len(items), None)
        try:
            table = CM.measure(tuple(items))
        except CM.CortexMError as exc:
            from .core import result as R
            for t in items:
                s = R.new_series(f"cortexm/{t}", kind="cortexm", labels={"target": t, "note": CM.LABEL},
                                 timer={"name": "instructions per tag", "start": "mark", "end": "mark"})
                R.add_failure(s, str(exc))
                doc["series"].append(s)
        else:
            doc["series"] += CM.to_series(table)
            doc["analysis"]["cortexm"] = table
            text = json.dumps(table, indent=1, sort_keys=True) + "\n"
            run.write_text("cortexm.json", text)
            if table_file:
                from .core.store import atomic_write
                atomic_write(Path(table_file), text)
        run.save(doc)
        for t in items:
            progress("done", t, 0, len(items), None)

    return Phase(targets, lambda t: f"Cortex-M {t} under QEMU", runner)


def cmd_mac(args) -> int:
    from .measure import cortexm as CM
    from .measure.catalog import catalog, select
    _check_network(args)
    targets = [] if args.cortexm == "none" else _csv_list([args.cortexm], [])
    for t in targets:
        if t not in CM.TARGETS:
            raise BadInput(f"--cortexm {t!r}: unknown target; known: {', '.join(CM.TARGETS)} (or none)")
    if args.cortexm_only and not targets:
        raise BadInput("--cortexm-only with --cortexm none leaves nothing to measure")
    if args.cortexm_table and not targets:
        raise BadInput("--cortexm-table needs at least one --cortexm target")
    can = _can_analysis(args, CAN_DEFAULT_DEVICES, CAN_DEFAULT_MACS)
    phases = []
    params = _params(args, {})
    algs = _csv_list(args.alg, MAC_DEFAULT_ALGS.split(","))
    if not args.cortexm_only:
        cat = catalog()
        for a in algs:
            if a in cat and cat[a].family != "mac":
                raise BadInput(f"--alg {a}: not a MAC; MACs: {', '.join(n for n, x in cat.items() if x.family == 'mac')}")
        phases.append(_crypto_phase(select(algs, ["mac"], args.size or [MAC_DEFAULT_SIZES]), params))
    if targets:
        phases.append(_cortexm_phase(targets, args.cortexm_table))

    def model(items, doc, run, progress):
        progress("start", items[0], 0, 1, None)
        doc["analysis"]["can"] = can
        progress("done", items[0], 0, 1, None)

    phases.append(Phase(["CAN bus load model"], lambda x: x, model))
    return _measure_and_write(args, "mac", {**params.as_dict(), "alg": algs, "size": args.size,
                                            "cortexm": targets, "cortexm_only": args.cortexm_only}, phases)


def cmd_can(args) -> int:
    from .core import host, result as R
    from .core.store import RunStore
    from .report import terminal, terminal_mac
    if args.list_devices:
        from .model.devices import devices, raw
        for name, d in devices().items():
            print(f"{name:16} {d.get('description', '')}")
            for mac, e in d.get("macs", {}).items():
                fig = {k: v for k, v in e.items() if k not in ("source", "note")}
                print(f"{'':16}   {mac}: {fig}  [source: {raw()['sources'].get(e.get('source'), e.get('source'))}]")
        return EXIT_OK
    can = _can_analysis(args, "rl78", "chaskey,aes-128-cmac")
    run = RunStore(args.out).create("can")
    doc = R.new_result(kind="can", command=["secperf", *sys.argv[1:]] if argv_is_cli() else ["secperf", "can"],
                       params=can["params"], host=host.collect(), run_id=run.run_id)
    doc["analysis"]["can"] = can
    R.finish(doc, "complete")
    run.save(doc)
    if not args.no_report:
        from .report.html import render
        run.write_text("report.html", render(doc))
    if args.json:
        sys.stdout.write(R.dumps(doc))
        return EXIT_OK
    out = terminal.out_console()
    for t in terminal_mac.can_tables(can):
        out.print(t)
    terminal.err_console().print(f"result: {run.result_path}" + ("" if args.no_report else f"\nreport: {run.report_path}"))
    return EXIT_OK


# --- reading commands ---------------------------------------------------------------------------

def cmd_report(args) -> int:
    from .core import result as R
    from .core.store import atomic_write
    from .report.html import render
    doc = R.load(args.result)
    src = Path(args.result)
    out = Path(args.output) if args.output else (src if src.is_dir() else src.parent) / "report.html"
    atomic_write(out, render(doc))
    print(f"report: {out}", file=sys.stderr)
    return EXIT_OK


def cmd_compare(args) -> int:
    from .core import result as R
    from .core.compare import compare
    from .report import terminal
    a, b = R.load(args.a), R.load(args.b)
    cmp = compare(a, b, alpha=args.alpha, min_change=args.min_change)
    if args.json:
        sys.stdout.write(json.dumps(cmp, indent=1) + "\n")
        return EXIT_OK
    con = terminal.out_console()
    if not cmp["rows"]:
        con.print("[yellow]the two results share no series; nothing to compare[/yellow]")
    else:
        con.print(terminal.compare_table(cmp))
    for w in cmp["warnings"]:
        con.print(f"[yellow]warning:[/yellow] {w}")
    for side in ("a", "b"):
        if cmp[f"only_in_{side}"]:
            con.print(f"only in {side.upper()}: {', '.join(cmp[f'only_in_{side}'])}")
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
