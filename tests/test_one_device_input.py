"""Issue 44: --device chosen once at the inputs layer (inputs.devices.choose_device: a cost table, which
takes precedence over a core of the same name, else an emulated core) and shared by whatif, plan, plan
--verify and the system file's reader; the model's vocabulary asked once for a prediction
(flights.context: the tables, the resolved scenarios and their flight models)."""

from __future__ import annotations

from pathlib import Path

import pytest

from secperf.app import plan as PA
from secperf.app import plan_verify as PV
from secperf.app import whatif as W
from secperf.app import whatif_options as WO
from secperf.core.errors import InputError
from secperf.inputs import devices as D
from secperf.inputs.core_profiles import Core
from secperf.inputs.system import load_system, pattern
from secperf.model import flights as F

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "stm32l4-nbiot-mqtt.toml"


def test_a_cost_table_takes_precedence_over_a_core_of_the_same_name(monkeypatch):
    ch = D.choose_device("cortex-m4-80")
    assert isinstance(ch.core, Core) and not ch.table and ch.name == "cortex-m4-80"
    assert D.choose_device("host-default").table and D.choose_device("host-default").core is None
    tables = D.cost_tables()
    monkeypatch.setattr(D, "cost_tables", lambda: (*tables, "cortex-m4-80"))
    ch = D.choose_device("cortex-m4-80")
    assert ch.table and ch.core is None
    # whatif and plan take the same answer from the same resolver
    assert W.device_input(WO.WhatifOptions(["mqtt"], device="cortex-m4-80")).table
    assert PA._devices(PA.PlanOptions(patterns=[], device="cortex-m4-80"), [])[""].table


def test_an_old_spelling_is_mapped_and_an_unknown_name_names_the_cores_and_the_tables():
    old, new = next(iter(D.DEVICE_ALIASES.items()))
    assert D.choose_device(old).name == new and D.choose_device(old).core is not None
    assert D.choose_device(None).name is None and D.choose_device(None).known
    bad = D.choose_device("pdp-11")
    assert not bad.known and bad.core is None and not bad.table
    msg = str(bad.unknown())
    assert "'pdp-11'" in msg and "emulated cores: " in msg and "cortex-m4-80" in msg and "host-default" in msg
    with pytest.raises(InputError, match="unknown device 'pdp-11'"):
        W.cost_table(WO.WhatifOptions(["mqtt"], device="pdp-11", host_costs="shipped"))


def test_the_system_files_device_is_chosen_while_it_is_read_and_taken_by_whatif_and_plan(monkeypatch):
    ls = load_system(EXAMPLE)
    assert ls.device is not None and ls.device.name == ls.system.device.core
    assert isinstance(ls.device.core, Core)

    def again(name):
        raise AssertionError(f"--device {name} chosen again")

    monkeypatch.setattr(D, "choose_device", again)
    dev = W.device_input(WO.WhatifOptions(["mqtt"], device=ls.system.device.core, device_choice=ls.device))
    assert dev.choice is ls.device and dev.core is ls.device.core
    o = PA.PlanOptions(
        patterns=[pattern(ls).name], device=ls.system.device.core, resolved=[pattern(ls)], device_choice=ls.device
    )
    devices = PA._devices(o, [pattern(ls)])
    assert all(ch is ls.device for ch in devices.values()) and devices


def test_plan_verify_looks_each_name_up_once_per_run(monkeypatch):
    from secperf.inputs import netspec as NS
    from secperf.inputs import se_profiles as SE

    calls = {"profiles": 0, "link": 0, "device": 0}
    real_profiles, real_links, real_choose = SE.profiles_with, NS.parse_networks, D.choose_device

    def count(what, real):
        def f(*a, **k):
            calls[what] += 1
            return real(*a, **k)

        return f

    # patched where plan_verify reads them (its names are bound at its import) and at their source
    for mod, name, what, real in (
        (SE, "profiles_with", "profiles", real_profiles),
        (PV, "profiles_with", "profiles", real_profiles),
        (NS, "parse_networks", "link", real_links),
        (D, "choose_device", "device", real_choose),
        (PV, "choose_device", "device", real_choose),
    ):
        monkeypatch.setattr(mod, name, count(what, real))
    inputs = PV.RowInputs()
    args = ("mqtt", "full", "se:iot-safe-sim", "nb-iot", 500, 1, "cortex-m4-80")
    first = PV.predicted_p50_ms(*args, inputs=inputs)
    assert PV.predicted_p50_ms(*args, inputs=inputs) == first
    assert PV.predicted_p50_ms("mqtt", "resumed", *args[2:], inputs=inputs) > 0
    assert inputs.profiles() is inputs.profiles()
    assert calls == {"profiles": 1, "link": 1, "device": 1}
    # the same prediction as a fresh look-up (no inputs given)
    assert PV.predicted_p50_ms(*args) == first
    with pytest.raises(InputError, match="unknown secure-element profile 'nosuch'"):
        inputs.se("nosuch")


