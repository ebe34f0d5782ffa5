"""The user's own code with 64-bit, floating-point and struct arguments (`device crypto --source
--harness`): each argument goes where the core's ABI puts it (AAPCS core registers and stack; VFP
registers when the core's flags select the hard-float variant), checked three ways: the layout rule
against the Procedure Call Standard's cases, C entries that return the number of the first argument
they did not receive, and assembly probes that read the registers and stack slots themselves (a
probe for the other ABI finds its first argument missing). Every bad field is an InputError naming
the file, the argument and the field."""

import json
import shutil
import struct
from pathlib import Path

import pytest

from conftest import run_cli, skip
from secperf.core.errors import InputError
from secperf.inputs.user_code import layout, load_harness

HERE = Path(__file__).resolve().parent

# entries that check each argument: 0 when all are right, else the number of the first wrong one
ABI_C = r"""
#include <stdint.h>

struct s16 { uint32_t w[4]; };
struct s24 { uint64_t a; uint32_t b, c; uint64_t d; };
struct v3 { float x, y, z; };
struct d2 { double a, b; };

int pairs(uint32_t a, int64_t b, uint32_t c, uint64_t d, float f, double g, float h, uint8_t *io)
{
    if (a != 0x11111111u) return 1;
    if (b != -0x123456789abcdefLL) return 2;
    if (c != 0x33333333u) return 3;
    if (d != 0xfedcba9876543210ULL) return 4;
    if (f != 1.5f) return 5;
    if (g != -2.25) return 6;
    if (h != 3.75f) return 7;
    if (io[0] != 0xaa || io[1] != 0xbb) return 8;
    io[0] = 0x55;
    return 0;
}

int split(const uint8_t *in, struct s16 p, uint32_t tail)
{
    if (in[0] != 1 || in[1] != 2) return 1;
    if (p.w[0] != 0x03020100u || p.w[1] != 0x07060504u || p.w[2] != 0x0b0a0908u || p.w[3] != 0x0f0e0d0cu) return 2;
    if (tail != 0x77777777u) return 3;
    return 0;
}

int split8(uint32_t a, struct s24 p, uint32_t t)
{
    if (a != 5) return 1;
    if (p.a != 0x0706050403020100ULL || p.b != 0x0b0a0908u || p.c != 0x0f0e0d0cu || p.d != 0x1716151413121110ULL)
        return 2;
    if (t != 6) return 3;
    return 0;
}

int nofill(double x, uint32_t a, uint64_t y, uint32_t z)
{
    if (x != 0.1) return 1;
    if (a != 9) return 2;
    if (y != 0x0123456789abcdefULL) return 3;
    if (z != 10) return 4;
    return 0;
}

int hfa(float f, struct v3 v, double d, struct d2 w, float g)
{
    if (f != 1.0f) return 1;
    if (v.x != 2.0f || v.y != 3.0f || v.z != 4.0f) return 2;
    if (d != 5.0) return 3;
    if (w.a != 6.0 || w.b != 7.0) return 4;
    if (g != 8.0f) return 5;
    return 0;
}

uint64_t wide(const uint8_t *in, uint64_t len, double scale, struct s24 p)
{
    if (len != 0x100000004ULL) return 1;
    if (scale != 0.5) return 2;
    if (p.d != 0x1716151413121110ULL) return 3;
    return 0x8000000100000000ULL | in[4];
}

int32_t negative(void) { return -5; }
void nothing(void) {}
"""

