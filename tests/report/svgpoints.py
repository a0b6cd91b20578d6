"""The points a matplotlib SVG plot draws, read back in data units: each data line's markers, named by
the legend, with y mapped through the axis's own tick labels (a linear y axis)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

NS = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}href"


def svgs(page: str) -> list[str]:
    return re.findall(r"<svg.*?</svg>", page, flags=re.S)


def _comment(group: ET.Element) -> str | None:
    for node in group.iter():
        if node.tag is ET.Comment:
            return str(node.text).strip()
    return None


def _tick(group: ET.Element) -> tuple[float, float] | None:
    """(pixel y, value) of one y tick: its marker's y and its label's text."""
    ys = [float(u.get("y", "nan")) for u in group.iter(f"{NS}use") if u.get(XLINK, "").startswith("#m")]
    label = _comment(group)
    if not ys or label is None:
        return None
    return ys[0], float(label.replace("\u2212", "-").replace(",", ""))


def series(svg: str) -> dict[str, list[float]]:
    """Legend label -> the y values of that line's markers, left to right, in data units."""
    root = ET.fromstring(svg, parser=ET.XMLParser(target=ET.TreeBuilder(insert_comments=True)))
    axes = next(g for g in root.iter(f"{NS}g") if g.get("id") == "axes_1")
    ticks = [t for g in axes.iter(f"{NS}g") if g.get("id", "").startswith("ytick_") if (t := _tick(g))]
    (p0, v0), (p1, v1) = ticks[0], ticks[-1]
    value = lambda p: v0 + (p - p0) * (v1 - v0) / (p1 - p0)  # noqa: E731
    lines = [g for g in axes if g.get("id", "").startswith("line2d_")]
    points = [
        [value(float(u.get("y", "nan"))) for u in line.iter(f"{NS}use") if u.get("x") is not None]
        for line in lines
    ]
    legend = next(g for g in axes if g.get("id", "").startswith("legend_"))
    labels = [c for g in legend if g.get("id", "").startswith("text_") if (c := _comment(g))]
    return dict(zip(labels, points, strict=True))
