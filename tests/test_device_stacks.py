"""Which library counts which protocol on an emulated core (app/device_stacks.py), and the what-if
that costs every protocol from the device's own counts of it: one stack for as many protocols as it
runs, every row naming its stack, a note when they differ, an explicit --stack that lacks a protocol
exiting 2 naming the stacks that have it, a system file's stack a preference (a note, never an error
about an option the user did not give), a comparison of several protocols as one table."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli, skip
from secperf.app import device_stacks as DS
from secperf.core import result as R
from secperf.core.errors import InputError, SetupError


def test_one_protocol_takes_the_first_stack_that_runs_it():
    assert DS.choose("cortex-m4-80", "cortex-m4", ["1.3"]).by_family == {"1.3": "wolfssl"}
    assert DS.choose("cortex-m4-80", "cortex-m4", ["dtls1.3"]).by_family == {"dtls1.3": "wolfssl59"}
    assert DS.choose("cortex-m4-80", "cortex-m4", ["edhoc"]).by_family == {"edhoc": "wolfssl59"}
    assert DS.choose("cortex-a7-800", "armhf", ["quic"]).by_family == {"quic": "ngtcp2"}


def test_a_comparison_reads_one_library_where_one_runs_them_all():
    """TLS 1.3, DTLS 1.2 and DTLS 1.3 all on wolfSSL 5.9 (not TLS on 5.5 next to DTLS 1.3 on 5.9):
    the difference a user reads between the protocols is not a library difference."""
    ch = DS.choose("cortex-m4-80", "cortex-m4", ["1.3", "dtls1.2", "dtls1.3"])
    assert set(ch.by_family.values()) == {"wolfssl59"} and not ch.notes


def test_rows_of_different_libraries_are_said():
    """DTLS 1.3 runs on wolfSSL 5.9 only, EDHOC's initiator on wolfCrypt 5.9 or Mbed TLS 3.6: with
    Mbed TLS asked first, the two protocols' rows come from different libraries, and the note says so."""
    ch = DS.choose("cortex-m4-80", "cortex-m4", ["dtls1.2", "dtls1.3", "edhoc"], ["mbedtls3", "wolfssl59"])
    assert ch.by_family == {"dtls1.2": "mbedtls3", "dtls1.3": "wolfssl59", "edhoc": "mbedtls3"}
    ch = DS.choose("cortex-m4-80", "cortex-m4", ["1.3", "edhoc"])
    assert set(ch.by_family.values()) == {"wolfssl59"} and not ch.notes  # one library runs both
    ch = DS.choose("cortex-a7-800", "armhf", ["1.3", "quic"])
    assert ch.by_family == {"1.3": "wolfssl", "quic": "ngtcp2"}
    assert len(ch.notes) == 1 and "differ in library" in ch.notes[0] and "QUIC on ngtcp2" in ch.notes[0]


def test_an_explicit_stack_without_the_protocol_exits_naming_the_stacks_that_have_it():
    with pytest.raises(InputError) as e:
        DS.choose("cortex-m4-80", "cortex-m4", ["1.3", "dtls1.3"], ["wolfssl"])
    assert "no DTLS 1.3" in str(e.value) and "wolfssl59" in str(e.value)
    # a list in order of preference: each protocol takes the first listed stack that has it
    ch = DS.choose("cortex-m4-80", "cortex-m4", ["1.3", "dtls1.3"], ["wolfssl", "wolfssl59"])
    assert ch.by_family == {"1.3": "wolfssl", "dtls1.3": "wolfssl59"}


def test_a_system_files_stack_is_a_preference_with_a_note():
    ch = DS.choose("cortex-m4-80", "cortex-m4", ["edhoc"], ["wolfssl"], "[device].stack of sys.toml")
    assert ch.by_family == {"edhoc": "wolfssl59"}
    assert any("[device].stack of sys.toml" in n and "EDHOC" in n for n in ch.notes)


def test_a_build_that_does_not_fit_the_stack_is_dropped_from_a_file_and_refused_from_the_command_line():
    notes: list[str] = []
    out = DS.configs(["mbedtls3"], "cortex-m4", ["sp-asm"], "[device].config of sys.toml", notes)
    assert out == {"mbedtls3": None} and any("sp-asm" in n and "[device].config" in n for n in notes)
    with pytest.raises(InputError) as e:
        DS.configs(["mbedtls3"], "cortex-m4", ["sp-asm"], None, [])
    assert "sp-asm" in str(e.value) and "default" in str(e.value)
    # a configuration for one of two stacks: that stack takes it, the other its default, said
    notes = []
    out = DS.configs(["wolfssl59", "mbedtls3"], "cortex-m4", ["sp-small"], None, notes)
    assert out == {"wolfssl59": "sp-small", "mbedtls3": None} and any("mbedtls3" in n for n in notes)