S24 = 'kind = "struct"\nalign = 8\nhex = "000102030405060708090a0b0c0d0e0f1011121314151617"\n'
HARNESSES = {
    "pairs": [
        'kind = "int"\nvalue = 0x11111111',
        'kind = "i64"\nvalue = -81985529216486895',  # -0x123456789abcdef
        'kind = "int"\nvalue = 0x33333333',
        'kind = "u64"\nvalue = 0xfedcba9876543210',
        'kind = "float"\nvalue = 1.5',
        'kind = "double"\nvalue = -2.25',
        'kind = "float"\nvalue = 3.75',
        'kind = "inout"\nhex = "aabb"',
    ],
    "split": [
        'kind = "in"\nhex = "0102"',
        'kind = "struct"\nalign = 4\nhex = "000102030405060708090a0b0c0d0e0f"',
        'kind = "int"\nvalue = 0x77777777',
    ],
    "split8": ['kind = "int"\nvalue = 5', S24, 'kind = "int"\nvalue = 6'],
    "nofill": [
        'kind = "double"\nvalue = 0.1',
        'kind = "int"\nvalue = 9',
        'kind = "u64"\nvalue = 0x0123456789abcdef',
        'kind = "int"\nvalue = 10',
    ],
    "hfa": [
        'kind = "float"\nvalue = 1',
        'kind = "struct"\nmembers = "float"\nvalues = [2, 3, 4]',
        'kind = "double"\nvalue = 5',
        'kind = "struct"\nmembers = "double"\nvalues = [6, 7]',
        'kind = "float"\nvalue = 8',
    ],
    "wide": [
        'kind = "in"\nhex = "00000000fe"',
        'kind = "u64"\nvalue = 0x100000004',
        'kind = "double"\nvalue = 0.5',
        S24,
    ],
}
# where the AAPCS puts them: (hard float, soft float)
PLACES = {
    "pairs": (
        ["r0", "r2:r3", "stack+0", "stack+8", "s0", "d1", "s1", "stack+16"],
        ["r0", "r2:r3", "stack+0", "stack+8", "stack+16", "stack+24", "stack+32", "stack+36"],
    ),
    "split": (["r0", "r1-r3+stack+0..3", "stack+4"],) * 2,
    "split8": (["r0", "r2-r3+stack+0..15", "stack+16"],) * 2,
    "nofill": (["d0", "r0", "r2:r3", "stack+0"], ["r0:r1", "r2", "stack+0", "stack+8"]),
    "hfa": (["s0", "s1-s3", "d2", "d3-d4", "s10"], ["r0", "r1-r3", "stack+0", "stack+8", "stack+24"]),
    "wide": (["r0", "r2:r3", "d0", "stack+0"], ["r0", "r2:r3", "stack+0", "stack+8"]),
}
RETURNS = {"wide": ("u64", 0x80000001000000FE)}

# the assembly probes: probe(float 1.5, double -2.25, float 3.75, uint32 9, uint64 0x0123456789abcdef,
# uint32 10) reading each where its ABI puts it; 0, or the number of the first argument not found
PROBE_TOML = "[run]\ncalls = 1\nwarmup = 0\n" + "".join(
    f"[[arg]]\n{a}\n"
    for a in (
        'kind = "float"\nvalue = 1.5',
        'kind = "double"\nvalue = -2.25',
        'kind = "float"\nvalue = 3.75',
        'kind = "int"\nvalue = 9',
        'kind = "u64"\nvalue = 0x0123456789abcdef',
        'kind = "int"\nvalue = 10',
    )
)
_HEAD = ".syntax unified\n.thumb\n.text\n.global probe\n.type probe, %function\n.thumb_func\nprobe:\n"
_TAIL = "    movs r4, #0\n9:  mov r0, r4\n    pop {r4, r5, pc}\n.ltorg\n"
# soft float (Thumb-1): f0 r0, x r2:r3 (r1 skipped), f1 [sp], a [sp+4], y [sp+8] (8-aligned), z [sp+16]
PROBE_SOFT = (
    _HEAD
    + """    push {r4, r5, lr}
    movs r4, #1
    ldr r5, =0x3fc00000
    cmp r0, r5
    bne 9f
    movs r4, #2
    cmp r2, #0
    bne 9f
    ldr r5, =0xc0020000
    cmp r3, r5
    bne 9f
    movs r4, #3
    ldr r0, [sp, #12]
    ldr r5, =0x40700000
    cmp r0, r5
    bne 9f
    movs r4, #4
    ldr r0, [sp, #16]
    cmp r0, #9
    bne 9f
    movs r4, #5
    ldr r0, [sp, #20]
    ldr r5, =0x89abcdef
    cmp r0, r5
    bne 9f
    ldr r0, [sp, #24]
    ldr r5, =0x01234567
    cmp r0, r5
    bne 9f
    movs r4, #6
    ldr r0, [sp, #28]
    cmp r0, #10
    bne 9f
"""
    + _TAIL
)
# hard float: f0 s0, x d1 = s2:s3, f1 s1 (back-filled), a r0, y r2:r3 (r1 skipped), z [sp]
PROBE_HARD = (
    _HEAD
    + """    push {r4, r5, lr}
    movs r4, #1
    vmov r5, s0
    ldr r1, =0x3fc00000
    cmp r5, r1
    bne 9f
    movs r4, #2
    vmov r5, s2
    cmp r5, #0
    bne 9f
    vmov r5, s3
    ldr r1, =0xc0020000
    cmp r5, r1
    bne 9f
    movs r4, #3
    vmov r5, s1
    ldr r1, =0x40700000
    cmp r5, r1
    bne 9f
    movs r4, #4
    cmp r0, #9
    bne 9f
    movs r4, #5
    ldr r1, =0x89abcdef
    cmp r2, r1
    bne 9f
    ldr r1, =0x01234567
    cmp r3, r1
    bne 9f
    movs r4, #6
    ldr r1, [sp, #12]
    cmp r1, #10
    bne 9f
"""
    + _TAIL
)


