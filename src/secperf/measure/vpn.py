"""TLS VPN connection establishment (study S2's "OpenVPN: tunnel up"): an OpenVPN 2.6 client in a
device namespace connects to an OpenVPN server (TLS server mode) in a server namespace, with mutual
TLS; the client key is in software, in the lab token (SoftHSM2 behind the secure-element shim with
no added delay) or behind a secure-element profile.

Timer: OpenVPN's own log timestamps (µs), from the client's first socket/link line to
"Initialization Sequence Completed" (tunnel up). Process start-up (spawn → first log line) and
initialisation (first log line → first socket line: config, PKCS#11 provider and key loading) are
reported separately, never mixed into the establishment time. One OpenVPN client process per run.

Over an emulated link (``link``: a lab/netns.Link, or the command's NetSpec for which one is opened here)
server and client run in the link's namespaces, so every packet crosses its relay; the series then
carries the network (id suffix ``@NETWORK``, labels network_spec / network_rtt_ms), what the link
and the device's kernel counted over the runs (derived.link), and timeouts grown by the link's
round trips (link_counts.link_timeout_ms).
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import result as R
from ..core import stats
from ..core.errors import InputError, InternalError
from ..core.paths import private_dir
from ..core.result_schema import ConnectDerived, LinkedDerived, Series
from ..inputs.netspec import NetSpec
from ..lab import vpn as V
from ..lab.netns import Link
from ..lab.pki import LabPKI
from ..lab.token import LabToken, TokenError
from .link_counts import link_counters, link_timeout_ms
from .probe import find_shim
from .signer import per_call_breakdown, read_log, shim_env

if TYPE_CHECKING:
    from ..inputs.se_profiles import Profile

OVER_S_US = 1_000_000.0
TIMER = {
    "name": "establishment",
    "start": "openvpn client: first socket/link log line",
    "end": "Initialization Sequence Completed",
    "clock": "openvpn log timestamps (µs)",
}
RESUMPTION = (
    "not applicable: OpenVPN's control channel does not resume TLS sessions across restarts "
    "(its OpenSSL context sets SSL_OP_NO_TICKET and SSL_SESS_CACHE_OFF, and each run is a new client "
    "process); checked per run: 'resumed' counts runs whose client log lacks the server-certificate "
    "verification a full handshake has"
)


def parse_key_source(key_source: str, profile_name: str | None = None) -> tuple[str, str | None]:
    """(kind, profile): kind is software, token or se. InputError names what is wrong."""
    if not isinstance(key_source, str) or not key_source:
        raise InputError(f"key_source {key_source!r} must be 'software', 'token' or 'se:<profile>'")
    if key_source == "software":
        if profile_name not in (None, "software"):
            raise InputError(f"key_source 'software' takes no secure-element profile (got {profile_name!r})")
        return "software", None
    if key_source == "token":
        if profile_name not in (None, "softhsm"):
            raise InputError(
                f"key_source 'token' is SoftHSM2 with no added delay (profile 'softhsm'); "
                f"use key_source 'se:{profile_name}' for profile {profile_name!r}"
            )
        return "token", "softhsm"
    if key_source == "se" and profile_name:
        return "se", profile_name
    if key_source.startswith("se:") and key_source[3:]:
        prof = key_source[3:]
        if profile_name not in (None, prof):
            raise InputError(f"key_source {key_source!r} and profile_name {profile_name!r} disagree")
        return "se", prof
    raise InputError(
        f"key_source {key_source!r} must be 'software', 'token' or 'se:<profile>' (e.g. 'se:iot-safe-sim')"
    )


@dataclass(frozen=True)
class VpnParams:
    """What one OpenVPN series measures, as measure_vpn checked it."""

    key_source: str  # software | token | se:PROFILE
    kind: str  # software | token | se
    profile_name: str | None  # the secure-element profile's name (token: softhsm)
    n: int  # counted runs
    warmup: int
    workdir: Path
    seed: int = 1
    proto: str = "udp"  # udp | tcp
    timeout_s: float = 20.0  # per run, before the link's round trips are added
    server_key_type: str = "ecdsa-p256"
    client_cert: Path | None = None  # another software client certificate and key (e.g. one to reject)
    client_key: Path | None = None
    profile: Profile | None = None  # the loaded secure-element profile (token and se sources)


def run_seed(seed: int, i: int) -> int:
    """The shim's seed for run ``i`` (warm-up runs included) of a measurement seeded ``seed``."""
    return (int(seed) * 1_000_003 + i) % (2**63)


