"""`secperf device crypto --source FILES --entry FUNCTION`: the user's own code counted on the emulated
cores. Structure only, never time: a loop of known length counts exactly its instructions, a C CRC-32
gives zlib's value and scales with its input, stack and code size are present, inputs are restored
before every call, and each way the user's code can go wrong has its named exit (compile error and
missing symbol 2 with the compiler's or linker's words; a fault and an endless loop 1 with the
emulator's words or the limit)."""

import json
import shutil
import zlib
from pathlib import Path

import pytest

from conftest import run_cli, skip
from secperf.core import result as R
from secperf.core.errors import InputError

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "user-code"


def _toolchain_or_skip(newlib=False):
    for exe in ("arm-linux-gnueabihf-gcc", "qemu-arm", "make", "gcc") + (("arm-none-eabi-gcc",) if newlib else ()):
        if shutil.which(exe) is None:
            skip("needs-bootstrap", f"{exe} is not installed (scripts/bootstrap installs it)")


def _harness(tmp_path, text, name="h.toml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def _count(tmp_path, device, sources, entry, harness=None, name=None, expect=0):
    args = [
        "device",
        "crypto",
        "--device",
        device,
        "--source",
        ",".join(map(str, sources)),
        "--entry",
        entry,
        "--out",
        str(tmp_path / "runs"),
        "--json",
    ]
    args += ["--harness", harness] if harness else []
    args += ["--name", name] if name else []
    p = run_cli(*args, timeout=600)
    assert p.returncode == expect, p.stderr[-2000:]
    return p, (json.loads(p.stdout) if p.stdout.strip() else None)


# --- the harness file: every field checked, named ------------------------------------------------


@pytest.mark.parametrize(
    "text,field",
    [
        ("[run]\ncalls = 0\n", "run.calls"),
        ("[run]\nwarmup = -1\n", "run.warmup"),
        ("[run]\ntime_limit_s = \"long\"\n", "run.time_limit_s"),
        ("[run]\nrepeat = 3\n", "[run] has unknown key repeat"),
        ("[run]\ninstruction_limit = 10\n", "run.instruction_limit"),
        ("[build]\nopt = \"-O9\"\n", "build.opt"),
        ("[build]\ncflags = [\"-mcpu=cortex-m7\"]\n", "build.cflags '-mcpu=cortex-m7'"),
        ("[[arg]]\nkind = \"buf\"\n", "arg 1: kind 'buf'"),
        ("[[arg]]\nkind = \"in\"\nbytes = 0\n", "arg 1: bytes"),
        ("[[arg]]\nkind = \"in\"\nhex = \"zz\"\n", "arg 1: hex"),
        ("[[arg]]\nkind = \"int\"\nvalue = 1\n[[arg]]\nkind = \"out\"\n", "arg 2: bytes"),
        ("[[arg]]\nkind = \"int\"\nvalue = 4294967296\n", "arg 1: value"),
        ("[[arg]]\nkind = \"int\"\nvalue = 1\nbytes = 3\n", "unknown key bytes"),
        ("[oops]\n", "unknown table oops"),
        ("calls = \n", "not TOML"),
    ],
)
def test_bad_harness_file_names_the_field(tmp_path, text, field):
    from secperf.measure.device_user import load_harness

    path = _harness(tmp_path, text)
    with pytest.raises(InputError) as e:
        load_harness(path)
    assert field in str(e.value) and path in str(e.value)


def test_harness_arguments_in_order_with_seeded_pattern(tmp_path):
    from secperf.measure.device_user import load_harness, pattern

    h = load_harness(
        _harness(
            tmp_path,
            "[run]\nseed = 7\n[[arg]]\nkind = \"in\"\nbytes = 20\n[[arg]]\nkind = \"in\"\n"
            "hex = \"00ff10\"\n[[arg]]\nkind = \"int\"\nvalue = -1\n[[arg]]\nkind = \"out\"\n"
            "bytes = 4\n",
        )
    )
    assert [a.plan_line() for a in h.args] == ["arg in 20", "arg in 3", "arg int 4294967295", "arg out 4"]
    assert h.args[0].data == pattern(20, 7) and h.args[1].data == b"\x00\xff\x10"
    # splitmix64's reference sequence: seed 0 gives 0xe220a8397b1dcdaf first
    assert pattern(8, 0) == (0xE220A8397B1DCDAF).to_bytes(8, "little")
    assert pattern(20, 7) != pattern(20, 8)


def test_source_entry_and_name_are_checked_before_anything_builds(tmp_path):
    from secperf.measure import device_user as U

    with pytest.raises(InputError, match="no such file"):
        U.check_sources([str(tmp_path / "missing.c")])
    (tmp_path / "x.py").write_text("")
    with pytest.raises(InputError, match="not a C"):
        U.check_sources([str(tmp_path / "x.py")])
    for bad in ("1abc", "a-b", "main", ""):
        with pytest.raises(InputError, match="--entry"):
            U.check_entry(bad)
    assert U.check_name(None, "crc32_bitwise") == "crc32-bitwise"
    with pytest.raises(InputError, match="--name"):
        U.check_name("ECDSA sign", "f")


@pytest.mark.parametrize(
    "extra,words",
    [
        (["--entry", "f"], "--source FILES and --entry FUNCTION go together"),
        (["--source", "x.c", "--entry", "f", "--stack", "wolfssl"], "--stack"),
        (["--source", "x.c", "--entry", "f", "--op", "sha256-1024"], "--op"),
    ],
)
def test_options_that_do_not_go_with_user_code_exit_2(tmp_path, extra, words):
    p = run_cli("device", "crypto", "--device", "cortex-m4-80", *extra, "--out", str(tmp_path), timeout=120)
    assert p.returncode == 2 and words in p.stderr and "Traceback" not in p.stderr, p.stderr


# --- counted on the emulated cores -------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("device", ["cortex-m4-80", "cortex-a9-400", "cortex-m0plus-64"])
def test_assembly_loop_counts_exactly_its_instructions(tmp_path, device):
    """countdown(n): movs, then subs+bne n times, then bx lr: 2n + 2 instructions on every core, the
    harness's own instructions taken out; cycles with a band at least one per instruction."""
    _toolchain_or_skip(newlib="m0" in device)
    for n in (10, 1000):
        h = _harness(tmp_path, f"[run]\ncalls = 2\nwarmup = 0\n[[arg]]\nkind = \"int\"\nvalue = {n}\n", f"n{n}.toml")
        _, doc = _count(tmp_path, device, [EXAMPLES / "loop.S"], "countdown", h)
        (s,) = doc["series"]
        assert s["kind"] == "device_crypto" and s["status"] == "ok", s["failures"]
        assert s["labels"]["stack"] == "user" and s["labels"]["op"] == "countdown"
        assert s["labels"]["library"].startswith("loop.S sha256:")
        assert [x["instructions"] for x in s["samples"]] == [2 * n + 2] * 3
        assert all(x["ret"] == n for x in s["samples"])  # r0 is left untouched
        d = s["derived"]
        t = d["time"]
        assert 0 < t["cycles_low"] <= t["cycles"] <= t["cycles_high"]
        if device.startswith("cortex-m"):  # a scalar pipeline: at least a cycle per instruction
            assert t["cycles"] >= 2 * n + 2
        assert t["ms"] == pytest.approx(t["cycles"] / (t["clock_mhz"] * 1e3))
        assert d["footprint"]["text"] == d["entry_bytes"] == 8  # four 16-bit instructions
        assert d["stack_bytes_max"] > 0


@pytest.mark.slow
@pytest.mark.parametrize("device", ["cortex-m4-80", "cortex-m0plus-64"])
def test_c_crc32_matches_zlib_and_scales_with_the_input(tmp_path, device):
    _toolchain_or_skip(newlib="m0" in device)
    from secperf.measure.device_user import pattern

    counts = {}
    for size in (64, 256):
        h = _harness(
            tmp_path,
            f"[run]\ncalls = 2\nseed = 5\n[[arg]]\nkind = \"in\"\nbytes = {size}\n"
            f"[[arg]]\nkind = \"int\"\nvalue = {size}\n",
            f"s{size}.toml",
        )
        _, doc = _count(tmp_path, device, [EXAMPLES / "crc32.c"], "crc32_bitwise", h, name="crc32")
        (s,) = doc["series"]
        assert s["status"] == "ok", s["failures"]
        assert s["derived"]["check"]["ret"] == zlib.crc32(pattern(size, 5))
        assert s["labels"]["op"] == "crc32" and s["labels"]["device"] == device
        assert [x["phase"] for x in s["samples"]] == ["cold", "warmup", "warm", "warm"]
        d = s["derived"]
        assert 20 < d["footprint"]["text"] < 400 and d["footprint"]["flash"] >= d["footprint"]["text"]
        assert d["stack_bytes_max"] > 0 and d["time"]["cycles"] > d["instructions_median"] * 0.5
        counts[size] = d["instructions_median"]
    # bit by bit: eight rounds per byte, so four times the bytes is about four times the count
    assert 3.6 < counts[256] / counts[64] < 4.1


@pytest.mark.slow
def test_inputs_are_restored_and_outputs_written_every_call(tmp_path):
    _toolchain_or_skip()
    src = tmp_path / "inplace.c"
    src.write_text(
        "#include <stdint.h>\n#include <stddef.h>\n"
        "uint32_t bump(uint8_t *buf, size_t n, uint8_t *out) {\n"
        "  uint32_t s = 0;\n  for (size_t i = 0; i < n; i++) { buf[i]++; s += buf[i]; out[i % 4] ^= buf[i]; }\n"
        "  return s;\n}\n"
    )
    h = _harness(
        tmp_path,
        "[run]\ncalls = 3\n[[arg]]\nkind = \"in\"\nhex = \"01020304\"\n[[arg]]\nkind = \"int\"\n"
        "value = 4\n[[arg]]\nkind = \"out\"\nbytes = 4\n",
    )
    _, doc = _count(tmp_path, "cortex-m4-80", [src], "bump", h)
    (s,) = doc["series"]
    # the same input every call (restored), so the same sum and the same count
    assert {x["ret"] for x in s["samples"]} == {2 + 3 + 4 + 5}
    assert len({x["instructions"] for x in s["samples"][1:]}) == 1
    assert s["derived"]["check"]["outputs"] == [{"arg": 2, "bytes": 4, "hex": "02030405"}]


@pytest.mark.slow
def test_compile_error_exits_2_with_the_compilers_words(tmp_path):
    _toolchain_or_skip()
    src = tmp_path / "broken.c"
    src.write_text("int broken(int x) { return x + ; }\n")
    p, _ = _count(tmp_path, "cortex-m4-80", [src], "broken", expect=2)
    assert "broken.c: does not compile" in p.stderr and "expected expression" in p.stderr
    assert "Traceback" not in p.stderr and not (tmp_path / "runs").exists()


@pytest.mark.slow
def test_missing_entry_exits_2_with_the_linkers_words(tmp_path):
    _toolchain_or_skip()
    p, _ = _count(tmp_path, "cortex-m4-80", [EXAMPLES / "crc32.c"], "crc32_bytewise", expect=2)
    assert "--entry crc32_bytewise: no such function in crc32.c" in p.stderr
    assert "undefined reference to `crc32_bytewise'" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.slow
def test_assembly_entry_without_function_type_is_named(tmp_path):
    _toolchain_or_skip()
    src = tmp_path / "notype.S"
    src.write_text(".syntax unified\n.thumb\n.text\n.global f\nf:\n  bx lr\n")
    p, _ = _count(tmp_path, "cortex-m4-80", [src], "f", expect=2)
    assert "--entry f: the symbol is not a function" in p.stderr and "%function" in p.stderr


@pytest.mark.slow
def test_null_write_is_a_failed_series_with_the_emulators_words(tmp_path):
    _toolchain_or_skip()
    src = tmp_path / "fault.c"
    src.write_text("#include <stdint.h>\nvoid null_write(void) { *(volatile uint32_t *)0 = 1; }\n")
    p, doc = _count(tmp_path, "cortex-m4-80", [src], "null_write", expect=1)
    (s,) = doc["series"]
    assert s["status"] == "failed" and not s["samples"]
    reason = s["failures"][0]["reason"]
    assert reason.startswith("call 0 (the cold one): the guest stopped (signal 11)") and "Segmentation fault" in reason
    assert "Traceback" not in p.stderr


@pytest.mark.slow
def test_endless_loop_is_stopped_at_the_time_limit(tmp_path):
    _toolchain_or_skip()
    src = tmp_path / "spin.c"
    src.write_text("void spin(void) { for (;;) __asm__ volatile(\"\"); }\n")
    h = _harness(tmp_path, "[run]\ntime_limit_s = 3\n")
    p, doc = _count(tmp_path, "cortex-m4-80", [src], "spin", h, expect=1)
    (s,) = doc["series"]
    assert s["status"] == "failed" and "time limit" in s["failures"][0]["reason"]
    assert "run.time_limit_s" in s["failures"][0]["reason"]


@pytest.mark.slow
def test_endless_loop_is_stopped_at_the_instruction_limit(tmp_path):
    _toolchain_or_skip()
    src = tmp_path / "spin.c"
    src.write_text("void spin(void) { for (;;) __asm__ volatile(\"\"); }\n")
    h = _harness(tmp_path, "[run]\ninstruction_limit = 5000000\ntime_limit_s = 300\n")
    p, doc = _count(tmp_path, "cortex-m4-80", [src], "spin", h, expect=1)
    (s,) = doc["series"]
    reason = s["failures"][0]["reason"]
    assert s["status"] == "failed" and reason.startswith("instruction limit: ")
    assert "limit of 5000000 instructions" in reason and "run.instruction_limit" in reason


@pytest.mark.slow
def test_user_op_replaces_the_librarys_in_the_device_cost_table(tmp_path):
    """A row named as an op the model knows becomes the client's cost of that op: it joins a library's
    table (the user's stack is an add-on), replaces the library's figure in either order of the
    Results, and keeps the library's as the figure measured handshakes ran (their residual)."""
    _toolchain_or_skip()
    from secperf.core.errors import SetupError
    from secperf.inputs.devices import core
    from secperf.measure.device_build import ensure_built
    from secperf.model import costs as C

    try:
        ensure_built("wolfssl59", "cortex-m4")
    except SetupError as exc:
        skip("needs-bootstrap", f"the wolfSSL 5.9 Cortex-M4 build is unavailable (run scripts/bootstrap): {exc}")
    _, user = _count(
        tmp_path,
        "cortex-m4-80",
        [EXAMPLES / "crc32.c"],
        "crc32_bitwise",
        str(EXAMPLES / "crc32.toml"),
        name="ecdsa-p256-sign",
    )
    p = run_cli(
        "device",
        "crypto",
        "--device",
        "cortex-m4-80",
        "--stack",
        "wolfssl59",
        "--op",
        "ecdsa-p256-sign",
        "--n",
        "1",
        "--out",
        str(tmp_path / "runs"),
        "--json",
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    lib = json.loads(p.stdout)
    m4 = core("cortex-m4-80")
    docs = [R.validate(lib), R.validate(user)]
    assert C.device_stack(docs, None, "cortex-m4-80") == "wolfssl59"  # the user's rows: an add-on
    key = ("client", "sign:ecdsa-p256")
    (us,) = user["series"]
    (ls,) = lib["series"]
    user_us = us["derived"]["time"]["cycles"] / m4.clock_mhz
    lib_us = ls["derived"]["time"]["cycles"] / m4.clock_mhz
    for order in ((lib, user), (user, lib)):
        t = None
        for doc in order:
            t = C.from_device(R.validate(doc), m4, t, stack="wolfssl59")
        fig = t.party_ops[key]
        assert fig.us == pytest.approx(user_us) and fig.as_measured_us == pytest.approx(lib_us)
        assert fig.source.startswith("the user's own code") and us["id"] in fig.source
    assert user_us < lib_us / 10  # a CRC is no signature: the replacement is visible