def _toolchain_or_skip(newlib=False):
    for exe in ("arm-linux-gnueabihf-gcc", "qemu-arm", "make", "gcc") + (("arm-none-eabi-gcc",) if newlib else ()):
        if shutil.which(exe) is None:
            skip("needs-bootstrap", f"{exe} is not installed (scripts/bootstrap installs it)")


def _file(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def _toml(args, run=""):
    return (f"[run]\n{run}\n" if run else "") + "".join(f"[[arg]]\n{a}\n" for a in args)


def _count(tmp_path, device, source, entry, harness, expect=0):
    p = run_cli(
        "device", "crypto", "--device", device, "--source", source, "--entry", entry,
        "--harness", harness, "--out", str(tmp_path / "runs"), "--json", timeout=600,
    )  # fmt: skip
    assert p.returncode == expect, p.stderr[-2000:]
    assert "Traceback" not in p.stderr
    return p, (json.loads(p.stdout) if p.stdout.strip() else None)


# --- the layout rule -----------------------------------------------------------------------------


@pytest.mark.parametrize("entry", sorted(PLACES))
@pytest.mark.parametrize("hard", [True, False])
def test_layout_follows_the_aapcs(tmp_path, entry, hard):
    h = load_harness(_file(tmp_path, "h.toml", _toml(HARNESSES[entry])))
    assert layout(h.args, hard)[0] == PLACES[entry][0 if hard else 1]


@pytest.mark.parametrize(
    "kinds,hard,places,stack",
    [
        # an i64 after three words skips r3 and no later word back-fills it
        (["int", "int", "int", "i64", "int"], False, ["r0", "r1", "r2", "stack+0", "stack+8"], 12),
        # the VFP registers: d0-d6, a float in s14, a double that no longer fits goes to the stack and
        # closes them, so the next float does not take the free s15
        (
            ["double"] * 7 + ["float", "double", "float"],
            True,
            [f"d{i}" for i in range(7)] + ["s14", "stack+0", "stack+8"],
            12,
        ),
        # once a double went to the stack, a struct is not split: it goes whole to the stack
        (["double"] * 9 + ["int", "struct"], True, [f"d{i}" for i in range(8)] + ["stack+0", "r0", "stack+8"], 24),
        (["int", "int", "int", "double", "struct"], False, ["r0", "r1", "r2", "stack+0", "stack+8"], 24),
        # a struct of five doubles is not a homogeneous aggregate (more than four): core registers
        (["int", "struct5d"], True, ["r0", "r2-r3+stack+0..31"], 32),
    ],
)
def test_layout_edge_rules(kinds, hard, places, stack, tmp_path):
    text = {
        "int": 'kind = "int"\nvalue = 1',
        "i64": 'kind = "i64"\nvalue = 1',
        "float": 'kind = "float"\nvalue = 1',
        "double": 'kind = "double"\nvalue = 1',
        "struct": 'kind = "struct"\nalign = 4\nbytes = 16',
        "struct5d": 'kind = "struct"\nmembers = "double"\nvalues = [1, 2, 3, 4, 5]',
    }
    h = load_harness(_file(tmp_path, "h.toml", _toml([text[k] for k in kinds])))
    assert layout(h.args, hard) == (places, stack)


def test_values_are_their_bytes_little_end_first(tmp_path):
    h = load_harness(_file(tmp_path, "h.toml", _toml(HARNESSES["pairs"] + [S24])))
    i64, u64, f, d, io, s = (h.args[i] for i in (1, 3, 4, 5, 7, 8))
    assert i64.data == (-0x123456789ABCDEF).to_bytes(8, "little", signed=True) and i64.align == 8
    assert u64.data == bytes.fromhex("1032547698badcfe")
    assert f.data == struct.pack("<f", 1.5) and d.data == struct.pack("<d", -2.25)
    assert [a.plan_line() for a in (io, s, h.args[0])] == ["arg inout 2", "arg val 24", "arg int 286331153"]
    assert s.data == bytes(range(24)) and s.align == 8


def test_the_call_site_has_the_entrys_types(tmp_path):
    from secperf.measure.device_user import call_stub

    h = load_harness(_file(tmp_path, "h.toml", _toml(HARNESSES["wide"] + HARNESSES["hfa"][1:2], 'returns = "u64"')))
    c = call_stub("wide", h)
    assert "typedef uint64_t (*sp_user_fn)(void *, uint64_t, double, struct sp_user_s3, struct sp_user_s4);" in c
    assert "struct sp_user_s3 { uint64_t w[3]; };" in c and "struct sp_user_s4 { float w[3]; };" in c
    assert "void *const sp_user_entry = (void *)wide;" in c


@pytest.mark.parametrize(
    "args,field",
    [
        (['kind = "i64"\nvalue = 9223372036854775808'], "arg 1 (kind i64): value"),
        (['kind = "u64"\nvalue = -1'], "arg 1 (kind u64): value"),
        (['kind = "int"\nvalue = 1', 'kind = "u64"\nvalue = "5"'], "arg 2 (kind u64): value"),
        (['kind = "float"\nvalue = nan'], "arg 1 (kind float): value"),
        (['kind = "double"\nvalue = inf'], "arg 1 (kind double): value"),
        (['kind = "double"'], "arg 1 (kind double): value"),
        (['kind = "float"\nvalue = 1e39'], "arg 1 (kind float): value 1e+39 is out of range"),
        (['kind = "struct"\nalign = 4'], "arg 1 (kind struct): bytes"),
        (['kind = "struct"\nalign = 2\nbytes = 8'], "arg 1 (kind struct): align 2"),
        (['kind = "struct"\nbytes = 8'], "arg 1 (kind struct): align None"),
        (['kind = "struct"\nalign = 4\nhex = "010203040506"'], "arg 1 (kind struct): bytes: 6 is not a multiple"),
        (['kind = "struct"\nalign = 8\nbytes = 136'], "arg 1: bytes"),
        (['kind = "struct"\nalign = 4\nhex = "' + "00" * 132 + '"'], "hex holds 132 bytes; at most 128"),
        (['kind = "struct"\nmembers = "int"\nbytes = 8\nalign = 4'], "arg 1 (kind struct): members 'int'"),
        (['kind = "struct"\nalign = 4\nvalues = [1.0]'], "arg 1 (kind struct): values"),
        (['kind = "struct"\nmembers = "float"\nvalues = [1.0, nan]'], "values: nan is not a finite number"),
        (['kind = "struct"\nmembers = "double"\nalign = 4\nvalues = [1.0]'], "arg 1 (kind struct): align 4"),
        (['kind = "inout"\nbytes = 0'], "arg 1: bytes"),
        (['kind = "double"\nvalue = 1\nalign = 8'], "arg 1 (kind double): unknown key align"),
        (['kind = "int"\nvalue = 1'] * 13, "[[arg]]: give up to 12"),
    ],
)
def test_bad_by_value_fields_are_named(tmp_path, args, field):
    path = _file(tmp_path, "h.toml", _toml(args))
    with pytest.raises(InputError) as e:
        load_harness(path)
    assert field in str(e.value) and path in str(e.value)


def test_bad_return_type_is_named(tmp_path):
    path = _file(tmp_path, "h.toml", '[run]\nreturns = "f64"\n')
    with pytest.raises(InputError, match=r"run\.returns 'f64'"):
        load_harness(path)


@pytest.mark.parametrize("hard", [True, False])
def test_too_many_argument_words_name_the_argument(tmp_path, hard):
    path = _file(tmp_path, "h.toml", _toml(['kind = "struct"\nalign = 4\nbytes = 128'] * 3))
    h = load_harness(path)
    with pytest.raises(InputError) as e:
        layout(h.args, hard, f"--harness {path}")
    assert f"--harness {path}: arg 3 (kind struct): too many argument words" in str(e.value)


# --- on the emulated cores -----------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    "device,abi", [("cortex-m4-80", "hard"), ("cortex-m0plus-64", "soft"), ("cortex-a7-800", "hard")]
)
def test_c_entries_receive_every_argument(tmp_path, device, abi):
    """Each entry returns the number of the first argument it did not receive (0: all right)."""
    _toolchain_or_skip(newlib="m0" in device)
    src = _file(tmp_path, "abi.c", ABI_C)
    for entry, args in HARNESSES.items():
        returns, want = RETURNS.get(entry, ("u32", 0))
        h = _file(tmp_path, f"{entry}.toml", _toml(args, f'calls = 2\nreturns = "{returns}"'))
        _, doc = _count(tmp_path, device, src, entry, h)
        (s,) = doc["series"]
        assert s["status"] == "ok", s["failures"]
        assert [x["ret"] for x in s["samples"]] == [want] * 4, entry
        assert s["derived"]["check"]["ret"] == want
        assert s["labels"]["float_abi"] == abi and s["labels"]["returns"] == returns
        places = PLACES[entry][0 if abi == "hard" else 1]
        assert [p.rsplit(" @", 1)[1] for p in s["labels"]["arguments"][1:-1].split(", ")] == places
        if entry == "pairs":  # the inout buffer as the function left it, every call from the same input
            assert s["derived"]["check"]["outputs"] == [{"arg": 7, "bytes": 2, "hex": "55bb"}]
    if device == "cortex-m4-80":  # a signed 32-bit return
        h = _file(tmp_path, "neg.toml", '[run]\ncalls = 1\nreturns = "i32"\n')
        _, doc = _count(tmp_path, device, src, "negative", h)
        assert {x["ret"] for x in doc["series"][0]["samples"]} == {-5}
        h = _file(tmp_path, "void.toml", '[run]\ncalls = 1\nreturns = "void"\n')
        _, doc = _count(tmp_path, device, src, "nothing", h)  # no return value: none recorded
        assert {x["ret"] for x in doc["series"][0]["samples"]} == {None} and doc["series"][0]["derived"]["check"][
            "ret"
        ] is None