def _phase_p50(samples: list[dict[str, Any]]) -> list[dict[str, Any]]:
    order: list[str] = []
    vals: dict[str, list[float]] = {}
    for s in samples:
        for p in s.get("phases") or []:
            if p["phase"] not in vals:
                order.append(p["phase"])
                vals[p["phase"]] = []
            vals[p["phase"]].append(p["us"])
    return [{"phase": name, "p50_us": stats.median(vals[name])} for name in order]


def _median_or_none(xs: list[float | None]) -> float | None:
    got = [x for x in xs if x is not None]
    return stats.median(got) if got else None


def measure_vpn(
    key_source: str,
    n: int,
    warmup: int,
    workdir: Path,
    seed: int = 1,
    profile_name: str | None = None,
    proto: str = "udp",
    timeout_s: float = 20,
    server_key_type: str = "ecdsa-p256",
    client_cert: Path | None = None,
    client_key: Path | None = None,
    link: Link | NetSpec | None = None,
    profile: Profile | None = None,
) -> Series:
    """One Result series ``connect/vpn/openvpn/{key_source}/full``: ``n`` counted runs after
    ``warmup``, each a new OpenVPN client process bringing the tunnel up against one OpenVPN server
    (set up and torn down here, in namespaces created here). Failed runs are failures with a
    reason, never exceptions. ``client_cert``/``client_key``: another software client
    certificate and key (e.g. one the server must reject). Logs are kept in ``workdir`` only if a run failed.
    ``link``: an open lab/netns.Link (not closed here), or the NetSpec the command resolved (app/links)
    for which a Link is opened and closed here, never a link's text (measure/ looks no input up by its
    name); None or a loopback spec: a veth pair of namespaces
    (NetnsPair) created and deleted here. ``profile``: the key source's secure-element profile (the
    token's own, softhsm, for ``token``) as the command resolved it: connect passes it (app/connect
    key_profiles); a token or se key without it is secperf's own slip, never looked up here by name."""
    kind, prof_name = parse_key_source(key_source, profile_name)
    if kind == "se":
        key_source = f"se:{prof_name}"
    if not isinstance(n, int) or n < 1:
        raise InputError(f"n = {n!r}: the number of counted runs must be an integer >= 1")
    if not isinstance(warmup, int) or warmup < 0:
        raise InputError(f"warmup = {warmup!r} must be an integer >= 0")
    if proto not in V.PROTOS:
        raise InputError(f"proto {proto!r} must be one of {', '.join(V.PROTOS)}")
    if not timeout_s or timeout_s <= 0:
        raise InputError(f"timeout_s = {timeout_s!r} must be > 0")
    if (client_cert is None) != (client_key is None) or (client_cert is not None and kind != "software"):
        raise InputError("client_cert and client_key go together, and only with key_source 'software'")
    for what, p in (("client_cert", client_cert), ("client_key", client_key)):
        if p is not None and not Path(p).is_file():
            raise InputError(f"{what} {p} is not a file")
    if server_key_type not in V.SERVER_KEY_TYPES:
        raise InputError(f"server_key_type {server_key_type!r} must be one of {', '.join(V.SERVER_KEY_TYPES)}")
    if profile is not None and profile.name != prof_name:
        raise InputError(f"key source {key_source}: profile {profile.name!r} is another one's")
    if profile is None and kind in ("token", "se"):
        raise InternalError(
            f"internal: key source {key_source}: the secure-element profile {prof_name!r} was not resolved "
            "(the command hands measure_vpn its Profile)"
        )

    if link is not None and not isinstance(link, (Link, NetSpec)):
        raise InternalError(
            f"internal: link {link!r} reached measure_vpn unresolved (the command hands it a NetSpec or a Link)"
        )
    own_link = None
    opened = link if isinstance(link, Link) else None
    if isinstance(link, NetSpec):  # the command's resolved link: the Link is built from it, nothing parsed
        own_link = Link(link, seed=seed)
    V.require_root()
    V.openvpn_exe()
    if own_link is not None:
        opened = own_link.open()  # a Link that fails to open has closed itself
    try:
        vp = VpnParams(
            key_source,
            kind,
            prof_name,
            n,
            warmup,
            Path(workdir),
            seed,
            proto,
            timeout_s,
            server_key_type,
            client_cert,
            client_key,
            profile,
        )
        return _measure(vp, opened if opened is not None and not opened.loopback else None)
    finally:
        if own_link is not None:
            own_link.close()


