"""Emulated links (lab/netns.Link + native/netem): every impairment changes what the kernels see,
bad specs fail naming the field, nothing (namespace, TUN device, process) survives a normal exit,
an error, SIGINT or a killed owner, and TLS handshakes over 50 ms take their round trips."""

import json
import os
import re
import signal
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import alive as _alive
from conftest import needs_links, skip
from secperf.inputs import netspec as NS
from secperf.lab import netns
from secperf.lab.netns import SO_TIMESTAMPNS, Link, kernel_rx_ns


@pytest.fixture(autouse=True)
def private_home(tmp_path, monkeypatch):
    monkeypatch.setenv("SECPERF_HOME", str(tmp_path / "home"))


# --- specs and profiles (no root needed) -------------------------------------------------------


def test_every_profile_parses_and_every_figure_has_a_source():
    table = NS.profile_table()  # raises if a field lacks a source
    for name in ("loopback", "ethernet-lan", "wifi", "wifi-lossy", "lte", "lte-m", "nb-iot", "3g", "satellite-geo"):
        assert name in table
    for name, pr in table.items():
        for field, src in pr.sources.items():
            assert isinstance(src, str) and len(src.split()) >= 4, (name, field)  # a real citation or a marked estimate
        if name != "loopback":
            spec = NS.parse(name)
            assert spec.rtt_ms > 0
    assert NS.parse("satellite-geo").rtt_ms >= 2 * 239  # GEO physics: >= 239 ms each way


def test_spec_fields_and_directions():
    s = NS.parse("delay=50ms,jitter=5ms,loss=1%,rate=250kbit")
    assert (s.up.delay_ms, s.up.jitter_ms, s.up.loss, s.up.rate_bps) == (50, 5, 0.01, 250e3)
    assert s.down == s.up and s.rtt_ms == 100
    a = NS.parse("lte-m,up.rate=62kbit,loss=5%")
    assert a.up.rate_bps == 62e3 and a.down.rate_bps == 300e3 and a.up.loss == 0.05
    g = NS.parse("ge=1%/25%")
    assert g.up.ge == (0.01, 0.25, 1.0, 0.0) and g.up.mean_loss == pytest.approx(0.01 / 0.26)
    assert NS.parse("loopback").loopback
    assert [n.name for n in NS.parse_networks(["wifi,lte", "delay=5ms,loss=1%"])] == [
        "wifi",
        "lte",
        "delay=5ms,loss=1%",
    ]
    assert len(NS.parse_networks(["rtt-sweep"])) >= 4


@pytest.mark.parametrize(
    "spec,field",
    [
        ("delay=50", "delay"),
        ("delay=fast", "delay"),
        ("jitter=-1ms", "jitter"),
        ("loss=120%", "loss"),
        ("loss=abc", "loss"),
        ("rate=10kbps", "rate"),
        ("rate=1bit", "rate"),
        ("queue=0", "queue"),
        ("mtu=40", "mtu"),
        ("up.mtu=1400", "up.mtu"),
        ("sideways.delay=1ms", "sideways.delay"),
        ("bandwidth=1mbit", "bandwidth"),
        ("ge=1%", "ge"),
        ("ge=5%/0%", "ge"),
        ("loss=1%,ge=1%/20%", "ge"),
        ("jitter-dist=cauchy", "jitter-dist"),
        ("dup=2", "dup"),
        ("reorder=x", "reorder"),
        ("delay=50ms,delay=5ms", "delay"),
        ("lte-m,loss=1%,LOSS=2%", "loss"),
        ("up.rate=1mbit,up.rate=2mbit", "up.rate"),
    ],
)
def test_bad_specs_fail_naming_the_field(spec, field):
    with pytest.raises(NS.NetSpecError) as ei:
        NS.parse(spec)
    assert f"'{field}'" in str(ei.value)


def test_unknown_profile_names_the_known_ones():
    with pytest.raises(NS.NetSpecError, match="unknown network profile 'lte-x'.*lte-m"):
        NS.parse("lte-x")


@pytest.mark.parametrize(
    "args,needle",
    [
        (["handshake", "versions", "--network", "delay=50"], "field 'delay'"),
        (["handshake", "versions", "--network", "rate=fast,delay=1ms"], "field 'rate'"),
        (["handshake", "versions", "--network", "nosuch"], "unknown network profile 'nosuch'"),
        (["netem", "run", "delay=1ms,los=1%", "--", "true"], "unknown field 'los'"),
        (["crypto", "--alg", "x25519", "--network", "lte"], "send nothing over a network"),
    ],
)
def test_cli_bad_network_exits_2_naming_the_field(args, needle, tmp_path):
    from conftest import run_cli

    p = run_cli(*args, "--out", str(tmp_path)) if args[0] != "netem" else run_cli(*args)
    assert p.returncode == 2, p.stderr
    assert needle in p.stderr


def test_netem_list_shows_profiles_with_sources():
    from conftest import run_cli

    p = run_cli("netem", "list")
    assert p.returncode == 0
    for name in ("lte-m", "nb-iot", "satellite-geo", "rtt-sweep"):
        assert name in p.stdout
    assert "GSMA" in p.stdout and "3GPP" in p.stdout


# --- the link changes what the kernel sees ------------------------------------------------------


