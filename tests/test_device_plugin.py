"""The counting plugin's decode cache (native/device/plugin/decode_cache.c): what the timing model reads
from each instruction's disassembly, kept beside the guest binary so a later run of the same binary
disassembles only what it has not seen.

Structure, never wall time: a run from the cache gives the same cycles as the run that filled it and
as the Cortex-M4 TRM's documented counts (kernels.toml); a record whose instruction bytes differ is
not used; and the cache is really read (facts changed in the file change the cycles), so the equality
checks something.
"""

import pytest

from secperf.inputs import devices as S
from secperf.measure import device_timing as T


@pytest.fixture(scope="module")
def kernels(tmp_path_factory):
    work = tmp_path_factory.mktemp("kernels-cache")
    exe, plugin = T.build_kernels(work)
    return exe, plugin, work


def _documented(got):
    core, docs = T.documented_kernels()
    costs = S.core(core).timing.costs
    refill, odd, run = costs["branch_taken_extra"], costs["branch_unaligned_extra"], costs["unaligned_run_extra"]
    for k, d in docs.items():
        want = (
            d["cycles"]
            + d.get("refills", 0) * refill[1]
            + d.get("unaligned", 0) * odd[1]
            + d.get("unaligned_runs", 0) * run[1]
        )
        assert got[k][1] == want, f"kernel {k} {d['name']}: model {got[k][1]}, documented {want}"


def _records(path):
    """(header line, record size, the records) of a decode cache file."""
    data = path.read_bytes()
    head, _, body = data.partition(b"\n")
    size = int(head.decode().rsplit("record=", 1)[1])
    assert size >= 48 and len(body) % size == 0, (size, len(body))
    return head + b"\n", size, [bytearray(body[i : i + size]) for i in range(0, len(body), size)]


def test_a_run_from_the_decode_cache_gives_the_cycles_of_the_run_that_filled_it(kernels):
    exe, plugin, work = kernels
    core = S.core(T.documented_kernels()[0])
    cache = T.decode_cache_path(exe)
    assert cache is not None and cache.parent == exe.parent
    cache.unlink(missing_ok=True)
    cold = T.run_kernels(core, exe, plugin, work)
    assert cache.is_file(), "the plugin wrote no decode cache"
    head, size, recs = _records(cache)
    assert len(recs) >= 50, "fewer decoded instructions than the kernels hold"
    warm = T.run_kernels(core, exe, plugin, work)
    assert warm == cold
    _documented(warm)
    # the band too, on another core's costs (a Cortex-M0+: other costs, the same decoded facts)
    m0 = S.core("cortex-m0plus-64")
    cache.unlink()
    m0_cold = T.run_kernels(m0, exe, plugin, work)
    assert T.run_kernels(m0, exe, plugin, work) == m0_cold


def test_records_whose_bytes_differ_are_not_used_and_changed_facts_are(kernels):
    exe, plugin, work = kernels
    core = S.core(T.documented_kernels()[0])
    cache = T.decode_cache_path(exe)
    cache.unlink(missing_ok=True)
    cold = T.run_kernels(core, exe, plugin, work)
    head, size, recs = _records(cache)
    # every record's first instruction byte flipped: another instruction, so the plugin decodes again
    stale = [bytes(r[:9]) + bytes([r[9] ^ 0xFF]) + bytes(r[10:]) for r in recs]
    cache.write_bytes(head + b"".join(stale))
    assert T.run_kernels(core, exe, plugin, work) == cold
    # the facts changed with the bytes kept (the class byte: offset 20, after vaddr, size, bytes and
    # two 16-bit register masks): a run that reads the cache must see other cycles
    _, _, recs = _records(cache)
    changed = [bytes(r[:20]) + bytes([12]) + bytes(r[21:]) for r in recs]  # 12: TC_DIV
    cache.write_bytes(head + b"".join(changed))
    assert T.run_kernels(core, exe, plugin, work) != cold
    # a file of another layout or plugin build is ignored whole
    cache.write_bytes(b"secperf-decode-cache 1 another-build record=64\n" + b"".join(changed))
    assert T.run_kernels(core, exe, plugin, work) == cold
