"""`secperf device`: TLS stacks compiled for ARM under qemu-arm with counted instructions.

Structure only, never time: counts are positive, the per-message parts add up to the handshake,
X25519 and P-256 rows are both there, cold and warm are apart, bad names exit 2 naming the options.
"""

import json

import pytest

from conftest import device_build_or_skip, run_cli
from secperf.core.errors import InputError
from secperf.measure import device_attrib as A

# --- attribution (pure) ----------------------------------------------------------------------------


def _ev(count, kind, a1, a2=0):
    return A.Event(count, kind, a1, a2)


def _rec(ctype, hs, length):
    return (ctype << 24) | (hs << 16) | length


def test_attribution_is_a_partition_named_by_records_and_builders():
    """TLS 1.3 full handshake: the builder entry of ClientHello and Finished, record markers for the
    server's flight (plaintext ServerHello named by its byte, encrypted ones by position)."""
    ev = [
        _ev(100, "M", A.HS_BEGIN, 0),
        _ev(110, "W", 1),
        _ev(1000, "M", A.SEND, _rec(22, 1, 1)),
        _ev(1010, "M", A.RECV_BEGIN, 0),
        _ev(1020, "M", A.RECV_INFO, _rec(22, 2, 90)),
        _ev(1030, "W", 11),
        _ev(2000, "M", A.RECV_BEGIN, 1),
        _ev(2005, "M", A.RECV_INFO, _rec(20, 0xFF, 1)),
        _ev(2010, "M", A.RECV_BEGIN, 2),
        _ev(2015, "M", A.RECV_INFO, _rec(23, 0xFF, 20)),
        _ev(2020, "W", 11),
        _ev(2100, "M", A.RECV_BEGIN, 3),
        _ev(2105, "M", A.RECV_INFO, _rec(23, 0xFF, 800)),
        _ev(2110, "W", 11),
        _ev(5000, "M", A.RECV_BEGIN, 4),
        _ev(5005, "M", A.RECV_INFO, _rec(23, 0xFF, 260)),
        _ev(5010, "W", 11),
        _ev(7000, "M", A.RECV_BEGIN, 5),
        _ev(7005, "M", A.RECV_INFO, _rec(23, 0xFF, 53)),
        _ev(7010, "W", 11),
        _ev(7500, "W", 5),
        _ev(7900, "M", A.SEND, _rec(23, 0xFF, 1)),
        _ev(8000, "M", A.HS_END, 1),
    ]
    (hs,) = A.handshakes(ev, [{"conn": 0, "ok": 1, "resumed": 0}], "1.3")
    names = [(m["dir"], m["message"]) for m in hs.messages]
    assert names == [
        ("sent", "ClientHello"),
        ("received", "ServerHello"),
        ("received", "ChangeCipherSpec"),
        ("received", "EncryptedExtensions"),
        ("received", "Certificate"),
        ("received", "CertificateVerify"),
        ("received", "Finished"),
        ("sent", "Finished"),
    ]
    assert hs.instructions == 7900 and hs.parts_sum == hs.instructions
    assert hs.messages[0]["instructions"] == 1010 - 100  # build + write + flush of ClientHello
    assert hs.messages[6]["instructions"] == 7500 - 7000  # server Finished up to the client's builder
    assert hs.messages_per_record == [1, 1, 1, 1, 1]


