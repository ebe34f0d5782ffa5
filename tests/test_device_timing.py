"""Device time from the timing model (native/device/plugin/timing.c, measure/device_timing.py).

Structure, never wall time: cycles repeat exactly, the band orders low <= point <= high, flash wait
states and caches add cycles where the model says they must, the parts of a handshake add up in
cycles as in instructions, and a profile missing a timing parameter is refused naming it.
"""

import copy
import dataclasses
import os

import pytest

from conftest import run_cli
from secperf.core.errors import InputError
from secperf.inputs import core_profiles as CP
from secperf.inputs import devices as S
from secperf.inputs.devices import resolve_core
from secperf.measure import device as D
from secperf.measure import device_timing as T


def _crypto(device, stack, ops, n=2, config=None):
    return {s.labels["op"]: s for s in D.measure_crypto(resolve_core(device), stack, ops, n, build_config=config)}


@pytest.mark.slow  # over 10 s here: a fidelity check for the slow run
def test_cycles_repeat_and_the_band_orders_low_point_high():
    """Counts and cycles repeat within 0.5 % (keys are fresh per process: ECDSA verification is not
    constant-count, and where a table lookup's address depends on the key the flash interface's data
    cache sees other lines, as on a real board), and exactly for data-independent code (SHA-256)."""
    a = _crypto("cortex-m4-80", "wolfssl59", ["sha256-1024", "ecdsa-p256-verify"])
    b = _crypto("cortex-m4-80", "wolfssl59", ["sha256-1024", "ecdsa-p256-verify"])
    assert a["sha256-1024"].derived.time.cycles == b["sha256-1024"].derived.time.cycles
    for op in a:
        ta, tb = a[op].derived.time, b[op].derived.time
        assert a[op].derived.instructions_median == pytest.approx(b[op].derived.instructions_median, rel=0.005)
        assert ta.cycles == pytest.approx(tb.cycles, rel=0.005)
        assert 0 < ta.cycles_low <= ta.cycles <= ta.cycles_high
        assert ta.ms == pytest.approx(ta.cycles / 80e3)
        # a Cortex-M4 retires at most one instruction a cycle: the model never goes below the count
        assert ta.cycles_low >= a[op].derived.instructions_median


def test_flash_wait_states_cost_cycles_on_the_same_instructions():
    """The same build and operation at 4 wait states (STM32L4, 80 MHz) and at 0 (the same core at
    20 MHz): identical instruction counts, more cycles with the wait states, and the extra cycles
    come with instruction-fetch misses."""
    slow = _crypto("cortex-m4-80", "wolfssl59", ["aes-128-cbc-1024"])["aes-128-cbc-1024"].derived
    fast = _crypto("cortex-m4-20", "wolfssl59", ["aes-128-cbc-1024"])["aes-128-cbc-1024"].derived
    assert slow.instructions_median == fast.instructions_median
    assert slow.time.cycles > fast.time.cycles
    assert slow.time.counters.get("ifetch_miss", 0) > 0
    # AES's tables live in flash: their loads miss the small data cache of the flash interface
    assert slow.time.counters.get("dflash_miss", 0) > 0


def test_a_profile_core_simulates_its_data_cache_and_branch_predictor():
    t = _crypto("cortex-a9-400", "wolfssl", ["aes-128-cbc-1024"])["aes-128-cbc-1024"].derived.time
    assert t.counters.get("l1d_miss", 0) > 0
    assert t.counters.get("branch_taken", 0) > 0
    assert "mispredict" in t.counters
    assert t.model == "cortex-a9" and t.sources["memory"]


def test_handshake_messages_partition_the_cycles_as_they_partition_instructions():
    cfg = D.Config(resolve_core("cortex-m4-80"), "wolfssl59", "1.3", "x25519", "aes128gcm", "full", "rsa-2048")
    series = D.measure_config(cfg, n=2, warmup=1)
    warm = next(s for s in series if s.labels["phase"] == "warm")
    for sample in warm.samples:
        assert sum(m["cycles"][1] for m in sample["messages"]) == sample["cycles"][1]
        assert sample["cycles"][0] <= sample["cycles"][1] <= sample["cycles"][2]
    rows = {(r["dir"], r["message"]): r for r in warm.derived.messages}
    assert rows[("sent", "ClientHello")]["time"]["cycles"] > 0
    assert warm.derived.time.ms > 0 and warm.derived.time.model == "cortex-m4"


