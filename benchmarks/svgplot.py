"""A dependency-free SVG line chart for the benchmark write-ups in docs/ (matplotlib is not in the stack,
and plotly's static export needs a browser process)."""
from __future__ import annotations

from html import escape
from pathlib import Path

COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b")


def line_chart(series: dict[str, list[tuple[float, float]]], path: str | Path, title: str, xlabel: str,
               ylabel: str, ymin: float | None = None, ymax: float | None = None, width: int = 640,
               height: int = 360, hlines: dict[str, float] | None = None) -> Path:
    """Write ``series`` ({label: [(x, y), ...]}) as lines with markers; ``hlines`` ({label: y}) as dashed
    reference lines (e.g. a baseline's accuracy). Returns the path."""
    points = [pt for pts in series.values() for pt in pts]
    if not points:
        raise ValueError("line_chart: no points to plot")
    ys = [y for _, y in points] + list((hlines or {}).values())
    x0, x1 = min(x for x, _ in points), max(x for x, _ in points)
    y0 = min(ys) if ymin is None else ymin
    y1 = max(ys) if ymax is None else ymax
    x1, y1 = (x1 if x1 > x0 else x0 + 1), (y1 if y1 > y0 else y0 + 1)
    left, right, top, bottom = 60, 150, 36, 48
    pw, ph = width - left - right, height - top - bottom

    def sx(x):
        return left + (x - x0) / (x1 - x0) * pw

    def sy(y):
        return top + (1 - (y - y0) / (y1 - y0)) * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
           f'font-size="12">', f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">{escape(title)}</text>',
           f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="black"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="black"/>']
    for i in range(6):
        y = y0 + (y1 - y0) * i / 5
        out.append(f'<line x1="{left}" y1="{sy(y):.1f}" x2="{left + pw}" y2="{sy(y):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{y:.2f}</text>')
        x = x0 + (x1 - x0) * i / 5
        out.append(f'<text x="{sx(x):.1f}" y="{top + ph + 16}" text-anchor="middle">{x:g}</text>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 10}" text-anchor="middle">{escape(xlabel)}</text>')
    out.append(f'<text x="14" y="{top + ph / 2}" text-anchor="middle" transform="rotate(-90 14 {top + ph / 2})">'
               f'{escape(ylabel)}</text>')
    legend_y = top + 10
    for i, (label, y) in enumerate((hlines or {}).items()):
        color = "#777"
        out.append(f'<line x1="{left}" y1="{sy(y):.1f}" x2="{left + pw}" y2="{sy(y):.1f}" stroke="{color}" '
                   f'stroke-dasharray="5,4"/>')
        out.append(f'<text x="{left + pw + 8}" y="{sy(y) + 4:.1f}" fill="{color}">{escape(label)}</text>')
    for i, (label, pts) in enumerate(series.items()):
        color = COLORS[i % len(COLORS)]
        path_d = " ".join(f"{'M' if j == 0 else 'L'}{sx(x):.1f},{sy(y):.1f}" for j, (x, y) in enumerate(pts))
        out.append(f'<path d="{path_d}" fill="none" stroke="{color}" stroke-width="2"/>')
        out += [f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{color}"/>' for x, y in pts]
        out.append(f'<text x="{left + pw + 8}" y="{legend_y + 16 * i}" fill="{color}">{escape(label)}</text>')
    out.append("</svg>")
    path = Path(path)
    path.write_text("\n".join(out) + "\n")
    return path