def test_mbedtls_steps_fold_silent_steps_and_rename_what_was_read():
    """Mbed TLS 2.28: a step that reads another message than its state names it (the
    CertificateRequest state reading ServerHelloDone); a step without I/O folds into the one before."""
    ev = [
        _ev(0, "M", A.HS_BEGIN, 0),
        _ev(1, "M", A.STEP, 0),
        _ev(5, "M", A.STEP, 1),
        _ev(50, "M", A.SEND, _rec(22, 1, 1)),
        _ev(60, "M", A.STEP, 5),
        _ev(61, "M", A.RECV_BEGIN, 0),
        _ev(62, "M", A.RECV_INFO, _rec(22, 14, 4)),
        _ev(70, "M", A.STEP, 6),
        _ev(72, "M", A.STEP, 8),
        _ev(900, "M", A.SEND, _rec(22, 16, 1)),
        _ev(910, "M", A.STEP, 9),
        _ev(990, "M", A.HS_END, 1),
    ]
    (hs,) = A.handshakes(ev, [{"conn": 0, "ok": 1}], "1.2")
    assert [(m["message"], m["instructions"]) for m in hs.messages] == [
        ("ClientHello", 60),
        ("ServerHelloDone", 12),
        ("ClientKeyExchange", 918),
    ]
    assert hs.parts_sum == hs.instructions == 990


def test_mbedtls3_tls13_steps_take_their_deferred_writes():
    """Mbed TLS 3.x writes a step's message at the start of the next step: the ClientHello step keeps
    the key generation and the write; a silent step whose 'write' is another message's record
    (a ChangeCipherSpec after the TLS 1.3 CertificateRequest-less flight) is folded back."""
    b = 0x100
    ev = [
        _ev(0, "M", A.HS_BEGIN, 0),
        _ev(1, "M", A.STEP, b + 0),
        _ev(5, "M", A.STEP, b + 1),
        _ev(1000, "M", A.STEP, b + 2),
        _ev(1100, "M", A.SEND, _rec(22, 1, 1)),  # ClientHello flushed late
        _ev(1200, "M", A.RECV_BEGIN, 0),
        _ev(1210, "M", A.RECV_INFO, _rec(22, 2, 90)),
        _ev(3000, "M", A.STEP, b + 19),
        _ev(3010, "M", A.RECV_BEGIN, 1),
        _ev(3020, "M", A.RECV_INFO, _rec(23, 0xFF, 20)),
        _ev(3100, "M", A.STEP, b + 22),  # builds the CCS, silent
        _ev(3150, "M", A.STEP, b + 11),
        _ev(3160, "M", A.SEND, _rec(20, 0xFF, 1)),  # its CCS, then Finished
        _ev(3400, "M", A.SEND, _rec(23, 0xFF, 1)),
        _ev(3500, "M", A.HS_END, 1),
    ]
    (hs,) = A.handshakes(ev, [{"conn": 0, "ok": 1}], "1.3")
    assert [(m["dir"], m["message"], m["instructions"]) for m in hs.messages] == [
        ("sent", "ClientHello", 1100),
        ("received", "ServerHello", 1900),
        ("received", "EncryptedExtensions", 100),
        ("sent", "ChangeCipherSpec", 3160 - 3100),
        ("sent", "Finished", 3500 - 3160),
    ]
    assert hs.parts_sum == hs.instructions


# --- profiles --------------------------------------------------------------------------------------


def test_core_profiles_have_clock_cpi_range_and_sources():
    from secperf.inputs.devices import core, cores, mac_cost

    names = set(cores())
    assert {
        "cortex-a9-400",
        "cortex-a7-800",
        "cortex-m4-80",
        "cortex-m4-120",
        "cortex-m4-168",
        "cortex-m0plus-64",
        "cortex-m33-128",
    } <= names
    for n in names:
        c = core(n)
        assert c.clock_mhz > 0 and 0 < c.cpi[0] <= c.cpi[1]
        assert {"clock", "cpi", "core"} <= set(c.sources) and all(c.sources.values())
        if c.profile == "M":
            assert c.flash_wait_states is not None
        lo, hi = c.ms_range(1e6)
        assert 0 < lo <= hi
    assert core("cortex-a9-400").ms_range(4e6) == (10.0, 20.0)
    assert mac_cost("rl78", "chaskey").cycles_per_block == 1357  # the MAC/CAN profiles stay


# --- bad input (no emulator needed) -------------------------------------------------------------


