"""`secperf run`: a scenario (inputs/scenario.py validates it) turned into measuring phases."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..core import result as R
from ..core.errors import InputError, SecperfError
from ..inputs import scenario as SC
from ..inputs.schema import DeviceSection
from ..inputs.se_profiles import load_profiles
from ..measure import connect as C
from ..measure import handshake as H
from ..measure import signer as S
from ..model import costs
from . import bounds, links
from . import phases as P
from .connect import connect_configs, key_profiles
from .device import HandshakeOptions, handshake_phase
from .options import MeasureOptions, crypto_params, handshake_params
from .runner import Output, Phase, measure_and_write
from .whatif import WhatifOptions, predict_into

if TYPE_CHECKING:
    from ..core.result_schema import Result
    from ..core.store import Run
    from ..inputs.netspec import NetSpec
    from ..inputs.se_profiles import Profile as SEProfile
    from ..measure.handshake import HandshakeConfig
    from .runner import Progress


def handshake_configs(scn: dict[str, Any]) -> list[HandshakeConfig]:
    """[handshake] experiments = [...], servers = [...], networks = [...]: the configurations to
    measure (may be none), each experiment on each server over each network."""

    hs = scn.get("handshake")
    if not hs:
        return []
    SC.check_keys(scn, "handshake", {"experiments", "servers", "n", "warmup", "timeout_ms", "networks"})
    out, seen = [], set()
    nets = SC.networks_setting(scn, "handshake")
    name = scn.get("name", "?")
    for sv, net in ((sv, net) for net in nets for sv in hs.get("servers", ["probe"])):
        if sv not in H.SERVERS:
            raise SC.ScenarioError(
                f"scenario {name}: [handshake] servers: unknown server {sv!r}; known: {', '.join(H.SERVERS)}"
            )
        for exp in hs.get("experiments", []):
            try:
                configs = H.experiment(exp)
            except H.HandshakeError as exc:
                raise SC.ScenarioError(f"scenario {name}: [handshake] experiments: {exc}") from None
            for c in configs:
                c = replace(c, server=sv, network=net)
                if c.series_id not in seen:
                    seen.add(c.series_id)
                    out.append(c)
    return out


def run_scenario(name_or_path: str, opts: MeasureOptions, output: Output) -> Result:
    """Measure everything a scenario names, in one Result; links this machine cannot build are
    skipped with their reason (see links.links_unavailable)."""

    scn = SC.load(name_or_path)
    rows = SC.crypto_rows(scn)
    params = crypto_params(opts, scn.get("crypto") or {})
    phases = [P.crypto_phase(rows, params)] if rows else []
    hs = handshake_configs(scn)
    # the sections' secure-element profiles, read once here: the sections' checks, the estimate and the
    # phases take them

    known = load_profiles() if any(scn.get(s) for s in ("signer", "jwt", "connect")) else {}
    jw = SC.signer_settings(scn, "jwt", known)
    cs = SC.connect_settings(scn)
    skipped = links.links_unavailable(
        [c.network for c in hs] + [*(jw or {}).get("networks", []), *(cs or {}).get("networks", [])]
    )
    if skipped:
        hs = [c for c in hs if c.network not in skipped["networks"]]
        for sec in (jw, cs):
            if sec:
                sec["networks"] = [n for n in sec["networks"] if n not in skipped["networks"]]
        jw = jw if jw and jw["networks"] else None
        cs = cs if cs and cs["networks"] else None
    # the links the sections name, resolved once here: the estimate and the measuring phases take them
    names = [c.network for c in hs] + [*(jw or {}).get("networks", []), *(cs or {}).get("networks", [])]
    specs = {n.name: n for n in links.networks(sorted(set(names)))} if names else {}
    hp = None
    if hs:
        hp = handshake_params(opts, scn.get("handshake", {}))
        hp.links = tuple(specs[c.network] for c in hs if c.network in specs)
        phases.append(P.handshake_phase(hs, hp))
    extra: dict[str, Any] = {"skipped_links": skipped} if skipped else {}
    sg = SC.signer_settings(scn, "signer", known)
    se_names = sorted({*(sg or {}).get("profiles", []), *(jw or {}).get("profiles", [])})
    se = {p.name: p for p in P.se_profiles(se_names, known)}
    if sg:
        sp = S.SignerParams(n=opts.n or sg["n"], warmup=sg["warmup"], seed=opts.seed)
        phases.append(P.signer_phase([se[n] for n in sg["profiles"]], sg["keys"], sg["modes"], sp))
        extra["signer"] = {**sg, **sp.as_dict()}
    if jw:
        jp = S.SignerParams(
            n=opts.n or jw["n"], warmup=jw["warmup"], seed=opts.seed, links=tuple(specs[n] for n in jw["networks"])
        )
        phases.append(
            P.jwt_phase(
                [se[n] for n in jw["profiles"]], jw["keys"], jp, jw["lifetime_s"], jw["networks"], jw["key_sessions"]
            )
        )
        extra["jwt"] = {**jw, **jp.as_dict()}
    if cs:
        try:
            cfgs = connect_configs(
                cs["protocols"],
                cs["keys"],
                cs["handshakes"],
                [],
                ["mtls"],
                networks=cs["networks"],
                key_sessions=cs["key_sessions"],
                profiles=known,
            )
        except SC.ScenarioError:
            raise
        except InputError as exc:  # a name the connect command refuses: say it came from the scenario file
            raise SC.ScenarioError(f"scenario {scn.get('name', name_or_path)}: [connect]: {exc}") from None

        cp = C.ConnectParams(
            n=opts.n or cs["n"],
            warmup=cs["warmup"],
            seed=opts.seed,
            profiles=key_profiles(cfgs, known=known),
            links=tuple(specs[n] for n in cs["networks"]),
        )
        phases.append(P.connect_phase(cfgs, cp))
        extra["connect"] = {**cs, **cp.as_dict()}
    extra.update(_estimate(scn, rows, params, hs, hp, sg, jw, cs, opts, specs, se))  # before any device build or run
    if scn.get("device"):
        phases.append(device_phase(scn["device"]))
        extra["device"] = scn["device"]
    ws = SC.whatif_settings(scn)
    if ws:
        phases.append(whatif_phase(ws, opts.seed))
        extra["whatif"] = ws
    return measure_and_write(
        "run",
        {
            "scenario": scn.get("name", name_or_path),
            "crypto": params.as_dict() if rows else None,
            "handshake": hp.as_dict() if hp else None,
            **extra,
        },
        phases,
        output,
    )


def whatif_phase(ws: dict[str, Any], seed: int) -> Phase:
    """Predictions for the scenario's [whatif] block, calibrated on the rows this run has just
    measured (its loopback crypto, handshake and connect rows), so the report shows each
    prediction next to its measurement; links the run did not measure are predicted only."""

    def runner(items: list[Any], doc: Result, run: Run, progress: Progress) -> None:
        progress("start", items[0], 0, 1, None)
        o = WhatifOptions(
            protocols=ws["protocols"],
            networks=ws["networks"],
            keys=ws["keys"],
            handshakes=ws["handshakes"],
            n=ws["n"],
            seed=seed,
        )
        try:
            table = costs.calibrate(doc, costs.load_table(), where="this run")
            predict_into(doc, o, table)
        except Exception as exc:  # noqa: BLE001 - a prediction that cannot be made is recorded, the run goes on
            s = R.new_series(
                "whatif/calibration",
                kind="whatif",
                labels={"network": "loopback"},
                timer={"name": "prediction", "start": "-", "end": "-"},
            )
            R.add_failure(s, f"no prediction: {exc}")
            doc.series.append(s)
        run.save(doc)
        progress("done", items[0], 0, 1, None)

    return Phase(["what-if predictions"], lambda x: x, runner)


def _estimate(
    scn: dict[str, Any],
    rows: list[Any],
    params: Any,
    hs: list[HandshakeConfig],
    hp: Any,
    sg: dict[str, Any] | None,
    jw: dict[str, Any] | None,
    cs: dict[str, Any] | None,
    opts: MeasureOptions,
    specs: dict[str, NetSpec],
    se: dict[str, SEProfile],
) -> dict[str, float]:
    """The scenario's length, each section by its command's planning figures (app/bounds.py), refused
    over --max-hours like the commands themselves."""

    parts: dict[str, float] = {}
    if rows:
        parts["crypto"] = bounds.crypto_rows_s(rows, params.n, params.warmup, params.duration_s, params.min_sample_us)
    if hs and hp is not None:
        nets = specs
        parts["handshake"] = bounds.estimate_s([(c.proto, nets.get(c.network)) for c in hs], hp.n + hp.warmup + 1)
    if sg:
        n = (opts.n or sg["n"]) + sg["warmup"]
        parts["signer"] = (
            sum(bounds.se_sign_s(se[p]) + 0.01 for p in sg["profiles"]) * len(sg["keys"]) * len(sg["modes"]) * n
        )
    if jw:
        n = (opts.n or jw["n"]) + jw["warmup"]
        per = sum(
            bounds.se_sign_s(se[p]) + bounds.connection_s("https", net)
            for p in jw["profiles"]
            for net in (specs[x] for x in jw["networks"])
        )
        parts["jwt"] = 2 * per * len(jw["keys"]) * len(jw["key_sessions"]) * n
    if cs:
        nets = specs
        per_row = (opts.n or cs["n"]) + cs["warmup"] + 1
        parts["connect"] = (
            sum(bounds.connection_s(p, nets.get(net)) for p in cs["protocols"] for net in cs["networks"])
            * len(cs["keys"])
            * len(cs["handshakes"])
            * len(cs["key_sessions"])
            * per_row
        )
    if scn.get("device"):
        d = DeviceSection.model_validate(scn["device"])
        parts["device"] = bounds.device_handshakes_s(len(d.groups) * len(d.suites), d.n, d.warmup)
    detail = ", ".join(f"{k} {bounds.fmt_s(v)}" for k, v in parts.items()) or "nothing to measure"
    return bounds.check_estimate(
        f"scenario {scn.get('name', '')}".strip(),  # the file's sections are what is too long: named as such
        sum(parts.values()),
        detail,
        "lower --n, or measure fewer sections",
        opts.max_hours_given,
    )


def device_phase(sec: dict[str, Any]) -> Phase:
    """The scenario's [device] comparison. Decision: like links, a device emulator or cross library
    missing on this machine does not fail a scenario that is meant to run anywhere: the rows are
    recorded as failed with the reason (the package to install) and the run goes on."""

    d = DeviceSection.model_validate(sec)
    opts = HandshakeOptions(
        device=d.device, stack=d.stack, group=list(d.groups), suite=list(d.suites), n=d.n, warmup=d.warmup
    )
    try:
        phase, _params = handshake_phase(opts)
        return phase
    except SecperfError as exc:
        if exc.exit_code == 2:
            raise SC.ScenarioError(f"[device]: {exc}") from None
        reason = str(exc)

    def failed(items: list[Any], doc: Result, run: Run, progress: Progress) -> None:
        progress("start", items[0], 0, 1, None)
        s = R.new_series(
            f"device/{d.device}/{d.stack}",
            kind="device",
            labels={"device": d.device, "stack": d.stack},
            timer={"name": "instructions per handshake", "start": "ClientHello", "end": "Finished"},
        )
        R.add_failure(s, f"emulated device unavailable here: {reason}")
        doc.series.append(s)
        run.save(doc)
        progress("done", items[0], 0, 1, None)

    return Phase([f"{d.device} {d.stack}"], lambda x: x, failed)
