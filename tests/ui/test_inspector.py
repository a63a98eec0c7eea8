"""The inspector's reading of a step: its request, raw output and later phases."""

from __future__ import annotations

from desktop.ui.inspector import step_sections


def phase(
    options: dict[str, object],
    raw: str,
    odds: list[list[object]] | None = None,
    messages: list[dict[str, object]] | None = None,
) -> dict[str, object]:
    return {"request": {"messages": messages or [], "tools": [], "options": options},
            "raw_output": raw, "token_odds": odds or []}  # fmt: skip


CONVERSATION: list[dict[str, object]] = [{"role": "system", "parts": [{"text": "Tools, and earlier turns"}]},
                {"role": "user", "parts": [{"text": "Weather in Oslo?"}]}]  # fmt: skip
ALONE: list[dict[str, object]] = [{"role": "system", "parts": [{"text": "Tools"}]},
         {"role": "user", "parts": [{"text": "Weather in Oslo?"}]}]  # fmt: skip
GATE = {"bar": 0.8, "source": "calibrated 2026-12-01, after earlier turns",
        "alone_bar": 0.93, "alone_source": "calibrated 2026-12-01, the turn alone"}  # fmt: skip


def test_each_phase_of_a_step_has_its_own_rows() -> None:
    step = {
        "step": 0,
        "request": {
            "messages": [{"role": "user", "parts": [{"text": "hi"}]}],
            "tools": [],
            "options": {},
        },
        "raw_output": "{",
        "events": [],
        "phases": [
            phase({"phase": "call-odds", "max_tokens": 1}, "{", [["{", 0.62], ["Hi", 0.38]]),
            phase({"phase": "plain"}, "Hello there."),
            phase({"phase": "constrained", "json_schema": {"type": "array"}}, "[]"),
        ],
    }
    rows = step_sections(step)
    titles = [title for title, _ in rows]
    odds = titles.index("← first token's likeliest alternatives")
    assert rows[odds][1] == " 62.0%  '{'\n 38.0%  'Hi'"
    assert titles.index("← plain output") > odds
    assert dict(rows)["← plain output"] == "Hello there."
    assert '"type": "array"' in dict(rows)["→ constrained re-ask (JSON Schema)"]
    assert not any(title.startswith("call gate") for title in titles)  # no bar known


def test_a_sampled_answers_opening_probe_reads_as_such() -> None:
    probe = phase({"phase": "opening", "max_tokens": 1}, "{", [["{", 0.91], ["Hi", 0.09]])
    step = {"request": {"messages": [], "tools": [], "options": {}}, "events": [],
            "phases": [probe]}  # fmt: skip
    rows = dict(step_sections(step, {"bar": 0.87, "source": "calibrated 2026-11-30"}))
    assert "→ greedy opening of a sampled answer (one-token probe)" in rows
    assert rows["← first token's likeliest alternatives"] == " 91.0%  '{'\n  9.0%  'Hi'"
    assert "call gate: 0.91 ≥ bar 0.87: call" in rows


def test_the_bar_that_judged_a_call() -> None:
    """The probe's odds against the turn's bar, and where the bar came from."""
    probe = phase({"phase": "call-odds"}, "{", [["{", 0.62], ["```", 0.2], ["Hi", 0.18]])
    step = {"request": {"messages": [], "tools": [], "options": {}}, "events": [],
            "phases": [probe]}  # fmt: skip
    calibrated = {"bar": 0.87, "source": "calibrated 2026-11-30"}
    rows = step_sections(step, calibrated)
    title, text = next(row for row in rows if row[0].startswith("call gate"))
    assert title == "call gate: 0.82 < bar 0.87: plain answer"
    assert "calibrated 2026-11-30" in text
    title, text = next(
        row
        for row in step_sections(step, {"bar": 0.0, "source": "uncalibrated"})
        if row[0].startswith("call gate")
    )
    assert title == "call gate: 0.82, no bar until calibrated: call"
    assert "Until this model is calibrated" in text