def test_quic_on_a_microcontroller_is_refused_with_the_reason():
    with pytest.raises(InputError) as e:
        DS.choose("cortex-m4-80", "cortex-m4", ["quic"])
    assert "A-profile" in str(e.value)


def test_the_planners_measures_are_optional_families():
    """An explicit --stack without EDHOC: the plan's EDHOC measure is left out with a note (it is then
    listed as not costed), the pattern's own protocol still counted on the stack asked."""
    ch = DS.choose("cortex-m4-80", "cortex-m4", ["dtls1.2", "edhoc"], ["wolfssl"], optional=("edhoc",))
    assert ch.by_family == {"dtls1.2": "wolfssl"} and any("EDHOC" in n for n in ch.notes)


@pytest.mark.slow
@pytest.mark.parametrize("stack", ["wolfssl", "wolfssl59", "mbedtls3"])
def test_declared_families_match_what_the_builds_offer(stack):
    """DECLARED (what lets a prediction avoid building libraries it will not use) against each
    Cortex-M4 build's own --offers answer."""
    from secperf.measure.device_build import ensure_built

    try:
        b = ensure_built(stack, "cortex-m4", None)
    except SetupError as exc:
        skip("needs-bootstrap", f"the {stack} Cortex-M4 build is unavailable: {exc}")
    tls = {f for f in DS.declared(stack, "cortex-m4") if f not in ("edhoc", "quic")}
    assert tls <= set(b.offers.get("tls", ())), (stack, b.offers)


def test_whatif_quic_alone_on_a_microcontroller_exits_2_naming_why(tmp_path):
    p = run_cli("whatif", "quic", "--device", "cortex-m4-80", "--out", str(tmp_path), "--no-report")
    assert p.returncode == 2, p.stderr
    assert "QUIC" in p.stderr and "A-profile" in p.stderr and "Traceback" not in p.stderr


def test_whatif_with_a_stack_lacking_the_protocol_exits_2_naming_the_stacks_that_have_it(tmp_path):
    p = run_cli(
        "whatif", "dtls1.3", "--device", "cortex-m4-80", "--stack", "mbedtls3", "--out", str(tmp_path), "--no-report"
    )
    assert p.returncode == 2, p.stderr
    assert "--stack mbedtls3" in p.stderr and "wolfssl59" in p.stderr


