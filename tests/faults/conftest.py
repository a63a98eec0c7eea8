"""The fault suite: hostile and broken input of every kind, each case expected to end in
a clear message, never a crash, a hang, an escape or a lost message.

Every test here is marked `fault`; the heavy ones (100,000 fuzzed answers, many kills)
also `slow`, which the default run leaves out and `.ci/run` runs. The closing summary
counts the cases per kind (the module's name): docs/reliability.md's table.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if Path(str(item.fspath)).parent == HERE:
            item.add_marker(pytest.mark.fault)


def _kind(nodeid: str) -> str | None:
    path = nodeid.split("::")[0]
    if "tests/faults/test_" not in path:
        return None
    return path.rsplit("/test_", 1)[1].removesuffix(".py").replace("_", " ")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    tally: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for outcome in ("passed", "failed", "error", "skipped"):
        for report in terminalreporter.stats.get(outcome, []):
            kind = _kind(getattr(report, "nodeid", ""))
            if kind is not None and getattr(report, "when", "call") in ("call", "setup"):
                if outcome == "passed" and report.when != "call":
                    continue
                tally[kind][outcome] += 1
    if not tally:
        return
    terminalreporter.section("fault suite")
    terminalreporter.write_line(f"{'kind':<22} {'cases':>6} {'passed':>7} {'failed':>7}")
    for kind in sorted(tally):
        counts = tally[kind]
        cases = sum(counts.values())
        failed = counts["failed"] + counts["error"]
        terminalreporter.write_line(f"{kind:<22} {cases:>6} {counts['passed']:>7} {failed:>7}")
    total = {k: sum(c[k] for c in tally.values()) for k in ("passed", "failed", "error")}
    terminalreporter.write_line(
        f"{'all':<22} {sum(sum(c.values()) for c in tally.values()):>6} "
        f"{total['passed']:>7} {total['failed'] + total['error']:>7}"
    )
