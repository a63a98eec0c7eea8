"""The everyday bench's report: one table row per model and half, in the terms the
issue's targets are stated in (see `bench.everyday`)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any


def median(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def summary(run: dict[str, Any]) -> list[str]:
    """One table row per half: what the issue's targets are stated in."""
    rows = []
    for half in ("dev", "held-out"):
        turns = [t for t in run["turns"] if t["half"] == half]
        if not turns:
            continue
        quiet = [t for t in turns if t["expected"] is None]
        due = [t for t in turns if t["expected"] is not None]
        ratios = [t["seconds"] / t["plain_seconds"] for t in quiet if t["plain_seconds"]]
        ratio = f"{median(ratios):.2f}" if ratios else "—"
        # What the gate costs before the first word, whatever the two answers' lengths.
        firsts = [t["first_token_s"] / t["plain_first_token_s"] for t in quiet
                  if t["plain_first_token_s"] and t["first_token_s"]]  # fmt: skip
        first_ratio = f"{median(firsts):.2f}" if firsts else "—"
        first = median([t["first_token_s"] for t in turns])
        warm = median([t.get("warm_up_s") for t in turns])
        judged = [t for t in quiet if t.get("plain_right") is not None]
        beyond = sum(not t["plain_right"] for t in judged)
        cells = [
            run["model"], half,
            f"{sum(t['right'] for t in turns)}/{len(turns)}",
            f"{sum(1 for t in quiet if t['unwanted'])}/{len(quiet)}",
            f"{sum(1 for t in due if t['unwanted'])}/{len(due)}",
            f"{sum(t['missed'] for t in due)}/{len(due)}",
            f"{sum(1 for t in turns if t.get('repeats'))}",
            f"{sum(t['ignored'] for t in due)}",
            f"{sum(t['refusal'] for t in turns)}",
            f"{sum(t['leaked'] for t in turns)}",
            f"{beyond}/{len(judged)}" if judged else "—",
            f"{first:.1f}" if first is not None else "—",
            f"{median([t['seconds'] for t in turns]):.1f}",
            ratio,
            first_ratio,
            f"{warm:.1f}" if warm is not None else "—",
        ]  # fmt: skip
        rows.append("| " + " | ".join(cells) + " |")
    return rows


HEADER = (
    "| model | half | turns right | no-tool turns with a call | tool turns with another "
    "call | missed calls | calls made again | results not used | refusals | formats shown "
    "| no-tool turns wrong with no tools offered either | first token s (median) "
    "| s per turn (median) | no-tool turn ÷ plain (median) "
    "| its first word ÷ the plain answer's (median) | next prompt read ahead s (median) |\n"
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- "
    "| --- | --- |"
)
