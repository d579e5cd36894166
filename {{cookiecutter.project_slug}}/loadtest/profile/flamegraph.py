"""An SVG flame graph of folded stacks: each frame a box as wide as its share of the samples, its
callers below it; hovering a box names the function and its share.

Written here because py-spy renders one format per recording (this run keeps the speedscope
file, which holds every sample in order so that the warm-up can be cut off) and no maintained
Python package renders folded stacks to SVG; the layout is Brendan Gregg's flame graph's.
"""

from collections import Counter
from dataclasses import dataclass, field
from html import escape

WIDTH = 1200
ROW = 16
FONT = 11
CHAR = 6.2  # average width of one character at FONT, for cutting a label to its box


@dataclass
class _Node:
    count: int = 0
    children: dict[str, "_Node"] = field(default_factory=dict)


def _tree(stacks: Counter[tuple[str, ...]]) -> _Node:
    root = _Node()
    for stack, count in stacks.items():
        root.count += count
        node = root
        for name in stack:
            node = node.children.setdefault(name, _Node())
            node.count += count
    return root


def _depth(node: _Node) -> int:
    return 1 + max((_depth(child) for child in node.children.values()), default=0)


def _colour(name: str) -> str:
    # A warm colour per function, stable across runs, as flame graphs draw them.
    seed = sum(name.encode()) % 97
    return f"rgb({205 + seed % 50},{80 + seed % 120},{40 + seed % 40})"


def render(stacks: Counter[tuple[str, ...]], title: str) -> str:
    root = _tree(stacks)
    rows = _depth(root)
    height = (rows + 2) * ROW
    boxes: list[str] = []

    def draw(name: str, node: _Node, x: float, level: int) -> None:
        width = WIDTH * node.count / root.count
        if width < 0.3:
            return
        y = height - (level + 1) * ROW
        share = 100 * node.count / root.count
        label = (
            name if len(name) * CHAR < width - 4 else name[: max(0, int((width - 4) / CHAR) - 2)]
        )
        text = f'<text x="{x + 2:.1f}" y="{y + ROW - 4}">{escape(label)}</text>' if label else ""
        boxes.append(
            f"<g><title>{escape(name)}: {node.count} samples, {share:.2f} %</title>"
            f'<rect x="{x:.1f}" y="{y}" width="{width:.1f}" height="{ROW - 1}" '
            f'fill="{_colour(name)}"/>{text}</g>'
        )
        for child_name, child in sorted(node.children.items()):
            draw(child_name, child, x, level + 1)
            x += WIDTH * child.count / root.count

    x = 0.0
    for name, child in sorted(root.children.items()):
        draw(name, child, x, 0)
        x += WIDTH * child.count / root.count
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'font-family="monospace" font-size="{FONT}">'
        f'<text x="4" y="{ROW - 2}" font-size="{FONT + 2}">{escape(title)}</text>'
        + "".join(boxes)
        + "</svg>\n"
    )
