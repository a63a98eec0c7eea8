"""What the benches that print a metric/value table share: the table, and p50/p95."""

from __future__ import annotations

import statistics
from pathlib import Path


def percentiles(timings: list[float]) -> tuple[float, float]:
    """The median and the 95th percentile (the value below which 95% of them fall)."""
    ordered = sorted(timings)
    return statistics.median(ordered), ordered[max(0, int(len(ordered) * 0.95) - 1)]


def write_table(rows: list[tuple[str, str]], out: Path) -> None:
    """Print the rows as a Markdown table and write it to `out`."""
    table = "| metric | value |\n| --- | --- |\n" + "".join(f"| {m} | {v} |\n" for m, v in rows)
    print(table)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(table, encoding="utf-8")