def _measure(vp: VpnParams, link: Link | None) -> Series:
    kind, prof_name, key_source, n, warmup, proto = vp.kind, vp.profile_name, vp.key_source, vp.n, vp.warmup, vp.proto
    spec = link.spec if link is not None else None
    # over a link every wait grows by ten configured round trips (as a handshake's stages do)
    timeout_s = link_timeout_ms(int(vp.timeout_s * 1000), spec) / 1000
    ping_timeout_s = link_timeout_ms(2000, spec) / 1000

    pki = LabPKI().ensure()
    server_certs = pki.server(vp.server_key_type, 1)
    client_sw = pki.client("ecdsa-p256")

    labels: dict[str, Any] = {
        "protocol": "vpn",
        "client": "openvpn",
        "server": "openvpn",
        "key_source": key_source,
        "handshake": "full",
        "auth": "mtls",
        "transport": proto,
        "tls": None,
        "profile": prof_name,
        "network": "loopback",
    }
    if spec is not None:
        labels.update(
            network=spec.name, network_spec=spec.canonical(), network_rtt_ms=spec.rtt_ms, network_loss=spec.loss
        )
    # as connect's ConnectConfig.label: the tables tell rows over different networks apart by it
    labels["label"] = f"vpn openvpn {key_source} full" + (f" @ {spec.name}" if spec is not None else "")
    s = R.new_series(
        f"connect/vpn/openvpn/{key_source}/full" + (f"@{spec.name}" if spec is not None else ""),
        kind="connect",
        labels=labels,
        timer=dict(TIMER),
    )
    s.derived = ConnectDerived(
        phases_p50_us=[], startup_p50_us=None, init_p50_us=None, se_calls=None, resumed=0, resumption=RESUMPTION
    )
    d = s.derived
    work = private_dir(vp.workdir / f"openvpn-{key_source.replace(':', '-')}-{os.getpid()}-{time.monotonic_ns()}")
    shim_logs: list[Path] = []
    token = None
    iters: list[dict[str, Any]] = []
    tls_seen: list[str] = []
    resumed = 0
    key = None
    if kind == "software":
        key = V.ClientKey(
            "software", cert=Path(vp.client_cert or client_sw.cert), key=Path(vp.client_key or client_sw.key)
        )
    else:
        try:
            token = LabToken(pki=pki).ensure()
            tk = token.key("ecdsa-p256")
            key_env = dict(token.env())
            pid11 = V.pkcs11_id(token.module_path, token.env(), tk["label"])
            key = V.ClientKey("pkcs11", provider=find_shim(), pkcs11_id=pid11, pin_file=token.pin_path, env=key_env)
        except (TokenError, V.VpnError, FileNotFoundError) as exc:
            R.add_failure(s, f"the token key could not be prepared for OpenVPN: {exc}")
    profile = vp.profile
    if token is not None and profile is None:
        raise InputError(f"key_source {key_source}: a token key needs its secure-element profile")
    if key is not None:
        with V.LinkNamespaces(link) if link is not None else V.NetnsPair() as ns:
            server = V.OpenVpnServer(ns, server_certs, client_sw.ca, proto=proto, workdir=work / "server")
            try:
                server.start()
                s.labels["server_address"] = f"{ns.server_ip}:{server.port}"
                d.server_pid = server.proc.pid if server.proc is not None else None
            except V.ServiceError as exc:
                R.add_failure(s, f"OpenVPN server did not start: {exc}")
            try:
                # every run's packets (warm-up runs and tunnel pings included), as handshake rows count theirs
                with link_counters(s.derived_as(LinkedDerived), link if server.proc is not None else None):
                    for i in range(warmup + n if server.proc is not None else 0):
                        counted = i >= warmup
                        run_key = key
                        if token is not None and profile is not None:
                            # each run is a new process that loads the shim afresh: a seed per run, or every
                            # run would draw the same delays
                            env, log = shim_env(
                                token, profile, private_dir(work / "shim" / f"run-{i}"), run_seed(vp.seed, i)
                            )
                            shim_logs.append(log)
                            run_key = replace(key, env={k: env[k] for k in ("SOFTHSM2_CONF", "SECPERF_SE_PROFILE")})
                        sample = _one_run(
                            ns,
                            server,
                            server_certs.ca,
                            run_key,
                            proto,
                            work / f"client-{i}",
                            timeout_s,
                            i - warmup if counted else i,
                            ping_timeout_s,
                        )
                        if sample.get("tls"):
                            tls_seen.append(sample["tls"])
                        if not counted:
                            continue
                        s.samples.append(sample)
                        if sample["ok"]:
                            s.values_us.append(sample["usable_us"])
                            iters.append({"start_ns": sample["start_ns"], "end_ns": sample["end_ns"]})
                            if not sample.get("peer_cert_verified"):
                                resumed += 1
                        else:
                            R.add_failure(s, f"run {sample['i']}: {sample['reason']}")
                if d.link is not None:
                    d.link.runs = warmup + n
            finally:
                server.stop()
    ok = [x for x in s.samples if x["ok"]]
    s.labels["tls"] = tls_seen[-1] if tls_seen else None
    d.phases_p50_us = _phase_p50(ok)
    d.startup_p50_us = _median_or_none([x["startup_us"] for x in s.samples])
    d.init_p50_us = _median_or_none([x["init_us"] for x in s.samples])
    d.resumed = resumed
    d.tunnel_ping_ok = sum(1 for x in s.samples if x.get("tunnel_ping_ok"))
    if token is not None:
        calls = [c for log in shim_logs for c in read_log(log)]
        d.se_calls = per_call_breakdown(iters, calls)
    if s.failures:
        s.labels["logs"] = str(work)
    else:
        shutil.rmtree(work, ignore_errors=True)
    return R.finalize_series(s, OVER_S_US)


