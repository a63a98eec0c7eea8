"""The inspector's reading of a step: its request, raw output and later parts, with the
call gate's verdicts as the step's record has them (never worked out again there)."""

from __future__ import annotations

from typing import Any

from desktop.core.events import CallGate, GateRecord
from desktop.core.providers.base import Constrained, PlainAnswer, Probe, RequestPart
from desktop.core.tracing import StepTrace
from desktop.core.tracks.odds import arguments_odds, call_odds
from desktop.ui.inspector import step_sections


def phase(
    part: RequestPart,
    raw: str,
    odds: list[tuple[str, float]] | None = None,
    messages: list[dict[str, Any]] | None = None,
    options: dict[str, Any] | None = None,
) -> StepTrace:
    return StepTrace(0, messages or [], [], options or {}, raw_output=raw,
                     token_odds=odds or [], part=part)  # fmt: skip


def step(*phases: StepTrace, gate: GateRecord | None = None, messages: Any = None) -> StepTrace:
    found = StepTrace(0, messages or [], [], {}, raw_output="{", gate=gate)
    found.phases = list(phases)
    return found


CONVERSATION: list[dict[str, Any]] = [{"role": "system", "parts": [{"text": "Tools, and earlier turns"}]},
                {"role": "user", "parts": [{"text": "Weather in Oslo?"}]}]  # fmt: skip
ALONE: list[dict[str, Any]] = [{"role": "system", "parts": [{"text": "Tools"}]},
         {"role": "user", "parts": [{"text": "Weather in Oslo?"}]}]  # fmt: skip
LATER = "calibrated 2026-12-01, after earlier turns"
ALONE_SOURCE = "calibrated 2026-12-01, the turn alone"


def later_record(odds: float | None, alone: float, **alone_more: Any) -> GateRecord:
    """A step after earlier turns, judged by a later bar of 0.8 and a first one of 0.93."""
    request = CallGate(odds, 0.8, LATER) if odds is not None else None
    return GateRecord(0.8, LATER, 0.93, ALONE_SOURCE, request=request,
                      alone=CallGate(alone, 0.93, ALONE_SOURCE, **alone_more))  # fmt: skip


def test_each_phase_of_a_step_has_its_own_rows() -> None:
    rows = step_sections(step(
        phase(Probe(), "{", [("{", 0.62), ("Hi", 0.38)], options={"max_tokens": 1}),
        phase(PlainAnswer("the call gate said no call"), "Hello there."),
        phase(Constrained(), "[]", options={"json_schema": {"type": "array"}}),
    ))  # fmt: skip
    titles = [title for title, _ in rows]
    odds = titles.index("← first token's likeliest alternatives")
    assert rows[odds][1] == " 62.0%  '{'\n 38.0%  'Hi'"
    assert titles.index("← plain output") > odds
    assert dict(rows)["← plain output"] == "Hello there."
    assert '"type": "array"' in dict(rows)["→ constrained re-ask (JSON Schema)"]
    assert not any(title.startswith("call gate") for title in titles)  # no bar known


def test_a_sampled_answers_opening_probe_reads_as_such() -> None:
    probe = phase(Probe(opening=True), "{", [("{", 0.91), ("Hi", 0.09)])
    source = "calibrated 2026-11-30"
    record = GateRecord(0.87, source, opening=0.91, request=CallGate(0.91, 0.87, source))
    rows = dict(step_sections(step(probe, gate=record)))
    assert "→ greedy opening of a sampled answer (one-token probe)" in rows
    assert rows["← first token's likeliest alternatives"] == " 91.0%  '{'\n  9.0%  'Hi'"
    assert "call gate: 0.91 ≥ bar 0.87: call" in rows


