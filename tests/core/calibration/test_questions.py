from __future__ import annotations

from desktop.core.calibration.questions import MAX_CASES, cases_for
from tests.core.calibration.samples import (
    TOOLS,
    tool,
)


def test_questions_come_from_the_tools_examples_half_of_them_with_no_call_due() -> None:
    cases = cases_for(TOOLS)
    assert cases == cases_for(TOOLS)  # a measurement: the same questions every time
    assert 0 < len(cases) <= MAX_CASES
    due = [c for c in cases if c.due]
    assert 0 < len(due) <= len(cases) // 2
    kinds = {c.kind for c in cases}
    assert {"call", "distracted", "unfit", "chat", "near-miss", "result", "answered"} <= kinds
    for case in cases:
        offered = {t.name for t in case.tools}
        assert {name for name, _ in case.expected} <= offered
        if case.kind == "unfit":  # the tool that fits is withheld
            prompt = case.messages[-1].text
            owner = next(t for t in TOOLS if any(e.prompt == prompt for e in t.examples))
            assert owner.name not in offered and offered
        if case.kind == "calls":
            assert len({name for name, _ in case.expected}) == 2
        if case.kind == "result":  # right after its call's result, the call's tool offered
            (call,) = case.messages[-2].tool_calls
            assert case.messages[-1].role == "tool" and call.name in offered
        if case.due:  # the question asked is never shown as an example of its tool
            shown = {e.prompt for t in case.tools for e in t.examples}
            assert not any(e.prompt in case.messages[-1].text for e in case.tools[0].examples)
            assert case.messages[-1].text not in shown
    assert cases_for([tool("bare", "x")]) == cases_for([]) or all(
        not c.due for c in cases_for([tool("bare", "x")])
    )


def test_requests_after_earlier_turns_are_asked_with_and_without_their_tool() -> None:
    from desktop.core.calibration.questions import LATER_KINDS
    from desktop.core.tracks.prompt import split_turns

    cases = cases_for(TOOLS)
    later = [c for c in cases if c.kind in LATER_KINDS]
    assert {"later", "unfit-later"} <= {c.kind for c in later}
    for case in cases:  # the kinds said to come after earlier turns are exactly those
        assert bool(split_turns(case.messages)[0]) == (case.kind in LATER_KINDS)
    for case in later:
        if case.kind == "unfit-later":
            prompt = case.messages[-1].text
            owner = next(t for t in TOOLS if any(e.prompt == prompt for e in t.examples))
            assert owner.name not in {t.name for t in case.tools} and case.tools


def test_later_requests_come_as_deep_as_a_working_chat_with_calls_in_between() -> None:
    from desktop.core.calibration.questions import EARLIER_TURNS
    from desktop.core.tracks.prompt import split_turns

    for case in cases_for(TOOLS):
        if case.kind not in {"later", "unfit-later"}:
            continue
        earlier, _ = split_turns(case.messages)
        asked = [m.text for m in case.messages if m.role == "user"]
        assert len(asked) == EARLIER_TURNS + 1
        calls = [c for m in case.messages for c in m.tool_calls]
        assert len(calls) == (EARLIER_TURNS + 1) // 2
        assert asked[-1] not in asked[:-1]  # no earlier turn answered the question already
        assert earlier


def test_many_questions_share_the_tools_beside_them() -> None:
    """Evaluating the tool block is most of a question's time (90 prompt tokens/s here),
    and the server reuses the prompt it evaluated last up to the first difference. So the
    tools beside a question are a few fixed groups of the asked tools, not a fresh draw
    from the whole toolbox for each question."""
    from desktop.core.calibration.questions import ASKED, OFFERED

    many = [tool(f"tool_{i:02}", "x", (f"Do thing number {i}.", str(i))) for i in range(60)]
    cases = cases_for(many)
    assert len({t.name for c in cases for t in c.tools}) <= ASKED  # of the 60
    quiet = [c for c in cases if not c.due and c.tools]
    tool_blocks = {tuple(t.name for t in c.tools) for c in quiet}
    assert len(quiet) >= 10 and len(tool_blocks) <= -(-ASKED // OFFERED)


def test_tools_may_be_offered_without_their_examples_the_questions_alike() -> None:
    """Where the turns to be judged show no examples (the bench's BFCL tools), the
    calibration offers the tools as they will be offered: same questions, no examples."""
    shown = cases_for(TOOLS)
    bare = cases_for(TOOLS, examples_in_prompt=False)
    assert any(t.examples for c in shown for t in c.tools)
    assert not any(t.examples for c in bare for t in c.tools)
    assert [(c.kind, c.messages, c.expected) for c in bare] == [
        (c.kind, c.messages, c.expected) for c in shown
    ]
    assert [[t.name for t in c.tools] for c in bare] == [[t.name for t in c.tools] for c in shown]