def test_a_profile_missing_a_timing_parameter_is_refused_naming_it(monkeypatch):
    orig = copy.deepcopy(S.raw())
    data = copy.deepcopy(orig)
    del data["timing_models"]["cortex-m4"]["div"]
    monkeypatch.setattr(CP, "raw", lambda: data)
    with pytest.raises(S.DeviceError, match=r"'div'.*it has .*alu"):
        S.core("cortex-m4-80")
    data2 = copy.deepcopy(orig)
    data2["timing_models"]["cortex-m4"]["div"] = [12, 7, 2]  # low > high
    monkeypatch.setattr(CP, "raw", lambda: data2)
    with pytest.raises(S.DeviceError, match=r"div.*low <= point <= high"):
        S.core("cortex-m4-80")


def test_every_core_profile_has_a_complete_timing_model_with_sources():
    for name in S.cores():
        t = S.core(name).timing
        assert t is not None, name
        assert set(t.costs) >= set(S.COST_NAMES) | set(S.MEMORY_COSTS)
        assert t.sources["model"] and t.sources["memory"]


def test_device_crypto_prints_cycles_time_band_and_build(tmp_path):
    p = run_cli(
        "device",
        "crypto",
        "--device",
        "cortex-m4-80",
        "--stack",
        "wolfssl59",
        "--op",
        "sha256-1024",
        "--n",
        "1",
        "--out",
        str(tmp_path),
        env=dict(os.environ, COLUMNS="220"),
    )
    assert p.returncode == 0, p.stderr
    text = p.stdout + p.stderr
    assert "cycles" in text and "time (band)" in text and "wolfSSL 5.9" in text and " ms (" in text


def test_unknown_config_is_refused_naming_the_known_ones():
    with pytest.raises(InputError, match="sp-asm"):
        D.measure_crypto(resolve_core("cortex-m4-80"), "wolfssl59", ["sha256-1024"], 1, build_config="turbo")


# --- the timing kernels: the model's cycles of short instruction sequences against the counts the
# Cortex-M4 TRM documents (native/device/kernels/kernels.S and kernels.toml) ---------------------------


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    work = tmp_path_factory.mktemp("kernels")
    exe, plugin = T.build_kernels(work)
    return exe, plugin, work


def test_timing_kernels_give_the_documented_cycle_counts(kernels):
    """Every kernel's modelled cycles equal its documented count; a kernel with taken branches is
    documented as cycles + refills x P, P the pipeline refill (1 to 3): the model's low, point and
    high use P's low, point and high."""
    exe, plugin, work = kernels
    core, docs = T.documented_kernels()
    dev = S.core(core)
    got = T.run_kernels(dev, exe, plugin, work)
    assert set(got) == set(docs), "a kernel ran without a documented count, or the reverse"
    refill = dev.timing.costs["branch_taken_extra"]
    odd = dev.timing.costs["branch_unaligned_extra"]
    run = dev.timing.costs["unaligned_run_extra"]
    for k, d in docs.items():
        want = [
            d["cycles"] + d.get("refills", 0) * p + d.get("unaligned", 0) * u + d.get("unaligned_runs", 0) * g
            for p, u, g in zip(refill, odd, run)
        ]
        assert got[k][1] == want[1], f"kernel {k} {d['name']}: model {got[k][1]}, documented {want[1]} ({d['rule']})"
        assert got[k][0] <= want[0] + 1e-9 and got[k][2] >= want[2] - 1e-9, (k, got[k], want)


def test_a_load_after_data_processing_on_its_address_register_stalls_one_cycle(kernels):
    """The rule the kernels found missing: no forwarding path from data processing to the address
    generation (TRM load/store timings), whether the register is the base or the index; a data
    processing result the load does not address with costs nothing."""
    exe, plugin, work = kernels
    _, docs = T.documented_kernels()
    got = T.run_kernels(S.core("cortex-m4-20"), exe, plugin, work)
    by = {d["name"]: got[k][1] for k, d in docs.items()}
    assert by["agu-ldr-base"] == by["agu-independent"] + 1
    assert by["agu-ldr-index"] == by["agu-independent"] + 1
    assert by["agu-str-base"] == 3
    # and a store with a register offset is not hidden behind the next instruction
    assert by["str-register-offset"] == 4
    # the Cortex-M0+ has no such stall (two-stage pipeline, the address formed in the load's own cycles)
    assert S.core("cortex-m0plus-64").timing.costs["agu_stall"] == (0.0, 0.0, 0.0)