def test_the_second_look_is_judged_by_the_first_bar() -> None:
    """After earlier turns: 0.55 in context fails the later bar, 0.95 alone passes the
    first one; each probe has its own row and its own bar."""
    probes = [
        phase({"phase": "call-odds"}, "{", [["{", p], ["Hi", 1 - p]], messages)
        for p, messages in ((0.55, CONVERSATION), (0.95, ALONE))
    ]
    step = {"request": {"messages": CONVERSATION, "tools": [], "options": {}}, "events": [],
            "phases": probes}  # fmt: skip
    rows = step_sections(step, GATE)
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
    probe = phase({"phase": "call-odds"}, "Sure", [["Sure", 0.6], ["{", 0.4]], ALONE)
    plain = phase({"phase": "plain"}, "It is sunny.", None, CONVERSATION)
    step = {"request": {"messages": CONVERSATION, "tools": [], "options": {}}, "events": [],
            "phases": [probe, plain]}  # fmt: skip
    rows = step_sections(step, GATE)
    titles = [title for title, _ in rows]
    assert "→ odds of a call, the turn alone (second look)" in titles
    assert "call gate: 0.40 < bar 0.93: plain answer" in titles
    assert titles.index("← plain output") > titles.index("call gate: 0.40 < bar 0.93: plain answer")


def test_a_plain_answer_says_why_it_was_asked() -> None:
    """The track records why a step answered in text; a trace from before it did reads as
    the gate's doing."""
    made_up = "the call named 'joke', which is not an offered tool"
    step = {"request": {"messages": [], "tools": [], "options": {}}, "events": [],
            "raw_output": '{"name": "joke"',
            "phases": [phase({"phase": "plain", "reason": made_up}, "Why did...")]}  # fmt: skip
    titles = [title for title, _ in step_sections(step)]
    assert f"→ plain answer ({made_up})" in titles
    step["phases"] = [phase({"phase": "plain"}, "Why did...")]
    titles = [title for title, _ in step_sections(step)]
    assert "→ plain answer (the call gate said no call)" in titles


def test_a_call_under_the_bar_shows_how_sure_its_arguments_were() -> None:
    probe = phase({"phase": "call-odds"}, "{", [["{", 0.8], ["Hi", 0.2]])
    constrained = phase({"phase": "constrained", "json_schema": {}}, '[{"name": "search"}]')
    constrained["chosen_tokens"] = [['[{"name":"search","arguments":{"', 0.9], ["query", 0.99],
                                    ['":"', 0.2], ["rust", 0.97], ['"}}]', 0.5]]  # fmt: skip
    step = {"request": {"messages": [], "tools": [], "options": {}}, "events": [],
            "phases": [probe, constrained]}  # fmt: skip
    gate = {"bar": 0.9, "source": "calibrated 2026-12-02", "arguments_bar": 0.95}
    titles = [title for title, _ in step_sections(step, gate)]
    assert "call gate: 0.80 < bar 0.90: plain answer" in titles
    assert titles[-1] == "arguments' odds: 0.98 ≥ bar 0.95: call"
    unsure = step_sections(step, {**gate, "arguments_bar": 0.99})
    assert unsure[-1][0] == "arguments' odds: 0.98 < bar 0.99: plain answer"
    assert not any(t.startswith("arguments") for t, _ in step_sections(step, {**gate,
                   "arguments_bar": None}))  # fmt: skip


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
        phase({"phase": "call-odds"}, "{", [["{", p], ["Hi", 1 - p]], messages)
        for p, messages in ((0.55, CONVERSATION), (0.7, ALONE))
    ]
    constrained = phase({"phase": "constrained", "json_schema": {}}, "[]", None, ALONE)
    constrained["chosen_tokens"] = [['[{"name":"weather","arguments":{"', 0.9], ["city", 0.99],
                                    ['":"', 0.2], ["Oslo", 0.99], ['"}}]', 0.5]]  # fmt: skip
    step = {"request": {"messages": CONVERSATION, "tools": [], "options": {}}, "events": [],
            "phases": [*probes, constrained]}  # fmt: skip
    titles = [title for title, _ in step_sections(step, {**GATE, "arguments_bar": 0.95})]
    assert "call gate: 0.70 < bar 0.93: plain answer" in titles
    assert "→ constrained re-ask, the turn alone (JSON Schema)" in titles
    assert titles[-1] == "arguments' odds: 0.99 ≥ bar 0.95: call"
