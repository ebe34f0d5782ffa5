"""Emulated links without root (lab/netns.Link in user namespaces): as user nobody, with a TUN node
made for the test, a 20 ms link shows a 40 ms ping, carries TCP, and leaves no holder, relay or
process behind after close() or a killed owner; without an accessible TUN node the message names
the fix. The nobody tests need root (to make the node and switch user), setpriv and a Python
interpreter nobody can run; they skip, saying which, otherwise."""

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest

import secperf
from conftest import alive as _alive
from conftest import skip_if
from secperf.lab import netns

NOBODY = 65534
SITE = Path(secperf.__file__).resolve().parents[1]  # the installed package's site-packages


def _nogroup() -> int:
    import grp

    for name in ("nogroup", "nobody"):
        try:
            return grp.getgrnam(name).gr_gid
        except KeyError:
            pass
    return NOBODY


def _nobody_argv(argv: list[str]) -> list[str]:
    # setpriv may still hold root's capabilities when it execs (it can run what nobody cannot
    # reach): `env` in between makes the real command's exec an unprivileged one
    return ["setpriv", f"--reuid={NOBODY}", f"--regid={_nogroup()}", "--clear-groups", "--", "env", *argv]


def _as_nobody(argv, env=None, cwd="/", timeout=20, **kw):
    return subprocess.run(_nobody_argv(argv), env=env, cwd=cwd, timeout=timeout, capture_output=True, text=True, **kw)