@pytest.mark.slow
def test_whatif_compares_protocols_on_the_device_from_their_own_counts(tmp_path):
    """TLS 1.3, DTLS 1.3, EDHOC and QUIC on a Cortex-M4: one comparison row per protocol, each costed
    from the device's own count of that protocol on the library that ran it (named in the row), a note
    that the libraries differ, QUIC listed with its reason rather than stopping the comparison."""
    p = run_cli(
        "whatif",
        "tls1.3,dtls1.3,edhoc,quic",
        "--device",
        "cortex-m4-80",
        "--network",
        "lte-m",
        "--n",
        "2000",
        "--json",
        "--out",
        str(tmp_path),
        timeout=1800,
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    a = doc["analysis"]["whatif"]
    assert set(a["not_counted"]) == {"quic"} and "A-profile" in a["not_counted"]["quic"]
    # one library counts all three (wolfSSL 5.9: TLS 1.3, DTLS 1.3, and EDHOC's initiator on wolfCrypt)
    assert a["cost_table"]["stacks"] == {"tls1.3": "wolfssl59", "dtls1.3": "wolfssl59", "edhoc": "wolfssl59"}
    assert "mixed" not in a["cost_table"]
    main = {s["labels"]["protocol"]: s for s in doc["series"] if not s["labels"].get("role")}
    assert set(main) == {"tls1.3", "dtls1.3", "edhoc"}
    for proto, s in main.items():
        assert s["labels"]["stack"] == a["cost_table"]["stacks"][proto]
        assert s["derived"]["breakdown_mean_us"]["client_compute"] > 0
        # the client's handshake residual comes from this protocol's own device row
        base = [c for c in s["derived"]["costs"] if c["op"].startswith(f"base:{proto}:") and c["party"] == "client"]
        row = f"device/cortex-m4-80/{s['labels']['stack']}/{proto}/"
        assert base and all(c["source"].startswith(f"residual of {row}") for c in base), base
        assert s["derived"]["security_cost"]["time_p50_us"]["adds"] > 0  # a comparison carries its baseline
    from secperf.report.views.protocols import comparison_rows

    rows = comparison_rows(R.validate(doc))
    assert [r["protocol"] for r in rows] == ["tls1.3", "dtls1.3", "edhoc", "quic"]
    assert rows[-1]["not_counted"] and all(r["library"] for r in rows[:-1])
    assert "which protocol" in p.stderr or "which protocol" in (tmp_path / "latest" / "report.html").read_text()


@pytest.mark.slow
def test_a_system_files_build_that_does_not_fit_the_protocol_is_dropped_with_notes(tmp_path):
    """`whatif edhoc --system` of an MQTT-on-wolfSSL-5.5 file: the file's stack and handshakes belong to
    its own protocol; each is dropped with a note naming the file's key (EDHOC runs on wolfSSL 5.9,
    whose build of the same name, sp-asm, the file's [device].config still picks), never an error
    about an option the user did not give."""
    from pathlib import Path

    system = Path(__file__).resolve().parents[1] / "examples" / "stm32l4-nbiot-mqtt.toml"
    p = run_cli(
        "whatif",
        "edhoc",
        "--system",
        str(system),
        "--n",
        "2000",
        "--json",
        "--out",
        str(tmp_path),
        "--no-report",
        timeout=1800,
    )
    assert p.returncode == 0, p.stderr
    for key in ("[protocol].handshakes", "[device].stack"):
        assert f"note: {key}" in p.stderr, (key, p.stderr)
    assert "--handshake" not in p.stderr and "--stack" not in p.stderr.replace("--stack picks", "")
    doc = json.loads(p.stdout)
    main = [s for s in doc["series"] if not s["labels"].get("role")]
    assert {s["labels"]["stack"] for s in main} == {"wolfssl59"}
    assert "sp-asm" in main[0]["labels"]["cost_table"]
    assert {s["labels"]["handshake"] for s in main} == {"m3-kid"}


@pytest.mark.slow
def test_plan_on_a_device_costs_the_protocol_measures_from_its_counts(tmp_path):
    """The CoAP pattern on a Cortex-M4: EDHOC + OSCORE and DTLS 1.3 with connection IDs are judged
    with the device's own counts of them; QUIC 0-RTT is listed with the reason it does not apply."""
    p = run_cli(
        "plan",
        "--pattern",
        "event-driven",
        "--device",
        "cortex-m4-80",
        "--n",
        "2000",
        "--json",
        "--out",
        str(tmp_path),
        "--no-report",
        timeout=1800,
    )
    assert p.returncode == 0, p.stderr
    pat = json.loads(p.stdout)["analysis"]["plan"]["patterns"][0]
    judged = {m["measure"] for m in pat["measures"]}
    assert {"edhoc-oscore", "dtls13-cid"} <= judged, (judged, pat.get("not_applicable"))
    assert "quic-0rtt" in pat["not_applicable"]
    assert not any(v.startswith("not costed") for v in pat["not_applicable"].values()), pat["not_applicable"]


@pytest.mark.parametrize(
    "version,stack,how",
    [
        ("5.5.4", "wolfssl", "exact"),
        ("5.6.6", "wolfssl56", "exact"),
        ("5.9.4", "wolfssl59", "exact"),
        ("5.6.4", "wolfssl56", "nearest"),  # the same series before any other
        ("5.6.0", "wolfssl56", "nearest"),
        ("5.9.1", "wolfssl59", "nearest"),
        ("5.3.1", "wolfssl", "nearest"),  # 5.5 is two series away, 5.6 three
        ("5.7.6", "wolfssl56", "nearest"),
        ("5.8.4", "wolfssl59", "nearest"),
        ("4.4.1", "wolfssl", "old"),  # older code: counted on the oldest build, apart
        ("6.0.0", "wolfssl59", "old"),
        ("5.6.4-stable", "wolfssl56", "nearest"),  # a release tag's spelling
        ("v5.5.4", "wolfssl", "exact"),
        ("unknown", "wolfssl59", "old"),
        (None, "wolfssl59", "old"),
    ],
)
def test_a_board_logs_wolfssl_release_is_counted_on_the_nearest_build(version, stack, how):
    assert DS.wolfssl_build_for(version) == (stack, how)


def test_every_wolfssl_build_the_rule_names_is_a_stack_with_sources_and_configurations():
    from secperf.measure.device_build import SOURCE_BUILDS, build_configs, default_configs
    from secperf.measure.device_sources import SOURCES

    for stack in DS.WOLFSSL_BUILDS:
        assert stack in SOURCES and stack in default_configs()
        assert stack == "wolfssl" or stack in SOURCE_BUILDS
        assert any(stack in c.stacks for c in build_configs().values())


@pytest.mark.slow
def test_the_wolfssl_5_6_build_runs_a_primitive_on_a_cortex_m4(tmp_path):
    p = run_cli(
        "device", "crypto", "--device", "cortex-m4-80", "--stack", "wolfssl56", "--op", "sha256-1024", "--n", "1",
        "--timing", "off", "--no-report", "--json", "--out", str(tmp_path),
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    doc = json.loads(p.stdout)
    s = doc["series"][0]
    assert s["status"] == "ok" and "5.6.6" in json.dumps(doc)
