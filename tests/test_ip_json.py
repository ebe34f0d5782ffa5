"""`ip -j` read into typed records (lab/ip_json.py), against the real `ip` in a network namespace this test
creates (root): the namespace list, an interface's MTU, flags and addresses, the named error for an entry
that lacks a field, and a Link's TUN device read back after it came up."""

from __future__ import annotations

import copy
import json
import os
import subprocess
from typing import Any

import pytest

from conftest import CAPABLE, IS_ROOT, LINK_PROBLEM, skip
from secperf.lab import ip_json as J
from secperf.lab import netns, reaper


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=10)


@pytest.fixture
def namespace():
    """A namespace of this test's own (name carries the pid), with a veth pair inside: t0 (mtu 1280,
    10.99.0.1/30, up) and t1 (down, no address); deleted afterwards."""
    if not IS_ROOT:
        skip("needs-root", "creating a network namespace needs root")
    name = f"secperf-iptest-{os.getpid()}"
    _ip("netns", "add", name)
    try:
        _ip("-n", name, "link", "add", "t0", "type", "veth", "peer", "name", "t1")
        _ip("-n", name, "link", "set", "t0", "mtu", "1280", "up")
        _ip("-n", name, "addr", "add", "10.99.0.1/30", "dev", "t0")
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True, timeout=10)


def _raw(*args: str) -> Any:
    return json.loads(
        subprocess.run(["ip", "-j", *args], capture_output=True, text=True, timeout=10, check=True).stdout
    )


def test_the_namespace_list_holds_the_new_namespace_and_loses_it(namespace):
    listed = J.netns_list(check=True)
    assert all(isinstance(n, J.Netns) for n in listed)
    assert namespace in [n.name for n in listed]
    assert namespace in netns.list_namespaces()  # the sweepers' reading of it
    subprocess.run(["ip", "netns", "del", namespace], check=True, timeout=10)
    assert namespace not in [n.name for n in J.netns_list()]


def test_an_interface_reads_into_its_fields(namespace):
    (t0,) = J.interfaces(netns=namespace, dev="t0")
    assert (t0.ifname, t0.mtu, t0.up) == ("t0", 1280, True)
    assert t0.inet() == ["10.99.0.1/30"]
    assert t0.addresses[0] == J.IpAddress("inet", "10.99.0.1", 30)
    names = {i.ifname: i for i in J.interfaces(netns=namespace)}
    assert set(names) == {"lo", "t0", "t1"}
    assert names["t1"].up is False and names["t1"].addresses == ()
    assert names["lo"].ifindex == 1 and names["t0"].ifindex != names["t1"].ifindex


@pytest.mark.parametrize("field", ["ifname", "mtu", "flags", "addr_info", "operstate", "ifindex"])
def test_an_interface_without_a_field_is_a_named_error(namespace, field):
    doc = _raw("-n", namespace, "addr", "show", "dev", "t0")
    assert J.parse_interfaces(doc)[0].mtu == 1280  # the real output reads as it is
    bad = copy.deepcopy(doc)
    del bad[0][field]
    with pytest.raises(J.IpOutputError, match=f"has no '{field}' field"):
        J.parse_interfaces(bad)


def test_an_address_without_its_prefix_and_a_wrong_type_are_named(namespace):
    doc = _raw("-n", namespace, "addr", "show", "dev", "t0")
    bad = copy.deepcopy(doc)
    del bad[0]["addr_info"][0]["prefixlen"]
    with pytest.raises(J.IpOutputError, match=r"interface t0 address 0 has no 'prefixlen' field"):
        J.parse_interfaces(bad)
    bad = copy.deepcopy(doc)
    bad[0]["mtu"] = "1280"
    with pytest.raises(J.IpOutputError, match=r"'mtu' is '1280', not a whole number"):
        J.parse_interfaces(bad)


def test_a_namespace_entry_without_its_name_is_a_named_error(namespace):
    doc = _raw("netns", "list")
    assert namespace in [n.name for n in J.parse_netns(doc)]
    bad = [{k: v for k, v in e.items() if k != "name"} for e in doc]
    with pytest.raises(J.IpOutputError, match=r"`ip -j netns list` entry 0 has no 'name' field"):
        J.parse_netns(bad)
    with pytest.raises(J.IpOutputError, match="not a list"):
        J.parse_netns({"name": namespace})


def test_output_that_is_not_json_and_a_failing_ip_are_named():
    with pytest.raises(J.IpOutputError, match=r"`ip -j -V` did not print JSON"):
        J.run_ip_json(["-V"])  # ip prints its version as text whatever -j says
    with pytest.raises(J.IpOutputError, match=r"failed \(exit"):
        J.run_ip_json(["addr", "show", "dev", f"secperf-none-{os.getpid()}"])
    assert J.run_ip_json(["addr", "show", "dev", f"secperf-none-{os.getpid()}"], check=False) is None


def test_the_watchdog_removes_a_listed_namespace(namespace):
    removed = reaper.remove_namespaces({"namespaces": [{"name": namespace}]})
    assert removed == [namespace]
    assert namespace not in [n.name for n in J.netns_list()]


def test_a_link_reads_its_devices_back():
    if not CAPABLE or LINK_PROBLEM is not None:
        skip("needs-links", f"a root-mode link cannot be built here: {LINK_PROBLEM or 'not root or no /dev/net/tun'}")
    with netns.Link("delay=5ms,mtu=1200") as link:
        dev, srv = link.interface("dev"), link.interface("srv")
        assert (dev.ifname, dev.mtu, srv.mtu) == (netns.IFNAME, 1200, 1200)
        assert dev.inet() == [f"{netns.DEV_ADDR}/{netns.PREFIX_LEN}"]
        assert srv.inet() == [f"{netns.SRV_ADDR}/{netns.PREFIX_LEN}"]
    with pytest.raises(netns.LinkError):
        netns.Link("loopback").interface("dev")