@pytest.mark.parametrize(
    "args, names",
    [
        (["--device", "cortex-z9"], ["unknown device", "cortex-a9-400", "cortex-m4-120"]),
        (["--stack", "boringssl"], ["unknown stack", "wolfssl", "mbedtls"]),
        (["--group", "x448"], ["unknown group", "x25519", "p-256"]),
        (["--suite", "rc4"], ["unknown suite", "aes128gcm", "chacha20"]),
        (
            ["--device", "cortex-m0plus-64", "--stack", "openssl"],
            ["no Cortex-M0+ build of openssl", "wolfssl, mbedtls, mbedtls3, wolfssl59"],
        ),
        (["--mode", "psk", "--tls", "1.2"], ["--mode psk", "TLS 1.3"]),
        (["--tls", "1.3", "--mode", "full-cid"], ["--mode full-cid", "DTLS extension", "dtls1.3"]),
        (["--client-cert", "dsa-1024"], ["unknown client-cert", "ecdsa-p256", "rsa-2048"]),
        (
            ["--device", "cortex-m4-120", "--stack", "openssl"],
            ["no cortex-m4 build of openssl", "cortex-a9-400", "wolfssl, mbedtls, mbedtls3"],
        ),
    ],
)
def test_bad_device_stack_or_group_exits_2_naming_the_options(tmp_path, args, names):
    p = run_cli("device", "handshake", *args, "--out", str(tmp_path), timeout=120)
    assert p.returncode == 2, p.stderr
    for n in names:
        assert n in p.stderr


def test_plan_expands_every_combination():
    from secperf.inputs.devices import resolve_core
    from secperf.measure.device import plan

    a9 = resolve_core("cortex-a9-400")  # measure takes the core the command resolved, never its name
    cfgs = plan(a9, "wolfssl", "1.3", "x25519,p-256", "aes128gcm,chacha20")
    assert {(c.group, c.suite) for c in cfgs} == {
        ("x25519", "aes128gcm"),
        ("x25519", "chacha20"),
        ("p-256", "aes128gcm"),
        ("p-256", "chacha20"),
    }
    with pytest.raises(InputError):
        plan(a9, "wolfssl", "1.4", "x25519", "aes128gcm")


def test_a_dtls12_psk_row_is_planned_once_whatever_the_groups():
    """A plain PSK suite has no key exchange group: the default groups give one DTLS 1.2 psk row each
    stack and suite, while the DTLS 1.2 full rows still come once per group."""
    from secperf.inputs.devices import resolve_core
    from secperf.measure.device import plan

    cfgs = plan(resolve_core("cortex-a9-400"), "wolfssl59", "dtls1.2", "x25519,p-256", "aes128gcm", "psk,full")
    assert sorted((c.mode, c.group) for c in cfgs) == [("full", "p-256"), ("full", "x25519"), ("psk", "x25519")]


# --- real runs under qemu-arm ----------------------------------------------------------------------


