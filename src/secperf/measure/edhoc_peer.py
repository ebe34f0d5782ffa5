"""The two ends of `secperf connect edhoc`, each a process of its own:

    python -m secperf.measure.edhoc_peer server --keys DIR --host H --port P --cred-style kid|value
    python -m secperf.measure.edhoc_peer client --keys DIR --host H --port P --cred-style kid|value \\
        --n N --warmup W --timeout-ms T --flow separate|combined --requests K

The server is aiocoap with its OSCORE site wrapper: it answers EDHOC (RFC 9528, Appendix A.2:
POST /.well-known/edhoc) as responder with lakers, derives the OSCORE context (RFC 8613) from the
EDHOC exporter, and serves one OSCORE-protected resource, /temp. It prints "ready" once bound.

The client runs EDHOC as initiator with lakers itself (not aiocoap's automatic flow) so that each
message's client CPU can be read: the thread's CPU clock is read at every message boundary (the
lakers call that makes or takes a message, with its CBOR handling), the CoAP and socket work in
between is "transport". It then sends K OSCORE-protected GETs through aiocoap with the derived
context, timing protect/unprotect the same way. One JSON line per handshake on stdout (warm-up
lines marked), with wall times, the per-message CPU, EDHOC message sizes and CoAP datagram sizes.

Flows: "separate" sends message_3 in its own POST and waits for the responder's reply before the
first protected request (three round trips to the first protected response); "combined" carries
message_3 inside the first OSCORE request (RFC 9668's EDHOC + OSCORE request: two round trips).

Keys: DIR holds server.key and client.key (COSE_Key maps, CBOR, mode 0600; aiocoap refuses others)
and server.ccs / client.ccs (the public CWT claim sets). No secret is ever on a command line.
Why processes: aiocoap creates its own sockets, so over an emulated link each end runs whole in its
namespace (`ip netns exec` / nsenter in front of this command); the timers stay in the process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from ..core.errors import MeasurementError

PATH = ("temp",)
REPLY = b"21.5 C"
COAP_HEADER = 4
C_I = b"\x37"  # the initiator's connection identifier -24 (one byte on the wire), as in RFC 9529 trace 2


def _origin(host: str, port: int) -> str:
    """The origin as aiocoap spells a request's URI (the default port 5683 is left out)."""
    return f"coap://{host}" if port == 5683 else f"coap://{host}:{port}"


def _cpu() -> int:
    return time.thread_time_ns()


def _load(keys: Path, who: str) -> tuple[dict[Any, Any], dict[Any, Any]]:  # COSE key, CCS (CBOR maps)
    import cbor2  # reason: optional 'protocols' extra

    return cbor2.loads((keys / f"{who}.key").read_bytes()), cbor2.loads((keys / f"{who}.ccs").read_bytes())


def _cred_style(style: str) -> str:
    return {"kid": "by-key-id", "value": "by-value"}[style]


# -- server -------------------------------------------------------------------------------------------


