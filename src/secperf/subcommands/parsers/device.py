"""`secperf device handshake|crypto|list|build`: real embedded TLS stacks on emulated ARM cores,
instructions per handshake message and per primitive (docs/how-to/devices.md).

The list options are comma lists (`argtypes.comma_list`, repeatable); a list not given is None here
and the app's default applies. The names themselves are checked by the measure layer
(measure/device.py), which knows the aliases and says what each build offers."""

from __future__ import annotations

import argparse

from ...inputs.defaults import DEVICE_BUILD_DEFAULTS as BUILD_DEFAULTS
from ...inputs.defaults import DEVICE_DEFAULTS as DEFAULTS
from .. import argtypes
from ..argtypes import comma_list, count
from .common import max_hours_option

NAME = "device"

HELP = "TLS stacks compiled for ARM under QEMU: instructions per handshake message and per primitive"


def _output_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("output")
    g.add_argument("--out", type=argtypes.path, default="results", help="results directory (default results/)")
    g.add_argument("--json", action="store_true", help="the Result on stdout, nothing else there")
    g.add_argument("--csv", type=argtypes.path, help="also write the series as CSV")
    g.add_argument("--no-report", action="store_true", help="do not write report.html")


STACKS_HELP = (
    "wolfssl, mbedtls (2.28, TLS 1.2), mbedtls3 (3.6, TLS 1.3 and 1.2), wolfssl59 (5.9, built from the "
    "crate), wolfssl56 (5.6.6, from the wolfssl-sys 1.2.0 crate: primitives, for boards' 5.6 logs), openssl "
    "(3.0, A-profile cores), ngtcp2 (QUIC: --tls quic, A-profile cores)"
)

CONFIG_HELP = (
    "library build configurations, comma list (default: each stack's default; `secperf device list` shows "
    "them per stack, e.g. sp-asm,sp-c,sp-small,bigint for wolfSSL, default,no-asm,ecp-window-2 for Mbed "
    "TLS); each is another series"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="device_cmd", metavar="{handshake,crypto,calibrate,list,build}")
    hs = sub.add_parser("handshake", help="per-message instruction counts of TLS handshakes, cold and warm")
    hs.add_argument(
        "--device",
        default=DEFAULTS["device"],
        help=f"core profile (default {DEFAULTS['device']}; `secperf device list`)",
    )
    hs.add_argument(
        "--stack",
        action="extend",
        type=comma_list(),
        metavar="STACKS",
        help=f"{STACKS_HELP}; comma list (default {DEFAULTS['stack']})",
    )
    hs.add_argument(
        "--tls",
        action="extend",
        type=comma_list(),
        metavar="VERSIONS",
        help="1.3, 1.2, dtls1.2, dtls1.3 (DTLS 1.3: wolfssl59 only) (comma list; default 1.3); quic: ngtcp2 + GnuTLS on the A-profile cores "
        "against aioquic, in a run of its own (--mode full,resumed,0rtt); edhoc: EDHOC + OSCORE, "
        "secperf's C initiator on mbedtls3's (default) or wolfssl59's crypto (--mode m3-kid, m3-value)",
    )
    hs.add_argument(
        "--group",
        action="extend",
        type=comma_list(),
        metavar="GROUPS",
        help=f"x25519, p-256, p-384 (default {DEFAULTS['group']})",
    )
    hs.add_argument(
        "--suite",
        action="extend",
        type=comma_list(),
        metavar="SUITES",
        help=f"aes128gcm, chacha20 (default {DEFAULTS['suite']})",
    )
    hs.add_argument(
        "--mode",
        action="extend",
        type=comma_list(),
        metavar="MODES",
        help="full, resumed (ticket), psk (TLS/DTLS 1.3 external PSK with an ECDHE share; DTLS 1.2 a plain "
        "PSK suite), full-cid, resumed-cid (DTLS with a connection ID), 0rtt (--tls quic), "
        "m3-kid or m3-value (--tls edhoc; full means m3-kid there); "
        "comma list; default full",
    )
    hs.add_argument("--server-cert", default=DEFAULTS["server_cert"], help="rsa-2048, ecdsa-p256 (default rsa-2048)")
    hs.add_argument(
        "--client-cert",
        default=DEFAULTS["client_cert"],
        help="mutual TLS: none, ecdsa-p256, rsa-2048 (a certificate of the lab client CA; default none)",
    )
    hs.add_argument("--config", action="extend", type=comma_list(), metavar="CONFIGS", help=CONFIG_HELP)
    hs.add_argument(
        "--n", type=count(1000), default=DEFAULTS["n"], help="warm handshakes per configuration (default 5)"
    )
    hs.add_argument(
        "--timing",
        choices=("on", "off"),
        default="on",
        help="the timing model (cycles and ms with their band; default on); off: instruction counts only, "
        "about 4-6x faster to emulate",
    )
    hs.add_argument(
        "--warmup",
        type=count(100, lo=0),
        default=DEFAULTS["warmup"],
        help="handshakes between the cold one and the warm ones, not summarised (default 2)",
    )
    _output_args(hs)
    max_hours_option(hs)
    cr = sub.add_parser("crypto", help="instruction counts of primitives (keygen, derive, sign, verify, AEAD, hash)")
    cr.add_argument("--device", default=DEFAULTS["device"], help="core profile")
    cr.add_argument(
        "--stack",
        action="extend",
        type=comma_list(),
        metavar="STACKS",
        help=f"{STACKS_HELP}; comma list (default {DEFAULTS['stack']})",
    )
    cr.add_argument("--config", action="extend", type=comma_list(), metavar="CONFIGS", help=CONFIG_HELP)
    cr.add_argument(
        "--op",
        action="extend",
        type=comma_list(),
        metavar="OPS",
        help="operations, comma list (default: all the build knows)",
    )
    cr.add_argument(
        "--n",
        type=count(1000),
        help="warm repetitions per operation (default 3); with --source: counted "
        "calls (default: the harness's run.calls)",
    )
    cr.add_argument(
        "--timing",
        choices=("on", "off"),
        default="on",
        help="the timing model (cycles and ms with their band; default on); off: instruction counts only",
    )
    u = cr.add_argument_group("your own code (instead of a library's primitives)")
    u.add_argument(
        "--source",
        action="extend",
        type=comma_list(),
        metavar="FILES",
        help="your C (.c) and assembly (.S, .s) files, comma list: built with the core's flags and counted",
    )
    u.add_argument("--entry", metavar="FUNCTION", help="the function to count (its C name); needs --source")
    u.add_argument(
        "--harness",
        type=argtypes.path,
        metavar="FILE.toml",
        help="its arguments (buffers; 32- and 64-bit integers, floats, doubles and structs by value, placed as the core's ABI says), calls and warm-up, build flags, time limit "
        "(default: no arguments, 3 calls); docs/how-to/devices.md 'Count your own code'",
    )
    u.add_argument(
        "--name",
        metavar="OP",
        help="the op name the row carries (default: the entry's name); a name "
        "the model knows (e.g. ecdsa-p256-sign) lets `whatif --calibrate` use it",
    )
    _output_args(cr)
    max_hours_option(cr)
    _calibrate_args(sub)
    ls = sub.add_parser("list", help="core profiles, one line each, and the stacks")
    ls.add_argument(
        "--verbose",
        action="store_true",
        help="every core's timing model, memory, bands and sources, and the build configurations",
    )
    sh = sub.add_parser("show", help="one core profile: its timing model, memory, bands and sources")
    sh.add_argument("name", metavar="NAME", help="a core profile of `secperf device list`")
    b = sub.add_parser("build", help="build the guest clients and the counting plugin now (else at first use)")
    b.add_argument(
        "--stack",
        action="extend",
        type=comma_list(),
        metavar="STACKS",
        help=f"comma list (default {BUILD_DEFAULTS['stack']})",
    )
    b.add_argument(
        "--target",
        action="extend",
        type=comma_list(),
        metavar="TARGETS",
        help=f"armhf (Debian's libraries), cortex-m4 (built from Debian's source packages); comma list "
        f"(default {BUILD_DEFAULTS['target']})",
    )
    b.add_argument(
        "--config",
        action="extend",
        type=comma_list(),
        metavar="CONFIGS",
        help="library build configurations, comma list (default: each stack's default)",
    )