def test_wolfssl_handshake_rows_sum_to_total_for_x25519_and_p256(tmp_path):
    device_build_or_skip("wolfssl", "armhf")
    p = run_cli(
        "device",
        "handshake",
        "--device",
        "cortex-a9-400",
        "--stack",
        "wolfssl",
        "--group",
        "x25519,p-256",
        "--suite",
        "aes128gcm",
        "--n",
        "2",
        "--warmup",
        "1",
        "--out",
        str(tmp_path),
        "--json",
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["kind"] == "device"
    series = {(s["labels"]["group"], s["labels"]["phase"]): s for s in doc["series"]}
    assert set(series) == {("x25519", "cold"), ("x25519", "warm"), ("p-256", "cold"), ("p-256", "warm")}
    for s in series.values():
        assert s["status"] == "ok", s["failures"]
        for smp in s["samples"]:
            assert smp["instructions"] > 0 and smp["parts_sum"] == smp["instructions"]
            assert all(m["instructions"] > 0 for m in smp["messages"])
            assert smp["version"] == "TLSv1.3"
            # the painted stack: the handshake's frames went kilobytes deep, well inside the painted 256 KB
            assert 1024 < smp["stack_bytes"] < 256 * 1024
        assert s["derived"]["stack_bytes_max"] == max(x["stack_bytes"] for x in s["samples"])
        names = [m["message"] for m in s["derived"]["messages"]]
        assert names[:2] == ["ClientHello", "ServerHello"] and "CertificateVerify" in names
        d = s["derived"]["derived_ms"]
        assert 0 < d["ms_low"] <= d["ms_high"] and "DERIVED" in d["rule"]
    assert len(series[("x25519", "warm")]["samples"]) == 2
    # the negotiated group is the one asked for
    assert series[("p-256", "warm")]["samples"][0]["negotiated_group"] == "SECP256R1"


@pytest.mark.slow  # over 10 s here: a fidelity check for the slow run
def test_openssl_build_splits_full_and_resumed_handshakes_per_message(tmp_path):
    """Debian's armhf OpenSSL on the A9 profile: sent messages found by the constructors' watch
    points, TLS 1.3 resumption by ticket (each connection after the first resumes), parts = total."""
    device_build_or_skip("openssl", "armhf")
    for mode, n in (("full", 1), ("resumed", 2)):
        p = run_cli(
            "device",
            "handshake",
            "--device",
            "cortex-a9-400",
            "--stack",
            "openssl",
            "--group",
            "x25519",
            "--suite",
            "aes128gcm",
            "--mode",
            mode,
            "--n",
            str(n),
            "--warmup",
            "0",
            "--out",
            str(tmp_path),
            "--json",
            timeout=300,
        )
        assert p.returncode == 0, p.stderr
        warm = [s for s in json.loads(p.stdout)["series"] if s["labels"]["phase"] == "warm"][0]
        assert warm["status"] == "ok", warm["failures"]
        assert warm["labels"]["library"].startswith("OpenSSL 3")
        names = [m["message"] for m in warm["derived"]["messages"]]
        assert names[:2] == ["ClientHello", "ServerHello"] and "Finished" in names
        # a full handshake checks the chain and the server's signature; a resumed one does neither
        assert ("CertificateVerify" in names) == (mode == "full")
        for smp in warm["samples"]:
            assert smp["parts_sum"] == smp["instructions"] > 0
            assert smp["resumed"] == (mode == "resumed")
            assert smp["version"] == "TLSv1.3"


@pytest.mark.parametrize("stack", ["wolfssl", "openssl"])
def test_psk_handshake_has_no_certificate_and_mutual_tls_sends_one(tmp_path, stack):
    """--mode psk: the server accepts the external PSK, so no Certificate or CertificateVerify is
    received; --client-cert: the server asks (CertificateRequest) and the client sends its
    certificate and signs (Certificate and CertificateVerify sent). Parts = total in both."""
    device_build_or_skip(stack, "armhf")
    for extra, want, absent in (
        (
            ["--mode", "psk"],
            {("received", "ServerHello"), ("received", "Finished")},
            {("received", "Certificate"), ("received", "CertificateVerify")},
        ),
        (
            ["--client-cert", "ecdsa-p256"],
            {("received", "CertificateRequest"), ("sent", "Certificate"), ("sent", "CertificateVerify")},
            set(),
        ),
    ):
        p = run_cli(
            "device",
            "handshake",
            "--device",
            "cortex-a9-400",
            "--stack",
            stack,
            "--group",
            "x25519",
            "--suite",
            "aes128gcm",
            "--n",
            "1",
            "--warmup",
            "0",
            *extra,
            "--out",
            str(tmp_path),
            "--json",
            timeout=300,
        )
        assert p.returncode == 0, p.stderr
        warm = [s for s in json.loads(p.stdout)["series"] if s["labels"]["phase"] == "warm"][0]
        assert warm["status"] == "ok", warm["failures"]
        got = {(m["dir"], m["message"]) for m in warm["samples"][0]["messages"]}
        assert want <= got and not (absent & got), got
        assert warm["samples"][0]["parts_sum"] == warm["samples"][0]["instructions"] > 0


@pytest.mark.parametrize("stack", ["wolfssl", "mbedtls", "openssl"])
def test_dtls12_handshake_over_udp_is_split_per_message(tmp_path, stack):
    """DTLS 1.2 over UDP against s_server -dtls: the cookie exchange (HelloVerifyRequest) is there,
    the messages of a datagram get their own rows (ServerHelloDone apart from ServerKeyExchange, the
    server's Finished apart from its ChangeCipherSpec), and the parts add up to the handshake."""
    device_build_or_skip(stack, "armhf")
    p = run_cli(
        "device",
        "handshake",
        "--device",
        "cortex-a9-400",
        "--stack",
        stack,
        "--tls",
        "dtls1.2",
        "--group",
        "x25519",
        "--suite",
        "aes128gcm",
        "--n",
        "1",
        "--warmup",
        "0",
        "--out",
        str(tmp_path),
        "--json",
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    warm = [s for s in json.loads(p.stdout)["series"] if s["labels"]["phase"] == "warm"][0]
    assert warm["status"] == "ok", warm["failures"]
    assert "/dtls1.2/" in warm["id"] and warm["labels"]["tls"] == "dtls1.2"
    smp = warm["samples"][0]
    assert smp["parts_sum"] == smp["instructions"] > 0 and smp["version"].startswith("DTLS")
    got = [(m["dir"], m["message"]) for m in warm["derived"]["messages"]]
    for want in (
        ("received", "HelloVerifyRequest"),
        ("received", "ServerKeyExchange"),
        ("received", "ServerHelloDone"),
        ("sent", "ClientKeyExchange"),
        ("received", "Finished"),
        ("sent", "Finished"),
    ):
        assert want in got, (want, got)
    # the big parts are where the work is: the ECDHE share and the server's signature check
    by = {k: m["instructions"] for k, m in zip(got, warm["derived"]["messages"])}
    assert by[("sent", "ClientKeyExchange")] > 10 * by[("received", "ServerHelloDone")]


def test_mbedtls_tls13_is_refused_naming_tls12(tmp_path):
    device_build_or_skip("mbedtls", "armhf")
    p = run_cli("device", "handshake", "--stack", "mbedtls", "--tls", "1.3", "--out", str(tmp_path), timeout=120)
    assert p.returncode == 2
    assert "TLS 1.2" in p.stderr and "mbedtls3" in p.stderr


def test_mbedtls_tls12_handshake_is_split_per_message(tmp_path):
    device_build_or_skip("mbedtls", "armhf")
    p = run_cli(
        "device",
        "handshake",
        "--stack",
        "mbedtls",
        "--tls",
        "1.2",
        "--group",
        "x25519",
        "--suite",
        "aes128gcm",
        "--n",
        "1",
        "--warmup",
        "0",
        "--out",
        str(tmp_path),
        "--json",
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    warm = [s for s in json.loads(p.stdout)["series"] if s["labels"]["phase"] == "warm"][0]
    names = [m["message"] for m in warm["derived"]["messages"]]
    assert {"ClientHello", "ServerHello", "ServerKeyExchange", "ClientKeyExchange", "Finished"} <= set(names)
    smp = warm["samples"][0]
    assert smp["parts_sum"] == smp["instructions"] > 0


def test_block_counting_equals_instruction_counting(tmp_path):
    """The plugin's fast mode (a block's count added at its start) gives exactly the count of the
    per-instruction mode on a deterministic workload (SHA-256 of 1 KB, no randomness)."""
    import subprocess

    b = device_build_or_skip("wolfssl", "armhf")
    counts = {}
    for mode in ("insn", "tb"):
        ev = tmp_path / f"{mode}.txt"
        subprocess.run(
            [
                b.qemu,
                "-cpu",
                "cortex-a9",
                "-plugin",
                f"{b.plugin},out={ev},count={mode}",
                str(b.client),
                "--crypto",
                "sha256-1024",
                "--n",
                "2",
            ],
            check=True,
            capture_output=True,
            timeout=60,
        )
        total, events = A.read_events(ev)
        counts[mode] = (total, A.op_counts(events))
    assert counts["insn"] == counts["tb"]
    assert all(c > 1024 for _, c in counts["tb"][1])


def test_footprint_counts_only_the_library_sections_the_link_kept():
    from secperf.measure.device_build import footprint

    ld_map = """Discarded input sections

 .text.unused   0x00000000       0x40 /b/libwolfssl.a(aes.o)

Linker script and memory map

 .text          0x00010000      0x100 /b/client.o
 .text.wc_AesEncrypt
                0x00010100      0x200 /b/libwolfssl.a(aes.o)
 .rodata.Te     0x00020000      0x400 /b/libwolfssl.a(aes.o)
 .data          0x00030000        0x8 /b/libwolfssl.a(random.o)
 .bss.cache     0x00040000       0x10 /b/libwolfssl.a(ssl.o)
 .text.memcpy   0x00010300       0x50 /usr/lib/libc.a(memcpy.o)
"""
    fp = footprint(ld_map, ("libwolfssl.a",))
    assert (fp["text"], fp["rodata"], fp["data"], fp["bss"]) == (0x200, 0x400, 8, 0x10)
    assert fp["flash"] == 0x200 + 0x400 + 8 and fp["ram_static"] == 8 + 0x10


def test_mac_table_has_the_shipped_libraries_next_to_secperf_kernels():
    from secperf.inputs.devices import mac_cost

    for dev in ("cortex-m4-wolfcrypt", "cortex-m4-mbedtls"):
        for mac in ("aes-128-cmac", "hmac-sha256"):
            c = mac_cost(dev, mac)
            assert c.unit == "instructions" and "secperf device crypto" in c.source
            assert c.per_message(1024) > c.per_message(64) > 0


@pytest.mark.slow
@pytest.mark.parametrize(
    "stack, tls, target, device",
    [
        ("wolfssl", "1.3", "cortex-m4", "cortex-m4-120"),
        ("mbedtls", "1.2", "cortex-m4", "cortex-m4-120"),
        ("wolfssl", "1.3", "cortex-m33", "cortex-m33-128"),
        ("wolfssl59", "1.3", "cortex-m4", "cortex-m4-120"),
    ],
)
def test_cortex_m_build_runs_handshakes_split_per_message(tmp_path, stack, tls, target, device):
    """The Cortex-M4 and M33 builds (compiled from Debian's source packages at first use: slow the
    first time) complete handshakes under qemu-arm -cpu max, split per message, with their footprint
    and their painted stack depth."""
    b = device_build_or_skip(stack, target)
    assert b.run_cpu == "max" and b.footprint["text"] > 10_000
    p = run_cli(
        "device",
        "handshake",
        "--device",
        device,
        "--stack",
        stack,
        "--tls",
        tls,
        "--group",
        "p-256",
        "--suite",
        "chacha20",
        "--n",
        "1",
        "--warmup",
        "0",
        "--out",
        str(tmp_path),
        "--json",
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    warm = [s for s in json.loads(p.stdout)["series"] if s["labels"]["phase"] == "warm"][0]
    assert warm["status"] == "ok" and warm["labels"]["build_target"] == target
    smp = warm["samples"][0]
    assert smp["parts_sum"] == smp["instructions"] > 0 and len(smp["messages"]) >= 5
    assert 1024 < smp["stack_bytes"] < 256 * 1024
    assert warm["derived"]["footprint"]["flash"] > warm["derived"]["footprint"]["ram_static"] > 0


@pytest.mark.slow
def test_wolfssl59_from_the_crate_runs_on_the_a_profile_next_to_debians(tmp_path):
    """wolfSSL 5.9 (the wolfssl-sys crate's sources, built at first use) on the A9: its own library
    name, a source build for ARMv7-A, the handshake split per message like Debian's 5.5."""
    b = device_build_or_skip("wolfssl59", "armhf")
    assert b.library.startswith("wolfSSL 5.9") and "wolfssl-sys" in b.build_note
    p = run_cli(
        "device",
        "handshake",
        "--device",
        "cortex-a9-400",
        "--stack",
        "wolfssl59,wolfssl",
        "--group",
        "x25519",
        "--suite",
        "aes128gcm",
        "--n",
        "1",
        "--warmup",
        "0",
        "--out",
        str(tmp_path),
        "--json",
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    warm = {s["labels"]["stack"]: s for s in json.loads(p.stdout)["series"] if s["labels"]["phase"] == "warm"}
    assert set(warm) == {"wolfssl59", "wolfssl"}
    assert warm["wolfssl59"]["labels"]["library"] != warm["wolfssl"]["labels"]["library"]
    for s in warm.values():
        smp = s["samples"][0]
        assert smp["parts_sum"] == smp["instructions"] > 0
        assert [m["message"] for m in s["derived"]["messages"]][:2] == ["ClientHello", "ServerHello"]


def test_mbedtls_primitive_counts_include_macs(tmp_path):
    device_build_or_skip("mbedtls", "armhf")
    p = run_cli(
        "device",
        "crypto",
        "--stack",
        "mbedtls",
        "--op",
        "x25519-keygen,aes-128-cmac-64,hmac-sha256-64",
        "--n",
        "2",
        "--out",
        str(tmp_path),
        "--json",
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    rows = {s["labels"]["op"]: s for s in json.loads(p.stdout)["series"]}
    assert set(rows) == {"x25519-keygen", "aes-128-cmac-64", "hmac-sha256-64"}
    for s in rows.values():
        assert s["status"] == "ok" and s["derived"]["instructions_median"] > 0
        # the operation's painted stack: some bytes, far from the 256 KiB painted
        assert 16 < s["derived"]["stack_bytes_max"] < 64 * 1024
    # a 64-byte CMAC is four AES blocks plus the subkey work; X25519 is a whole scalar multiplication
    assert (
        rows["x25519-keygen"]["derived"]["instructions_median"]
        > 50 * rows["aes-128-cmac-64"]["derived"]["instructions_median"]
    )


def test_missing_cross_compiler_is_a_setup_error_naming_the_package(tmp_path):
    """Without the cross tool chain on PATH (and no build cached for it), the run stops with a
    setup error naming the Debian package to install, not a traceback."""
    import os
    import sys

    env = dict(os.environ, PATH=str(tmp_path / "empty") + os.pathsep + os.path.dirname(sys.executable))
    env["SECPERF_HOME"] = str(tmp_path / "home")
    p = run_cli(
        "device",
        "handshake",
        "--stack",
        "wolfssl",
        "--group",
        "x25519",
        "--suite",
        "aes128gcm",
        "--out",
        str(tmp_path / "out"),
        env=env,
        timeout=120,
    )
    assert p.returncode not in (0, 2), p.stderr
    assert "gcc-arm-linux-gnueabihf" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.slow
def test_mbedtls3_tls13_handshake_is_split_per_message(tmp_path):
    """Mbed TLS 3.6 (built from the mbedtls-rs-sys crate's sources at first use: slow the first time)
    completes TLS 1.3 handshakes with openssl s_server, split per message."""
    device_build_or_skip("mbedtls3", "armhf")
    p = run_cli(
        "device",
        "handshake",
        "--stack",
        "mbedtls3",
        "--tls",
        "1.3",
        "--group",
        "x25519",
        "--suite",
        "aes128gcm",
        "--n",
        "1",
        "--warmup",
        "0",
        "--out",
        str(tmp_path),
        "--json",
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    warm = [s for s in json.loads(p.stdout)["series"] if s["labels"]["phase"] == "warm"][0]
    assert warm["status"] == "ok", warm["failures"]
    smp = warm["samples"][0]
    assert smp["version"] == "TLSv1.3" and smp["parts_sum"] == smp["instructions"] > 0
    names = [m["message"] for m in warm["derived"]["messages"]]
    assert names[:2] == ["ClientHello", "ServerHello"]
    assert {"EncryptedExtensions", "Certificate", "CertificateVerify", "Finished"} <= set(names)


@pytest.mark.slow
@pytest.mark.parametrize("stack, tls", [("wolfssl59", "1.3"), ("mbedtls3", "1.3"), ("mbedtls", "1.2")])
def test_cortex_m0plus_build_is_armv6m_code_and_runs_handshakes_and_primitives(tmp_path, stack, tls):
    """The Cortex-M0+ build (newlib and our Linux system-call layer, built at first use): ARMv6-M code
    without floating point, a handshake per group split per message with its footprint and stack, and
    primitive counts; a stack not built for the M0+ exits 2 naming the one that is."""
    import shutil
    import subprocess

    b = device_build_or_skip(stack, "cortex-m0plus")
    assert b.run_cpu == "max" and b.footprint["text"] > 10_000 and "newlib" in b.build_note
    readelf = shutil.which("arm-none-eabi-readelf") or shutil.which("arm-linux-gnueabihf-readelf")
    if readelf:
        attrs = subprocess.run([readelf, "-A", str(b.client)], capture_output=True, text=True, check=True).stdout
        arch = [ln.split(":", 1)[1].strip() for ln in attrs.splitlines() if ln.strip().startswith("Tag_CPU_arch:")]
        assert arch and arch[0] in ("v6S-M", "v6-M"), attrs
        assert "Tag_FP_arch" not in attrs and "VFP" not in attrs, attrs
        hdr = subprocess.run([readelf, "-h", str(b.client)], capture_output=True, text=True, check=True).stdout
        assert "soft-float ABI" in hdr, hdr
    p = run_cli(
        "device",
        "handshake",
        "--device",
        "cortex-m0plus-64",
        "--stack",
        stack,
        "--tls",
        tls,
        "--group",
        "x25519,p-256",
        "--suite",
        "aes128gcm",
        "--n",
        "1",
        "--warmup",
        "0",
        "--out",
        str(tmp_path / "hs"),
        "--json",
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    warm = {s["labels"]["group"]: s for s in json.loads(p.stdout)["series"] if s["labels"]["phase"] == "warm"}
    assert set(warm) == {"x25519", "p-256"}
    for s in warm.values():
        assert s["status"] == "ok" and s["labels"]["build_target"] == "cortex-m0plus", s["failures"]
        smp = s["samples"][0]
        assert smp["parts_sum"] == smp["instructions"] > 0 and len(smp["messages"]) >= 5
        assert smp["version"] == f"TLSv{tls}"
        assert 1024 < smp["stack_bytes"] < 256 * 1024
        assert s["derived"]["footprint"]["flash"] > s["derived"]["footprint"]["ram_static"] > 0
        assert [m["message"] for m in s["derived"]["messages"]][:2] == ["ClientHello", "ServerHello"]
    p = run_cli(
        "device",
        "crypto",
        "--device",
        "cortex-m0plus-64",
        "--stack",
        stack,
        "--n",
        "1",
        "--out",
        str(tmp_path / "crypto"),
        "--json",
        timeout=600,
    )
    assert p.returncode == 0, p.stderr
    ops = {s["labels"]["op"]: s for s in json.loads(p.stdout)["series"]}
    for op in ("x25519-keygen", "p256-derive", "ecdsa-p256-verify", "aes-128-gcm-1024"):
        assert ops[op]["status"] == "ok" and ops[op]["samples"][0]["instructions"] > 0
    p = run_cli(
        "device",
        "crypto",
        "--device",
        "cortex-m0plus-64",
        "--stack",
        "openssl",
        "--out",
        str(tmp_path / "no"),
        timeout=120,
    )
    assert p.returncode == 2 and "no Cortex-M0+ build of openssl" in p.stderr and "wolfssl59" in p.stderr, p.stderr
