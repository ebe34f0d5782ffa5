"""The TLS VPN lab: OpenVPN 2.6 in TLS server mode and its client, each in a network namespace
that secperf creates and deletes, joined by a veth pair.

Layout (all inside namespaces; nothing touches the host's interfaces or routes)::

    secperf-vpn-<pid>-<n>-srv                     secperf-vpn-<pid>-<n>-dev
      vpn-srv 10.200.0.1/30  <──── veth ────>       vpn-dev 10.200.0.2/30
      tun0    10.201.0.1/24  (openvpn --server)     tun0    10.201.0.x/24 (openvpn --client)

Over an emulated link (``LinkNamespaces(link)``, lab/netns.Link) the same server and client run in
the link's two namespaces instead (server ``link.server_addr`` 10.77.0.2, device 10.77.0.1), so the
control channel, the tunnel and the tunnel ping cross the link's relay with its delay, loss and
rate; the Link creates and deletes those namespaces, not this module.

Why server mode: OpenVPN's point-to-point TLS mode has a built-in step of about one second before
the tunnel comes up; server mode (``--server``, ``--topology subnet``, pushed ifconfig) completes
in milliseconds, which is what a device connecting to a VPN concentrator sees.

Timing comes from OpenVPN's own log: ``--machine-readable-output`` prefixes every line with
``SECONDS.MICROSECONDS FLAGS`` (gettimeofday, i.e. CLOCK_REALTIME, µs resolution), where the plain
``--log`` timestamps have only whole seconds. ``parse_client_log`` turns one client log into the
establishment time (first socket/link line → "Initialization Sequence Completed") and its phases.

PKCS#11 PIN: OpenVPN 2.6 asks for a token PIN only on the console or, with
``--management-query-passwords``, on its management interface. The client is started with
``--management SOCKET unix --management-client``: secperf listens on a unix socket in a private
(0700) directory before the client starts, OpenVPN connects to it, and secperf answers
``>PASSWORD:Need 'LABEL token' password`` with ``password "LABEL token" PIN``, the PIN read from
the token's 0600 file at that moment. The PIN never appears on a command line, in a config file or
in a log (OpenVPN logs the command as ``password [...]``). pkcs11-helper asks for the PIN when the
key is first used, i.e. during the TLS handshake: that wait is its own phase so it can be told
apart from the token's login and signature.

Processes are stopped by their PID; each namespace pair is deleted on exit of its ``with`` block
(also on KeyboardInterrupt) and at interpreter exit. ``sweep_stale()`` deletes pairs whose owner
process (the pid in the name) is gone.

The parts: the namespaces and the lab's errors (vpn_netns), OpenVPN's log (vpn_log), the server
(vpn_server), the client and its PIN (vpn_client). This module names them in one place.
"""

from __future__ import annotations

from .netns import list_namespaces
from .services import ServiceError
from .vpn_client import ClientKey, ClientRun, OpenVpnClient, pkcs11_id
from .vpn_log import DONE_RE, FAIL_RE, PHASES, PIN_PHASES, LogReader, parse_client_log, parse_line
from .vpn_netns import (
    LINK_DEV_IP,
    LINK_SRV_IP,
    PREFIX,
    TUN_SERVER_IP,
    LinkNamespaces,
    NetnsPair,
    VpnConfigError,
    VpnError,
    ping_from,
    require_root,
    sweep_stale,
)
from .vpn_server import PROTOS, SERVER_KEY_TYPES, VPN_PORT, OpenVpnServer, openvpn_exe

__all__ = [
    "DONE_RE",
    "FAIL_RE",
    "LINK_DEV_IP",
    "LINK_SRV_IP",
    "PHASES",
    "PIN_PHASES",
    "PREFIX",
    "PROTOS",
    "SERVER_KEY_TYPES",
    "TUN_SERVER_IP",
    "VPN_PORT",
    "ClientKey",
    "ClientRun",
    "LinkNamespaces",
    "LogReader",
    "NetnsPair",
    "OpenVpnClient",
    "OpenVpnServer",
    "ServiceError",
    "VpnConfigError",
    "VpnError",
    "list_namespaces",
    "openvpn_exe",
    "parse_client_log",
    "parse_line",
    "ping_from",
    "pkcs11_id",
    "require_root",
    "sweep_stale",
]
