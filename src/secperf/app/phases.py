"""Phase builders: for each kind of experiment, the items to measure, their progress labels and
the runner that appends their series to the Result."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import result as R
from ..core.writes import atomic_write
from ..inputs.se_profiles import ProfileError, load_profiles
from ..measure import connect as MC
from ..measure import cortexm as CM
from ..measure import crypto as C
from ..measure import handshake as H
from ..measure import signer as S
from ..measure import stack_host as SH
from .runner import Phase

if TYPE_CHECKING:
    from ..core.result_schema import Result
    from ..core.store import Run
    from ..inputs.algorithms import Row
    from ..inputs.se_profiles import Profile as SEProfile
    from ..measure.connect import ConnectConfig, ConnectParams
    from ..measure.crypto import CryptoParams
    from ..measure.handshake import HandshakeConfig, HandshakeParams
    from ..measure.signer import SignerParams
    from .runner import Progress


def crypto_phase(rows: list[Row], params: CryptoParams) -> Phase:
    return Phase(
        rows,
        lambda r: f"{r.alg.name} {r.op}" + (f" {r.size_bytes} B" if r.alg.bulk else ""),
        lambda items, doc, run, progress: C.run_crypto(items, params, doc, run, progress),
    )


def handshake_phase(configs: list[HandshakeConfig], hp: HandshakeParams, seed: int = 1) -> Phase:
    return Phase(
        configs,
        lambda c: f"{c.label} @ {c.server}" + ("" if c.network == "loopback" else f" / {c.network}"),
        lambda items, doc, run, progress: H.run_handshakes(items, hp, doc, run, progress, seed),
    )


def stack_phase(items: list[Any], hp: HandshakeParams) -> Phase:
    """Handshakes of other client libraries built for this host (measure/stack_host.py)."""

    return Phase(
        items,
        lambda it: f"{it[1].label} @ {it[0]}",
        lambda its, doc, run, progress: SH.run_stacks(its, hp, doc, run, progress),
    )


def se_profiles(names: Iterable[str], known: Mapping[str, SEProfile] | None = None) -> list[SEProfile]:
    """The secure-element profiles a command names, looked up once here (measure takes the objects);
    `known`: the profiles the command already read (not read again)."""

    known = load_profiles() if known is None else known
    for n in names:
        if n not in known:
            raise ProfileError(f"unknown profile {n!r}; known: {', '.join(known)}")
    return [known[n] for n in names]


def signer_phase(profiles: list[SEProfile], keys: list[str], modes: list[str], sp: SignerParams) -> Phase:
    """`profiles`: resolved by the command (se_profiles), not looked up again here."""

    items = [(pr.name, kt, m) for pr in profiles for kt in keys for m in modes]
    return Phase(
        items,
        lambda it: f"{it[0]} {it[1]} {it[2]}",
        lambda _items, doc, run, progress: S.run_signer(profiles, keys, modes, sp, doc, run, progress),
    )


def jwt_phase(
    profiles: list[SEProfile],
    keys: list[str],
    sp: SignerParams,
    lifetime_s: int,
    networks: Iterable[str] = ("loopback",),
    key_sessions: Iterable[str] = ("warm",),
) -> Phase:
    nets, sessions = list(networks), list(key_sessions)
    return Phase(
        S.jwt_items(profiles, keys, nets, sessions),
        S.jwt_item_label,
        lambda _i, doc, run, progress: S.run_jwt(
            profiles, keys, sp, doc, run, progress, lifetime_s, networks=nets, key_sessions=sessions
        ),
    )


def connect_phase(configs: list[ConnectConfig], cp: ConnectParams) -> Phase:
    return Phase(
        configs, lambda c: c.label, lambda items, doc, run, progress: MC.run_connect(items, cp, doc, run, progress)
    )


def cortexm_phase(targets: list[str], table_file: str | None) -> Phase:
    """Instruction counts of the MACs on Cortex-M cores under QEMU; a failure (no emulator, no
    cross compiler) becomes a failed series per target with its reason."""

    def runner(items: list[Any], doc: Result, run: Run, progress: Progress) -> None:
        for t in items:
            progress("start", t, 0, len(items), None)
        try:
            table = CM.measure(tuple(items))
        except CM.CortexMError as exc:
            for t in items:
                s = R.new_series(
                    f"cortexm/{t}",
                    kind="cortexm",
                    labels={"target": t, "note": CM.LABEL},
                    timer={"name": "instructions per tag", "start": "mark", "end": "mark"},
                )
                R.add_failure(s, str(exc))
                doc.series.append(s)
        else:
            doc.series += CM.to_series(table)
            doc.analysis.cortexm = table
            text = json.dumps(table, indent=1, sort_keys=True) + "\n"
            run.write_text("cortexm.json", text)
            if table_file:
                atomic_write(Path(table_file), text, what="--cortexm-table")
        run.save(doc)
        for t in items:
            progress("done", t, 0, len(items), None)

    return Phase(targets, lambda t: f"Cortex-M {t} under QEMU", runner)


def analysis_phase(label: str, key: str, value: object) -> Phase:
    """A phase that only stores a computed analysis (e.g. the CAN bus model) in the Result."""

    def runner(items: list[Any], doc: Result, run: Run, progress: Progress) -> None:
        progress("start", items[0], 0, 1, None)
        setattr(doc.analysis, key, value)  # one of Analysis's fields, named by the phase
        progress("done", items[0], 0, 1, None)

    return Phase([label], lambda x: x, runner)