def _nobody_python() -> str | None:
    """An interpreter nobody can run, of this one's version (the venv's may live in root's home)."""
    want = f"{sys.version_info[0]}.{sys.version_info[1]}"
    for exe in (sys.executable, shutil.which(f"python{want}"), "/usr/bin/python3"):
        if not exe:
            continue
        p = _as_nobody([exe, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
        if p.returncode == 0 and p.stdout.strip() == want:
            return exe
    return None


def _skip_reason() -> tuple[str, str] | None:
    """(category, reason) when the rootless tests cannot run here, else None."""
    if os.geteuid() != 0:
        return "needs-root", "runs as root (makes a TUN node and switches to user nobody)"
    if not shutil.which("setpriv"):
        return "needs-bootstrap", "setpriv (util-linux) is missing"
    # where the checkout and the virtualenv lie (a private directory, mode 0700), not the set-up
    py = _nobody_python()
    if py is None:
        return "checkout-location", f"no Python {sys.version_info[0]}.{sys.version_info[1]} that user nobody can run"
    p = _as_nobody([py, "-c", "import secperf.lab.netns"], env={**os.environ, "PYTHONPATH": str(SITE)})
    if p.returncode != 0:
        return (
            "checkout-location",
            f"user nobody cannot import the installed package from {SITE}: {p.stderr.strip()[-200:]}",
        )
    return None


SKIP = _skip_reason()
as_nobody = skip_if(SKIP is not None, *(SKIP or ("needs-root", "")))


@pytest.fixture
def sandbox():
    """A home for nobody (SECPERF_HOME, cwd) and a 0755 directory holding the TUN nodes made by
    `node(mode)`; everything is removed afterwards."""
    top = Path(tempfile.mkdtemp(prefix="secperf-rootless-"))
    os.chmod(top, 0o755)
    home, devdir = top / "home", top / "dev"
    home.mkdir()
    devdir.mkdir(mode=0o755)
    os.chown(home, NOBODY, _nogroup())
    os.chmod(home, 0o700)

    def node(mode: int, name: str = "tun") -> Path:
        path = devdir / name
        os.mknod(path, stat.S_IFCHR | mode, os.makedev(10, 200))
        os.chown(path, 0, _nogroup())
        os.chmod(path, mode)  # mknod applies the umask
        return path

    def env(tun: Path | None) -> dict:
        e = {k: v for k, v in os.environ.items() if k != netns.TUN_ENV}
        e.update(PYTHONPATH=str(SITE), PYTHONDONTWRITEBYTECODE="1", SECPERF_HOME=str(home / "secperf"), HOME=str(home))
        if tun is not None:
            e[netns.TUN_ENV] = str(tun)
        return e

    try:
        yield type(
            "Sandbox",
            (),
            {"home": home, "node": staticmethod(node), "env": staticmethod(env), "python": _nobody_python()},
        )
    finally:
        shutil.rmtree(top, ignore_errors=True)


LINK_SCRIPT = textwrap.dedent("""
    import json, os, re, statistics, subprocess, sys
    from secperf.lab import netns
    from secperf.lab.netns import Link

    def alive(pid):
        try:
            return open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
        except OSError:
            return False

    out = {"mode": netns.mode(), "check": netns.check()}
    with Link("delay=20ms") as link:
        ping = subprocess.run(link.dev_exec(["ping", "-n", "-c", "5", "-i", "0.05", "-W", "2", link.server_addr]),
                              capture_output=True, text=True, timeout=20)
        out["rtts"] = [float(x) for x in re.findall(r"time=([0-9.]+) ms", ping.stdout)]
        out["mtu"] = subprocess.run(link.dev_exec(["cat", "/sys/class/net/sp0/mtu"]), capture_output=True,
                                    text=True, timeout=10).stdout.strip()
        # TCP across: the server's socket made in the server namespace (Link.socket), the client a
        # process in the device namespace (the command prefix)
        srv = link.socket("srv")
        srv.settimeout(10)
        srv.bind((link.server_addr, 0))
        srv.listen(1)
        client = ("import socket, sys; s = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=10); "
                  "s.sendall(b'across the link'); print(s.recv(100).decode())")
        cli = subprocess.Popen(link.dev_exec([sys.executable, "-c", client, link.server_addr,
                                              str(srv.getsockname()[1])]), stdout=subprocess.PIPE, text=True)
        conn, peer = srv.accept()
        conn.settimeout(10)
        got = conn.recv(100)
        conn.sendall(got.upper())
        out["tcp"] = {"server_got": got.decode(), "client_got": cli.communicate(timeout=10)[0].strip(),
                      "peer": peer[0]}
        conn.close()
        srv.close()
        stray = subprocess.Popen(link.srv_exec(["sleep", "30"]))  # not tracked: found inside at close
        out["pids"] = {"holders": [h.pid for h in link.holders], "relay": link.relay.pid, "stray": stray.pid}
    out["alive_after_close"] = [p for p in [*out["pids"]["holders"], out["pids"]["relay"], out["pids"]["stray"]]
                                if alive(p)]
    out["stats"] = link.final_stats
    print(json.dumps(out))
""")


@as_nobody
def test_rootless_link_delays_carries_tcp_and_leaves_nothing(sandbox):
    tun = sandbox.node(0o660)
    p = _as_nobody([sandbox.python, "-c", LINK_SCRIPT], env=sandbox.env(tun), cwd=sandbox.home, timeout=60)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.splitlines()[-1])
    assert out["mode"] == "rootless (user namespace)" and out["check"] is None
    assert len(out["rtts"]) == 5
    assert sorted(out["rtts"])[2] == pytest.approx(40.0, abs=5.0)
    assert out["mtu"] == "1500"  # the device namespace's own /sys
    assert out["tcp"] == {"server_got": "across the link", "client_got": "ACROSS THE LINK", "peer": netns.DEV_ADDR}
    assert out["stats"]["up"]["delayed"] > 0 and out["stats"]["down"]["delayed"] > 0
    assert out["alive_after_close"] == []
    pids = [*out["pids"]["holders"], out["pids"]["relay"], out["pids"]["stray"]]
    assert not [pid for pid in pids if _alive(pid)]


KILLED_SCRIPT = textwrap.dedent("""
    import subprocess, time
    from secperf.lab.netns import Link
    link = Link("delay=1ms").open()
    stray = subprocess.Popen(link.srv_exec(["sleep", "60"]))
    print(*[h.pid for h in link.holders], link.relay.pid, stray.pid, flush=True)
    time.sleep(60)
""")


@as_nobody
def test_rootless_link_dies_with_a_killed_owner(sandbox):
    tun = sandbox.node(0o660)
    proc = subprocess.Popen(
        _nobody_argv([sandbox.python, "-c", KILLED_SCRIPT]),
        env=sandbox.env(tun),
        cwd=sandbox.home,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()  # setpriv and env exec: proc.pid is the owner's
        pids = [int(x) for x in line.split()]
        assert len(pids) == 4, proc.stderr.read() if proc.poll() is not None else line
        assert all(_alive(pid) for pid in pids)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.05)
    left = {pid: Path(f"/proc/{pid}/status").read_text().splitlines()[:8] for pid in pids if _alive(pid)}
    names = dict(zip(pids, ["holder-dev", "holder-srv", "relay", "stray"]))
    assert {names[p]: v for p, v in left.items()} == {}  # holders (end of file), relay (PDEATHSIG), what was inside


def _descendants(pid: int) -> dict[int, str]:
    """{pid: command name} of every live process below pid."""
    parent = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                st = Path(f"/proc/{d}/stat").read_text()
            except OSError:
                continue
            name, rest = st.split(" (", 1)[1].rsplit(")", 1)
            if rest.split()[0] != "Z":
                parent[int(d)] = (int(rest.split()[1]), name)
    out, todo = {}, [pid]
    while todo:
        p = todo.pop()
        for child, (ppid, name) in parent.items():
            if ppid == p and child not in out:
                out[child] = name
                todo.append(child)
    return out


@as_nobody
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_rootless_netem_run_leaves_nothing_after_a_signal(sandbox, sig):
    tun = sandbox.node(0o660)
    # the server must listen before the command starts (netem run waits for it): a bound UDP socket
    server = (
        f"{sandbox.python} -c \"import socket, time; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
        f"s.bind(('10.77.0.2', 9)); time.sleep(60)\""
    )
    proc = subprocess.Popen(
        _nobody_argv(
            [sandbox.python, "-m", "secperf", "netem", "run", "delay=1ms", "--server", server, "--", "sleep", "60"]
        ),
        env=sandbox.env(tun),
        cwd=sandbox.home,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 10
        below = {}
        while time.monotonic() < deadline and list(below.values()).count("sleep") < 1:
            time.sleep(0.05)
            below = _descendants(proc.pid)
        # two holders (Python), the relay, the server (Python) and the command
        assert list(below.values()).count("sleep") == 1 and "secperf-netem" in below.values(), below
        assert len(below) == 6, below  # and secperf's watchdog (lab/reaper.py)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == (143 if sig == signal.SIGTERM else 130), err  # 128 + the signal
    assert [pid for pid in below if _alive(pid)] == []


@as_nobody
@skip_if(
    not (shutil.which("nginx") or os.path.exists("/usr/sbin/nginx")) or not shutil.which("mosquitto"),
    "needs-bootstrap",
    "nginx and mosquitto are installed by scripts/bootstrap",
)
def test_rootless_link_runs_servers_that_drop_privileges(sandbox):
    """nginx and mosquitto, started as (namespace) root, would switch to a user the user namespace
    does not map: they are told to stay the user they are (Link.server_user). Every client runs
    over the rootless link: the probe, curl, mosquitto_pub, paho and coap-client."""
    tun = sandbox.node(0o660)
    p = _as_nobody(
        [
            sandbox.python,
            "-m",
            "secperf",
            "connect",
            "https,mqtt,coap",
            "--client",
            "all",
            "--key",
            "software",
            "--handshake",
            "full",
            "--network",
            "delay=1ms",
            "--n",
            "1",
            "--warmup",
            "0",
            "--out",
            str(sandbox.home / "out"),
            "--json",
        ],
        env=sandbox.env(tun),
        cwd=sandbox.home,
        timeout=120,
    )
    doc = json.loads(p.stdout)
    got = {s["id"]: (s["status"], [f["reason"][:300] for f in s.get("failures") or []]) for s in doc["series"]}
    # the connection rows of every server with every client (the reference clients too), and
    # HTTPS's JWT rows (their endpoint over the same link)
    assert got == {
        "connect/https/probe/software/full@delay=1ms": ("ok", []),
        "connect/https/curl/software/full@delay=1ms": ("ok", []),
        "connect/mqtt/probe/software/full@delay=1ms": ("ok", []),
        "connect/mqtt/mosquitto_pub/software/full@delay=1ms": ("ok", []),
        "connect/mqtt/paho/software/full@delay=1ms": ("ok", []),
        "connect/coap/probe/software/full@delay=1ms": ("ok", []),
        "connect/coap/coap-client/software/full@delay=1ms": ("ok", []),
        "jwt/software/ecdsa-p256/jwt_fresh@delay=1ms": ("ok", []),
        "jwt/software/ecdsa-p256/jwt_cached@delay=1ms": ("ok", []),
    }, p.stderr[-2000:]


CHECK_SCRIPT = textwrap.dedent("""
    import json
    from secperf.lab import netns
    from secperf.lab.netns import Link, LinkError
    try:
        Link("delay=1ms").open()
        err = None
    except LinkError as exc:
        err = str(exc)
    print(json.dumps({"check": netns.check(), "open": err}))
""")


@as_nobody
def test_rootless_without_an_accessible_tun_says_so_and_names_the_fix(sandbox):
    tun = sandbox.node(0o600)  # root's only, as Debian's /dev/net/tun is on this kind of host
    p = _as_nobody([sandbox.python, "-c", CHECK_SCRIPT], env=sandbox.env(tun), cwd=sandbox.home)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    msg = out["check"]
    assert msg.startswith(f"{tun} is not accessible to uid {NOBODY} (mode 0600"), msg
    assert "run as root" in msg and f"set {netns.TUN_ENV} to a TUN node" in msg and "mknod" in msg
    assert out["open"] == msg  # Link.open() refuses with the same words, before creating anything

    cli = _as_nobody([sandbox.python, "-m", "secperf", "netem", "check"], env=sandbox.env(tun), cwd=sandbox.home)
    assert cli.returncode == 1
    assert cli.stdout.splitlines()[0] == "mode: rootless (user namespace)"
    assert f"not available here: {msg}" in cli.stdout

    st = os.stat(netns.DEFAULT_TUN) if os.path.exists(netns.DEFAULT_TUN) else None
    if st is not None and not st.st_mode & 0o006:  # the system's node is closed to others too
        p = _as_nobody([sandbox.python, "-c", CHECK_SCRIPT], env=sandbox.env(None), cwd=sandbox.home)
        msg = json.loads(p.stdout)["check"]
        assert f"{netns.DEFAULT_TUN} is not accessible to uid {NOBODY}" in msg
        assert f"`chmod 0666 {netns.DEFAULT_TUN}` (Debian's default mode)" in msg and netns.TUN_ENV in msg


@as_nobody
def test_rootless_check_passes_and_cli_names_the_mode(sandbox):
    tun = sandbox.node(0o660)
    cli = _as_nobody([sandbox.python, "-m", "secperf", "netem", "check"], env=sandbox.env(tun), cwd=sandbox.home)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert cli.stdout.splitlines() == [
        "mode: rootless (user namespace)",
        f"emulated links: ok (TUN device {tun}, user and network namespaces, nsenter, secperf-netem)",
    ]


# --- without switching users ------------------------------------------------------------------------


def test_tun_device_problems_name_the_node_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv(netns.TUN_ENV, str(tmp_path / "nosuch"))
    assert f"{netns.TUN_ENV}={tmp_path / 'nosuch'} does not exist: create a TUN node there (mknod" in netns.check()
    (tmp_path / "file").write_text("")
    monkeypatch.setenv(netns.TUN_ENV, str(tmp_path / "file"))
    assert f"{tmp_path / 'file'} is not the TUN device (a character device 10:200)" in netns.check()


def test_disabled_user_namespaces_name_the_switch():
    off = {"kernel.unprivileged_userns_clone": "0", "user.max_user_namespaces": "15000"}
    msg = netns.userns_fix("unshare(CLONE_NEWUSER|CLONE_NEWNET): Operation not permitted (errno 1)", off.get)
    assert msg.startswith("unprivileged user namespaces are disabled here (unshare(")
    assert "sysctl -w kernel.unprivileged_userns_clone=1" in msg and msg.endswith("or run as root")
    msg = netns.userns_fix("x", {"user.max_user_namespaces": "0"}.get)
    assert "sysctl -w user.max_user_namespaces=" in msg and "unprivileged_userns_clone=1" not in msg
    msg = netns.userns_fix("x", {"kernel.apparmor_restrict_unprivileged_userns": "1"}.get)
    assert "kernel.apparmor_restrict_unprivileged_userns=0" in msg
    assert "seccomp" in netns.userns_fix("x", {}.get)  # no known switch is off: all named, and containers


@skip_if(os.geteuid() != 0, "needs-root", "the root mode of the relay needs root")
@skip_if(netns.check() is not None, "needs-links", f"the root mode needs TUN: {netns.check()}")
def test_root_mode_relay_opens_the_configured_tun_node(sandbox, monkeypatch):
    tun = sandbox.node(0o600)
    monkeypatch.setenv(netns.TUN_ENV, str(tun))
    monkeypatch.setenv("SECPERF_HOME", str(sandbox.home / "root"))
    with netns.Link("delay=1ms") as link:
        assert not link.rootless and link.holders == []
        args = Path(f"/proc/{link.relay.pid}/cmdline").read_bytes().split(b"\0")
        assert args[args.index(b"--tun-device") + 1] == str(tun).encode() and b"--userns" not in args
        p = subprocess.run(
            link.dev_exec(["ping", "-n", "-c", "1", "-W", "2", link.server_addr]),
            capture_output=True,
            text=True,
            timeout=10,
        )
    assert p.returncode == 0, p.stdout + p.stderr