async def _serve(a: argparse.Namespace) -> None:
    import aiocoap  # reason: optional 'protocols' extra
    from aiocoap import credentials, edhoc, oscore_sitewrapper, resource  # reason: optional 'protocols' extra

    class Temp(resource.Resource):  # type: ignore[misc]  # aiocoap ships no type information
        async def render_get(self, request: Any) -> Any:
            from aiocoap.transports.oscore import OSCOREAddress  # reason: optional 'protocols' extra

            if not isinstance(request.remote, OSCOREAddress):  # plain CoAP must not pass for OSCORE
                return aiocoap.Message(code=aiocoap.UNAUTHORIZED, payload=b"OSCORE required")
            return aiocoap.Message(code=aiocoap.CONTENT, payload=REPLY)

    class Pruning(oscore_sitewrapper.OscoreSiteWrapper):  # type: ignore[misc]  # aiocoap ships no type information
        # aiocoap keeps every EDHOC-derived context and picks C_R among 48 one-byte values: after 47
        # handshakes it answers "Too many contexts". A measuring server drops all but the newest few.
        def _process_edhoc_msg12(self, pipe: Any) -> Any:
            old = [k for k, v in self.server_credentials.items() if isinstance(v, edhoc.EdhocResponderContext)]
            for k in old[:-4]:
                del self.server_credentials[k]
            return super()._process_edhoc_msg12(pipe)

    key, ccs = _load(Path(a.keys), "server")
    _, peer = _load(Path(a.keys), "client")
    site = resource.Site()
    site.add_resource(PATH, Temp())
    creds = credentials.CredentialsMap()
    creds.load_from_dict(
        {
            f"{_origin(a.host, a.port)}/*": {
                "edhoc-oscore": {
                    "suite": 2,
                    "method": 3,
                    "own_cred_style": _cred_style(a.cred_style),
                    "own_cred": ccs,
                    "private_key": key,
                    "peer_cred": peer,
                }
            }
        }
    )
    ctx = await aiocoap.Context.create_server_context(Pruning(site, creds), bind=(a.host, a.port))
    print("ready", flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await ctx.shutdown()


# -- client -------------------------------------------------------------------------------------------


class _Timed:
    """Wraps an aiocoap EDHOC-derived OSCORE context: CPU and sizes of protect/unprotect."""

    def __init__(self) -> None:
        self.protect_ns: list[int] = []
        self.unprotect_ns: list[int] = []
        self.outer_bytes: list[int] = []
        self.inner_bytes: list[int] = []


def _timed_context(base_cls: Any, timed: _Timed) -> Any:
    """base_cls (an aiocoap security context class) with protect/unprotect timed into `timed`."""

    class Ctx(base_cls):  # type: ignore[misc]  # aiocoap ships no type information
        def protect(self, message: Any, request_id: Any = None, *, kid_context: bool = True) -> tuple[Any, Any]:
            c0 = _cpu()
            outer, rid = super().protect(message, request_id=request_id, kid_context=kid_context)
            timed.protect_ns.append(_cpu() - c0)
            timed.inner_bytes.append(len(message.payload))
            timed.outer_bytes.append(len(outer.opt.encode()) + len(outer.payload))
            return outer, rid

        def unprotect(self, protected_message: Any, request_id: Any = None) -> Any:
            c0 = _cpu()
            out = super().unprotect(protected_message, request_id)
            timed.unprotect_ns.append(_cpu() - c0)
            return out

    return Ctx


def _datagram(msg: Any) -> int:  # an aiocoap Message
    """The CoAP datagram's size as it travels (header, token, options, payload marker, payload)."""
    try:
        return len(msg.encode())
    except Exception:  # noqa: BLE001 - an unsent message has no message ID yet: 4 header bytes + the rest
        return 4 + len(msg.token or b"") + len(msg.opt.encode()) + (1 + len(msg.payload) if msg.payload else 0)


async def _handshake(
    a: argparse.Namespace, ctx: Any, key: dict[Any, Any], ccs: dict[Any, Any], peer_ccs: dict[Any, Any], uri: str
) -> dict[str, Any]:
    import aiocoap  # reason: optional 'protocols' extra
    import cbor2  # reason: optional 'protocols' extra
    import lakers  # reason: optional 'protocols' extra
    from aiocoap import edhoc  # reason: optional 'protocols' extra

    style = edhoc.OwnCredStyle(_cred_style(a.cred_style))
    cred_i = cbor2.dumps(ccs[14], canonical=True)
    cred_r = cbor2.dumps(peer_ccs[14], canonical=True)
    seg: dict[str, int] = {}
    size: dict[str, int] = {}
    wire: dict[str, int] = {}
    m0 = time.monotonic_ns()
    t0 = time.perf_counter_ns()
    c_start = _cpu()

    c0 = _cpu()
    initiator = lakers.EdhocInitiator()
    m1 = initiator.prepare_message_1(C_I, None)
    seg["message_1"] = _cpu() - c0
    size["message_1"] = len(m1)
    req = aiocoap.Message(code=aiocoap.POST, uri=f"{uri}/.well-known/edhoc", payload=cbor2.dumps(True) + m1)
    resp = await ctx.request(req).response_raising
    wire["message_1"] = _datagram(req)
    wire["message_2"] = _datagram(resp)
    t_m2 = time.perf_counter_ns()

    c0 = _cpu()
    m2 = resp.payload
    c_r, id_cred_r, _ead2 = initiator.parse_message_2(m2)
    # the expected credential is pinned (the lab's); lakers checks ID_CRED_R against it through MAC_2
    initiator.verify_message_2(key[-4], cred_i, lakers.credential_check_or_fetch(id_cred_r, cred_r))
    seg["message_2"] = _cpu() - c0
    size["message_2"] = len(m2)

    timed = _Timed()
    c0 = _cpu()
    secctx = _timed_context(edhoc.EdhocInitiatorContext, timed)(
        initiator, C_I, c_r, style, _Log()
    )  # prepares message_3 (lakers) here
    m3 = secctx._message_3
    size["message_3"] = len(m3)
    if a.flow == "combined":
        secctx.complete_without_message_4()  # OSCORE keys from the exporter; message_3 rides on the request
    seg["message_3"] = _cpu() - c0
    t_m3 = None
    if a.flow == "separate":
        secctx._message_3 = None
        c_r_enc = c_r if len(c_r) == 1 and (c_r[0] < 24 or 0x20 <= c_r[0] < 0x38) else cbor2.dumps(c_r)
        req3 = aiocoap.Message(code=aiocoap.POST, uri=f"{uri}/.well-known/edhoc", payload=c_r_enc + m3)
        resp3 = await ctx.request(req3).response_raising
        wire["message_3"] = _datagram(req3)
        wire["message_4_or_ack"] = _datagram(resp3)
        t_m3 = time.perf_counter_ns()
        c0 = _cpu()
        secctx.complete_with_message_4(resp3.payload)
        seg["message_4"] = _cpu() - c0
    ctx.client_credentials[f"{uri}/*"] = secctx
    t_edhoc = time.perf_counter_ns()

    firsts: list[float] = []
    reqs: list[dict[str, Any]] = []
    for _ in range(a.requests):
        tq = time.perf_counter_ns()
        r = await ctx.request(aiocoap.Message(code=aiocoap.GET, uri=f"{uri}/temp")).response_raising
        if r.payload != REPLY or not r.code.is_successful():
            raise MeasurementError(f"protected GET /temp: {r.code} {r.payload!r}")
        firsts.append((time.perf_counter_ns() - tq) / 1000)
        reqs.append({"rtt_us": firsts[-1]})
    t1 = time.perf_counter_ns()
    c_total = _cpu() - c_start
    for i, q in enumerate(reqs):
        q["protect_cpu_us"] = timed.protect_ns[i] / 1000 if i < len(timed.protect_ns) else None
        q["unprotect_cpu_us"] = timed.unprotect_ns[i] / 1000 if i < len(timed.unprotect_ns) else None
        q["oscore_outer_bytes"] = timed.outer_bytes[i] if i < len(timed.outer_bytes) else None
        q["plain_payload_bytes"] = timed.inner_bytes[i] if i < len(timed.inner_bytes) else None
    if a.flow == "combined" and timed.outer_bytes:
        # the outer message as sent: header 4, a token as long as this context's others (the inner response
        # does not carry the outer token), options, payload marker, payload
        wire["message_3+request"] = COAP_HEADER + len(resp.token) + timed.outer_bytes[0] + 1
    first_resp = t_edhoc + int(firsts[0] * 1000) if firsts else t1
    return {
        "ok": True,
        "edhoc_us": (t_edhoc - t0) / 1000,
        "usable_us": (first_resp - t0) / 1000,  # set-up to the first protected response
        "m2_us": (t_m2 - t0) / 1000,
        "m3_us": None if t_m3 is None else (t_m3 - t0) / 1000,
        "cpu_us": {k: v / 1000 for k, v in seg.items()},
        "cpu_total_us": c_total / 1000,
        "edhoc_bytes": size,
        "coap_bytes": wire,
        "requests": reqs,
        "suite": initiator.selected_cipher_suite(),
        "t0_ns": m0,
        "t1_ns": time.monotonic_ns(),
    }


class _Log:
    """aiocoap's EDHOC contexts want a logger; the worker's stdout carries JSON only."""

    def debug(self, *a: object, **k: object) -> None:
        pass

    info = warning = error = debug


async def _client(a: argparse.Namespace) -> int:
    import aiocoap  # reason: optional 'protocols' extra

    key, ccs = _load(Path(a.keys), "client")
    _, peer = _load(Path(a.keys), "server")
    uri = _origin(a.host, a.port)
    # aiocoap leaves its OSCORE transport out when ge25519 (group OSCORE's signatures) is missing;
    # pairwise OSCORE does not need it, so it is named here
    ctx = await aiocoap.Context.create_client_context(transports=["oscore", "udp6"])
    try:
        for i in range(a.warmup + a.n):
            try:
                line = await asyncio.wait_for(_handshake(a, ctx, key, ccs, peer, uri), a.timeout_ms / 1000)
            except TimeoutError:
                line = {"ok": False, "reason": f"timeout after {a.timeout_ms / 1000:.1f} s (no protected response)"}
            except Exception as exc:  # noqa: BLE001 - a failed handshake is a sample with its reason
                line = {"ok": False, "reason": f"{type(exc).__name__}: {exc}"}
            line["i"], line["warm"] = i, i < a.warmup
            print(json.dumps(line), flush=True)
    finally:
        await ctx.shutdown()
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m secperf.measure.edhoc_peer")
    ap.add_argument("role", choices=("server", "client"))
    ap.add_argument("--keys", required=True)
    ap.add_argument("--host", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--cred-style", choices=("kid", "value"), default="kid")
    ap.add_argument("--n", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--timeout-ms", type=int, default=5000)
    ap.add_argument("--flow", choices=("separate", "combined"), default="separate")
    ap.add_argument("--requests", type=int, default=1)
    a = ap.parse_args(argv)
    if a.role == "server":
        try:
            asyncio.run(_serve(a))
        except KeyboardInterrupt:
            pass
        return 0
    return asyncio.run(_client(a))


if __name__ == "__main__":
    sys.exit(main())