def test_a_loop_branching_to_a_32_bit_instruction_at_a_halfword_address_costs_a_cycle_more_per_pass(kernels):
    """The refill by the target (Cortex-M4 TRM: P by the target's alignment and width): two loops of the
    same instructions, the first instruction a 32-bit ADD.W at a word address in one and at a halfword
    address in the other; each of the 9 taken BNEs costs one cycle more in the second, and nothing
    else differs: the same profile with the rule's cost at 0 gives the two loops the same cycles."""
    exe, plugin, work = kernels
    _, docs = T.documented_kernels()
    name = {d["name"]: k for k, d in docs.items()}
    aligned, halfword = name["loop-target-aligned"], name["loop-target-halfword"]
    assert docs[halfword].get("unaligned") == docs[aligned]["refills"] == 9
    assert "unaligned" not in docs[aligned]
    m4 = S.core("cortex-m4-20")
    assert m4.timing.costs["branch_unaligned_extra"] == (1.0, 1.0, 1.0)
    got = T.run_kernels(m4, exe, plugin, work)
    for s in range(3):
        assert got[halfword][s] - got[aligned][s] == 9, (got[aligned], got[halfword])
    costs = dict(m4.timing.costs, branch_unaligned_extra=(0.0, 0.0, 0.0))
    off = dataclasses.replace(m4, timing=dataclasses.replace(m4.timing, costs=costs))
    without = T.run_kernels(off, exe, plugin, work)
    assert without[halfword] == without[aligned] == got[aligned]


def test_a_group_of_three_32_bit_instructions_at_halfword_addresses_costs_one_cycle(kernels):
    """The fetch rule measured on the core (compendium.i-0.nl "Alignment rules"): the same NOP and three
    MOV.W cost one cycle more when the MOV.Ws sit at halfword addresses, once per group (the seven
    unaligned multiplies of kernel 15 pay one, a group across a branch not taken one); three unaligned
    STR.W pay nothing, four pay one. With the rule's cost at 0 each pair gives the same cycles."""
    exe, plugin, work = kernels
    _, docs = T.documented_kernels()
    name = {d["name"]: k for k, d in docs.items()}
    m4 = S.core("cortex-m4-20")
    assert m4.timing.costs["unaligned_run_extra"][1] == 1.0
    got = T.run_kernels(m4, exe, plugin, work)
    by = {n: got[k][1] for n, k in name.items()}
    assert by["wide-run-halfword"] == by["wide-run-aligned"] + 1 == 5
    assert by["wide-store-run-3"] == 4
    assert by["wide-store-run-4"] == 5
    assert by["multiply"] == 10
    assert by["wide-run-across-branch"] == 5  # completed after the branch not taken, in the next block
    costs = dict(m4.timing.costs, unaligned_run_extra=(0.0, 0.0, 0.0))
    off = dataclasses.replace(m4, timing=dataclasses.replace(m4.timing, costs=costs))
    without = T.run_kernels(off, exe, plugin, work)
    assert without[name["wide-run-halfword"]] == without[name["wide-run-aligned"]] == got[name["wide-run-aligned"]]
    assert without[name["wide-store-run-4"]][1] == 4
    assert without[name["wide-run-across-branch"]][1] == 4
    # the Cortex-M0/M0+ (ARMv6-M: no runs of 32-bit instructions) and the A cores have no such rule
    for other in ("cortex-m0plus-64", "cortex-m0-48", "cortex-a7-900"):
        assert S.core(other).timing.costs["unaligned_run_extra"] == (0.0, 0.0, 0.0)


