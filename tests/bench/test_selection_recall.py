"""The tool selection's limit is the one its bench argues for: no case a longer list keeps
is lost (`python -m bench selection_recall`, no model involved)."""

from __future__ import annotations

from types import ModuleType

import pytest

from desktop.core.tools.selection import SELECTED


@pytest.fixture(scope="module")
def recall_bench() -> ModuleType:
    from bench import selection_recall

    return selection_recall


def test_the_limit_keeps_every_case_a_longer_list_keeps_and_one_less_would_not(
    recall_bench: ModuleType,
) -> None:
    shorter_loses = []
    for half in recall_bench.halves(recall_bench.read_cases()):
        kept, offered = recall_bench.recall(half, 40, SELECTED)
        kept_longer, offered_longer = recall_bench.recall(half, 40, 2 * SELECTED)
        assert kept == kept_longer and offered < offered_longer
        shorter_loses.append(recall_bench.recall(half, 40, SELECTED - 1)[0] < kept)
    assert any(shorter_loses)  # the fewest such: one tool less loses a case on some half
