"""What the storm's model takes of the user's own broker (`mqtt-load --target`, or `--system FILE` with
a [server] table; `fleet --replay --target` takes the accept rate alike), and where each figure comes from:

- the listen backlog: [server].backlog of the system file, or an assumption (clients + 64: every client
  queued) that the record names as one; mosquitto started here has its own (100, in its code);
- the accept rate: [server].accept_per_s of the system file, or the accept-rate probe against the
  target before the load (measure/accept_probe.py: a lower bound, since a remote accept queue cannot
  be read); without either (the probe got no answer) fleet's assumed 20,000/s, said so."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..measure.accept_probe import probe_accept_rate

if TYPE_CHECKING:
    from ..measure.mqtt_load import MqttLoadConfig
    from ..measure.server_target import LoadTarget

FROM_FILE = "[server].{key} of the --system file"
PROBED = (
    "measured from here before the load: a lower bound (accept_probe: the pace of the target's answers "
    "to bursts of connects; its accept queue cannot be read from here)"
)
LOCAL = "measured: bursts of TCP connects into the idle broker's accept queue (accept_rate)"


def target_accept(lt: LoadTarget, given: float | None, backlog: int | None) -> dict[str, Any]:
    """The target's accept rate for a storm model (mqtt-load, fleet --replay), before the run: the
    system file's [server].accept_per_s (`given`), else probed (bursts below `backlog` when known; a
    refusal is exit 2 naming the target before a run directory exists)."""
    if given is not None:
        return {"accept_per_s": float(given), "from": FROM_FILE.format(key="accept_per_s")}
    return {**probe_accept_rate(lt.addr, lt.port, lt.name, backlog=backlog), "from": PROBED}


def target_inputs(lt: LoadTarget, target: dict[str, Any]) -> dict[str, Any]:
    """mqtt-load's: the target's backlog as the file gives it (None: not known) and its accept rate."""
    backlog = target.get("backlog")
    return {"backlog": backlog, "accept_rate": target_accept(lt, target.get("accept_per_s"), backlog)}


def model_backlog(c: MqttLoadConfig, m: dict[str, Any], local_backlog: int) -> tuple[int, str]:
    """The listen backlog the storm's model takes, and where it comes from."""
    if not m.get("target"):
        return local_backlog, f"mosquitto started here: listen(2) backlog {local_backlog} in its code"
    b = (m.get("target_inputs") or {}).get("backlog")
    if b:
        return int(b), FROM_FILE.format(key="backlog")
    return c.clients + 64, (
        "assumed: clients + 64 (every client queued), the target's backlog is not known; give "
        "[server].backlog in a --system file (`ss -ltn` on the server shows it as the listening socket's Send-Q)"
    )


def accept_from(m: dict[str, Any]) -> str:
    """Where the storm model's accept rate comes from (the measured dict's accept_rate)."""
    acc = m.get("accept_rate") or {}
    if acc.get("accept_per_s"):
        return str(acc.get("from") or LOCAL)
    why = acc.get("why_none")
    return "assumed (fleet's model default): no measured accept rate" + (f" (the probe: {why})" if why else "")