def test_the_bar_that_judged_a_call() -> None:
    """The probe's odds against the turn's bar, and where the bar came from."""
    alternatives = [("{", 0.62), ("```", 0.2), ("Hi", 0.18)]
    probe = phase(Probe(), "{", alternatives)
    odds = call_odds(alternatives)
    source = "calibrated 2026-11-30"
    rows = step_sections(step(probe, gate=GateRecord(0.87, source,
                                                     request=CallGate(odds, 0.87, source))))  # fmt: skip
    title, text = next(row for row in rows if row[0].startswith("call gate"))
    assert title == "call gate: 0.82 < bar 0.87: plain answer"
    assert "calibrated 2026-11-30" in text
    uncalibrated = GateRecord(0.0, "uncalibrated", request=CallGate(odds, 0.0, "uncalibrated"))
    title, text = next(
        row
        for row in step_sections(step(probe, gate=uncalibrated))
        if row[0].startswith("call gate")
    )
    assert title == "call gate: 0.82, no bar until calibrated: call"
    assert "Until this model is calibrated" in text


def test_the_second_look_is_judged_by_the_first_bar() -> None:
    """After earlier turns: 0.55 in context fails the later bar, 0.95 alone passes the
    first one; each probe has its own row and its own bar."""
    probes = [
        phase(Probe(alone=messages is ALONE), "{", [("{", p), ("Hi", 1 - p)], messages)
        for p, messages in ((0.55, CONVERSATION), (0.95, ALONE))
    ]
    rows = step_sections(step(*probes, gate=later_record(0.55, 0.95), messages=CONVERSATION))
    judged = [(title, text) for title, text in rows if title.startswith("call gate")]
    assert [title for title, _ in judged] == [
        "call gate: 0.55 < bar 0.80: plain answer",
        "call gate: 0.95 ≥ bar 0.93: call",
    ]
    assert "the turn alone" in judged[1][1] and "after earlier turns" in judged[0][1]
    assert "→ odds of a call, the turn alone (second look)" in dict(rows)


def test_a_second_look_at_prose_is_the_only_probe() -> None:
    """An answer that opened in prose after earlier turns: one probe, of the turn alone,
    judged by the first bar; then the plain answer asked again."""
    probe = phase(Probe(alone=True), "Sure", [("Sure", 0.6), ("{", 0.4)], ALONE)
    plain = phase(PlainAnswer("the call gate said no call, for the turn alone"),
                  "It is sunny.", None, CONVERSATION)  # fmt: skip
    rows = step_sections(step(probe, plain, gate=later_record(None, 0.4), messages=CONVERSATION))
    titles = [title for title, _ in rows]
    assert "→ odds of a call, the turn alone (second look)" in titles
    assert "call gate: 0.40 < bar 0.93: plain answer" in titles
    assert titles.index("← plain output") > titles.index("call gate: 0.40 < bar 0.93: plain answer")


def test_a_plain_answer_says_why_it_was_asked() -> None:
    made_up = "the call named 'joke', which is not an offered tool"
    titles = [title for title, _ in step_sections(step(phase(PlainAnswer(made_up), "Why did...")))]
    assert f"→ plain answer ({made_up})" in titles


SURE_TOKENS = [('[{"name":"search","arguments":{"', 0.9), ("query", 0.99), ('":"', 0.2),
               ("rust", 0.97), ('"}}]', 0.5)]  # fmt: skip


def test_a_call_under_the_bar_shows_how_sure_its_arguments_were() -> None:
    probe = phase(Probe(), "{", [("{", 0.8), ("Hi", 0.2)])
    written = phase(Constrained("search", weigh=True), '[{"name": "search"}]',
                    options={"json_schema": {}})  # fmt: skip
    written.chosen_tokens = SURE_TOKENS
    sure = arguments_odds(SURE_TOKENS)

    def titles(arguments_bar: float | None) -> list[str]:
        request = CallGate(0.8, 0.9, "calibrated 2026-12-02", sure, arguments_bar)
        record = GateRecord(0.9, "calibrated 2026-12-02", arguments_bar=arguments_bar,
                            request=request)  # fmt: skip
        return [title for title, _ in step_sections(step(probe, written, gate=record))]

    assert "call gate: 0.80 < bar 0.90: plain answer" in titles(0.95)
    assert titles(0.95)[-1] == "arguments' odds: 0.98 ≥ bar 0.95: call"
    assert titles(0.99)[-1] == "arguments' odds: 0.98 < bar 0.99: plain answer"
    assert not any(t.startswith("arguments") for t in titles(None))


