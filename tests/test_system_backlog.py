"""The listen backlog of the user's server as a system-file key ([server].backlog): validated (bad
values exit 2 naming the key), carried by `--system` into `fleet --replay`'s options, and taken by the
replay's model instead of the assumed max(512, clients + 64), with where the figure came from."""

from __future__ import annotations

import pytest

from conftest import run_cli
from secperf.app.server_plan import FleetOptions, replay_backlog, replay_compare
from secperf.cli import build_parser
from secperf.core.errors import InputError
from secperf.inputs import system as S

SYSTEM = """name = "gw"
[device]
core = "host-default"
[network]
link = "lte-m"
[protocol]
name = "mqtt"
[server]
target = "127.0.0.1:1"
"""


def _storm(clients: int) -> dict:
    st = {"time_all_back_s": 9.0, "wait_p50_s": 3.0, "wait_p90_s": 6.0, "wait_p99_s": 8.5, "back": clients}
    return {"clients": clients, "storm": st, "capacity_per_s": 150.0, "server_cpu_s": None, "intervals": []}


def test_the_backlog_key_is_read_and_its_bounds_are_checked():
    ok = S.validate_system({**_raw(), "server": {"target": "127.0.0.1:1", "backlog": 128}})
    assert ok.server is not None and ok.server.backlog == 128
    none = S.validate_system({**_raw(), "server": {"target": "127.0.0.1:1"}})
    assert none.server is not None and none.server.backlog is None
    assert "backlog" in S.json_schema()["$defs"]["ServerSection"]["properties"]


@pytest.mark.parametrize("value", [0, -5, 1.5, "100", True, 10_000_001])
def test_a_bad_backlog_is_named(value):
    with pytest.raises(InputError, match=r"\[server\]\.backlog"):
        S.validate_system({**_raw(), "server": {"target": "127.0.0.1:1", "backlog": value}})


@pytest.mark.parametrize("value", ["0", "-1", "2.5", '"lots"', "20000000"])
def test_fleet_with_a_bad_backlog_in_the_file_exits_2_naming_it(value, tmp_path):
    f = tmp_path / "sys.toml"
    f.write_text(SYSTEM + f"backlog = {value}\n")
    p = run_cli("fleet", "--replay", "100", "--system", str(f), "--out", str(tmp_path / "o"))
    assert p.returncode == 2, p.stderr[-800:]
    assert "[server].backlog" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "o").exists()


def test_the_file_carries_the_backlog_to_the_fleet_options(tmp_path):
    from secperf.subcommands.server import _from_system

    f = tmp_path / "sys.toml"
    f.write_text(SYSTEM + "backlog = 128\n")
    args = build_parser().parse_args(["fleet", "--replay", "100", "--system", str(f)])
    _from_system(args)
    assert args.target == "127.0.0.1:1" and args.target_backlog == 128
    f.write_text(SYSTEM)
    args = build_parser().parse_args(["fleet", "--replay", "100", "--system", str(f)])
    _from_system(args)
    assert getattr(args, "target_backlog", None) is None


def test_the_replay_model_takes_the_targets_backlog_and_says_where_it_came_from():
    target = object()  # any target: replay_compare reads only whether there is one
    given = FleetOptions(target=target, target_backlog=8, timeout_s=2.0, base_s=0.5, cap_s=8.0, horizon_s=300.0)
    assumed = FleetOptions(target=target, timeout_s=2.0, base_s=0.5, cap_s=8.0, horizon_s=300.0)
    here = FleetOptions(timeout_s=30.0, base_s=0.5, cap_s=8.0, horizon_s=300.0)
    assert replay_backlog(given, 1000) == (8, "[server].backlog of the --system file")
    b, why = replay_backlog(assumed, 1000)
    assert b == 1064 and why.startswith("assumed")
    assert replay_backlog(here, 100)[0] == 512 and "nginx started by secperf" in replay_backlog(here, 100)[1]
    r_given = replay_compare(given, "exponential", _storm(1000))
    r_assumed = replay_compare(assumed, "exponential", _storm(1000))
    assert r_given["backlog"] == 8 and r_assumed["backlog"] == 1064
    assert r_given["backlog_from"].startswith("[server].backlog")
    # 1,000 clients against a queue of 8 at 150/s with a 2 s timeout: the retries find the queue full
    # and SYNs are dropped; with every client queued none are
    g, a = r_given["models"]["late work dropped"], r_assumed["models"]["late work dropped"]
    assert g["syn_drops"] > 0 and a["syn_drops"] == 0
    assert g["time_all_back_s"] > a["time_all_back_s"]


def _raw() -> dict:
    import tomllib

    raw = tomllib.loads(SYSTEM)
    raw.pop("server")
    return raw
