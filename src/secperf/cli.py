"""The `secperf` command: a thin layer over the library (measure → Result → report).

Exit codes: 0 done; 1 measurement failures beyond the allowed share; 2 bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import __version__
from .app.can import CAN_DEFAULT_DEVICES, CAN_DEFAULT_MACS, MAC_DEFAULT_ALGS, MAC_DEFAULT_SIZES
from .core.errors import EXIT_BAD_INPUT, SecperfError
from .subcommands.argtypes import count, positive, seed, share
from .subcommands import argtypes, shared


def _measure_options(p: argparse.ArgumentParser, links: bool = False, no_network: str | None = None) -> None:
    g = p.add_argument_group("measurement")
    g.add_argument("--n", type=count(1_000_000), help="samples per series (each a timed batch)")
    g.add_argument("--duration", type=positive(86_400), metavar="S",
                   help="time budget per series in seconds (at least one sample is always taken)")
    g.add_argument("--warmup", type=count(100_000, lo=0), help="samples run and discarded before counting")
    g.add_argument("--seed", type=seed, default=1, help="seed for generated messages and keys' inputs")
    g.add_argument("--min-sample-us", type=positive(10_000_000), default=1000.0,
                   help="batch operations until a sample lasts this long, so timer overhead stays < 1%%")
    g.add_argument("--max-hours", type=positive(10_000), default=24.0, metavar="H",
                   help="refuse options whose product plans a longer run (series x samples x sample length; "
                        "default 24)")
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
    o.add_argument("--out", type=argtypes.path, default="results", metavar="DIR",
                   help="results directory; each run gets its own sub-directory (default: results)")
    o.add_argument("--json", action="store_true", help="print the Result JSON on stdout and nothing else")
    o.add_argument("--csv", type=argtypes.path, metavar="FILE", help="also write every number as CSV (tidy: one row per number)")
    o.add_argument("--metrics", type=argtypes.path, metavar="FILE", help="also write S2's operational metrics (Prometheus text format)")
    o.add_argument("--no-report", action="store_true", help="skip writing report.html")
    o.add_argument("--figures", type=argtypes.path, metavar="DIR",
                   help="also write every plot as PNG (300 dpi) and PDF into DIR, one file pair per plot")
    o.add_argument("--max-failure-share", type=share, default=0.0,
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
    cr.add_argument("--library", action="append", metavar="LIBS", help="libraries, comma-separated: openssl (default), "
                    "wolfcrypt, mbedtls, jce, bouncycastle, go, or all; one row per library, compared side by side")
    cr.add_argument("--list", action="store_true", help="list algorithms, operations and strengths, then exit")
    _measure_options(cr)

    hs = sub.add_parser("handshake", help="TLS 1.2/1.3 and DTLS handshakes with a per-message client CPU breakdown")
    hs.add_argument("experiment", help="versions, suites, groups, breakdown, appdata, resumption, psk, 0rtt, "
                    "certs, mtls, dtls")
    hs.add_argument("--server", action="append", metavar="NAMES",
                    help="probe (default), s_server, nginx; comma-separated or repeated")
    hs.add_argument("--mtls", action="store_true", help="mutual TLS with a lab client certificate")
    hs.add_argument("--stack", action="append", metavar="STACKS",
                    help="client libraries: openssl (the probe, default), wolfssl, mbedtls (Mbed TLS 2.28: TLS 1.2); "
                         "the others run the `secperf device` client built for this host against openssl s_server, "
                         "with the same per-message client CPU breakdown (loopback, TLS over TCP, full or resumed)")
    hs.add_argument("--timeout-ms", type=count(3_600_000), default=5000,
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
    jw.add_argument("--lifetime", type=count(10 * 365 * 86_400), default=3600, metavar="S", help="token lifetime in seconds")
    jw.add_argument("--requests-per-hour", type=positive(3.6e9), default=60.0,
                    help="request rate for the signatures-per-hour estimate")
    _measure_options(jw, links=True)

    cn = sub.add_parser("connect", help="connection establishment on real servers (nginx, mosquitto, coap-server, "
                        "OpenVPN) with software, token and secure-element keys, full and resumed (study S2)")
    cn.add_argument("protocol", help="https, mqtt, coap, vpn or all; quic, dtls13, dtls12 (secperf's own aioquic and "
                    "wolfSSL 5.9 pairs) (comma-separated allowed)")
    cn.add_argument("--key", action="append", metavar="SOURCES",
                    help="key sources: software, token (SoftHSM2, no added delay), se:PROFILE, se:PROFILE:cold "
                         "(as --key-session cold) (default: software,se:iot-safe-sim)")
    cn.add_argument("--handshake", action="append", metavar="KINDS", help="full, resumed (default: both); 0rtt (quic)")
    cn.add_argument("--lost", action="append", metavar="KINDS",
                    help="quic: none (default), client-initial, server-initial; dtls13/dtls12: client-hello "
                         "(that first datagram is not sent: recovery by the protocol's own timer)")
    cn.add_argument("--cid", action="append", metavar="ON_OFF", help="dtls13: connection IDs off, on (default: both)")
    cn.add_argument("--client", action="append", metavar="NAMES",
                    help="probe (default), curl, mosquitto_pub, paho, coap-client, openvpn, or 'all' "
                         "for every client of each protocol")
    cn.add_argument("--auth", action="append", metavar="KINDS",
                    help="HTTPS authentication: mtls, jwt_fresh, jwt_cached (default: all three)")
    cn.add_argument("--coap-security", action="append", metavar="KINDS", help="CoAP over DTLS: pki (default), psk")
    cn.add_argument("--tls", choices=("1.2", "1.3"), default="1.3", help="TLS version for HTTPS and MQTT")
    cn.add_argument("--nagle", action="store_true",
                    help="mosquitto without set_tcp_nodelay (shows Nagle + delayed ACK on CONNACK)")
    cn.add_argument("--timeout-ms", type=count(3_600_000), default=5000, help="per-connection stage timeout")
    cn.add_argument("--edhoc-method", action="append", metavar="N", help="edhoc: EDHOC method(s) (default 3)")
    cn.add_argument("--edhoc-suite", action="append", metavar="N", help="edhoc: cipher suite(s) (default 2)")
    cn.add_argument("--edhoc-cred", action="append", metavar="KINDS",
                    help="edhoc: credentials by kid (default) or by value")
    cn.add_argument("--edhoc-flow", action="append", metavar="KINDS",
                    help="edhoc: separate (message_3 on its own, default) or combined (with the first OSCORE request)")
    cn.add_argument("--oscore-requests", type=count(1000), default=None,
                    help="edhoc: OSCORE-protected requests per handshake (default 1)")
    _measure_options(cn, links=True)
    _mac_can_parsers(sub)

    rp = sub.add_parser("report", help="re-render the HTML report of a result.json")
    rp.add_argument("result", help="result.json (or its run directory)")
    rp.add_argument("-o", "--output", type=argtypes.path, help="where to write the HTML (default: report.html next to the result)")
    rp.add_argument("--figures", type=argtypes.path, metavar="DIR",
                    help="also write every plot as PNG (300 dpi) and PDF into DIR, one file pair per plot")
    shared.allow_partial_option(rp)

    cp = sub.add_parser("compare", help="what changed from A to B: measured differences with their interval, "
                        "predicted percentiles with their sampling error, changed numbers and verdicts")
    cp.add_argument("a", help="baseline result.json")
    cp.add_argument("b", help="result.json to judge against A")
    cp.add_argument("--alpha", type=share, default=0.01, help="significance level (default 0.01)")
    cp.add_argument("--min-change", type=share, default=0.02,
                    help="smallest relative median change that counts (default 0.02)")
    cp.add_argument("--power", type=share, default=0.8, help="power for the smallest detectable change (default 0.8)")
    cp.add_argument("--json", action="store_true", help="print the comparison as JSON")
    shared.allow_partial_option(cp)
    _netem_parser(sub)
    from . import subcommands
    shared.add_options(sub.choices)
    for mod in subcommands.load():
        mod.add_arguments(sub.add_parser(mod.NAME, help=mod.HELP))
    return ap


def _can_options(p: argparse.ArgumentParser, *, single: bool) -> None:
    g = p.add_argument_group("CAN bus (defaults: study S4)")
    g.add_argument("--device", metavar="NAMES", help="device profiles, comma-separated (data/devices.toml; "
                   "`secperf can --list-devices`)" + ("" if single else f"; default {CAN_DEFAULT_DEVICES}"))
    g.add_argument("--mac", metavar="NAMES", help=f"MACs, comma-separated (default {CAN_DEFAULT_MACS})")
    g.add_argument("--bitrate-kbps", type=positive(100_000), default=1000.0, help="bus bit rate (S4: 1000)")
    g.add_argument("--usable-share", type=share, default=0.5, help="usable share of the bus (S4: 0.5)")
    g.add_argument("--frame-bits", type=count(100_000), help="bits per frame (S4: 108; CAN FD 64 bytes: 579)")
    g.add_argument("--data-bytes", type=count(64), help="application data bytes per frame (S4: 8; CAN FD: 56)")
    g.add_argument("--period-ms", type=positive(3_600_000), default=10.0, help="ECU cycle period (S4: 10 ms)")
    g.add_argument("--clock-mhz", type=positive(100_000), default=32.0, help="MCU clock (S4: RL78 at 32 MHz)")
    g.add_argument("--frames", type=count(1_000_000), metavar="N",
                   help="frames per period (default: the chip's frame-handling limit decides)")
    g.add_argument("--frame-limit-kbps", type=positive(100_000), default=216.0,
                   help="frames the chip can handle, in kbit/s (S4: RL78 about 216)")
    g.add_argument("--tag-bytes", type=count(64), default=8, help="tag length in bytes (default 8)")
    g.add_argument("--k", type=int, metavar="K", help="one tag every K frames (1..8); default: all of 1..8")
    g.add_argument("--cpu-budget", type=share, default=0.10,
                   help="share of the CPU MAC computation may use (default 0.10, an assumption)")
    g.add_argument("--cycles-per-block", type=positive(1e9),
                   help="override the device profile: cycles per 16-byte block")
    g.add_argument("--fd", action="store_true", help="CAN FD: 64-byte frames carrying the tag")


def _mac_can_parsers(sub) -> None:
    mc = sub.add_parser("mac", help="lightweight MACs: host speed (Chaskey vs OpenSSL's MACs), Cortex-M "
                        "instruction counts under QEMU, and the CAN bus load model")
    mc.add_argument("--alg", action="append", type=argtypes.name_list, metavar="NAMES", help=f"MACs (default {MAC_DEFAULT_ALGS})")
    mc.add_argument("--size", action="append", metavar="BYTES", help=f"message sizes (default {MAC_DEFAULT_SIZES})")
    mc.add_argument("--cortexm", default="m0,m3", metavar="TARGETS",
                    help="Cortex-M targets counted under QEMU: m0, m3, m4 (comma-separated) or none")
    mc.add_argument("--cortexm-only", action="store_true", help="only the Cortex-M instruction counts")
    mc.add_argument("--cortexm-table", type=argtypes.path, metavar="FILE",
                    help="write the instruction-count table as JSON (byte-identical across runs)")
    mc.set_defaults(hash="sha256", prehashed=False)
    _can_options(mc, single=False)
    _measure_options(mc)

    cn = sub.add_parser("can", help="CAN bus load of frame authentication (study S4): CPU load, extra bus "
                        "load, the k that fits a CPU budget")
    _can_options(cn, single=True)
    cn.add_argument("--list-devices", action="store_true", help="list device profiles with their MAC figures")
    cn.add_argument("--out", type=argtypes.path, default="results", metavar="DIR", help="results directory (default: results)")
    cn.add_argument("--json", action="store_true", help="print the Result JSON on stdout and nothing else")
    cn.add_argument("--csv", type=argtypes.path, metavar="FILE", help="also write every number as CSV (one row each)")
    cn.add_argument("--no-report", action="store_true", help="skip writing report.html")


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
    nr.add_argument("--seed", type=seed, default=1, help="seed of the link's random draws")
    nr.add_argument("--poll", choices=("adaptive", "busy"), default="adaptive",
                    help="relay waiting: adaptive (spin 10 ms after activity, then sleep) or busy (spin always)")
    nr.add_argument("--stats", action="store_true", help="print the relay's final counters as JSON on stderr")
    nr.add_argument("cmd", nargs="*", help="-- CMD [ARGS...]")
    shared.wait_options(nr)


def _csv(values, default: list[str], option: str = "") -> list[str]:
    """Comma-separated and repeated list options, flattened; not given means the default, given
    but empty (--profile '') is an input error naming the option."""
    out = [x.strip() for v in (values or []) for x in v.split(",") if x.strip()]
    if values is not None and not out and option:
        from .core.errors import InputError
        raise InputError(f"{option}: empty; name at least one value or drop {option} for the default")
    return out or default


def _opts(args):
    from .app.options import MeasureOptions
    return MeasureOptions(n=args.n, duration_s=args.duration, warmup=args.warmup, seed=args.seed,
                          min_sample_us=args.min_sample_us, hash=getattr(args, "hash", "sha256"),
                          prehashed=getattr(args, "prehashed", False), timeout_ms=getattr(args, "timeout_ms", None),
                          max_hours=getattr(args, "max_hours", 24.0))


def _output(args):
    from .app.runner import Output
    cli = Path(sys.argv[0]).name in ("secperf", "__main__.py")
    return Output(out=args.out, json=args.json, csv=getattr(args, "csv", None), metrics=getattr(args, "metrics", None),
                  no_report=args.no_report,
                  max_failure_share=getattr(args, "max_failure_share", 0.0), figures=getattr(args, "figures", None),
                  command=["secperf", *sys.argv[1:]] if cli else ["secperf", args.command])


def _no_network(args, why: str | None = None) -> None:
    from .app.links import check_no_network
    check_no_network(args.network, why)


NO_NETWORK_RUN = ("a scenario names its links itself: `networks = [...]` in its [handshake], [jwt] or [connect] "
                  "section (or run `secperf handshake|connect|jwt --network`)")
NO_NETWORK_SIGNER = ("secperf signer times token operations alone, with no network path; drop --network. For "
                     "JWT-authenticated requests over an emulated link use `secperf jwt --network`; for TLS/MQTT/CoAP "
                     "connection set-up with the secure-element key, `secperf connect --network`")


def cmd_run(args) -> int:
    from .app.scenario import run_scenario
    _no_network(args, NO_NETWORK_RUN)
    return run_scenario(args.scenario, _opts(args), _output(args))


def cmd_crypto(args) -> int:
    from .app import commands
    if args.list:
        return commands.list_algorithms()
    _no_network(args)
    for opt in ("alg", "op", "size", "library"):
        _csv(getattr(args, opt), [], f"--{opt}")
    return commands.crypto(args.alg, args.op, args.size, args.strength, _opts(args), _output(args), args.library)


def cmd_handshake(args) -> int:
    from .app import commands
    return commands.handshake(args.experiment, _csv(args.server, ["probe"], "--server"), args.network, args.mtls,
                              _opts(args), _output(args), stacks=_csv(args.stack, ["openssl"], "--stack"),
                              **shared.target_kwargs(args))


def cmd_signer(args) -> int:
    from .app import commands
    _no_network(args, NO_NETWORK_SIGNER)
    profiles = _csv(args.profile, ["iot-safe-sim"], "--profile")
    if profiles == ["list"]:
        return commands.list_profiles()
    return commands.signer(profiles, _csv(args.key, ["ecdsa-p256"], "--key"), _csv(args.mode, list(commands.SIGNER_MODES), "--mode"),
                           _opts(args), _output(args))


def cmd_jwt(args) -> int:
    from .app import commands
    return commands.jwt(_csv(args.profile, ["iot-safe-sim"], "--profile"), _csv(args.key, ["ecdsa-p256"], "--key"), args.network,
                        args.lifetime, args.requests_per_hour, _opts(args), _output(args),
                        **shared.session_kwargs(args))


def cmd_connect(args) -> int:
    from .app import commands, connect_edhoc
    if "edhoc" in [p.strip() for p in args.protocol.split(",")]:
        return connect_edhoc.from_args(args, _opts(args), _output(args))
    connect_edhoc.check_not_edhoc(args)
    return commands.connect(_csv([args.protocol], [], "protocol"), _csv(args.key, ["software", "se:iot-safe-sim"], "--key"),
                            _csv(args.handshake, ["full", "resumed"], "--handshake"), _csv(args.client, [], "--client"),
                            _csv(args.auth, ["mtls", "jwt_fresh", "jwt_cached"], "--auth"),
                            _csv(args.coap_security, ["pki"], "--coap-security"),
                            args.network, args.tls, args.nagle, _opts(args), _output(args),
                            **shared.session_kwargs(args), **shared.target_kwargs(args),
                            beyond={"lost": _csv(args.lost, [], "--lost"), "cid": _csv(args.cid, [], "--cid") or None,
                                    "keys_given": args.key is not None})


def cmd_mac(args) -> int:
    from .app import commands
    from .app.can import CanOptions
    _no_network(args)
    return commands.mac(args.alg, args.size, args.cortexm, args.cortexm_only, args.cortexm_table,
                        CanOptions.from_namespace(args), _opts(args), _output(args))


def cmd_can(args) -> int:
    from .app import commands
    from .app.can import CanOptions
    if args.list_devices:
        return commands.list_devices()
    return commands.can(CanOptions.from_namespace(args), _output(args))


def cmd_netem(args) -> int:
    from .app import netem
    from .core.errors import InputError
    act = args.netem_command
    if act is None:
        raise InputError("netem: give an action: list, check, sweep or run")
    if act == "list":
        return netem.list_links()
    if act == "check":
        return netem.check()
    if act == "sweep":
        return netem.sweep()
    return netem.run(args.network, args.cmd, args.server, args.seed, args.poll, args.stats,
                     wait_port=args.wait_port, wait_timeout_s=args.wait_timeout)


def cmd_report(args) -> int:
    from .app.reading import report
    return report(args.result, args.output, getattr(args, "figures", None), args.allow_partial)


def cmd_compare(args) -> int:
    from .app.reading import compare
    return compare(args.a, args.b, args.alpha, args.min_change, args.json, args.allow_partial, args.power)


COMMANDS = {"run": cmd_run, "crypto": cmd_crypto, "handshake": cmd_handshake, "signer": cmd_signer, "jwt": cmd_jwt,
            "connect": cmd_connect, "mac": cmd_mac, "can": cmd_can, "report": cmd_report, "compare": cmd_compare,
            "netem": cmd_netem}


def main(argv: list[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a non-UTF-8 terminal gets escapes, not a crash on "µs"
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")
    argv = list(sys.argv[1:] if argv is None else argv)
    tail = None
    if argv[:2] == ["netem", "run"] and "--" in argv:  # everything after -- is the command, verbatim
        i = argv.index("--")
        argv, tail = argv[:i], argv[i + 1:]
    ap = build_parser()
    args = ap.parse_args(argv)
    if tail is not None:
        args.cmd = tail
    if not args.command:
        ap.print_help(sys.stderr)
        return EXIT_BAD_INPUT
    from . import subcommands
    from .app.signals import on_sigterm_raise
    handlers = {**COMMANDS, **{m.NAME: m.run for m in subcommands.load()}}
    try:
        with on_sigterm_raise():  # SIGTERM anywhere ends the command like Ctrl-C: unwound, said, 143
            shared.check_outputs(args)  # no output overwrites an input, a Result or another output
            return handlers[args.command](args)
    except SecperfError as exc:  # anticipated: one line naming what was wrong and what to do
        print(f"secperf {args.command}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt as exc:
        from .app.signals import interruption_note
        code, note = interruption_note(exc)
        print(f"secperf {args.command}: {note}", file=sys.stderr)
        return code


if __name__ == "__main__":
    sys.exit(main())