def test_the_tools_a_turn_offered_and_why(qapp) -> None:  # type: ignore[no-untyped-def]
    from desktop.core.tracing import TurnTrace
    from desktop.ui.inspector import InspectorPanel

    trace = TurnTrace(track="emulated", provider="scripted")
    trace.offer = {"offered": {"weather__forecast": "matches the request (2.4)",
                               "db__query": "pinned"}, "left_out": 48}  # fmt: skip
    inspector = InspectorPanel()
    inspector.set_traces([trace])
    first = inspector.tree.topLevelItem(0)
    assert first is not None
    assert first.text(0) == "Tools offered: 2 of 50"
    inspector.tree.setCurrentItem(first)
    assert inspector.detail.toPlainText() == (
        "weather__forecast: matches the request (2.4)\ndb__query: pinned\n"
        "(48 more left out: they did not fit the request.)"
    )


def test_every_rejection_stage_has_its_verdict_label() -> None:
    """The judge's stages and the inspector's labels are one vocabulary."""
    from typing import get_args

    from desktop.core.events import RejectionStage
    from desktop.ui.inspector import VERDICTS

    assert set(VERDICTS) == set(get_args(RejectionStage))


def test_the_turn_alones_calls_show_how_sure_their_arguments_were() -> None:
    """After earlier turns, a call under both bars: the turn alone's calls are written
    and their arguments weighed; the rows say which prompt they came from."""
    probes = [
        phase(Probe(alone=messages is ALONE), "{", [("{", p), ("Hi", 1 - p)], messages)
        for p, messages in ((0.55, CONVERSATION), (0.7, ALONE))
    ]
    tokens = [('[{"name":"weather","arguments":{"', 0.9), ("city", 0.99), ('":"', 0.2),
              ("Oslo", 0.99), ('"}}]', 0.5)]  # fmt: skip
    written = phase(Constrained(weigh=True, alone=True), "[]", None, ALONE, {"json_schema": {}})
    written.chosen_tokens = tokens
    record = later_record(0.55, 0.7, arguments=arguments_odds(tokens), arguments_bar=0.95)
    titles = [title for title, _ in step_sections(step(*probes, written, gate=record))]
    assert "call gate: 0.70 < bar 0.93: plain answer" in titles
    assert "→ constrained re-ask, the turn alone (JSON Schema)" in titles
    assert titles[-1] == "arguments' odds: 0.99 ≥ bar 0.95: call"


def test_a_search_before_the_model_shows_its_query_and_scores(qapp) -> None:  # type: ignore[no-untyped-def]
    from desktop.core.events import Retrieval, RetrievedPassage, ToolCallParsed, ToolResult
    from desktop.core.tracing import TurnTrace
    from desktop.ui.inspector import InspectorPanel

    passages = (
        RetrievedPassage("manual.pdf, page 4 — Reset", "/d/manual.pdf", {"bm25": 7.25}),
        RetrievedPassage("notes.md", "/d/notes.md", {"bm25": 1.5}),
    )
    retrieval = Retrieval("reset the router", (), ("bm25",), passages)
    trace = TurnTrace(track="emulated", provider="scripted")
    trace.record(ToolCallParsed(0, "s1", "search_documents", {"query": "reset the router"}))
    trace.record(ToolResult(0, "s1", "search_documents", "[1] manual.pdf…", retrieval=retrieval))
    inspector = InspectorPanel()
    inspector.set_traces([trace])
    first = inspector.tree.topLevelItem(0)
    assert first is not None and first.text(0).startswith("Before the model")
    children = [first.child(i) for i in range(first.childCount())]
    rows = {child.text(0): child for child in children if child is not None}
    title = "retrieval: 2 passage(s) by bm25 for 'reset the router'"
    assert list(rows) == ["parsed call: search_documents", title,
                          "result: search_documents (0 ms)"]  # fmt: skip
    inspector.tree.setCurrentItem(rows[title])
    shown = inspector.detail.toPlainText()
    assert "searched: every collection" in shown
    assert "[1] bm25 7.25\n    manual.pdf, page 4 — Reset\n    /d/manual.pdf" in shown
    assert shown.index("[1]") < shown.index("[2] bm25 1.5")
