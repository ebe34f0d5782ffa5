"""`secperf connect edhoc`: EDHOC (RFC 9528) then OSCORE-protected CoAP (RFC 8613), measured with
lakers and aiocoap over real UDP (measure/edhoc.py), with connect's options where they mean
something: --key, --handshake, --network, --n, --warmup, --timeout-ms, --json, --out.

Decisions (stated here and in the series' labels):
- EDHOC has no session resumption: the reuse is the kept OSCORE context, so `--handshake` takes
  full only; `--oscore-requests K` measures K protected requests on each new context.
- lakers holds its keys in memory (no PKCS#11): `--key` takes software only; a secure element's
  cost is the what-if model's (model/flights/edhoc.py), charged from its profile. When --key is
  not given, connect's default list (software,se:iot-safe-sim) means software here, with a note.
- `edhoc` runs alone in a Result (compare it with `secperf connect coap|dtls12` runs through
  `secperf compare`); mixing it with other protocols in one command is refused, naming this.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from ..core.errors import InputError
from ..measure import edhoc as E
from . import bounds, links
from .reporter import reporter
from .runner import Phase, measure_and_write

T = TypeVar("T")

if TYPE_CHECKING:
    from ..core.result_schema import Result
    from ..core.store import Run
    from ..measure.edhoc import EdhocConfig
    from .options import ConnectOptions
    from .runner import Output, Progress

OPTIONS = ("edhoc_method", "edhoc_suite", "edhoc_cred", "edhoc_flow", "oscore_requests")


def _ints(values: Iterable[str | int], option: str) -> list[int]:
    out: list[int] = []
    for v in values:
        try:
            out.append(int(v))
        except ValueError:
            raise InputError(f"{option} {v!r}: a number (e.g. 3)") from None
    return out


def _csv(values: Iterable[T] | None, default: Iterable[T]) -> list[T]:
    """A list option's values (split by the CLI's comma_list), or the default when not given."""
    return list(values) if values else list(default)


def configs(
    methods: list[int], suites: list[int], creds: list[str], flows: list[str], requests: int, networks: list[str]
) -> list[EdhocConfig]:
    rows = [
        E.EdhocConfig(method=m, suite=s, cred=c, flow=f, requests=requests, network=n)
        for n in networks
        for m in methods
        for s in suites
        for c in creds
        for f in flows
    ]
    for r in rows:
        E.validate(r)
    return rows


def check_not_edhoc(o: ConnectOptions) -> None:
    """The EDHOC options given to another protocol: refused, naming them."""
    given = [opt for opt in OPTIONS if getattr(o, opt, None) not in (None, [])]
    if given:
        names = ", ".join("--" + opt.replace("_", "-") for opt in given)
        raise InputError(f"{names}: act on protocol edhoc; protocol {','.join(o.protocols)} has none: drop them")


def measure(o: ConnectOptions, output: Output) -> Result:
    """`secperf connect edhoc` (o: app.options.ConnectOptions): EDHOC then OSCORE over CoAP/UDP."""

    protocols = list(o.protocols)
    if protocols != ["edhoc"]:
        raise InputError(
            f"protocol {','.join(protocols)}: edhoc runs on its own (`secperf connect edhoc`); measure "
            "the others in their own run and put them side by side with `secperf compare`"
        )
    if o.keys is not None and list(o.keys) != ["software"]:
        raise InputError(
            f"--key {','.join(o.keys)}: EDHOC runs with a software key only (lakers keeps "
            "its keys in memory, no PKCS#11); a secure element's cost is modelled: secperf whatif "
            "--protocol edhoc --key se:PROFILE. Use --key software"
        )
    if o.keys is None and not output.json:
        reporter().note("secperf connect: note: edhoc: software key only (lakers has no PKCS#11)")
    hs = _csv(o.handshakes, ["full"])
    if hs != ["full"]:
        raise InputError(
            f"--handshake {','.join(hs)}: EDHOC has full handshakes only (no resumption; the kept "
            "OSCORE context is the reuse: --oscore-requests K)"
        )
    for opt, val in (
        ("--client", o.clients),
        ("--auth", o.auths),
        ("--coap-security", o.coap_security),
        ("--lost", o.lost),
        ("--cid", o.cid),
    ):
        if val not in (None, []):
            raise InputError(
                f"{opt}: does not act on edhoc (lakers + aiocoap are its only client and server): drop {opt}"
            )
    if o.nagle:
        raise InputError("--nagle: acts on TCP connections; EDHOC runs over CoAP/UDP: drop --nagle")
    opts = o.measure
    nets = links.networks(o.networks)
    requests = o.oscore_requests if o.oscore_requests is not None else 1
    rows = configs(
        _ints(_csv(o.edhoc_method, ["3"]), "--edhoc-method"),
        _ints(_csv(o.edhoc_suite, ["2"]), "--edhoc-suite"),
        _csv(o.edhoc_cred, ["kid"]),
        _csv(o.edhoc_flow, ["separate"]),
        requests,
        [n.name for n in nets],
    )
    n, warmup, timeout_ms = opts.pick_n(20), opts.pick_warmup(2), opts.timeout_ms or 5000
    params = {
        "protocols": ["edhoc"],
        "handshakes": ["full"],
        "keys": ["software"],
        "edhoc": [r.label for r in rows],
        "oscore_requests": requests,
        "networks": [x.as_dict() for x in nets],
        "n": n,
        "warmup": warmup,
        "timeout_ms": timeout_ms,
        "seed": opts.seed,
    }

    params.update(
        bounds.check(
            "connect edhoc", bounds.rows_of(rows, nets, lambda c: "edhoc"), n + warmup + 1, opts.max_hours_given
        )
    )

    def runner(items: list[Any], doc: Result, run: Run, progress: Progress) -> None:
        E.run(items, n, warmup, timeout_ms, opts.seed, doc, run, progress, nets)  # the links resolved above

    return measure_and_write("connect", params, [Phase(rows, lambda c: c.label, runner)], output)
