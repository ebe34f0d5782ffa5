"""Device library builds are atomic and isolated (measure/build_stage, measure/device_build).

A build goes into a staging directory of its own and is renamed into place, stamped, only when it
succeeded; a directory without the stamp (a build cut off by its time limit, or killed) is never
reused, and a later build removes the staging leftovers of dead builders but not a live one's.
"""

import os
import subprocess
import time
from pathlib import Path

import pytest

from secperf.lab import reaper
from secperf.measure import build_stage as BS
from secperf.measure import device_build as DB


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_stale_staging_dirs_of_dead_builders_are_removed_and_live_ones_kept(tmp_path):
    dead = tmp_path / f".lib-x.tmp-{_dead_pid()}-1"
    parent = os.getppid()
    live = tmp_path / f".lib-x.tmp-{parent}-{reaper.start_ticks(parent)}"
    reused = tmp_path / f".lib-x.tmp-{parent}-{(reaper.start_ticks(parent) or 0) + 1}"  # PID reused since
    own = BS.staging_dir(tmp_path / "lib-x")
    for d in (dead, live, reused, own):
        (d / "wolfssl").mkdir(parents=True)
        (d / "wolfssl" / "sp_int.o").write_bytes(b"half")
    removed = BS.remove_stale(tmp_path)
    assert sorted(removed) == sorted([dead, reused])
    assert not dead.exists() and not reused.exists()
    assert live.is_dir() and own.is_dir()


def test_publish_replaces_a_half_built_dir_keeps_a_complete_one_and_rewrites_the_maps(tmp_path):
    final = tmp_path / "lib-wolfssl59-cortex-m4-0123"
    (final / "wolfssl").mkdir(parents=True)
    (final / "libwolfssl.a").write_bytes(b"half-built, for another core")  # no stamp: cut off
    assert not BS.is_complete(final)
    tmp = BS.stage(final)
    assert tmp != final and tmp.parent == final.parent and list(tmp.iterdir()) == []
    (tmp / "libwolfssl.a").write_bytes(b"!<arch>\nnew")
    (tmp / "client.map").write_text(f"{tmp}/libwolfssl.a(sp_int.o)\n")
    BS.publish(tmp, final, {tmp: final})
    assert BS.is_complete(final) and not tmp.exists()
    assert (final / "libwolfssl.a").read_bytes() == b"!<arch>\nnew"
    assert not (final / "wolfssl").exists()  # nothing of the half-built directory is left
    assert (final / "client.map").read_text() == f"{final}/libwolfssl.a(sp_int.o)\n"
    # a copy of a complete build to work on (seed) carries its files but not its stamp
    other = BS.stage(final, seed=final)
    assert (other / "libwolfssl.a").is_file() and not BS.is_complete(other)
    (other / "libwolfssl.a").write_bytes(b"!<arch>\nlater")
    BS.publish(other, final)  # final is complete already: the staging copy is dropped, final kept
    assert not other.exists() and (final / "libwolfssl.a").read_bytes() == b"!<arch>\nnew"


def test_a_timed_out_build_command_leaves_no_process_of_its_group(tmp_path):
    pidfile = tmp_path / "child.pid"
    with pytest.raises(subprocess.TimeoutExpired):
        BS.run_group(["sh", "-c", f"sleep 60 & echo $! > {pidfile}; wait"], "a build that hangs", 1.0)
    child = int(pidfile.read_text())
    for _ in range(100):  # the killed compiler is reaped by init: wait until it is gone
        if reaper.start_ticks(child) is None:
            break
        time.sleep(0.05)
    assert reaper.start_ticks(child) is None, "a process of the build outlived its time-out"


def _build_dirs(home: Path) -> list[str]:
    return sorted(p.name for p in (home / "device" / "build").iterdir() if p.name != ".lock")


@pytest.mark.slow  # builds a (small) library from source for a Cortex-M4
def test_a_build_cut_off_or_left_half_built_is_rebuilt_and_its_objects_never_linked(tmp_path, monkeypatch):
    home = tmp_path / "home"
    monkeypatch.setenv("SECPERF_HOME", str(home))
    # cut off by its time limit: nothing is left that a later run would reuse
    monkeypatch.setattr(DB, "BUILD_TIMEOUT_S", 0.01)
    with pytest.raises(DB.DeviceSetupError, match="did not finish"):
        DB.ensure_built("p256m", "cortex-m4")
    assert _build_dirs(home) == []
    monkeypatch.undo()
    monkeypatch.setenv("SECPERF_HOME", str(home))
    b = DB.ensure_built("p256m", "cortex-m4")
    out = b.client.parent
    (lib,) = (home / "device" / "build").glob("lib-p256m-cortex-m4-*")
    assert BS.is_complete(out) and BS.is_complete(lib)
    assert f"{lib}/libp256m.a(" in Path(f"{b.client}.map").read_text()
    # a build killed at its link: no stamps, no client, and an archive of A-profile code in the library
    # directory, newer than its objects (a make reusing the directory would link it)
    for d in (out, lib):
        (d / BS.STAMP).unlink()
    b.client.unlink()
    (out / "p256m.json").unlink()
    obj = tmp_path / "a.o"
    (tmp_path / "a.c").write_text("int p256_gen_keypair(void) { return 1; }\n")
    subprocess.run(
        ["arm-linux-gnueabihf-gcc", *DB.ARMHF_SOURCE_FLAGS.split(), "-c", "-o", obj, tmp_path / "a.c"], check=True
    )
    (lib / "libp256m.a").unlink()
    subprocess.run(["arm-linux-gnueabihf-ar", "rcs", lib / "libp256m.a", obj], check=True)
    dead = home / "device" / "build" / f".{lib.name}.tmp-{_dead_pid()}-1"
    dead.mkdir()
    b2 = DB.ensure_built("p256m", "cortex-m4")
    assert b2.client == b.client and b2.client.is_file() and b2.offers
    members = subprocess.run(
        ["arm-linux-gnueabihf-ar", "t", lib / "libp256m.a"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert members == ["p256-m.o"]  # rebuilt from the sources, not the planted a.o
    assert BS.is_complete(out) and BS.is_complete(lib)
    assert _build_dirs(home) == sorted([out.name, lib.name])  # the dead builder's staging dir is gone
    assert f"{lib}/libp256m.a(" in Path(f"{b2.client}.map").read_text()
