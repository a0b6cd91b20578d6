"""Plots as inline SVG (matplotlib, Agg backend): the report stays one self-contained file."""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

Series = dict[str, Sequence[float | None]]


def _svg(fig: plt.Figure) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight")
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg") :]  # drop the XML prolog so it can sit inside HTML


def line_svg(
    x: Sequence[float],
    series: Series,
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    logx: bool = False,
    right: Series | None = None,
    right_label: str = "",
) -> str:
    """Lines over a shared x; ``right`` series go on a second y axis (e.g. running / waiting)."""
    fig, ax = plt.subplots(figsize=(6.4, 3.4), dpi=100)
    for name, ys in series.items():
        ax.plot(x, [float("nan") if y is None else y for y in ys], marker="o", label=name)
    if logx:
        ax.set_xscale("log", base=2)
        ax.set_xticks(list(x), [f"{v:g}" for v in x])
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if right:
        ax2 = ax.twinx()
        for i, (name, ys) in enumerate(right.items()):
            ys_f = [float("nan") if y is None else y for y in ys]
            ax2.plot(x, ys_f, linestyle="--", marker="s", color=f"C{len(series) + i}", label=name)
        ax2.set_ylabel(right_label)
        h2, l2 = ax2.get_legend_handles_labels()
        handles, labels = handles + h2, labels + l2
    ax.legend(handles, labels, fontsize=8, loc="best")
    return _svg(fig)


def bars_svg(categories: Sequence[str], series: Series, *, title: str, ylabel: str) -> str:
    """Grouped bars: one group per category, one bar per series."""
    fig, ax = plt.subplots(figsize=(6.4, 3.4), dpi=100)
    width = 0.8 / max(1, len(series))
    for i, (name, ys) in enumerate(series.items()):
        xs = [j + i * width for j in range(len(categories))]
        ax.bar(xs, [0.0 if y is None else y for y in ys], width=width, label=name)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(categories))], list(categories))
    ax.set(title=title, ylabel=ylabel)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    return _svg(fig)


def dots_svg(categories: Sequence[str], values: Sequence[Sequence[float]], *, title: str, ylabel: str,
             intervals: Sequence[tuple[float | None, float | None] | None] | None = None) -> str:  # fmt: skip
    """One column of dots per category (every start's value), its mean as a bar, and an optional
    interval drawn beside it."""
    fig, ax = plt.subplots(figsize=(6.4, 3.4), dpi=100)
    for i, ys in enumerate(values):
        ax.scatter([i] * len(ys), ys, color=f"C{i % 10}", zorder=3, label=None)
        if len(ys):
            mean = sum(ys) / len(ys)
            ax.hlines(mean, i - 0.25, i + 0.25, color=f"C{i % 10}", linewidth=2)
        ci = intervals[i] if intervals else None
        if ci and ci[0] is not None and ci[1] is not None:
            ax.vlines(i + 0.32, ci[0], ci[1], color="0.3", linewidth=2)
    ax.set_xticks(range(len(categories)), list(categories))
    ax.set(title=title, ylabel=ylabel)
    ax.grid(alpha=0.3, axis="y")
    return _svg(fig)


def intervals_svg(
    x: Sequence[float], values: Sequence[float | None], lows: Sequence[float], highs: Sequence[float], *,
    title: str, xlabel: str, ylabel: str, target: float | None = None, marked: float | None = None,
    labels: Sequence[str] | None = None,
) -> str:  # fmt: skip
    """Each point with its interval (an error bar), an optional horizontal ``target`` line and a vertical
    line at ``marked``; ``labels`` name each point's group (one colour each)."""
    fig, ax = plt.subplots(figsize=(6.4, 3.4), dpi=100)
    groups = labels or [""] * len(x)
    for i, name in enumerate(dict.fromkeys(groups)):
        idx = [j for j, g in enumerate(groups) if g == name]
        ys = [float("nan") if (v := values[j]) is None else float(v) for j in idx]
        err = [[y - lows[j] for y, j in zip(ys, idx, strict=True)], [highs[j] - y for y, j in zip(ys, idx, strict=True)]]
        ax.errorbar([x[j] for j in idx], ys, yerr=err, fmt="o", capsize=3, color=f"C{i}", label=name or None)
    if target is not None:
        ax.axhline(target, color="0.4", linestyle="--", linewidth=1, label=f"target {target:g}")
    if marked is not None:
        ax.axvline(marked, color="C2", linestyle=":", linewidth=1.5, label=f"capacity {marked:g}")
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    return _svg(fig)


def timeline_svg(
    lines: Mapping[str, tuple[Sequence[float], Sequence[float | None]]],
    windows: Sequence[tuple[float, float, str]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
) -> str:
    """Lines over time (``name -> (t, y)``; a None breaks a line) with labelled windows shaded behind them
    (the levels of a run)."""
    fig, ax = plt.subplots(figsize=(9.6, 3.4), dpi=100)
    for i, (start, end, label) in enumerate(windows):
        ax.axvspan(start, end, color=f"C{i % 10}", alpha=0.08, linewidth=0)
        ax.text((start + end) / 2, 0.98, label, transform=ax.get_xaxis_transform(), ha="center", va="top", fontsize=7)
    for name, (t, ys) in lines.items():
        ax.plot(list(t), [float("nan") if y is None else y for y in ys], linewidth=1, label=name)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    ax.grid(alpha=0.3)
    if lines:
        ax.legend(fontsize=8, loc="lower right")
    return _svg(fig)
