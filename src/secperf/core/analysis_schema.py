"""The analysis tables a reader draws (a plan's matrix, a fleet's storms, a what-if's tables) as
models: each table and its rows are records (core/record.py), so a version-3 Result holding a key
none of them declares is refused with the key's path (core/result_schema.undeclared_key walks them),
and readers take their fields as attributes (`doc.analysis.plan.patterns[0].verdict`).

Their writers build plain dicts (plan/planner.py, model/fleet.simulate, app/whatif.py) and assign
them to `doc.analysis`; validation on assignment turns them into these models. The objects inside a
row whose shape varies per protocol, measure or model (a pattern's inputs and numbers, a storm's
time series) stay open bags, documented where they are written. Keys are
declared in the order their writers write them, so a file reads and writes back unchanged."""

from __future__ import annotations

from typing import Any

from .record import FiniteFloat, _Record

__all__ = [
    "ANALYSIS_WHAT",
    "CostRow",
    "CostTableAnalysis",
    "FleetAnalysis",
    "FleetRun",
    "PlanAnalysis",
    "PlanPattern",
    "SecurityCostLine",
    "SecurityCostTable",
    "TornadoRow",
    "VerifyRow",
    "WhatifAnalysis",
]

Obj = dict[str, Any]  # an open bag: its keys are its writer's, documented there


class PlanPattern(_Record):
    """One communication pattern's verdict (plan/planner.py `plan_pattern`): what it is and where it
    comes from, its inputs and requirements, the power figures, its numbers before and after each
    measure and the best combination, the verdict with its reason, what security adds, the measures
    ranked and the alert thresholds; n draws with seed."""

    pattern: str
    description: str | None = None
    source: str | None = None
    inputs: Obj | None = None
    requirements: Obj | None = None
    power: Obj | None = None
    before: Obj | None = None
    measures: list[Obj] | None = None
    not_applicable: Obj | None = None
    best: Obj | None = None
    combinations: list[Obj] | None = None
    shown_combinations: Obj | None = None
    verdict: str | None = None
    verdict_reason: str | None = None
    deciding_requirement: str | None = None
    moving_measure: str | None = None
    pattern_breaks: list[Obj] | None = None
    without_security: Obj | None = None
    security_adds: list[Obj] | None = None
    deciding: list[Obj] | None = None
    ranking: list[Obj] | None = None
    alerts: list[Obj] | None = None
    n: int | None = None
    seed: int | None = None


class VerifyRow(_Record):
    """One row of plan --verify (app/plan_verify.verify): the pattern, measure, row and link it belongs
    to and, when it was measured, the key used, the series, the predicted and measured P50 (ms), the
    prediction's error as a share of the measurement and the counted connections; else a note why not."""

    pattern: str
    measure: str
    row: str
    network: str
    key: str | None = None
    series: str | None = None
    predicted_p50_ms: FiniteFloat | None = None
    measured_p50_ms: FiniteFloat | None = None
    error_share: FiniteFloat | None = None
    n: int | None = None
    note: str = ""


class PlanAnalysis(_Record):
    """A plan's matrix (app/plan.py): one row per pattern, the rule the verdicts follow, and
    `--verify`'s measured rows (app/plan_verify.py) when asked for."""

    patterns: list[PlanPattern] = []
    rule: str | None = None
    verify: list[VerifyRow] | None = None


class FleetRun(_Record):
    """One reconnect storm of the fleet model (model/fleet.simulate) for a fleet size and a policy:
    the model's inputs, its assumptions, when all devices are back, how many came back, gave up or
    failed an attempt, SYN drops, completed handshakes the full accept queue turned away
    (ack_overflows) and how those attempts ended (the client's time-out, the server's reset), the
    accept queue, the wait percentiles, the peak queue and the storm's time series; `key` and
    `capacity_warning` when the run names a server key (app/server.py)."""

    model: Obj | None = None
    assumptions: str | None = None
    time_all_back_s: FiniteFloat | None = None
    devices_back: FiniteFloat | None = None
    gave_up: FiniteFloat | None = None
    failed_attempts: FiniteFloat | None = None
    syn_drops: FiniteFloat | None = None
    ack_overflows: FiniteFloat | None = None
    ack_timed_out: FiniteFloat | None = None
    ack_reset: FiniteFloat | None = None
    accept_queue: int | None = None
    wait_s: dict[str, FiniteFloat | None] | None = None
    peak_queue: FiniteFloat | None = None
    series: dict[str, list[FiniteFloat]] | None = None
    key: str | None = None
    capacity_warning: str | None = None