def _one_run(
    ns: V.NetnsPair | V.LinkNamespaces,
    server: V.OpenVpnServer,
    server_ca: Path,
    key: V.ClientKey,
    proto: str,
    workdir: Path,
    timeout_s: float,
    i: int,
    ping_timeout_s: float = 2.0,
) -> dict[str, Any]:
    """One client process: connect, check the tunnel with one ping, stop it by PID."""
    client = V.OpenVpnClient(ns, server_ca, key, proto=proto, workdir=workdir)
    sample: dict[str, Any] = {
        "i": i,
        "ok": False,
        "reason": None,
        "usable_us": None,
        "phases": [],
        "startup_us": None,
        "init_us": None,
        "start_ns": None,
        "end_ns": None,
        "tunnel_ping_ok": False,
        "tunnel_ping_rtt_us": None,
        "tls": None,
        "pid": None,
    }
    try:
        run = client.connect(timeout_s, server=server)
        sample.update(start_ns=run.start_ns, end_ns=run.end_ns, pid=run.pid)
        parsed = V.parse_client_log(run.lines, run.spawn_us, run.pin_query_us)
        sample.update(
            startup_us=parsed["startup_us"],
            init_us=parsed["init_us"],
            tls=parsed["tls"],
            peer_cert_verified=parsed["peer_cert_verified"],
        )
        if not run.ok:
            reason = run.reason or "the client failed without a reason"
            server_says = [] if "rejected by the server" in reason else server.recent_errors(run.spawn_us)
            sample["reason"] = reason + (f"; server: {' | '.join(server_says[-3:])}" if server_says else "")
        elif not parsed["ok"]:
            sample["reason"] = f"tunnel up but the client log could not be timed: {parsed['reason']}"
        else:
            sample.update(ok=True, usable_us=parsed["usable_us"], phases=parsed["phases"])
            ping_ok, rtt = ns.ping(V.TUN_SERVER_IP, ping_timeout_s)
            sample.update(tunnel_ping_ok=ping_ok, tunnel_ping_rtt_us=rtt)
            if not ping_ok:
                sample.update(ok=False, reason=f"tunnel up but one ping to {V.TUN_SERVER_IP} through it failed")
    except (OSError, V.VpnError, ValueError) as exc:
        sample["reason"] = f"client could not be run: {exc}"
    finally:
        client.stop()
    if sample["ok"]:
        shutil.rmtree(workdir, ignore_errors=True)
    return sample
