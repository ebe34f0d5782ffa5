"""What `secperf plan` is asked: one object the command builds from its options (or a system file)
and app/plan.py and app/plan_verify.py both read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..inputs.devices import DeviceChoice
    from ..inputs.netspec import NetSpec
    from ..inputs.patterns import Pattern
    from ..inputs.se_profiles import Profile as SEProfile


@dataclass
class PlanOptions:
    patterns: list[str]
    device: str | None = None
    se: str | None = None  # the client key: software | se:PROFILE[:cold] (`--key`; old `--se`)
    network: str | None = None
    radio: str | None = None
    n: int = 20_000
    seed: int = 1
    verify: bool = False
    verify_n: int = 10
    max_hours: float | None = None  # --max-hours: the limit of --verify's estimate (app/bounds.py)
    json: bool = False
    out: str = "results"
    no_report: bool = False
    metrics: str | None = None
    csv: str | None = None  # --csv FILE: every number in tidy long format (report/export.py)
    cluster: str | None = None  # --cluster: each pattern's judgement as a Ray task (app/cluster.py)
    command: list[str] = field(default_factory=lambda: ["secperf", "plan"])
    system: str | None = None  # the --system file the inputs came from
    resolved: list[Pattern] = field(default_factory=list)  # patterns made from a --system file (spec.system.pattern)
    stack: str | None = None  # the system file's [device].stack and .config, for the planner's
    config: str | None = None  # device costs (passed on when plan.planner.Overrides takes them)
    stack_from: str | None = None  # the system file's key --stack came from (a preference there)
    config_from: str | None = None  # ... and --config's
    host_costs: str | None = None  # --host-costs: this host's side measured (default) or shipped (app/host_costs.py)
    # the --system file's [network].link and [security].key as its reader resolved them (LoadedSystem),
    # when the command line did not override them: app/plan hands them on instead of resolving
    # `network` and `se` again
    link: NetSpec | None = None
    key_profile: SEProfile | None = None
    device_choice: DeviceChoice | None = None  # ... and its [device].core (inputs.devices.choose_device)