class FleetAnalysis(_Record):
    """A fleet's storms (app/server.py, server_target.py, cluster_*.py): where the server's capacity
    comes from, one run per fleet size and policy, the warnings on that capacity, and a --replay's
    measured storms beside their model (app/server_replay.replay_compare, or why one failed)."""

    capacity_source: str | None = None
    runs: list[FleetRun] = []
    warnings: list[str] | None = None
    replays: list[Obj] | None = None


class CostRow(_Record):
    """One operation of a cost table (model/costs.CostTable.rows): which party pays it (client, server or
    both), the operation's name, its time in µs and where the figure comes from. A figure stored as a
    whole number stays one (an older file writes back unchanged)."""

    party: str
    op: str
    us: int | FiniteFloat
    source: str


class CostTableAnalysis(_Record):
    """The cost table a what-if predicted from (model/costs.CostTable): its name, source and
    description, its rows (per operation, as `CostTable.rows` writes them) and, for a device's table,
    the stack and library per protocol (`mixed` says how they differ)."""

    name: str | None = None
    source: str | None = None
    description: str | None = None
    rows: list[CostRow] = []
    stack: str | None = None
    library: str | None = None
    libraries: dict[str, str | None] | None = None
    stacks: dict[str, str | None] | None = None
    mixed: str | None = None


class TornadoRow(_Record):
    """One swept input of a what-if's tornado (sim/sweep.tornado): the input, the values giving the lowest
    and the highest P95 (as the sweep wrote them: a number or a name) with those P95s, and their swing."""

    input: str
    low_value: int | FiniteFloat | str
    low_us: FiniteFloat
    high_value: int | FiniteFloat | str
    high_us: FiniteFloat
    swing_us: FiniteFloat


class SecurityCostLine(_Record):
    """One --baseline row's summary: the what-if series it belongs to and what security adds, in a line."""

    series: str
    line: str


class SecurityCostTable(_Record):
    """What security adds over a --baseline what-if (app/whatif.py): one line per row, the exchange each
    protocol is compared with (without security), and the rule the figures follow."""

    rows: list[SecurityCostLine] = []
    without_security: dict[str, str] | None = None
    rule: str | None = None


class WhatifAnalysis(_Record):
    """A what-if's tables (app/whatif.py `add_whatif`): the cost table, the sweep's tornado and the
    sweep itself, the end point the times run to, and when asked for, what security adds per row
    (--baseline), the operations a device count could not cover, and study S1's per-message estimate."""

    cost_table: CostTableAnalysis | None = None
    tornado: list[TornadoRow] | None = None
    sweep: Obj | None = None
    end_point: str | None = None
    end_point_description: str | None = None
    security_cost: SecurityCostTable | None = None
    not_counted: Obj | None = None
    s1: Obj | None = None


# what each record is, in a reader's words (a refused key names the record it is not a field of)
ANALYSIS_WHAT: dict[type[_Record], str] = {
    PlanAnalysis: "a plan's analysis",
    PlanPattern: "a plan's pattern row",
    FleetAnalysis: "a fleet's analysis",
    FleetRun: "a fleet's storm run",
    WhatifAnalysis: "a what-if's analysis",
    CostTableAnalysis: "a what-if's cost table",
    CostRow: "a cost table's row",
    SecurityCostTable: "a what-if's security cost",
    SecurityCostLine: "a what-if's security cost row",
    TornadoRow: "a what-if's tornado row",
    VerifyRow: "a plan --verify row",
}