def test_block_counters_give_the_same_figures_as_inline_sums(tmp_path):
    """The plugin's cheaper path (one execution counter per block, the static part summed when an event
    asks) and the older one (inline additions per class and set at every block's start) write the
    same event file: every counter and every cycle figure of every event."""
    import subprocess

    from secperf.measure.device_build import ensure_built

    build = ensure_built("p256m", D.target_for(S.core("cortex-m4-100")))
    params = T.write_params(S.core("cortex-m4-100"), build.client, tmp_path / "timing.txt")
    files = {}
    for sums in ("inline", "blocks"):
        ev = tmp_path / f"ev-{sums}.txt"
        p = subprocess.run(
            [
                build.qemu,
                "-cpu",
                "max",
                "-plugin",
                f"{build.plugin},out={ev},timing={params},sums={sums}",
                str(build.client),
                "--crypto",
                "p256-keygen",
                "--n",
                "2",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert p.returncode == 0, p.stderr[-400:]
        files[sums] = ev.read_text()
    assert files["inline"].startswith("# insn_events v2") and files["inline"].count("\n") >= 5
    assert files["inline"] == files["blocks"]


@pytest.mark.slow  # six emulator runs
@pytest.mark.parametrize(
    ("core", "stack"), [("cortex-m4-80", "wolfssl59"), ("cortex-m0plus-64", "wolfssl59"), ("cortex-a9-400", "wolfssl")]
)
def test_the_cheaper_path_gives_the_figures_of_the_full_path(tmp_path, core, stack):
    """The plugin's default path (recency matrices, the flash caches' line table, fetch stalls made per
    block, no memory callback for pop/ldm sp) and its full path (stamped recency, searched tags, stalls at
    each miss, path=full) count the same on a deterministic operation: every class and event counter and
    every cycle figure (low, point, high) of each operation, on an 8-way flash accelerator with prefetch
    (Cortex-M4, 4 wait states), a 2-way one (Cortex-M0+) and an A-profile core's L1 and L2."""
    import subprocess

    from secperf.measure.device_build import ensure_built

    dev = S.core(core)
    build = ensure_built(stack, D.target_for(dev))
    params = T.write_params(dev, build.client, tmp_path / "timing.txt")
    ops = {}
    for path in ("full", "fast"):
        ev = tmp_path / f"ev-{path}.txt"
        p = subprocess.run(
            [
                build.qemu,
                "-cpu",
                D.qemu_cpu(dev, build),
                "-plugin",
                f"{build.plugin},out={ev},timing={params},path={path}",
                str(build.client),
                "--crypto",
                "sha256-1024",
                "--n",
                "3",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert p.returncode == 0, p.stderr[-400:]
        from secperf.measure import device_attrib as A

        events = A.read_events(ev)[1]
        ops[path] = {
            "classes": A.op_classes(events),
            "cycles": [[c for _, c in A.op_counts(A.in_cycles(events, k))] for k in range(3)],
        }
    assert len(ops["full"]["classes"]) == 3 and ops["full"]["classes"][-1]["alu"] > 0
    if dev.profile == "M":  # the flash interface's caches were used
        assert ops["full"]["classes"][-1].get("ifetch_miss", 0) + ops["full"]["classes"][0].get("ifetch_miss", 0) > 0
    assert ops["fast"] == ops["full"]


@pytest.mark.slow  # a TLS handshake run on the emulated core
def test_a_handshake_counts_the_same_on_the_cheaper_path_and_the_full_path(tmp_path, monkeypatch):
    """`device handshake`'s own run (TLS 1.3, x25519, rsa-2048 on the Cortex-M4 at 4 wait states) with a
    second copy of the plugin loaded into the same emulator on the full path (path=full): both see the
    very same execution (keys, randoms and the server's answers included), so their event files must be
    equal byte for byte: every marker's instruction count, class and event counter and cycle figure."""
    import shutil

    from secperf.measure.device_build import ensure_built

    dev = resolve_core("cortex-m4-80")
    build = ensure_built("wolfssl59", D.target_for(dev))
    full_plugin = tmp_path / "full-copy.so"  # another file: its own instance, its own state
    shutil.copy(build.plugin, full_plugin)
    real_run = D.registry.run
    pairs = []

    def run_twice(argv, *args, **kwargs):
        i = argv.index("-plugin") + 1
        fast_arg = argv[i]
        assert ",timing=" in fast_arg, "the run was not timed"
        opts = dict(o.split("=", 1) for o in fast_arg.split(",")[1:])
        full_ev = tmp_path / f"full-{len(pairs)}.txt"
        full_arg = ",".join(
            [str(full_plugin), *(f"{k}={full_ev if k == 'out' else v}" for k, v in opts.items()), "path=full"]
        )
        p = real_run([*argv[: i + 1], "-plugin", full_arg, *argv[i + 1 :]], *args, **kwargs)
        fast_ev = tmp_path / f"fast-{len(pairs)}.txt"
        shutil.copy(opts["out"], fast_ev)  # the caller reads and removes its own
        pairs.append((fast_ev, full_ev))
        return p

    monkeypatch.setattr(D.registry, "run", run_twice)
    cfg = D.Config(dev, "wolfssl59", "1.3", "x25519", "aes128gcm", "full", "rsa-2048")
    series = D.measure_config(cfg, n=2, warmup=1)
    warm = next(s for s in series if s.labels["phase"] == "warm")
    assert len(warm.samples) == 2 and all(smp["cycles"][1] > 0 for smp in warm.samples)
    assert pairs
    for fast_ev, full_ev in pairs:
        fast, full = fast_ev.read_text(), full_ev.read_text()
        head = fast.split("\n", 1)[0]
        assert head.startswith("# insn_events v2") and fast.count("\n") >= 10
        totals = dict(zip(head.split(" classes=")[1].split(" ")[0].split(","), head.split(" totals=")[1].split(",")))
        assert int(totals["ifetch_miss"]) > 0 and int(totals["dflash_miss"]) > 0 and int(totals["branch_taken"]) > 0
        assert fast == full


def test_the_assembly_keccak_build_hashes_as_fips_202(tmp_path):
    """pqm4's clean build (--config clean-asm-keccak): PQClean's FIPS 202 interface over XKCP's ARMv7-M
    Keccak-p[1600], run on the emulated Cortex-M4, gives SHA3-256/512 and SHAKE128/256 (one-shot,
    block-wise and incremental) equal to Python's hashlib for messages across every rate boundary."""
    import hashlib
    import subprocess

    from secperf.measure import device_build as B

    src = B.sources_dir()
    pq = B.source_dir("pqclean")
    xkcp = B.xkcp_dir()
    cc = B.tool("arm-linux-gnueabihf-gcc", "gcc-arm-linux-gnueabihf")
    flags = B.TARGETS["cortex-m4"][0].split()
    objs = []
    for name, path in (
        ("check", src / "pq" / "fips202_check.c"),
        ("snp", src / "pq" / "fips202_snp.c"),
        ("keccak", xkcp / "KeccakP-1600-inplace-32bi-armv7m-le-gcc.s"),
    ):
        o = tmp_path / f"{name}.o"
        subprocess.run([cc, *flags, "-O2", f"-I{pq / 'common'}", "-c", "-o", str(o), str(path)], check=True)
        # M-profile objects linked with the armhf C library, as native/device/Makefile does
        subprocess.run([cc.replace("gcc", "objcopy"), "--remove-section=.ARM.attributes", str(o)], check=True)
        objs.append(str(o))
    exe = tmp_path / "fips202_check"
    subprocess.run([cc, "-static", "-o", str(exe), *objs], check=True, capture_output=True)
    p = subprocess.run(["qemu-arm", "-cpu", "max", str(exe)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    msg = bytes((i * 7 + 3) & 0xFF for i in range(300))
    want = {
        "sha3_256": lambda m: hashlib.sha3_256(m).hexdigest(),
        "sha3_512": lambda m: hashlib.sha3_512(m).hexdigest(),
        "shake128": lambda m: hashlib.shake_128(m).hexdigest(200),
        "shake128_blocks": lambda m: hashlib.shake_128(m).hexdigest(2 * 168),
        "shake256": lambda m: hashlib.shake_256(m).hexdigest(150),
        "shake256_inc": lambda m: hashlib.shake_256(m).hexdigest(150),
    }
    lines = p.stdout.split("\n")[:-1]
    assert len(lines) == 12 * len(want)
    for line in lines:
        what, n, got = line.split()
        assert got == want[what](msg[: int(n)]), f"{what} of {n} bytes"