def test_the_models_vocabulary_is_asked_once_for_the_scenarios():
    scs = [F.Scenario("mqtt"), F.Scenario("https", "resumed"), F.Scenario("mqtt", "nosuch")]
    ctx = F.context(scs, ["x25519"], ["ecdsa-p256"])
    assert ctx.given == tuple(scs) and ctx.resolved == tuple(s.resolved() for s in scs)
    assert "x25519" in ctx.groups and "ecdsa-p256" in ctx.key_types
    for r in ctx.resolved[:2]:
        assert ctx.models[r] == F.build(r)
    assert ctx.resolved[2] not in ctx.models  # refused by the model: build() says why
    with pytest.raises(F.ModelError, match="--group: unknown group 'nosuch'"):
        F.context(scs, ["nosuch"])
    with pytest.raises(F.ModelError, match="--server-cert: unknown key type 'nosuch'"):
        F.context(scs, [], ["nosuch"])


def test_the_whatif_options_keep_their_errors_order():
    """A bad group is said before a bad key or handshake, as before the model's checks moved into one call."""
    with pytest.raises(InputError, match="--group: unknown group"):
        WO.scenarios(WO.WhatifOptions(["mqtt"], groups=["nosuch"], handshakes=["nosuch"], keys=["se:nosuch"]))
    with pytest.raises(InputError, match="--server-cert: unknown key type"):
        WO.scenarios(WO.WhatifOptions(["mqtt"], certs=["nosuch"], keys=["se:nosuch"]))
    with pytest.raises(InputError, match="--key: unknown secure-element profile 'nosuch'"):
        WO.scenarios(WO.WhatifOptions(["mqtt"], keys=["se:nosuch"], handshakes=["nosuch"]))
    with pytest.raises(InputError, match="--handshake: mqtt has no nosuch"):
        WO.scenarios(WO.WhatifOptions(["mqtt"], handshakes=["nosuch"]))
    o = WO.WhatifOptions(["mqtt"], s1=True, baseline=True, keys=["se:iot-safe-sim"])
    ctx = WO.context(o, counted=True)
    assert list(ctx.given) == WO.count_scenarios(o)
    assert {(s.handshake, s.key) for s in ctx.given} == {
        ("full", "se:iot-safe-sim"),
        ("psk-dhe", "se:iot-safe-sim"),
        ("full", "software"),
        ("psk-dhe", "software"),
    }


def test_the_tls13_exchanges_carry_the_servers_session_tickets():
    for proto, hs, n in (("mqtt", "full", 2), ("https", "full", 2), ("https", "resumed", 1), ("tls1.3", "full", 0)):
        s = F.Scenario(proto, hs).resolved()
        back = F.build(s).exchanges[-1].back
        assert back is not None
        tickets = [b for name, b in back.msgs if name == "NewSessionTicket"]
        assert tickets == [F.NST13 + F.ticket_growth(s)] * n, (proto, hs)
        if n:
            assert back.msgs[0][0] == "NewSessionTicket"


def test_a_scenario_reads_the_profile_catalogue_once(tmp_path, monkeypatch):
    """[signer] and [jwt] are checked and run from one read of the profiles (app/scenario reads it and
    hands it to inputs/scenario's checks), not one read per section and one more for the phases."""
    from secperf.app import phases
    from secperf.app import scenario as AS
    from secperf.app.options import MeasureOptions
    from secperf.inputs import scenario as SCI
    from secperf.inputs import se_profiles as SE

    path = tmp_path / "s.toml"
    path.write_text(
        'name = "t"\n[signer]\nprofiles = ["iot-safe-sim"]\n[jwt]\nprofiles = ["iot-safe-sim"]\nnetworks = ["loopback"]\n'
    )
    reads = []
    real = SE.load_profiles
    counted = lambda *a: reads.append(a) or real(*a)  # noqa: E731
    monkeypatch.setattr(SE, "load_profiles", counted)
    monkeypatch.setattr(AS, "load_profiles", counted)  # where app/scenario reads it (bound at its import)
    monkeypatch.setattr(SCI, "load_profiles", counted)  # and inputs/scenario

    class Stop(Exception):
        pass

    def stop(profiles, *_a, **_k):
        assert [p.name for p in profiles] == ["iot-safe-sim"]
        raise Stop

    monkeypatch.setattr(phases, "signer_phase", stop)
    with pytest.raises(Stop):
        AS.run_scenario(str(path), MeasureOptions(), None)  # type: ignore[arg-type]
    assert len(reads) == 1
