"""How many tools should the tool selection offer? Recall against size, no model involved.

    .venv/bin/python -m bench selection_recall [--distractors 40] [--limits 1,2,3,4,6,8]

Each case of the BFCL development set is padded with other cases' tools, as
`python -m bench accuracy --distractors N` pads it (the same tools, drawn from the cases of its own
half), and the selection picks at most `limit` tools for its question. For each limit,
side by side and for each half of the set apart: the cases whose expected tools were all
offered, and the tools offered per case (mean). Every tool offered beyond the needed ones
is a near tool a small model may pick instead, so the limit worth having is the fewest
that keeps every case a longer list keeps.
"""

from __future__ import annotations

import argparse
from typing import Any

from bench.accuracy import (
    DEFAULT_CASES,
    expected_tools,
    halves,
    padded,
    question_of,
    read_cases,
    tool_pool,
    tools_of,
)
from desktop.core.tools.selection import ToolSelector


def recall(cases: list[dict[str, Any]], distractors: int, limit: int) -> tuple[int, float]:
    """Of these cases, how many were offered all their expected tools, and the mean count
    of tools offered."""
    pool = tool_pool(cases)
    kept = 0
    offered = 0
    for case in cases:
        tools = padded(case, tools_of(case)[0], pool, distractors)
        offer = ToolSelector(tools).select(question_of(case), limit=limit)
        names = {t.name for t in offer.tools}
        kept += expected_tools(case) <= names
        offered += len(names)
    return kept, offered / len(cases)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--distractors", type=int, default=40)
    parser.add_argument("--limits", default="1,2,3,4,6,8")
    args = parser.parse_args()
    by_half = halves(read_cases(DEFAULT_CASES))
    print("| at most | half | expected tools all offered | tools offered (mean) |")
    print("| --- | --- | --- | --- |")
    for limit in (int(n) for n in args.limits.split(",")):
        for number, half in enumerate(by_half, 1):
            kept, offered = recall(half, args.distractors, limit)
            print(f"| {limit} | {number} | {kept}/{len(half)} | {offered:.2f} |")


if __name__ == "__main__":
    main()