def _calibrate_args(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    ca = sub.add_parser(
        "calibrate",
        help="fit a core profile to a board's own benchmark log and save it as a named device profile (--device NAME)",
    )
    ca.add_argument(
        "log",
        metavar="LOG",
        help="the board's benchmark output as captured from its UART: wolfCrypt's "
        "benchmark, Mbed TLS's benchmark or pqm4's benchmarks",
    )
    ca.add_argument("--board-clock", type=float, required=True, metavar="MHZ", help="the CPU clock the log ran at")
    ca.add_argument(
        "--wait-states",
        type=int,
        required=True,
        metavar="N",
        help="flash wait states at that clock (the part's reference manual)",
    )
    ca.add_argument(
        "--icache",
        choices=("on", "off"),
        help="the board's instruction cache as its firmware left it (default: the profile's; off on a "
        "Cortex-M33 leaves flash constants uncached too)",
    )
    ca.add_argument(
        "--prefetch",
        choices=("on", "off"),
        help="the flash prefetch as the board's HAL configuration sets it (PREFETCH_ENABLE; default: the profile's)",
    )
    ca.add_argument("--name", required=True, help="the new profile's name (not a shipped profile's)")
    ca.add_argument(
        "--core",
        default="cortex-m4",
        help="core model (cortex-m4, cortex-m33, cortex-m0plus, ...) or a "
        "shipped profile whose memory is the board's, e.g. cortex-m4-168 (default cortex-m4)",
    )
    ca.add_argument(
        "--stack",
        help="the library the log's build is: wolfssl (5.5.4), wolfssl56 (5.6.6), wolfssl59 (5.9.4), mbedtls, "
        "mbedtls3 (default: by the log's format and version line: its release, else its series, else the "
        "nearest series)",
    )
    ca.add_argument(
        "--config", help="the build configuration closest to the log's build (`secperf device list`), e.g. sp-small-os"
    )
    ca.add_argument(
        "--scheme", help="pqm4's raw speed output: the scheme it ran (e.g. ml-kem-768), when the log does not name it"
    )
    ca.add_argument(
        "--tolerance",
        type=float,
        default=0.15,
        help="a row further than this from the fit disagrees (fraction; default 0.15)",
    )
    ca.add_argument("--json", action="store_true", help="the calibration as JSON on stdout")
