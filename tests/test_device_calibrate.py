"""`secperf device calibrate LOG`: a board's own benchmark log into a named device profile.

Structure only: the parsers read each real format (tests/data/boards, sources in SOURCES.md) with
both unit spellings and list what they cannot map; a saved profile resolves wherever --device does,
keeps its fitted points inside the sourced bands and names its log; bad inputs exit 2 with the
option named. The fitting tests (slow) count a few operations on the emulator and check the fit
against logs made from those counts: one inside the bounds (fits, saved, usable with --device),
one that needs parameters out of bounds (reported as not fitting, rows named, nothing saved)."""

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import run_cli, skip
from secperf.core.errors import InputError
from secperf.inputs import board_log as B
from secperf.inputs import device_profiles as P
from secperf.inputs import devices as D

DATA = Path(__file__).resolve().parent / "data" / "boards"


# where the builds and counts live before a test points SECPERF_HOME elsewhere: the slow tests share
# them (a library build takes minutes), their saved profiles go to the test's own home
def _device_cache() -> Path:
    from secperf.core.paths import secperf_home

    return secperf_home() / "device"


_DEVICE_CACHE = _device_cache()


# --- parsers ------------------------------------------------------------------------------------


def test_wolfcrypt_kib_log_rows_units_and_unmapped_lines():
    log, data = B.read(DATA / "wolfcrypt-5.6.4-stm32l4a6-sp-int-small.txt")
    assert log.formats == ["wolfcrypt"] and log.version == "5.6.4" and data
    by = {r.operation: r for r in log.rows}
    assert set(by) == {
        "aes-128-cbc",
        "aes-128-gcm",
        "chacha20",
        "chacha20-poly1305",
        "poly1305",
        "sha256",
        "hmac-sha256",
        "rsa-2048-verify",
        "rsa-2048-sign",
        "p256-keygen",
        "p256-derive",
        "ecdsa-p256-sign",
        "ecdsa-p256-verify",
        "x25519-keygen",
        "x25519-derive",
    }
    assert (by["aes-128-gcm"].unit, by["aes-128-gcm"].value, by["aes-128-gcm"].nbytes) == ("KiB/s", 305.738, 1024)
    assert (by["chacha20"].unit, by["chacha20"].value) == ("MiB/s", 2.832)
    assert (by["p256-derive"].unit, by["p256-derive"].value) == ("ms/op", 451.75)  # the avg column
    assert by["p256-derive"].ops == ("p256-derive",) and by["p256-derive"].weights == ()
    # wolfCrypt's benchmark streams a hash (set-up outside the timer, 25 updates, one Final): a KiB is
    # the weighted difference of two HMAC sizes, 1.32 x 1024 B - 1.28 x 256 B
    for op in ("sha256", "hmac-sha256"):
        assert by[op].ops == ("hmac-sha256-1024", "hmac-sha256-256")
        assert by[op].weights == pytest.approx((1.32, -1.28))
    # a whole message of 1024 B is 1.32 x (16 updates + 1 Final) - 1.28 x (4 + 1): 16.04 updates
    assert sum(w * n for w, n in zip(by["sha256"].weights, (17, 5))) == pytest.approx(16.04)
    # 1024 bytes at 2.832 MiB/s on an 80 MHz clock
    assert by["chacha20"].cycles(80) == pytest.approx(1024 / (2.832 * 1048576) * 80e6)
    assert by["p256-derive"].cycles(80) == pytest.approx(451.75e-3 * 80e6)
    why = {u.line_no: u.reason for u in log.unmapped}
    text = (DATA / "wolfcrypt-5.6.4-stm32l4a6-sp-int-small.txt").read_text().splitlines()
    assert "AES-128-CBC-dec" in text[6] and "decrypt" in why[7]
    assert "AES-256-CBC-enc" in text[7] and "AES-128" in why[8]
    for name in ("RNG", "GMAC", "DH", "ED     25519", "AES-128-GCM-enc-no_AAD"):  # listed, not dropped
        assert any(text[no - 1].startswith(name) for no in why), name
    # every non-blank line is a row, an unmapped line, or the log's frame (version, header, footer)
    frame = [ln for ln in text if ln.startswith(("---", " wolfSSL", "wolfCrypt Benchmark", "Benchmark"))]
    assert len(log.rows) + len(log.unmapped) + len(frame) == len([ln for ln in text if ln.strip()])


