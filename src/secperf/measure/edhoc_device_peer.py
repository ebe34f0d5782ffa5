"""The host's end of the EDHOC device run: lakers as EDHOC responder and aiocoap's OSCORE as the CoAP
server's protection, answering the guest initiator (native/device/edhoc_c) message by message.

The guest and this responder talk over the emulator's stdin/stdout (one line per message, hex), not
over CoAP/UDP: the counts are the initiator's, and a pipe keeps the host's CoAP stack, its
retransmission timers and the kernel out of the emulated process. What crosses is what a CoAP
transport would carry: EDHOC message_1..3 (RFC 9528) and one OSCORE-protected CoAP request and
response as whole CoAP messages (RFC 8613), which aiocoap parses, checks and answers.

Keys: the directory secperf.measure.edhoc.make_keys writes (server.key/client.key COSE_Keys, 0600;
server.ccs/client.ccs CWT claim sets); the responder holds the server's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.errors import MeasurementError

C_R = b"\x27"  # the responder's connection identifier -8 (as RFC 9529 trace 2)
REPLY = b"21.5 C"
PATH = ("temp",)


def _oscore_context(master_secret: bytes, master_salt: bytes, sender_id: bytes, recipient_id: bytes) -> Any:
    """A server-side OSCORE context (AES-CCM-16-64-128, HKDF-SHA-256, no ID Context) built from the
    EDHOC exporter's output, as aiocoap's EDHOC contexts derive it."""
    from aiocoap import oscore  # reason: optional 'protocols' extra

    class Ctx(oscore.CanProtect, oscore.CanUnprotect, oscore.SecurityContextUtils):  # type: ignore[misc]  # aiocoap ships no type information
        def post_seqnoincrease(self) -> None:  # not persisted
            pass

    c = Ctx()
    c.alg_aead = oscore.algorithms["AES-CCM-16-64-128"]
    c.hashfun = oscore.hashfunctions["sha256"]
    c.id_context = None
    c.sender_id, c.recipient_id = sender_id, recipient_id
    c.recipient_replay_window = oscore.ReplayWindow(32, lambda: None)
    c.recipient_replay_window.initialize_empty()
    c.derive_keys(master_salt, master_secret)
    c.sender_sequence_number = 0
    return c


class Responder:
    """One EDHOC session at a time: message_1 -> message_2, message_3 (verified), then the OSCORE
    request -> its protected response. Any failure is a MeasurementError naming the step."""

    def __init__(self, keys: Path, cred_style: str = "kid") -> None:
        import cbor2  # reason: optional 'protocols' extra
        import lakers  # reason: optional 'protocols' extra

        d = Path(keys)
        key = cbor2.loads((d / "server.key").read_bytes())
        self._r = key[-4]
        self._cred_r = cbor2.dumps(cbor2.loads((d / "server.ccs").read_bytes())[14], canonical=True)
        self._cred_i = cbor2.dumps(cbor2.loads((d / "client.ccs").read_bytes())[14], canonical=True)
        self._transfer = (
            lakers.CredentialTransfer.ByReference if cred_style == "kid" else lakers.CredentialTransfer.ByValue
        )
        self._res: Any = None  # lakers' EdhocResponder of the session (no type information)
        self._c_i = b""
        self._ctx: Any = None  # the OSCORE context once the handshake completed
        self.library = f"lakers-python {getattr(lakers, '__version__', '0.6')} (responder), aiocoap OSCORE (server)"

    def message_2(self, m1: bytes) -> bytes:
        import lakers  # reason: optional 'protocols' extra

        self._ctx = None
        try:
            self._res = lakers.EdhocResponder(self._r, self._cred_r)
            self._c_i, _ead_1 = self._res.process_message_1(m1)
            return bytes(self._res.prepare_message_2(self._transfer, C_R, None))
        except Exception as exc:  # noqa: BLE001 - lakers raises its own error types for a bad message
            raise MeasurementError(f"the responder refused message_1: {exc}") from None

    def message_3(self, m3: bytes) -> None:
        import lakers  # reason: optional 'protocols' extra

        if self._res is None:
            raise MeasurementError("message_3 before message_1")
        try:
            id_cred_i, _ead_3 = self._res.parse_message_3(m3)
            self._res.verify_message_3(lakers.credential_check_or_fetch(id_cred_i, self._cred_i))
            self._res.completed_without_message_4()
            secret = bytes(self._res.edhoc_exporter(0, [], 16))
            salt = bytes(self._res.edhoc_exporter(1, [], 8))
        except Exception as exc:  # noqa: BLE001
            raise MeasurementError(f"the responder refused message_3: {exc}") from None
        try:  # RFC 9528 Appendix A.1: the responder's OSCORE Sender ID is C_I, its Recipient ID C_R
            self._ctx = _oscore_context(secret, salt, bytes(self._c_i), C_R)
        except Exception as exc:  # noqa: BLE001 -- aiocoap's key derivation: a failed handshake, not the run's end
            raise MeasurementError(f"the responder could not derive the OSCORE context: {exc}") from None

    def response(self, request: bytes) -> bytes:
        """The protected response to the guest's protected GET /temp (2.05 Content, REPLY)."""
        import aiocoap  # reason: optional 'protocols' extra

        if self._ctx is None:
            raise MeasurementError("an OSCORE request before the EDHOC handshake completed")
        try:
            outer = aiocoap.Message.decode(request)
            inner, request_id = self._ctx.unprotect(outer)
        except Exception as exc:  # noqa: BLE001 - aiocoap's decode and OSCORE errors
            raise MeasurementError(f"the OSCORE request did not verify: {exc}") from None
        if inner.code != aiocoap.GET or tuple(inner.opt.uri_path) != PATH:
            raise MeasurementError(f"unexpected inner request {inner.code} {'/'.join(inner.opt.uri_path)}")
        reply, _ = self._ctx.protect(aiocoap.Message(code=aiocoap.CONTENT, payload=REPLY), request_id)
        reply.mtype, reply.mid, reply.token = aiocoap.ACK, outer.mid, outer.token
        return bytes(reply.encode())
