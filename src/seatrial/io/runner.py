"""One ``seatrial io`` run: reach every node (one that cannot be reached fails alone), make the scratch
folders the writing trials need, run the trials in the registry's order (a trial on every node at once), the
fleet-relative rule over the nodes' figures, and, whatever happens (Ctrl-C included), end every program it
started and remove its folders on every node."""

from __future__ import annotations

import posixpath
from concurrent.futures import ThreadPoolExecutor
from importlib import import_module
from typing import Any

from seatrial.errors import ConfigError, ServerError
from seatrial.hw.fleet import judge_relative
from seatrial.interrupts import shielded, terminations_interrupt
from seatrial.io.context import IoContext
from seatrial.io.judge import unavailable
from seatrial.io.models import IoConfig
from seatrial.io.nodes import Node
from seatrial.io.registry import IO_TRIALS
from seatrial.runs.summaries.io import IoRow, IoSummary


def _reach(nodes: list[Node]) -> dict[str, str]:
    """Start every node (its control folder); spec -> why for those that cannot be reached."""
    unreachable = {}
    with ThreadPoolExecutor(max(1, len(nodes))) as pool:
        for node, err in zip(nodes, pool.map(_start, nodes), strict=True):
            if err:
                unreachable[node.spec] = err
    return unreachable


def _start(node: Node) -> str | None:
    try:
        node.start()
    except ServerError as exc:
        return str(exc)
    return None


def scratch_parent(cfg: IoConfig) -> str | None:
    """Where the scratch folders go: ``--path``, else the folder that holds the checkpoint (never inside it)."""
    if cfg.path:
        parent = posixpath.normpath(cfg.path)
    elif cfg.checkpoint:
        parent = posixpath.dirname(posixpath.normpath(cfg.checkpoint)) or "."
    else:
        return None
    ckpt = posixpath.normpath(cfg.checkpoint) if cfg.checkpoint else None
    if ckpt and (parent == ckpt or parent.startswith(ckpt.rstrip("/") + "/")):
        raise ConfigError(
            f"--path {parent} is inside the checkpoint {ckpt}: seatrial io never writes into a checkpoint"
        )
    return parent


def _kind(node: Node, path: str) -> str:
    done = node.run(["stat", "-f", "-c", "%T", path])
    return f"{done.stdout.decode().strip() or 'unknown'} filesystem"


def _on_nodes(ctx: IoContext, name: str, nodes: list[Node], unreachable: dict[str, str]) -> list[IoRow]:
    trial = IO_TRIALS[name]
    runner = getattr(import_module(f"seatrial.io.{trial.module}"), trial.function)
    if trial.scope == "fleet":
        return list(runner(ctx, nodes))

    def one(node: Node) -> IoRow:
        if trial.scratch and node.spec not in ctx.scratch:
            return unavailable(
                node.spec,
                name,
                "no scratch folder: give --path DIR (or --checkpoint DIR, whose parent folder is used)",
            )
        try:
            return runner(ctx, node)
        except ServerError as exc:  # the node went away during the trial: it fails alone
            unreachable[node.spec] = str(exc)
            return unavailable(node.spec, name, str(exc))

    live = [n for n in nodes if n.spec not in unreachable]
    pool = ThreadPoolExecutor(max(1, len(live)))
    try:
        return list(pool.map(one, live))
    finally:  # on Ctrl-C, not waiting for the trials: the nodes' stop ends their programs, then they return
        pool.shutdown(wait=False, cancel_futures=True)


def fleet_rows(ctx: IoContext, kinds: dict[str, str]) -> list[IoRow]:
    """hw's fleet-relative rule (a node more than the margin below the median of its kind, outside their
    spread, is REVIEW_REQUIRED) over each trial's figure, nodes of a kind being those on the same filesystem type."""
    out: list[IoRow] = []
    if len(kinds) < 2:  # one node: nothing to compare it with
        return out
    for name, trial in IO_TRIALS.items():
        if trial.fleet_figure is None:
            continue
        groups: dict[str, list[tuple[str, int | None, float]]] = {}
        for row in ctx.rows:
            value = row.figures.get(trial.fleet_figure)
            if (
                row.trial == name
                and row.verdict.value not in ("UNAVAILABLE", "UNSUPPORTED")
                and isinstance(value, int | float)
            ):
                groups.setdefault(kinds.get(row.node, "unknown filesystem"), []).append(
                    (row.node, None, float(value))
                )
        for kind, found in groups.items():
            for node, _, value in found:
                res = judge_relative(f"fleet.{name}", kind, found, node, None, value, ctx.cfg.fleet_margin)
                out.append(IoRow(node=node, trial=res.name, verdict=res.verdict, reason=res.reason,
                                 figures={trial.fleet_figure: value, **res.evidence}))  # fmt: skip
    return out


def run_io(cfg: IoConfig, nodes: list[Node]) -> IoSummary:
    """Every chosen trial on every node (see the module docstring); the summary without its verdict fields."""
    ctx = IoContext(cfg)
    kinds: dict[str, str] = {}
    unreachable: dict[str, str] = {}
    try:
        with terminations_interrupt():
            unreachable = _reach(nodes)
            live = [n for n in nodes if n.spec not in unreachable]
            parent = scratch_parent(cfg)
            if parent and any(IO_TRIALS[t].scratch for t in cfg.trials):
                for node in live:
                    ctx.scratch[node.spec] = node.make_scratch(parent)
                    kinds[node.spec] = _kind(node, ctx.scratch[node.spec])
            for name in cfg.trials:
                ctx.rows += _on_nodes(ctx, name, [n for n in nodes if n.spec not in unreachable], unreachable)
    finally:
        with shielded():
            for node in nodes:
                node.stop()
    rows = [*(unavailable(spec, "node", why) for spec, why in unreachable.items()), *ctx.rows]
    return IoSummary(
        nodes=[n.spec for n in nodes],
        unreachable=unreachable,
        results=rows,
        fleet=fleet_rows(ctx, kinds),
        margin=cfg.fleet_margin,
        repeats=cfg.repeats,
        max_cv=cfg.max_cv,
    )


def summary_json(summary: IoSummary, require: list[str]) -> dict[str, Any]:
    return summary.judged([r.as_trial() for r in summary.rows()], require).to_json()