def test_wolfcrypt_kb_spelling_of_older_releases():
    log, _ = B.read(DATA / "wolfcrypt-4.4.1-stm32l562-fastmath.txt")
    by = {r.operation: r for r in log.rows}
    assert log.version == "4.4.1"
    assert (by["aes-128-gcm"].unit, by["chacha20"].unit) == ("KB/s", "MB/s")
    # wolfCrypt's KB is 1024 bytes in both spellings: the same figure as KiB
    kib = B.LogRow(0, "", "wolfcrypt", "aes-128-gcm", 19.084, "KiB/s", 1024)
    assert by["aes-128-gcm"].cycles(110) == pytest.approx(kib.cycles(110))
    assert by["p256-keygen"].value == 1514.0 and by["ecdsa-p256-verify"].value == 986.5


def test_a_wolfssl_4x_log_is_said_to_be_counted_on_other_code():
    from secperf.app.device_calibrate import release_note

    old, _ = B.read(DATA / "wolfcrypt-4.4.1-stm32l562-fastmath.txt")
    note = release_note(old.formats, old.version)
    assert note is not None and "4.4.1" in note and "5.5.4" in note
    new, _ = B.read(DATA / "wolfcrypt-5.6.4-stm32l4a6-sp-int-small.txt")
    assert release_note(new.formats, new.version) is None
    other, _ = B.read(DATA / "mbedtls-benchmark-mbed-os.txt")
    assert release_note(other.formats, "2.16.0") is None  # a wolfSSL release series only


def test_mbedtls_log_ms_and_rate_forms_and_composite_handshakes():
    log, _ = B.read(DATA / "mbedtls-benchmark-mbed-os.txt")
    by = {r.operation: r for r in log.rows}
    assert log.formats == ["mbedtls"]
    assert by["rsa-2048-verify"].value == 28 and by["rsa-2048-sign"].value == 953
    assert by["ecdhe-p256-handshake"].ops == ("p256-keygen", "p256-derive")  # one keygen + one secret
    assert by["ecdh-x25519-handshake"].ops == ("x25519-derive",)
    assert by["sha256"].unit == "Kb/s" and by["sha256"].value == 1673
    # Mbed TLS's benchmark hashes a whole buffer per call (mbedtls_sha256): one op, no stream weights
    assert by["sha256"].ops == ("sha256-1024",) and by["sha256"].weights == ()
    assert {u.reason.split(":")[0] for u in log.unmapped} >= {
        "Mbed TLS SHA-512",
        "Mbed TLS AES-CCM-128",
        "Mbed TLS CTR_DRBG (NOPR)",
        "Mbed TLS ECDSA-secp384r1 sign",
    }
    newer = B.parse(
        "  RSA-2048                 :      35  public/s\n"
        "  ECDSA-secp256r1          :     120 sign/s\n"
        "  AES-GCM-128              :      1200 KiB/s\n"
    )
    r = {x.operation: x for x in newer.rows}
    assert r["rsa-2048-verify"].unit == "ops/s" and r["rsa-2048-verify"].cycles(100) == pytest.approx(100e6 / 35)
    assert r["ecdsa-p256-sign"].value == 120 and r["aes-128-gcm"].unit == "KiB/s"


def test_pqm4_table_and_raw_speed_output():
    table, _ = B.read(DATA / "pqm4-speed-table.md")
    ops = [(r.operation, r.value) for r in table.rows]
    assert ("ml-kem-768-encaps", 1138225.0) in ops and ("ml-kem-512-keygen", 595793.0) in ops
    assert len(ops) == 6 and all(r.unit == "cycles" and r.cycles(20) == r.value for r in table.rows)
    assert len(table.unmapped) == 3 and all("m4fspeed" in u.reason for u in table.unmapped)
    raw, _ = B.read(DATA / "pqm4-speed-raw.txt")
    assert [(r.operation, r.value) for r in raw.rows] == [
        ("ml-kem-768-keygen", 988722.0),
        ("ml-kem-768-encaps", 1138225.0),
        ("ml-kem-768-decaps", 1387984.0),
    ]
    nameless = B.parse("keypair cycles:\n988722\n")
    assert not nameless.rows and "scheme" in nameless.unmapped[0].reason
    named = B.parse("keypair cycles:\n988722\n", scheme="ml-kem-768")
    assert named.rows[0].operation == "ml-kem-768-keygen"


