"""A table of text cells fitted to a terminal's width (``kun threads``).

Rows wrapped by the terminal are unreadable, so a table wider than the
terminal gives up, in this order, until it fits: the full width of the
thread ids (a prefix that names one thread is enough anywhere kun takes an
id, so the shortest prefix unique in the home is shown, with no ellipsis to
get in the way of copying it), then width from its flexible columns (a title loses its end, a path
its start), then whole columns, least useful first. Widths are terminal
cells (a CJK title takes two per character). Output that is not a terminal
is never fitted: its format stays the same for scripts (``--json`` is the
stable one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.cells import cell_len, set_cell_size

__all__ = ["Column", "fit_rows", "render"]

GAP = "  "
ELLIPSIS = "…"


@dataclass(frozen=True)
class Column:
    """``flex``: may be cut down to ``least`` cells (``left``: cut at the
    start, for paths); ``drop``: the order in which whole columns go
    (1 first; 0 never)."""

    name: str
    flex: bool = False
    least: int = 0
    left: bool = False
    drop: int = 0


def render(rows: Sequence[Sequence[str]]) -> list[str]:
    """Columns as wide as their widest cell; a short row (an unreadable
    thread's id and reason) runs on without widening the columns."""
    full = [row for row in rows if len(row) == len(rows[0])]
    widths = [max(map(cell_len, column)) for column in zip(*full, strict=True)]
    return [_line(row, widths) for row in rows]


def fit_rows(
    rows: Sequence[Sequence[str]], columns: Sequence[Column], width: int, *, id_least: int = 0
) -> list[tuple[str, ...]]:
    """``rows`` (the header first) cut so that :func:`render` fits in
    ``width`` cells, where that can be done. ``id_least``: the first
    column holds ids, which stay unique at this many characters."""
    table = [tuple(row) for row in rows]
    if _width(table) <= width:
        return table
    if id_least:
        table = [(row[0][: max(id_least, len(columns[0].name))], *row[1:]) for row in table]
    keep = list(range(len(columns)))
    for drop in sorted({c.drop for c in columns if c.drop}):
        picked = [_pick(row, keep, len(columns)) for row in table]
        fitted, fits = _shrink(picked, [columns[i] for i in keep], width)
        if fits:
            return fitted
        keep = [i for i in keep if columns[i].drop != drop]
    picked = [_pick(row, keep, len(columns)) for row in table]
    return _shrink(picked, [columns[i] for i in keep], width)[0]


def _shrink(
    table: list[tuple[str, ...]], columns: Sequence[Column], width: int
) -> tuple[list[tuple[str, ...]], bool]:
    """The table with its flexible columns narrowed until it fits, widest
    first, and whether it fits (else they are at their least widths)."""
    full = [row for row in table if len(row) == len(columns)]
    widths = [max(map(cell_len, column)) for column in zip(*full, strict=True)]
    excess = sum(widths) + len(GAP) * (len(widths) - 1) - width
    while excess > 0:
        flexible = [i for i, c in enumerate(columns) if c.flex and widths[i] > c.least]
        if not flexible:
            break
        widest = max(flexible, key=lambda i: widths[i])
        widths[widest] -= 1
        excess -= 1
    cut = [
        tuple(
            _cut(cell, widths[i], left=columns[i].left) if columns[i].flex else cell
            for i, cell in enumerate(row)
        )
        if len(row) == len(columns)
        else row
        for row in table
    ]
    return cut, excess <= 0


def _width(table: list[tuple[str, ...]]) -> int:
    return max((cell_len(line) for line in render(table)), default=0)


def _pick(row: tuple[str, ...], keep: list[int], full: int) -> tuple[str, ...]:
    return tuple(row[i] for i in keep) if len(row) == full else row


def _cut(text: str, width: int, *, left: bool = False) -> str:
    if cell_len(text) <= width:
        return text
    if left:
        tail = set_cell_size(text[::-1], width - 1)[::-1]
        return ELLIPSIS + tail.lstrip()
    return set_cell_size(text, width - 1).rstrip() + ELLIPSIS


def _line(row: Sequence[str], widths: list[int]) -> str:
    padded = (cell + " " * (w - cell_len(cell)) for cell, w in zip(row, widths, strict=False))
    return GAP.join(padded).rstrip()
