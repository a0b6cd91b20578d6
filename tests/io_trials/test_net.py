"""net.tcp against a known truth: two pairs of network namespaces, each pair joined by a veth shaped with tc's
token bucket (both ends) to 200 Mbit/s and to 1 Gbit/s, an sshd in every namespace, iperf3 run there over ssh
by seatrial io. Addresses are in the benchmarking range 198.18.0.0/15; the test makes and removes its own
namespaces and links (by the names it gave them), nothing leaves the machine.

Topology per pair k: root <-(mgmt veth, 198.19.k.0/30)-> X_k <-(data veth, shaped, 198.18.k.0/30)-> Y_k. X_k's
ssh address is 198.19.k.2; Y_k's is its data address 198.18.k.2, reached from the root namespace through X_k
(forwarding on), so iperf3 between X_k and Y_k runs over the shaped link alone."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.clirun import invoke
from tests.fleet.sshd import Sshd, start_sshd
from tests.io_trials.conftest import need

RATES_MBIT = {1: 200, 2: 1000}


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def _ns(ns: str, *args: str) -> None:
    subprocess.run(["ip", "netns", "exec", ns, *args], check=True, capture_output=True)


def _can_make_namespaces() -> str | None:
    probe = f"strial-probe-{uuid.uuid4().hex[:6]}"
    done = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if done.returncode != 0:
        return f"ip netns add refused: {done.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


@pytest.fixture(scope="module")
def shaped_pairs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[int, tuple[Sshd, Sshd]]]:
    need("iperf3", "ip", "tc", "ssh", root=True)
    if shutil.which("sshd") is None and not os.access("/usr/sbin/sshd", os.X_OK):
        need("sshd")
    if why := _can_make_namespaces():
        if os.environ.get("SEATRIAL_REQUIRE_IO") == "1":
            pytest.fail(why)
        pytest.skip(why)
    tag = uuid.uuid4().hex[:5]
    made_ns: list[str] = []
    made_links: list[str] = []
    servers: list[Sshd] = []
    pairs: dict[int, tuple[Sshd, Sshd]] = {}
    try:
        for k, mbit in RATES_MBIT.items():
            x, y = f"st{tag}x{k}", f"st{tag}y{k}"
            for ns in (x, y):
                _ip("netns", "add", ns)
                made_ns.append(ns)
                _ns(ns, "ip", "link", "set", "lo", "up")
            mgmt, data = f"st{tag}m{k}", f"st{tag}d{k}"
            _ip("link", "add", mgmt, "type", "veth", "peer", "name", f"{mgmt}p", "netns", x)
            made_links.append(mgmt)
            _ip("addr", "add", f"198.19.{k}.1/30", "dev", mgmt)
            _ip("link", "set", mgmt, "up")
            _ns(x, "ip", "addr", "add", f"198.19.{k}.2/30", "dev", f"{mgmt}p")
            _ns(x, "ip", "link", "set", f"{mgmt}p", "up")
            _ip("link", "add", data, "netns", x, "type", "veth", "peer", "name", f"{data}p", "netns", y)
            _ns(x, "ip", "addr", "add", f"198.18.{k}.1/30", "dev", data)
            _ns(y, "ip", "addr", "add", f"198.18.{k}.2/30", "dev", f"{data}p")
            for ns, dev in ((x, data), (y, f"{data}p")):
                _ns(ns, "ip", "link", "set", dev, "up")
                _ns(
                    ns,
                    "tc",
                    "qdisc",
                    "add",
                    "dev",
                    dev,
                    "root",
                    "tbf",
                    "rate",
                    f"{mbit}mbit",
                    "burst",
                    f"{mbit}kb",
                    "latency",
                    "50ms",
                )  # burst >= rate / HZ
            _ns(x, "sysctl", "-qw", "net.ipv4.ip_forward=1")
            _ns(y, "ip", "route", "add", "default", "via", f"198.18.{k}.1")
            _ip("route", "add", f"198.18.{k}.0/30", "via", f"198.19.{k}.2")
            sx = start_sshd(tmp_path_factory.mktemp(f"sshd-x{k}"), host=f"198.19.{k}.2", netns=x, port=22)
            servers.append(sx)
            sy = start_sshd(tmp_path_factory.mktemp(f"sshd-y{k}"), host=f"198.18.{k}.2", netns=y, port=22)
            servers.append(sy)
            pairs[k] = (sx, sy)
        yield pairs
    finally:
        for s in servers:
            s.stop()
        for k in RATES_MBIT:
            subprocess.run(["ip", "route", "del", f"198.18.{k}.0/30"], capture_output=True)
        for link in made_links:
            subprocess.run(["ip", "link", "del", link], capture_output=True)
        for ns in made_ns:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_each_pair_within_10_percent_and_the_slow_one_fails(
    shaped_pairs: dict[int, tuple[Sshd, Sshd]], tmp_path: Path
) -> None:
    known = tmp_path / "known_hosts"
    known.write_text("".join(Path(s.ssh.known_hosts or "").read_text().replace(f"[{s.host}]:22", s.host)
                             for pair in shaped_pairs.values() for s in pair))  # fmt: skip
    key = tmp_path / "key"
    shutil.copy(shaped_pairs[1][0].ssh.key or "", key)
    for pair in shaped_pairs.values():  # one client key for all of them
        for s in pair:
            shutil.copy(shaped_pairs[1][0].folder / "clientkey.pub", s.folder / "authorized_keys")
    nodes = [s.target for pair in shaped_pairs.values() for s in pair]
    pairs = ",".join(f"{a.target}={b.target}" for a, b in shaped_pairs.values())
    res = invoke(["io", *nodes, "--trials", "net.tcp", "--pairs", pairs, "--expect", "net.gbps=1", "--repeats", "2",
                  "--net-seconds", "2", "--net-streams", "2", "--ssh-key", str(key), "--known-hosts", str(known),
                  "--json", str(tmp_path / "net.json")])  # fmt: skip
    rows = {r["node"]: r for r in json.loads((tmp_path / "net.json").read_text())["results"]}
    assert res.code == 1, res.output
    for k, (a, b) in shaped_pairs.items():
        row = rows[f"{a.target} <-> {b.target}"]
        shaped = RATES_MBIT[k] / 1000
        for key_ in ("forward_gbps", "reverse_gbps"):
            assert row["figures"][key_] == pytest.approx(shaped, rel=0.10), (k, row)
    slow = rows[f"{shaped_pairs[1][0].target} <-> {shaped_pairs[1][1].target}"]
    fast = rows[f"{shaped_pairs[2][0].target} <-> {shaped_pairs[2][1].target}"]
    assert (
        slow["verdict"] == "FAIL"
        and shaped_pairs[1][0].target in slow["reason"]
        and "below the floor 0.8" in slow["reason"]
    )
    assert fast["verdict"] in ("PASS", "REVIEW_REQUIRED"), fast