def test_a_log_with_nothing_to_count_and_a_missing_log_are_named(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("hello board\nDH 2048 key gen 2 ops took 1.078 sec, avg 539.000 ms, 1.855 ops/sec\n")
    with pytest.raises(B.BoardLogError, match="notes.txt.*no line"):
        B.read(p)
    with pytest.raises(B.BoardLogError, match="cannot read"):
        B.read(tmp_path / "absent.txt")


# --- saved profiles -----------------------------------------------------------------------------


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("SECPERF_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _save(name="my-l4", points=None, **kw):
    return P.save(
        name,
        "cortex-m4-80",
        72.0,
        3,
        "board calibrated to bench.txt (sha256 abc123)",
        {
            "log": "bench.txt",
            "log_sha256": "abc123" * 10,
            "stack": "wolfssl59[sp-small-os]",
            "config": "sp-small-os",
            "rows": 12,
        },
        points if points is not None else {"branch_taken_extra": 1.6, "no_prefetch": 1.0},
        {},
        **kw,
    )


def test_saved_profile_resolves_like_a_shipped_one(home):
    path = _save()
    assert path == home / "devices" / "my-l4.toml"
    assert "my-l4" in D.cores() and "my-l4" not in D.shipped_cores()
    c, base = D.core("my-l4"), D.core("cortex-m4-80")
    assert (c.clock_mhz, c.flash_wait_states, c.qemu_cpu, c.profile) == (72.0, 3, "cortex-m4", "M")
    assert c.timing.costs["branch_taken_extra"] == (1.0, 1.6, 2.0)  # the band kept, the point fitted
    assert c.timing.costs["no_prefetch"] == (0.0, 1.0, 1.0)
    assert c.timing.costs["flash_ws"] == (3.0, 3.0, 3.0)  # the board's wait states
    assert c.timing.costs["load"] == base.timing.costs["load"]
    assert "bench.txt" in c.description and "bench.txt" in c.sources["calibration"]
    assert "bench.txt" in c.timing.sources["calibration"]  # what every timed figure names
    assert D.resolve_device("my-l4") == "my-l4"
    from secperf.measure import device as M
    from secperf.measure.device_timing import model_note

    assert M.target_for(c) == "cortex-m4" and "bench.txt" in json.dumps(model_note(c))


def test_a_boards_memory_is_saved_with_its_profile_and_applied_where_it_is_taken(home):
    """`device calibrate --icache off --prefetch on`: the profile keeps its shipped base and says how the
    board's memory differs; --device NAME then counts without the instruction cache and with the prefetch."""
    path = _save("my-u5", points={"branch_taken_extra": 1.6}, icache=False, prefetch=True)
    text = path.read_text()
    assert 'base = "cortex-m4-80"' in text and "icache = false" in text and "prefetch = true" in text
    c, base = D.core("my-u5"), D.core("cortex-m4-80")
    assert base.timing.geometry["icache_entries"] > 0
    assert c.timing.geometry["icache_entries"] == 0 and c.timing.geometry["icache_ways"] == 0
    assert c.timing.costs["no_prefetch"] == (0.0, 0.0, 0.0)
    assert c.timing.costs["branch_taken_extra"] == (1.0, 1.6, 2.0)
    assert c.timing.geometry["dcache_entries"] == base.timing.geometry["dcache_entries"]  # an M4 keeps its data cache
    # without the settings the profile is the base's memory
    plain = D.core(_save("my-l4", points={"branch_taken_extra": 1.6}).stem)
    assert plain.timing.geometry == base.timing.geometry
    bad = home / "devices" / "my-u5.toml"
    bad.write_text(text.replace("icache = false", 'icache = "off"'))
    with pytest.raises(InputError, match="icache"):
        P.load("my-u5", bad)


def test_saved_profile_errors_are_named(home):
    with pytest.raises(InputError, match="shipped core profile"):
        _save("cortex-m4-80")
    with pytest.raises(InputError, match="--name"):
        _save("My Board")
    with pytest.raises(D.DeviceError, match="outside its sourced band"):
        _save(points={"branch_taken_extra": 7.0})
    assert not (home / "devices" / "my-l4.toml").exists()
    bad = home / "devices" / "broken.toml"
    bad.parent.mkdir(parents=True)
    bad.write_text("[profile\n")
    with pytest.raises(D.DeviceError, match="broken.toml.*not TOML"):
        D.core("broken")
    bad.write_text('[profile]\nbase = "cortex-m9"\n[source]\n[timing]\n')
    with pytest.raises(D.DeviceError, match="cortex-m9"):
        D.core("broken")


def test_device_list_and_system_file_take_the_saved_profile(home, tmp_path):
    import os

    _save()
    p = run_cli("device", "list", env={**os.environ, "SECPERF_HOME": str(home)}, timeout=120)
    assert p.returncode == 0, p.stderr[-1000:]
    assert "my-l4" in p.stdout and "bench.txt" in p.stdout
    from secperf.inputs.system import load_system

    example = Path(__file__).resolve().parents[1] / "examples" / "stm32l4-nbiot-mqtt.toml"
    text = example.read_text()
    assert 'core = "cortex-m4-80"' in text
    f = tmp_path / "sys.toml"
    f.write_text(text.replace('core = "cortex-m4-80"', 'core = "my-l4"'))
    assert load_system(str(f)).system.device.core == "my-l4"


@pytest.mark.parametrize(
    "args,named",
    [
        (["--board-clock", "0", "--wait-states", "4", "--name", "x1"], "--board-clock"),
        (["--board-clock", "80", "--wait-states", "-1", "--name", "x1"], "--wait-states"),
        (["--board-clock", "80", "--wait-states", "4", "--name", "cortex-m4-80"], "--name cortex-m4-80"),
        (["--board-clock", "80", "--wait-states", "4", "--name", "x1", "--core", "cortex-m9"], "--core cortex-m9"),
        (
            [
                "--board-clock",
                "900",
                "--wait-states",
                "0",
                "--name",
                "x1",
                "--core",
                "cortex-a9-400",
                "--icache",
                "off",
            ],
            "--icache",
        ),
        (["--board-clock", "80", "--wait-states", "4", "--name", "x1", "--prefetch", "maybe"], "--prefetch"),
    ],
)
def test_bad_inputs_exit_2_named(home, args, named):
    import os

    log = str(DATA / "wolfcrypt-5.6.4-stm32l4a6-sp-int-small.txt")
    p = run_cli("device", "calibrate", log, *args, env={**os.environ, "SECPERF_HOME": str(home)}, timeout=120)
    assert p.returncode == 2 and named in p.stderr, p.stderr[-800:]


def test_missing_and_unrecognised_logs_exit_2(home, tmp_path):
    import os

    env = {**os.environ, "SECPERF_HOME": str(home)}
    p = run_cli(
        "device",
        "calibrate",
        str(tmp_path / "nope.txt"),
        "--board-clock",
        "80",
        "--wait-states",
        "4",
        "--name",
        "x1",
        env=env,
        timeout=120,
    )
    assert p.returncode == 2 and "nope.txt" in p.stderr
    junk = tmp_path / "junk.txt"
    junk.write_text("booting...\nhello\n")
    p = run_cli(
        "device",
        "calibrate",
        str(junk),
        "--board-clock",
        "80",
        "--wait-states",
        "4",
        "--name",
        "x1",
        env=env,
        timeout=120,
    )
    assert p.returncode == 2 and "junk.txt" in p.stderr and "line 1" in p.stderr


# --- fitting on real counts (slow: the emulator) ------------------------------------------------

OPS = {
    "sha256": ("SHA-256", "sha256-1024"),
    "chacha20": ("CHACHA", "chacha20-1024"),
    "poly1305": ("POLY1305", "poly1305-1024"),
    "chacha20-poly1305": ("CHA-POLY", "chacha20-poly1305-1024"),
}


def _needs_emulator():
    for exe in ("arm-linux-gnueabihf-gcc", "qemu-arm", "make"):
        if shutil.which(exe) is None:
            skip("needs-bootstrap", f"{exe} is not installed (scripts/bootstrap installs it)")


def _counted():
    from secperf.measure import device_calibrate as C

    dev = C.board_core(D.core("cortex-m4-80"), "test-board", 80.0, 4)
    counts, missing = C.count_ops(dev, "wolfssl59", None, [op for _, op in OPS.values()] + list(B.STREAM_OPS))
    assert not missing, missing
    return C, dev, counts


def _point(counts, name, op):
    """The shipped point's cycles of a log row: a wolfCrypt hash is timed as a stream (B.STREAMED)."""
    if name in B.STREAMED:
        return sum(w * counts[o].cycles[1] for w, o in zip(B.STREAM_WEIGHTS, B.STREAM_OPS))
    return counts[op].cycles[1]


def _wolfcrypt_log(path, counts, factor):
    """A wolfCrypt 5.6-format log whose figures are the shipped point x factor (per row)."""
    lines = ["-" * 78, " wolfSSL version 5.9.0", "-" * 78, "wolfCrypt Benchmark (block bytes 1024, min 1.0 sec each)"]
    for i, (key, (name, op)) in enumerate(OPS.items()):
        ms = _point(counts, key, op) * factor[i] / 80e3
        mib_s = 1024 / (ms / 1e3) / 1048576
        lines.append(f"{name:24} 3 MiB took 1.000 seconds, {mib_s:10.3f} MiB/s")
    lines.append("AES-256-CBC-dec            3 MiB took 1.008 seconds,    2.543 MiB/s")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.slow
def test_fit_stays_in_bounds_and_recovers_an_in_band_board():
    _needs_emulator()
    C, dev, counts = _counted()
    t = dev.timing
    rows = []
    truth = {"branch_taken_extra": 1.5, "load_pipelined": 1.4}
    for op in counts:
        r = C.Row(op, 1.0, (op,), [counts[op]], {"stack": "wolfssl59", "build": None})
        r.published_cycles = C.predict(r, truth, t)
        rows.append(r)
    f = C.fit(rows, t)
    for k, v in f.params.items():
        assert t.costs[k][0] <= v <= t.costs[k][2], k
    assert max(abs(e) for e in f.errors) < 0.01
    assert all(abs(e) < 0.02 for e in C.leave_one_out(rows, t))
    # the fitted profile counted again: the linear cycle model the fit used against the plugin's own
    exact = C.verify(dev, f.params, rows)
    assert all(x is not None for x in exact)
    assert C.surrogate_error(rows, t, exact, f.params) < 0.05
    # a board three times slower than the model can go within its bounds: no fit, every row named
    slow = [C.Row(r.label, r.published_cycles * 3, r.ops, r.counts, r.info) for r in rows]
    f3 = C.fit(slow, t)
    assert len(C.disagreeing(slow, f3.errors)) == len(slow) and C.at_bounds(f3)
    for k, v in f3.params.items():
        assert t.costs[k][0] <= v <= t.costs[k][2], k


@pytest.mark.slow
def test_calibrate_saves_a_profile_device_crypto_names_its_log(home, tmp_path):
    import os

    _needs_emulator()
    home.mkdir(parents=True, exist_ok=True)
    (home / "device").symlink_to(_DEVICE_CACHE)  # the shared builds and counts; profiles stay here
    _C, _dev, counts = _counted()
    env = {**os.environ, "SECPERF_HOME": str(home)}
    log = _wolfcrypt_log(tmp_path / "bench-ok.txt", counts, [1.04, 1.05, 1.03, 1.06])
    p = run_cli(
        "device",
        "calibrate",
        str(log),
        "--board-clock",
        "80",
        "--wait-states",
        "4",
        "--name",
        "my-board",
        "--stack",
        "wolfssl59",
        "--json",
        env=env,
        timeout=900,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    doc = json.loads(p.stdout)
    assert doc["fits"] and len(doc["rows"]) == 4 and doc["profile"].endswith("my-board.toml")
    assert [u["line"] for u in doc["unmapped"]] == [9] and "decrypt" in doc["unmapped"][0]["reason"]
    assert all(r["loo_error"] is not None for r in doc["rows"])
    for k, v in doc["parameters"].items():
        assert v["low"] <= v["fitted"] <= v["high"], k
    q = run_cli(
        "device",
        "crypto",
        "--device",
        "my-board",
        "--stack",
        "wolfssl59",
        "--op",
        "sha256-1024",
        "--n",
        "1",
        "--out",
        str(tmp_path / "runs"),
        "--json",
        env=env,
        timeout=900,
    )
    assert q.returncode == 0, q.stderr[-2000:]
    s = json.loads(q.stdout)["series"][0]
    assert s["labels"]["device"] == "my-board"
    assert "bench-ok.txt" in json.dumps(s["derived"]["time"]["sources"])
    # a log the bounds cannot reach: reported, the rows named, nothing saved (exit 1)
    log3 = _wolfcrypt_log(tmp_path / "bench-3x.txt", counts, [3.0, 3.0, 3.0, 3.0])
    p3 = run_cli(
        "device",
        "calibrate",
        str(log3),
        "--board-clock",
        "80",
        "--wait-states",
        "4",
        "--name",
        "too-slow",
        "--stack",
        "wolfssl59",
        env=env,
        timeout=900,
    )
    assert p3.returncode == 1, p3.stderr[-2000:]
    assert "no parameters within their sourced bounds fit" in p3.stdout
    for name in OPS:
        assert f"{name} (line" in p3.stdout
    assert not (home / "devices" / "too-slow.toml").exists()


def test_a_fifo_log_or_harness_is_refused_not_waited_on(tmp_path):
    """A FIFO as the board log (or as a user-code harness) would block the read forever: exit 2 naming it."""
    fifo = tmp_path / "log.fifo"
    os.mkfifo(fifo)
    p = run_cli(
        "device",
        "calibrate",
        str(fifo),
        "--board-clock",
        "80",
        "--wait-states",
        "4",
        "--name",
        "fifo-board",
        timeout=60,
    )
    assert p.returncode == 2 and "not a regular file" in p.stderr, p.stderr
    p = run_cli(
        "device",
        "crypto",
        "--device",
        "cortex-m4-80",
        "--source",
        str(Path(__file__).resolve().parents[1] / "examples" / "user-code" / "crc32.c"),
        "--entry",
        "crc32_bitwise",
        "--harness",
        str(fifo),
        timeout=60,
    )
    assert p.returncode == 2 and "--harness" in p.stderr and "not a regular file" in p.stderr, p.stderr


@pytest.mark.slow
def test_whatif_on_a_saved_profile_uses_it_and_names_its_log(home, tmp_path):
    """`whatif --device SAVED` counts the client on the saved profile (its own count cache, its name on
    the cost table) and the table's description names the board log the profile was fitted to."""
    import os

    _needs_emulator()
    home.mkdir(parents=True, exist_ok=True)
    (home / "device").symlink_to(_DEVICE_CACHE)  # the shared builds; the profile's counts are its own
    _save()
    env = {**os.environ, "SECPERF_HOME": str(home)}
    p = run_cli("whatif", "tls1.3", "--device", "my-l4", "--stack", "wolfssl59", "--json", env=env, timeout=1800)
    assert p.returncode == 0, p.stderr[-2000:]
    doc = json.loads(p.stdout)
    table = doc["analysis"]["whatif"]["cost_table"]
    assert table["name"].startswith("device:my-l4:") and "my-l4" in table["source"]
    assert "bench.txt" in table["description"]  # the log the profile came from
    assert "my-l4" in p.stderr and "device rows" in p.stderr  # the device counts it ran (or reused)
    assert list((home / "device" / "counts").glob("my-l4-wolfssl59-*.json"))