@pytest.mark.slow
def test_assembly_probes_find_each_argument_where_the_abi_puts_it(tmp_path):
    """The registers and stack slots themselves: an i64 skipping r1 (hard) or going to an aligned stack
    slot (soft), a double in d1 (hard) or r2:r3 (soft), a float back-filling s1, words on the stack.
    The soft-float probe on a hard-float core finds its first argument missing."""
    _toolchain_or_skip(newlib=True)
    h = _file(tmp_path, "probe.toml", PROBE_TOML)
    hard, soft = _file(tmp_path, "hard.S", PROBE_HARD), _file(tmp_path, "soft.S", PROBE_SOFT)
    for device, src, want in (
        ("cortex-m4-80", hard, 0),
        ("cortex-m33-110", hard, 0),
        ("cortex-a7-800", hard, 0),
        ("cortex-m0plus-64", soft, 0),
        ("cortex-m4-80", soft, 1),  # the wrong ABI's places: the first float is not in r0
    ):
        _, doc = _count(tmp_path, device, src, "probe", h)
        (s,) = doc["series"]
        assert s["status"] == "ok", s["failures"]
        assert {x["ret"] for x in s["samples"]} == {want}, (device, src)


@pytest.mark.slow
def test_too_many_argument_words_exit_2_before_running(tmp_path):
    _toolchain_or_skip()
    src = _file(
        tmp_path, "big.c", "struct b { unsigned w[32]; };\nint big(struct b x, struct b y, struct b z) { return 0; }\n"
    )
    h = _file(tmp_path, "big.toml", _toml(['kind = "struct"\nalign = 4\nbytes = 128'] * 3))
    p, _ = _count(tmp_path, "cortex-m4-80", src, "big", h, expect=2)
    assert "arg 3 (kind struct): too many argument words" in p.stderr and h in p.stderr


@pytest.mark.slow
@pytest.mark.parametrize("device", ["cortex-m4-80", "cortex-m0plus-64"])
def test_example_with_a_64_bit_length_a_double_and_a_struct(tmp_path, device):
    """examples/user-code/scaled_sum: its 64-bit return is the host's sum of the seeded input, three
    rounds, halved, plus the struct's 2^32 bias (a wrong argument returns 0xdead0000 + its number)."""
    _toolchain_or_skip(newlib="m0" in device)
    from secperf.inputs.user_code import pattern

    ex = HERE.parent / "examples" / "user-code"
    _, doc = _count(tmp_path, device, str(ex / "scaled_sum.c"), "scaled_sum", str(ex / "scaled_sum.toml"))
    (s,) = doc["series"]
    want = int(sum(pattern(64, 1)) * 3 * 0.5) + 2**32
    assert s["status"] == "ok" and {x["ret"] for x in s["samples"]} == {want}, s["failures"]
    assert s["derived"]["instructions_median"] > 3 * 64  # three rounds over 64 bytes
