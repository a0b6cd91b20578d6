"""``net.tcp``: iperf3 (Debian's ``iperf3``) between pairs of nodes over their SSH access: a one-off server on
one, the client on the other, both directions (``-R``), ``net_streams`` parallel streams, the receiver's
rate. Pairs: ``--pairs`` as given, else every pair of up to 4 nodes, else a ring plus random pairs. The
reference is ``--expect net.gbps`` or the client's interface toward its peer (``/sys/class/net/IF/speed``);
PASS when the slower direction's median reaches ``net.min_share`` (80%) of it. ``net.nccl``: seatrial.io.nccl."""

from __future__ import annotations

import itertools
import json
import random
import subprocess
import time
from typing import Any

from seatrial.errors import ConfigError
from seatrial.io.context import IoContext
from seatrial.io.judge import Limit, judge, unavailable
from seatrial.io.nodes import Node
from seatrial.io.spread import medians
from seatrial.runs.summaries.io import IoRow
from seatrial.runs.verdicts import Verdict

IPERF_PACKAGE = "iperf3 (Debian/Ubuntu: apt-get install iperf3; scripts/setup.sh installs it)"
ALL_PAIRS_UP_TO = 4
CONNECT_WAIT_S = 10.0


def pairs_of(
    nodes: list[Node], wanted: list[tuple[str, str]] | None, seed: int = 0
) -> list[tuple[Node, Node]]:
    by_spec = {n.spec: n for n in nodes}
    if wanted:
        missing = [s for pair in wanted for s in pair if s not in by_spec]
        if missing:
            raise ConfigError(f"--pairs names {', '.join(missing)}, not among the nodes given")
        return [(by_spec[a], by_spec[b]) for a, b in wanted]
    if len(nodes) <= ALL_PAIRS_UP_TO:
        return list(itertools.combinations(nodes, 2))
    ring = [(nodes[i], nodes[(i + 1) % len(nodes)]) for i in range(len(nodes))]
    rest = [p for p in itertools.combinations(nodes, 2) if p not in ring and p[::-1] not in ring]
    return ring + random.Random(seed).sample(rest, min(len(rest), len(nodes) // 2))


def link_gbps(node: Node, peer: str) -> tuple[float | None, str]:
    """The speed of ``node``'s interface toward ``peer`` (Gbit/s) and the interface, or None with why."""
    script = 'dev=$(ip route get "$1" | sed -n "s/.* dev \\([^ ]*\\).*/\\1/p" | head -1); echo "$dev"; cat "/sys/class/net/$dev/speed"'
    done = node.run(["sh", "-c", script, "sh", peer])
    lines = done.stdout.decode(errors="replace").split()
    dev = lines[0] if lines else "?"
    try:
        mbps = float(lines[1])
    except (IndexError, ValueError):
        return None, dev
    return (mbps / 1000 if mbps > 0 else None), dev


def _client(ctx: IoContext, client: Node, server: Node, reverse: bool) -> float:
    """One test's receiver rate in Gbit/s: a one-off server started on ``server``, then the client."""
    c = ctx.cfg
    srv = server.popen(["iperf3", "-s", "-1", "-p", str(c.net_port)])
    argv = ["iperf3", "-c", server.address, "-p", str(c.net_port), "-P", str(c.net_streams), "-t", f"{c.net_seconds:g}",
            "-J", *(["-R"] if reverse else [])]  # fmt: skip
    deadline = time.monotonic() + CONNECT_WAIT_S
    try:
        while True:
            done = client.run(argv, timeout_s=c.net_seconds + 60, tracked=True)
            doc = _json(done.stdout)
            err = str(doc.get("error", "")) if doc else done.stderr.decode(errors="replace")
            received = ((doc or {}).get("end") or {}).get("sum_received") or {}
            if done.returncode == 0 and "bits_per_second" in received:
                return float(received["bits_per_second"]) / 1e9
            retry = any(w in err for w in ("connect", "busy", "reset"))  # the server may not listen yet
            if not retry or time.monotonic() > deadline:
                raise RuntimeError(f"iperf3 {client.spec} -> {server.spec}: {err.strip() or 'no answer'}")
            time.sleep(0.2)
    finally:
        try:
            srv.wait(10)
        except subprocess.TimeoutExpired:  # a server left over is ended by the node's stop
            srv.kill()


def _json(raw: bytes) -> dict[str, Any] | None:
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    return doc if isinstance(doc, dict) else None


def _pair(ctx: IoContext, a: Node, b: Node) -> IoRow:
    name = f"{a.spec} <-> {b.spec}"
    missing = [n.spec for n in (a, b) if not n.has("iperf3")]
    if missing:
        return unavailable(name, "net.tcp", f"no iperf3 on {', '.join(missing)}: install {IPERF_PACKAGE}")
    expect = ctx.cfg.expect
    speed, dev = link_gbps(a, b.address)
    ref, source = (
        (expect.net_gbps, "--expect net.gbps") if expect.net_gbps else (speed, f"{a.spec}'s {dev} speed")
    )
    runs = []
    try:
        for _ in range(ctx.cfg.repeats):
            fwd, rev = _client(ctx, a, b, False), _client(ctx, a, b, True)
            runs.append(
                {
                    "forward_gbps": round(fwd, 4),
                    "reverse_gbps": round(rev, 4),
                    "slower_gbps": round(min(fwd, rev), 4),
                }
            )
    except RuntimeError as exc:
        return unavailable(name, "net.tcp", str(exc))
    figures = medians(runs, ["forward_gbps", "reverse_gbps", "slower_gbps"])
    figures |= {"reference_gbps": ref, "reference": source, "interface": dev, "interface_gbps": speed,
                "streams": ctx.cfg.net_streams, "seconds": ctx.cfg.net_seconds, "min_share": expect.net_min_share}  # fmt: skip
    floor = None if ref is None else round(expect.net_min_share * ref, 4)
    figures["share_of_reference"] = round(figures["slower_gbps"] / ref, 3) if ref else None
    lim = Limit(f"{name} slower direction", figures["slower_gbps"], floor, "Gbit/s", True,
                f"{expect.net_min_share:.0%} of {ref:g} Gbit/s, {source}" if ref else source)  # fmt: skip
    row = judge(name, "net.tcp", runs, figures, [lim], "slower_gbps", ctx.cfg.max_cv)
    if ref is None and row.verdict is Verdict.PASS:
        why = f"no reference: {a.spec}'s {dev} reports no speed; give --expect net.gbps=N"
        row = row.model_copy(update={"verdict": Verdict.INCONCLUSIVE, "reason": why})
    return row


def tcp_trial(ctx: IoContext, nodes: list[Node]) -> list[IoRow]:
    if len(nodes) < 2:
        where = nodes[0].spec if nodes else "local"
        return [
            unavailable(
                where, "net.tcp", "one node: net.tcp measures between pairs of nodes; give two or more"
            )
        ]
    return [_pair(ctx, a, b) for a, b in pairs_of(nodes, ctx.cfg.pairs)]