def _ping(link, count=10, interval=0.02, size=56, extra=()):
    p = subprocess.run(
        link.dev_exec(
            ["ping", "-n", "-c", str(count), "-i", str(interval), "-s", str(size), "-W", "2", *extra, link.server_addr]
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    rtts = [float(x) for x in re.findall(r"time=([0-9.]+) ms", p.stdout)]
    return p, rtts


def _udp_run(link, n, size=100, pace_every=20, pause_s=0.001, direction="up"):
    """Send n numbered datagrams across the link; the arrival order of their numbers."""
    rx = link.socket("srv" if direction == "up" else "dev", socket.AF_INET, socket.SOCK_DGRAM)
    tx = link.socket("dev" if direction == "up" else "srv", socket.AF_INET, socket.SOCK_DGRAM)
    dst = link.server_addr if direction == "up" else link.dev_addr
    rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    rx.bind((dst, 0))
    port = rx.getsockname()[1]
    got: list[int] = []

    def reader():
        rx.settimeout(1.0)
        try:
            while True:
                got.append(int.from_bytes(rx.recv(65536)[:4], "big"))
        except OSError:
            pass

    t = threading.Thread(target=reader)
    t.start()
    pad = bytes(size - 4)
    for i in range(n):
        tx.sendto(i.to_bytes(4, "big") + pad, (dst, port))
        if i % pace_every == pace_every - 1:
            time.sleep(pause_s)
    t.join(timeout=60)
    rx.close()
    tx.close()
    return got


def _tcp_transfer(link, nbytes):
    """Send nbytes device -> server over TCP; returns the receiver's seconds from first to last byte."""
    srv = link.socket("srv")
    srv.bind((link.server_addr, 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    res = {}

    def receiver():
        conn, _ = srv.accept()
        conn.settimeout(60)
        total, first = 0, None
        while total < nbytes:
            b = conn.recv(65536)
            if not b:
                break
            if first is None:
                first = time.monotonic()
            total += len(b)
        res.update(total=total, secs=time.monotonic() - first)
        conn.close()

    t = threading.Thread(target=receiver)
    t.start()
    cli = link.socket("dev")
    cli.settimeout(60)
    cli.connect((link.server_addr, port))
    cli.sendall(bytes(nbytes))
    cli.shutdown(socket.SHUT_WR)
    t.join(timeout=90)
    cli.close()
    srv.close()
    assert res.get("total") == nbytes
    return res["secs"]


@needs_links
def test_delay_shows_in_ping_round_trip():
    # the link never releases early and a stall of the (shared, noisy) machine only adds time, so
    # the fastest of 20 round trips shows the configured delay, and most of them stay close to it.
    # What the path costs without the delay (the relay, ping, the namespaces) is measured beside it
    # on a delay=0ms link; the delayed link may add at most a quarter of that cost, plus 5% of the
    # delay, on top of the delay itself.
    rtt_ms = 40.0
    with Link("delay=0ms") as plain:
        _, base = _ping(plain, count=20)
    with Link("delay=20ms") as link:
        _, rtts = _ping(link, count=20)
    assert len(rtts) == len(base) == 20
    base_ms = statistics.quantiles(base, n=4)[0]
    # 0.5 ms below: ping times with CLOCK_REALTIME (its send time, the kernel's receive stamp), the
    # relay with CLOCK_MONOTONIC; a run with other link tests beside it once printed 39.8 ms, likely
    # the early release that stamping arrivals after their read removed (tested below)
    floor_ms, ceiling_ms = rtt_ms - 0.5, rtt_ms * 1.05 + base_ms * 1.25
    assert floor_ms <= min(rtts) <= ceiling_ms, (rtts, base)
    assert floor_ms <= statistics.quantiles(rtts, n=4)[0] <= ceiling_ms, (rtts, base)


@needs_links
def test_link_never_delivers_before_its_delay_while_it_releases_bursts_the_other_way():
    """Each datagram carries its send time; the server side's kernel stamps its arrival (both on
    CLOCK_REALTIME), so arrival - send can only exceed the configured 5 ms. Bursts of 64 datagrams
    the other way keep the relay writing releases while the timed datagrams arrive: a relay that
    stamped arrivals with the time read before those writes delivered up to 1.3 ms early (127 of
    3,361 early here; a CI run saw a TLS 1.2 round trip of 98 ms over a 100 ms link)."""
    # at least 1.5 s and 1,200 timed datagrams (a loaded host sends fewer a second), at most 10 s
    delay_ms, seconds, want, limit_s = 5.0, 1.5, 1200, 10.0
    with Link(f"delay={delay_ms:g}ms") as link:
        rx = link.socket("srv", socket.AF_INET, socket.SOCK_DGRAM)
        rx.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        rx.bind((link.server_addr, 0))
        tx = link.socket("dev", socket.AF_INET, socket.SOCK_DGRAM)
        bulk_rx = link.socket("dev", socket.AF_INET, socket.SOCK_DGRAM)
        bulk_rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        bulk_rx.bind((link.dev_addr, 0))
        bulk_tx = link.socket("srv", socket.AF_INET, socket.SOCK_DGRAM)
        start = time.monotonic()
        stop = threading.Event()
        one_way: list[float] = []

        def bulk():
            while not stop.is_set():
                for _ in range(64):
                    bulk_tx.sendto(bytes(1200), bulk_rx.getsockname())
                time.sleep(0.002)

        def drain(sock, keep):
            sock.settimeout(0.5)
            try:
                while True:
                    data, anc, _, _ = sock.recvmsg(64, 64)
                    arrived = kernel_rx_ns(anc)
                    if keep and arrived is not None:
                        one_way.append((arrived - struct.unpack("!q", data[:8])[0]) / 1e6)
            except OSError:
                pass

        threads = [
            threading.Thread(target=bulk),
            threading.Thread(target=drain, args=(bulk_rx, False)),
            threading.Thread(target=drain, args=(rx, True)),
        ]
        for t in threads:
            t.start()
        sent = 0
        while (time.monotonic() - start < seconds or sent < want) and time.monotonic() - start < limit_s:
            tx.sendto(struct.pack("!q", time.time_ns()), rx.getsockname())
            sent += 1
            time.sleep(0.0003)
        stop.set()
        for t in threads:
            t.join(timeout=10)
        st = link.stats()
        for s in (rx, tx, bulk_rx, bulk_tx):
            s.close()
    assert st["down"]["tx_packets"] > 5000, st["down"]  # the relay did write bursts meanwhile
    assert len(one_way) == sent > 1000
    early = [round(x, 3) for x in one_way if x < delay_ms]
    assert not early, f"{len(early)} of {sent} datagrams arrived before {delay_ms} ms: {sorted(early)[:10]}"


@needs_links
def test_jitter_spreads_round_trips_normal_and_pareto():
    """With 5 ms of jitter, round trips spread well beyond the same link's without jitter, measured
    beside it (the spread of its middle half: robust to a stall of the machine), and by at least
    0.4 of the configured jitter."""
    jitter_ms = 5.0
    for dist in ("normal", "pareto"):
        # the best of three attempts, each measuring its plain link beside it: a stall of a loaded
        # host widens a plain link's spread and narrows nothing, so one clean attempt must show it
        tries = []
        for _ in range(3):
            with Link("delay=20ms") as link:
                _, plain = _ping(link, count=30, interval=0.01)
            q1, _, q3 = statistics.quantiles(plain, n=4)
            plain_spread_ms = q3 - q1
            with Link(f"delay=20ms,jitter={jitter_ms:g}ms,jitter-dist={dist}") as link:
                _, rtts = _ping(link, count=30, interval=0.05)
            spread_ms = statistics.pstdev(rtts)
            tries.append((round(spread_ms, 2), round(plain_spread_ms, 2)))
            if spread_ms > 0.4 * jitter_ms and spread_ms > 4 * plain_spread_ms:
                break
        else:
            raise AssertionError(f"{dist}: (jitter spread, plain spread) per attempt {tries}")


@needs_links
def test_loss_makes_the_kernel_retransmit():
    with Link("loss=0%") as clean:
        k0 = clean.snmp("dev")["Tcp.RetransSegs"]
        _tcp_transfer(clean, 300_000)
        assert clean.snmp("dev")["Tcp.RetransSegs"] - k0 == 0
    with Link("delay=1ms,up.loss=5%", seed=3) as link:
        k0 = link.snmp("dev")["Tcp.RetransSegs"]
        _tcp_transfer(link, 300_000)
        retrans = link.snmp("dev")["Tcp.RetransSegs"] - k0
        st = link.stats()
    assert st["up"]["dropped_loss"] > 0
    assert retrans >= st["up"]["dropped_loss"] * 0.5 and retrans > 0


@needs_links
def test_gilbert_elliott_that_never_leaves_the_good_state_loses_at_its_good_rate():
    """ge=0%/0%/100%/100%: P(good→bad) 0 keeps the chain good, losing GOOD (here all). The relay
    ran GE only for P > 0 and lost nothing while the Result said 100 %."""
    d = NS.parse("ge=0%/0%/100%/100%").up
    assert d.mean_loss == 1.0
    assert "loss=1.0" in d.relay_arg(1500).split(",") and "ge_p" not in d.relay_arg(1500)
    d = NS.parse("ge=0%/50%/100%/20%").up
    assert d.mean_loss == pytest.approx(0.2) and "loss=0.2" in d.relay_arg(1500).split(",")
    g = NS.parse("ge=1%/25%").up.relay_arg(1500)
    assert "ge_p=0.01" in g.split(",") and "loss=0.0" in g.split(",")


def test_bernoulli_loss_rate_and_gilbert_elliott_bursts():
    def bursts(got, n):
        lost = sorted(set(range(n)) - set(got))
        runs, prev = [], None
        for x in lost:
            if prev is not None and x == prev + 1:
                runs[-1] += 1
            else:
                runs.append(1)
            prev = x
        return len(lost) / n, (statistics.mean(runs) if runs else 0)

    n = 3000
    with Link("up.loss=10%", seed=5) as link:
        rate_b, burst_b = bursts(_udp_run(link, n), n)
    with Link("up.ge=4%/30%", seed=5) as link:  # mean loss 4/34 = 11.8%, mean burst 1/0.3 = 3.3
        rate_g, burst_g = bursts(_udp_run(link, n), n)
    assert 0.075 < rate_b < 0.125 and burst_b < 1.4
    assert 0.07 < rate_g < 0.17 and burst_g > 2.2


@needs_links
def test_duplication_shows_as_duplicate_replies():
    with Link("up.dup=50%") as link:
        p, _ = _ping(link, count=20, interval=0.01)
        st = link.stats()
    assert st["up"]["duplicated"] > 0
    # each duplicated request is answered twice; ping may exit before the last duplicate arrives
    assert st["up"]["duplicated"] - 1 <= p.stdout.count("DUP!") <= st["up"]["duplicated"]


@needs_links
def test_reordering_reorders_datagrams():
    with Link("delay=5ms,up.reorder=20%", seed=2) as link:
        got = _udp_run(link, 400, pace_every=1, pause_s=0.0005)
        st = link.stats()
    assert sorted(got) == list(range(400))
    inversions = sum(1 for a, b in zip(got, got[1:]) if b < a)
    assert st["up"]["reordered"] > 0 and inversions > 0
    with Link("delay=5ms,jitter=3ms") as link:  # jitter alone never reorders (a link is a FIFO)
        got = _udp_run(link, 400, pace_every=1, pause_s=0.0005)
    assert got == list(range(400))


@needs_links
def test_rate_limits_tcp_throughput_and_queue_drops_tail():
    with Link("rate=2mbit,queue=100") as link:
        secs = _tcp_transfer(link, 250_000)
    goodput = 250_000 * 8 / secs
    # payload per 1500-byte packet is at most 1448 bytes (TCP timestamps): goodput <= 96.5% of the rate
    assert 0.80 * 2e6 < goodput < 0.99 * 2e6
    with Link("up.rate=1mbit,up.queue=5") as link:
        got = _udp_run(link, 200, size=1000, pace_every=200)
        st = link.stats()
    assert st["up"]["dropped_queue"] > 0 and len(got) == 200 - st["up"]["dropped_queue"]


@needs_links
def test_mtu_is_set_on_the_devices():
    with Link("mtu=1000") as link:
        ok, _ = _ping(link, count=1, size=900, extra=("-M", "do"))
        big, _ = _ping(link, count=1, size=1200, extra=("-M", "do"))
        mtu = subprocess.run(link.dev_exec(["cat", "/sys/class/net/sp0/mtu"]), capture_output=True, text=True).stdout
    assert ok.returncode == 0 and big.returncode != 0 and mtu.strip() == "1000"


def _cpu_ticks(pid):
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime, in clock ticks


def _udp_every(link, seconds: float, gap: float = 0.005) -> int:
    """Send a datagram across the link every `gap` seconds for `seconds`, sleeping in between (ping
    would not do: iputils ping busy-waits at intervals this short, and loads a CPU itself)."""
    rx = link.socket("srv", socket.AF_INET, socket.SOCK_DGRAM)
    rx.bind((link.server_addr, 0))
    tx = link.socket("dev", socket.AF_INET, socket.SOCK_DGRAM)
    end, sent = time.monotonic() + seconds, 0
    while time.monotonic() < end:
        tx.sendto(b"x" * 64, rx.getsockname())
        sent += 1
        time.sleep(gap)
    tx.close()
    rx.close()
    return sent


@pytest.mark.slow  # CPU seconds of the relay against fixed bounds: a fidelity check, not for the default run
@needs_links
def test_relay_spins_after_traffic_and_sleeps_when_the_link_is_idle():
    """The adaptive relay stays awake for its 10 ms window after a packet (precision inside an
    experiment) and then sleeps: an idle link costs no CPU. The relay also ends its window when
    tasks wait for a CPU (the next test), so on a shared host that is loaded at that moment it
    rightly does not spin: the spinning half gets up to three attempts of 0.5 s each and its failure
    message says how often the relay found the machine loaded. An attempt in which the relay
    found no load and still did not spin fails the test; if every attempt found the machine
    loaded, the spinning half cannot be judged on this host now and the test is skipped, saying
    so (the idle half is judged either way)."""
    hz = os.sysconf("SC_CLK_TCK")
    with Link("delay=0ms") as link:
        pid = link.relay.pid
        _udp_every(link, 0.2)  # packets 5 ms apart: inside the window
        time.sleep(0.2)
        t0 = _cpu_ticks(pid)
        time.sleep(1.0)
        idle = (_cpu_ticks(pid) - t0) / hz
        tries = []
        for _ in range(5):
            t0, s0 = _cpu_ticks(pid), link.stats()
            sent = _udp_every(link, 0.5)
            busy = (_cpu_ticks(pid) - t0) / hz
            st = link.stats()
            assert st["up"]["tx_packets"] - s0["up"]["tx_packets"] >= sent
            tries.append((busy, st["load_sleeps"] - s0["load_sleeps"]))
            if busy > 0.2 or tries[-1][1] == 0:
                break
    assert idle < 0.05, f"idle relay used {idle:.2f} s of CPU in 1 s"
    msg = f"(relay CPU seconds in 0.5 s of packets, windows ended by load) per attempt: {tries}"
    if busy <= 0.2 and all(loaded for _, loaded in tries):
        skip("host-load", "the machine was loaded in every attempt, so the relay rightly did not spin: " + msg)
    assert busy > 0.2, msg


@pytest.mark.slow  # round trips and CPU seconds against fixed bounds while every CPU is busy: a fidelity check
@needs_links
def test_relay_on_a_loaded_machine_sleeps_and_keeps_its_delay():
    """With every CPU busy, the relay does not spin for new packets (the CPU goes to the work that
    waits for it) and does not yield towards a due release (a yield on a loaded CPU gives the CPU
    away for a scheduler tick): a 20 ms link still gives 40 ms round trips. Before, pings under two
    CPU-bound tasks took 48 ms at the median and the relay spun on."""
    hz = os.sysconf("SC_CLK_TCK")
    burn = "import time\nend = time.monotonic() + 30\nwhile time.monotonic() < end: pass"  # bounded
    hogs = [subprocess.Popen([sys.executable, "-c", burn]) for _ in range(os.cpu_count() or 2)]
    try:
        time.sleep(0.2)
        with Link("delay=20ms") as link:
            pid = link.relay.pid
            t0 = _cpu_ticks(pid)
            _, rtts = _ping(link, count=40, interval=0.01)
            cpu = (_cpu_ticks(pid) - t0) / hz
            st = link.stats()
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    assert len(rtts) == 40
    assert 39.9 <= min(rtts) and statistics.median(rtts) <= 41.0, rtts
    assert cpu < 0.15, f"relay used {cpu:.2f} s of CPU in about 2 s of pings on a loaded machine"
    assert st["load_sleeps"] > 0  # and it says so in its counters (a handshake row records them)


@needs_links
def test_same_seed_same_losses():
    runs = []
    for _ in range(2):
        with Link("up.loss=20%", seed=11) as link:
            runs.append(_udp_run(link, 300))
    assert runs[0] == runs[1] and len(runs[0]) < 300


# --- nothing remains -----------------------------------------------------------------------------


def _ours(pid=None):
    names = [n for n in netns.list_namespaces() if netns.NAME_RE.match(n)]
    return [n for n in names if pid is None or n.startswith(f"{netns.PREFIX}{pid}-")]


@needs_links
def test_nothing_remains_after_normal_exit_and_after_an_error():
    with Link("delay=1ms") as link:
        relay = link.relay.pid
        srv = link.popen("srv", ["sleep", "30"])
        names = [link.dev_ns, link.srv_ns]
        assert set(names) <= set(netns.list_namespaces())
    assert not set(names) & set(netns.list_namespaces())
    assert not _alive(relay) and srv.poll() is not None
    with pytest.raises(RuntimeError, match="boom"):
        with Link("delay=1ms") as link:
            relay, names = link.relay.pid, [link.dev_ns, link.srv_ns]
            subprocess.Popen(link.srv_exec(["sleep", "30"]))  # not tracked: found in the namespace
            raise RuntimeError("boom")
    assert not set(names) & set(netns.list_namespaces()) and not _alive(relay)


@needs_links
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_nothing_remains_after_a_signal_to_netem_run(sig, tmp_path):
    import shutil

    from conftest import run_cli  # noqa: F401  (the installed console script)

    exe = shutil.which("secperf", path=str(Path(sys.executable).parent))
    p = subprocess.Popen(
        [exe, "netem", "run", "delay=1ms", "--server", "sleep 60", "--", "sleep", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "SECPERF_HOME": str(tmp_path / "h")},
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and len(_ours(p.pid)) < 2:
        time.sleep(0.05)
    assert len(_ours(p.pid)) == 2
    time.sleep(0.3)
    p.send_signal(sig)
    try:  # generous: on a loaded machine the clean-up's ip and relay steps queue for the CPU
        p.wait(timeout=60)
    except subprocess.TimeoutExpired:
        ps = subprocess.run(
            ["ps", "-o", "pid,stat,wchan:20,args", "--ppid", str(p.pid)], capture_output=True, text=True
        )
        p.kill()
        pytest.fail(f"secperf netem run did not end within 60 s of {sig.name}; its children:\n{ps.stdout}")
    out, err = p.communicate(timeout=60)  # the pipes close once no child of the run holds them
    assert p.returncode == (143 if sig == signal.SIGTERM else 130), err  # 128 + the signal
    assert _ours(p.pid) == []
    left = subprocess.run(
        ["pgrep", "-f", f"srv-netns /run/netns/{netns.PREFIX}{p.pid}-"], capture_output=True, text=True
    )
    assert left.stdout.strip() == ""  # no relay of that run


@needs_links
def test_sweeper_removes_only_dead_owners_namespaces(tmp_path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = f"{netns.PREFIX}{dead.pid}-1-dev"
    foreign = f"secperf-othertool-{os.getpid()}-dev"
    mine = f"{netns.PREFIX}{os.getpid()}-999-dev"
    for n in (stale, foreign, mine):
        subprocess.run(["ip", "netns", "add", n], check=True)
    try:
        sleeper = subprocess.Popen(["ip", "netns", "exec", stale, "sleep", "30"])
        time.sleep(0.2)
        removed = netns.sweep_stale()
        # the stale namespace is removed by this sweep, or by another secperf run's sweep that came first
        # (a second test run on the same machine): gone either way; the foreign and the live ones never
        assert foreign not in removed and mine not in removed
        present = netns.list_namespaces()
        assert stale not in present and foreign in present and mine in present
        assert sleeper.wait(timeout=5) is not None  # the orphan inside was stopped
    finally:
        for n in (stale, foreign, mine):
            subprocess.run(["ip", "netns", "del", n], capture_output=True)


@needs_links
def test_killed_owner_is_swept_by_the_next_link(tmp_path):
    code = (
        "import sys, time; from secperf.lab.netns import Link; l = Link('delay=1ms').open(); "
        "print(l.dev_ns, l.relay.pid, flush=True); time.sleep(60)"
    )
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    name, relay = p.stdout.readline().split()
    p.kill()
    p.wait()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(int(relay)):
        time.sleep(0.05)
    assert not _alive(int(relay))  # the relay dies with its owner (PR_SET_PDEATHSIG)
    # the owner's watchdog (lab/reaper.py) deletes its namespaces at once; if it was slower than this
    # test, the next link's sweep does (tests/test_orphans.py kills the watchdog too)
    with Link("delay=1ms"):
        assert name not in netns.list_namespaces()


# --- handshakes over a link ------------------------------------------------------------------------


def _network_waits_ms(conn: dict, rtt_ms: float) -> list[float]:
    """The client's waits of at least half a round trip: TCP's connect, then every gap between the
    last message the client sent and the next one it received (the probe's per-message times)."""
    waits = [conn["tcp_connect_us"] / 1000]
    sent_at = None
    for m in conn["messages"]:
        if m["dir"] == "sent":
            sent_at = m["t_us"]
        elif sent_at is not None:
            waits.append((m["t_us"] - sent_at) / 1000)
            sent_at = None
    return [w for w in waits if w >= rtt_ms / 2]


@needs_links
def test_tls13_two_and_tls12_three_round_trips_over_50ms(tmp_path):
    """The round trips counted, with a margin over the measured computation of a tenth of the round
    trip (a wrong count is a whole one): see _round_trips_over_50ms."""
    _round_trips_over_50ms(tmp_path, margin_ms=10.0)


@pytest.mark.slow  # the 2 ms margin over the measured computation is a fidelity check of the relay
@needs_links
def test_tls13_two_and_tls12_three_round_trips_over_50ms_within_2ms_of_computation(tmp_path):
    _round_trips_over_50ms(tmp_path, margin_ms=2.0)


def _round_trips_over_50ms(tmp_path, margin_ms):
    """TCP connect + handshake over a 50 ms one-way link = 2 (TLS 1.3) or 3 (TLS 1.2) round trips
    plus computation. An attempt (6 connections) is clean when:
    - structure: the probe's message times show exactly that many waits of half a round trip or
      more on most connections, and on the fastest one each of them lies between the RTT (less
      1 ms: a sent message's time is the library's write callback, which a descheduled client may
      take just after its bytes left) and 1.5 RTT;
    - time: the fastest connection's total - trips x RTT lies between -0.5 ms and the measured
      computation (client and server CPU) + margin_ms for the relay and scheduling.
    The link never delivers early (tested above with kernel timestamps), so contention on this
    shared host can only add time, and it does: CI runs measured a 6.9 ms median excess against
    3.9 ms of CPU, and a 157 ms wait for a 100 ms round trip. So the checks get up to three attempts,
    each its own measurement, and pass on a clean one; a wrong round-trip count (100 ms more or
    less on every connection) fails all three. Never faster than the round trips is checked on
    every attempt."""
    from dataclasses import replace

    from secperf.lab.pki import LabPKI
    from secperf.measure import handshake as H

    pki = LabPKI(tmp_path / "pki").ensure()
    p = H.HandshakeParams(n=6, warmup=1, timeout_ms=3000, workdir=tmp_path / "svc")
    rtt_ms = 100.0
    with Link("delay=50ms") as link:
        for cfg, trips in ((H.V13, 2), (H.V12, 3)):
            seen = []
            for _attempt in range(3):
                s = H.measure_config(replace(cfg, network="delay=50ms"), p, pki, link=link)
                assert s.status == "ok", s.failures[:3]
                d = s.derived
                assert s.labels["network_rtt_ms"] == rtt_ms
                assert d.link.up["delayed"] > 0
                ok = [c for c in s.samples if c.get("ok")]
                total = {id(c): (c["tcp_connect_us"] + c["handshake_wall_us"]) / 1000 for c in ok}
                fastest = min(ok, key=lambda c: total[id(c)])
                counts = sorted(len(_network_waits_ms(c, rtt_ms)) for c in ok)
                waits = [round(w, 2) for w in _network_waits_ms(fastest, rtt_ms)]
                compute_ms = (s.cpu_summary.p50_us + d.server_cpu_p50_us) / 1000
                extra = total[id(fastest)] - trips * rtt_ms
                seen.append(
                    {
                        "waits per connection": counts,
                        "fastest's waits": waits,
                        "extra": round(extra, 2),
                        "computation": round(compute_ms, 2),
                    }
                )
                assert extra >= -0.5, (cfg.label, seen)  # never faster than the round trips
                if (
                    statistics.median_low(counts) == trips
                    and len(waits) == trips
                    and all(rtt_ms - 1.0 <= w < 1.5 * rtt_ms for w in waits)
                    and extra <= compute_ms + margin_ms
                ):
                    break
            else:
                raise AssertionError(f"{cfg.label}: {trips} round trips expected; per attempt {seen}")


def test_lossy_links_get_time_for_retransmission_back_off():
    from secperf.measure.link_counts import LOSS_BACKOFF_MS, link_timeout_ms

    clean, lossy = NS.parse("delay=20ms"), NS.parse("delay=20ms,loss=1%")
    assert link_timeout_ms(5000, clean) == 5000 + 10 * 40
    assert link_timeout_ms(5000, lossy) == 5000 + 10 * 40 + LOSS_BACKOFF_MS
    assert link_timeout_ms(5000, NS.parse("delay=20ms,ge=2%/20%/30%/0.5%")) > 5000 + 400 + 6999
    assert LOSS_BACKOFF_MS >= 1000 + 2000 + 4000  # three doubled 1 s timeouts (DTLS flight, TCP SYN)


@pytest.mark.slow  # > 10 s: runs in `make test-slow` (CI runs it after `make test`)
@needs_links
def test_dtls_over_a_lossy_link_measures_slow_handshakes_and_resends_lost_requests(tmp_path):
    """Over 10% loss each way, DTLS loses handshake flights (resent by OpenSSL after 1, 2, 4 s) and
    application datagrams (which DTLS never resends). The slow handshakes are measured samples, not
    timeouts; a lost request or response is recovered by sending the request again after 2 s (the
    probe's RFC 7252 timer), and the probe server answers it again: an exchange fails only after
    its request went three times without an answer. Before, 2 of 8 connections at 5%
    loss failed: the server waited out its timeout for a lost close_notify while the next client's
    ClientHello waited, and a lost request ended its exchange."""
    from dataclasses import replace

    from secperf.lab.pki import LabPKI
    from secperf.measure import handshake as H

    pki = LabPKI(tmp_path / "pki").ensure()
    p = H.HandshakeParams(n=12, warmup=0, timeout_ms=3000, workdir=tmp_path / "svc")
    net = "delay=5ms,loss=10%"
    cfg = replace(H.V12, label="dtls1.2 ecdhe-rsa-aes128gcm no cookie", proto="dtls", dtls_cookie=False, network=net)
    samples, failures, dropped = [], [], 0
    with Link(net, seed=2) as link:
        # a request or response is lost in about one connection of five: batches of 12 until one
        # was (at most 3; none lost in 36 connections has a chance of about 1 in 2,000). The
        # link's losses repeat with its seed: with seed 2 the first batch here lost three.
        for _batch in range(3):
            s = H.measure_config(cfg, p, pki, link=link)
            samples += s.samples
            failures += s.failures
            dropped += s.derived.link.up["dropped_loss"] + s.derived.link.down["dropped_loss"]
            if any(c.get("app", {}).get("resent", 0) for c in s.samples):
                break
    assert dropped > 0
    ok = [c for c in samples if c.get("ok")]
    assert len(ok) >= 0.8 * len(samples), failures
    # no exchange failed for want of its response before the request was sent again at 2 and 6 s
    # (all three lost: about 1 connection in 150 at this loss, inside the stage's 10.1 s)
    no_answer = [f.reason for f in failures if "waiting for the response" in f.reason]
    assert all("the request sent again 2 times" in r for r in no_answer), no_answer
    resent = [c for c in samples if c.get("app", {}).get("resent", 0) > 0]
    assert any(c.get("ok") for c in resent), [(c.get("ok"), c.get("reason")) for c in resent]
    # a handshake that waited for OpenSSL's 1 s retransmission timer is a sample, not a failure
    assert max(c["handshake_wall_us"] for c in ok) >= 1_000_000
    # the report's network table says how often requests went again (the last batch had some)
    from secperf.report import html_netem

    times = sum(c.get("app", {}).get("resent", 0) for c in s.samples)
    row = html_netem.table([s]).split("</tr>")[1]
    assert times > 0 and f"<td>{times}</td>" in row, row


@needs_links
def test_cli_handshake_sweep_plots_time_against_rtt(tmp_path):
    from conftest import run_cli

    p = run_cli(
        "handshake",
        "versions",
        "--network",
        "delay=1ms",
        "--network",
        "delay=10ms",
        "--n",
        "3",
        "--warmup",
        "1",
        "--out",
        str(tmp_path),
        "--json",
    )
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert len(doc["series"]) == 4 and all(s["status"] == "ok" for s in doc["series"])
    assert {s["labels"]["network"] for s in doc["series"]} == {"delay=1ms", "delay=10ms"}
    assert [n["rtt_ms"] for n in doc["params"]["networks"]] == [2.0, 20.0]
    html = (tmp_path / "latest" / "report.html").read_text()
    assert 'data-plot="network-sweep"' in html and "P95" in html
    assert _ours() == [] or all(not n.startswith(f"{netns.PREFIX}{os.getpid()}-") for n in _ours())


# --- scenarios over links ------------------------------------------------------------------------

HS_SCENARIO = (
    'name = "s"\n[crypto]\n[[crypto.select]]\nalg = ["sha256"]\nsize = [16]\n'
    '[handshake]\nexperiments = ["versions"]\nnetworks = [{nets}]\nn = 2\nwarmup = 0\n'
)


def test_scenario_handshake_section_takes_networks():
    from secperf.app.scenario import handshake_configs
    from secperf.inputs import scenario as SC

    base = {"name": "t", "crypto": {}}
    cfgs = handshake_configs({**base, "handshake": {"experiments": ["versions"], "networks": ["loopback", "lte"]}})
    assert [(c.tls, c.network) for c in cfgs] == [
        ("1.3", "loopback"),
        ("1.2", "loopback"),
        ("1.3", "lte"),
        ("1.2", "lte"),
    ]
    assert len({c.series_id for c in cfgs}) == 4
    with pytest.raises(SC.ScenarioError, match=r"\[handshake\] networks: .*'delay'"):
        handshake_configs({**base, "handshake": {"experiments": ["versions"], "networks": ["delay=soon"]}})


def _run_scenario(tmp_path, nets, env=None):
    scn = tmp_path / "s.toml"
    scn.write_text(HS_SCENARIO.format(nets=", ".join(f'"{n}"' for n in nets)))
    exe = Path(sys.executable).parent / "secperf"
    p = subprocess.run(
        [str(exe), "run", "--scenario", str(scn), "--out", str(tmp_path / "out"), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )
    return p, (json.loads(p.stdout) if p.stdout.strip() else None)


def test_scenario_skips_links_that_cannot_be_built_and_goes_on(tmp_path):
    p, doc = _run_scenario(tmp_path, ["loopback", "delay=5ms"], env={"SECPERF_TUN_DEVICE": str(tmp_path / "no-tun")})
    assert p.returncode == 0, p.stderr
    assert "skipping the scenario's rows over emulated links (delay=5ms)" in p.stderr
    assert "no-tun does not exist" in p.stderr
    assert doc["params"]["skipped_links"]["networks"] == ["delay=5ms"]
    report = max((tmp_path / "out").glob("2*-run")) / "report.html"
    assert "emulated links skipped</th><td class=''>delay=5ms: SECPERF_TUN_DEVICE=" in report.read_text()
    hs = [s for s in doc["series"] if s["kind"] == "handshake"]
    assert [s["labels"]["network"] for s in hs] == ["loopback", "loopback"]
    assert all(s["status"] == "ok" for s in hs)


@needs_links
def test_scenario_runs_its_handshakes_over_its_links(tmp_path):
    before = set(_ours())
    p, doc = _run_scenario(tmp_path, ["delay=10ms"])
    assert p.returncode == 0, p.stderr
    # the run's link namespaces are gone (namespaces of other live processes on this machine are not ours)
    left = {n for n in set(_ours()) - before if not _alive(int(n[len(netns.PREFIX) :].split("-")[0]))}
    assert left == set()
    hs = {s["labels"]["tls"]: s for s in doc["series"] if s["kind"] == "handshake"}
    assert set(hs) == {"1.3", "1.2"} and all(s["labels"]["network"] == "delay=10ms" for s in hs.values())
    # the handshake timer starts after TCP's connect: TLS 1.3 takes 1 round trip of 20 ms, TLS 1.2 two
    assert hs["1.3"]["summary"]["min_us"] >= 20_000 and hs["1.2"]["summary"]["min_us"] >= 40_000


def _series(kind, labels, samples=(), values_us=()):
    """A series of `kind` as the measure modules write it (the report's link helpers read only these fields)."""
    from secperf.core import result as R

    s = R.new_series(
        f"{kind}/{labels['label']} @ {labels['network']}",
        kind=kind,
        labels=labels,
        timer={"name": "t", "start": "a named start", "end": "a named end"},
    )
    s.samples.extend(samples)
    s.values_us.extend(values_us)
    return s


def test_sweep_plot_of_a_grid_keeps_one_line_per_configuration_and_loss():
    """Round trips and losses both varied: a line per configuration and loss, plotted against the
    round trip (points of different losses joined into one line would zigzag meaninglessly)."""
    from secperf.report import html_netem

    def series(label, rtt, loss, ms):
        samples = [
            {"ok": True, "tcp_connect_us": rtt * 500, "handshake_wall_us": (ms + i) * 1000 - rtt * 500}
            for i in range(5)
        ]
        return _series(
            "handshake",
            {
                "label": label,
                "server": "s_server",
                "network": f"d={rtt},l={loss}",
                "network_rtt_ms": rtt,
                "network_loss": loss,
            },
            samples=samples,
        )

    nets = [
        series(lab, rtt, loss, rtt * k + 1000 * loss)
        for lab, k in (("tls1.3", 2), ("tls1.2", 3))
        for rtt in (20.0, 100.0)
        for loss in (0.0, 0.05)
    ]
    html = html_netem.sweep_plot(nets)
    assert 'data-plot="network-sweep"' in html and "round-trip time" in html
    for lab in ("tls1.3", "tls1.2"):
        for loss in ("0%", "5%"):
            assert f"{lab} @ s_server, loss {loss} P50" in html, html[:2000]
    # a sweep of the round trip alone names no loss
    plain = html_netem.sweep_plot([s for s in nets if s.labels["network_loss"] == 0.0])
    assert "tls1.3 @ s_server P50" in plain and "loss 0%" not in plain


def test_sweep_plot_of_connect_rows_draws_a_line_per_configuration_across_networks():
    """Connect rows over loopback and two links: one line per configuration (its label without the
    network), loopback drawn at a round trip of 0; handshake rows are not mixed in."""
    from secperf.report import html_netem

    def row(rtt, ms):
        net = "loopback" if rtt is None else f"delay={rtt / 2:g}ms"
        labels = {"label": "https probe software full" + ("" if rtt is None else f" @ {net}"), "network": net}
        if rtt is not None:
            labels.update(network_rtt_ms=rtt, network_loss=0.0)
        return _series("connect", labels, values_us=[ms * 1000 + i for i in range(5)])

    series = [row(None, 4.0), row(20.0, 64.0), row(100.0, 304.0)]
    html = html_netem.sweep_plot(series, kind="connect")
    assert 'data-plot="network-sweep"' in html and "Connection establishment against the link" in html
    assert "https probe software full P50" in html and "@ delay" not in html
    assert html_netem.sweep_plot(series) == ""  # no handshake rows among them
    assert html_netem.sweep_plot(series[:1], kind="connect") == ""  # one network: nothing to sweep


def test_sweep_plot_of_profiles_and_of_a_loss_sweep_with_loopback():
    """Profiles (loopback, then a link with its own round trip and loss): one line per configuration
    against the round trip, loopback at 0. A loss sweep (one round trip, several losses) is drawn
    against the loss, and loopback (another round trip) stays out of it."""
    from secperf.report import html_netem

    def row(net, rtt, loss, ms):
        labels = {"label": "https probe software full" + ("" if rtt is None else f" @ {net}"), "network": net}
        if rtt is not None:
            labels.update(network_rtt_ms=rtt, network_loss=loss)
        return _series("connect", labels, values_us=[ms * 1000 + i for i in range(5)])

    profiles = html_netem.sweep_plot([row("loopback", None, 0, 4.0), row("lte", 50.0, 0.005, 160.0)], kind="connect")
    assert "https probe software full P50" in profiles and "loss" not in profiles.split("<figcaption>")[0]
    assert "round-trip time" in profiles
    loss_sweep = html_netem.sweep_plot(
        [row("loopback", None, 0, 4.0), row("l0", 50.0, 0.0, 155.0), row("l5", 50.0, 0.05, 190.0)], kind="connect"
    )
    assert "one-way loss (%)" in loss_sweep and "https probe software full P50" in loss_sweep
