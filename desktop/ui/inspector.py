"""The inspector: for each step of a turn, what went to the model, what came back raw,
the parsed calls with their verdicts and dedupe decisions, and the results. Exportable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, assert_never

from PySide6.QtCore import Qt
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from desktop.core.events import (
    CallGate,
    Event,
    GateRecord,
    RejectionStage,
    Retrieval,
    TextDelta,
    ThinkingDelta,
    ToolCallParsed,
    ToolRejected,
    ToolResult,
    ToolStarted,
    TurnFailed,
    TurnFinished,
    TurnWarning,
    Usage,
    event_to_dict,
)
from desktop.core.providers.base import Constrained, PlainAnswer, Probe
from desktop.core.tracing import StepTrace, TurnTrace
from desktop.core.tracks.bars import UNCALIBRATED
from desktop.ui.accessible import describe

VERDICTS: dict[RejectionStage, str] = {
    "parse": "could not be parsed",
    "validation": "invalid (name or arguments)",
    "repeat": "refused by dedupe: an exact repeat",
    "cooldown": "refused by dedupe: tool on cooldown",
    "limit": "refused: the turn's tool-call limit was spent",
    "withdrawn": "refused: tools had been withdrawn",
    "denied": "declined by the user",
}


def _pretty(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)


def step_sections(step: StepTrace) -> list[tuple[str, str]]:
    """(title, text) rows of one step, in the order a person reads them: the request, the
    raw output, each later part of the step with what the call gate made of it (from the
    step's record), then the calls, their verdicts and results."""
    rows = [_message_row(message) for message in step.messages]
    if step.tools:
        rows.append(("→ tools (native)", _pretty(step.tools)))
    rows.append(("→ options", _pretty(step.options)))
    if step.thinking:
        rows.append(("← thinking", step.thinking))
    rows.append(("← raw output", step.raw_output or "(nothing)"))
    for phase in step.phases:
        rows += _phase_rows(phase, step.gate)
    if step.error:
        rows.append(("← error", step.error))
    for event in step.events:
        rows += _event_rows(event)
    return rows


def _message_row(message: dict[str, Any]) -> tuple[str, str]:
    text = "\n".join(
        part.get("text", f"[{part.get('mime')} image, {part.get('bytes')} bytes]")
        for part in message.get("parts", [])
    )
    if message.get("tool_calls"):
        text += "\n" + _pretty(message["tool_calls"])
    return f"→ {message['role']}", text


def _phase_rows(phase: StepTrace, record: GateRecord | None) -> list[tuple[str, str]]:
    """A later part of a step: what was asked, what came back, and the gate's verdict on it
    as the record has it (never worked out again here)."""
    output = phase.raw_output or "(nothing)"
    part = phase.part
    match part:
        case Probe():
            if part.opening:
                title = "→ greedy opening of a sampled answer (one-token probe)"
            elif part.alone:
                title = "→ odds of a call, the turn alone (second look)"
            else:
                title = "→ odds of a call (one-token probe)"
            odds = "\n".join(f"{p:6.1%}  {token!r}" for token, p in phase.token_odds)
            rows = [(title, _pretty(phase.options)),
                    ("← first token's likeliest alternatives", odds or output)]  # fmt: skip
            # The opening's odds are the request's, where a call came of the answer.
            judged = None if record is None else record.alone if part.alone else record.request
            if judged is not None:
                rows.append(_gate_row(judged))
            return rows
        case PlainAnswer():
            return [(f"→ plain answer ({part.reason})", ""), ("← plain output", output)]
        case Constrained():
            where = ", the turn alone" if part.alone else ""
            schema = _pretty(phase.options.get("json_schema"))
            rows = [(f"→ constrained re-ask{where} (JSON Schema)", schema),
                    ("← constrained output", output)]  # fmt: skip
            judged = None if record is None else record.alone if part.alone else record.request
            if part.weigh and judged is not None and judged.arguments_bar is not None:
                rows.append(_arguments_row(judged))
            return rows
        case None:
            return [("→ request", _pretty(phase.options)), ("← output", output)]
        case _:
            assert_never(part)


def _event_rows(event: Event) -> list[tuple[str, str]]:
    match event:
        case ToolCallParsed():
            return [(f"parsed call: {event.name}", _pretty(event.arguments))]
        case ToolRejected():
            return [(f"verdict: {event.name} {VERDICTS[event.stage]}", event.reason)]
        case ToolStarted():
            return [(f"verdict: {event.name} valid, not a repeat: run", "")]
        case ToolResult():
            status = f"error: {event.error}" if event.error else f"{event.duration_ms:.0f} ms"
            images = ", ".join(f"{i.mime} {len(i.data)} bytes" for i in event.images)
            text = event.content + (f"\n[images: {images}]" if images else "")
            rows = [] if event.retrieval is None else [_retrieval_row(event.retrieval)]
            return [*rows, (f"result: {event.name} ({status})", text)]
        case Usage():
            tokens = f"{event.prompt_tokens} prompt + {event.completion_tokens} completion"
            return [("usage", f"{tokens} tokens")]
        case TurnWarning():
            return [("warning", event.message)]
        case TextDelta() | ThinkingDelta() | TurnFinished() | TurnFailed():
            return []  # the raw output and the outcome have them
        case _:
            assert_never(event)


def _retrieval_row(retrieval: Retrieval) -> tuple[str, str]:
    """A document search: its query, where it looked, and each passage's scores."""
    methods = " + ".join(retrieval.methods)
    where = ", ".join(retrieval.collections) or "every collection"
    lines = [f"query: {retrieval.query!r}", f"searched: {where}", f"ranked by: {methods}"]
    if retrieval.note:
        lines.append(f"not by meaning: {retrieval.note}")
    lines.append("")
    for number, passage in enumerate(retrieval.passages, 1):
        scores = "  ".join(f"{method} {score:.4g}" for method, score in passage.scores.items())
        lines.append(f"[{number}] {scores}\n    {passage.where}\n    {passage.path}")
    if not retrieval.passages:
        lines.append("No passage matched.")
    count = len(retrieval.passages)
    return f"retrieval: {count} passage(s) by {methods} for {retrieval.query!r}", "\n".join(lines)


def _gate_row(gate: CallGate) -> tuple[str, str]:
    if gate.source == UNCALIBRATED:  # no bar yet: the model's own choice stands
        return (
            f"call gate: {gate.odds:.2f}, no bar until calibrated: call",
            "Until this model is calibrated, its own choice to call stands; the probe's "
            "odds are shown for comparison with the bar it will get.",
        )
    if gate.odds >= gate.bar:
        return (f"call gate: {gate.odds:.2f} ≥ bar {gate.bar:.2f}: call",
                f"The bar is {gate.source}.")  # fmt: skip
    return (
        f"call gate: {gate.odds:.2f} < bar {gate.bar:.2f}: plain answer",
        f"The bar is {gate.source}. Below it the model answers in text, without tools.",
    )


def _arguments_row(gate: CallGate) -> tuple[str, str]:
    """The verdict on a call under the gate's bar, by how sure the model was of its
    arguments."""
    if gate.arguments is None:
        return ("arguments' odds: none weighed: plain answer", "The call had no arguments.")
    verdict = "call" if gate.arguments_sure else "plain answer"
    sign = "≥" if gate.arguments_sure else "<"
    return (
        f"arguments' odds: {gate.arguments:.2f} {sign} bar {gate.arguments_bar:.2f}: {verdict}",
        "Under the call gate's bar, a call is still made if the model was sure of its "
        "arguments (the mean probability of their words and numbers).",
    )


class InspectorPanel(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.traces: list[TurnTrace] = []
        layout = QVBoxLayout(self)
        top = QHBoxLayout()
        self.turn_picker = QComboBox()
        self.turn_picker.currentIndexChanged.connect(self._show_turn)
        describe(self.turn_picker, "Which turn of the conversation to inspect", "Turn")
        top.addWidget(self.turn_picker, 1)
        self.export_button = QPushButton("Export JSON…")
        self.export_button.clicked.connect(self._export)
        describe(self.export_button, "Save the turns' requests, outputs and verdicts as JSON")
        top.addWidget(self.export_button)
        layout.addLayout(top)
        splitter = QSplitter(Qt.Orientation.Vertical)
        self.tree = QTreeWidget()
        self.tree.setHeaderHidden(True)
        self.tree.currentItemChanged.connect(self._show_item)
        describe(self.tree, "Each step of the turn: the request, the raw output, the parsed "
                 "call, its verdict and result", "Steps of the turn")  # fmt: skip
        splitter.addWidget(self.tree)
        self.detail = QPlainTextEdit()
        self.detail.setReadOnly(True)
        describe(self.detail, "The chosen step's content, as sent or received", "Detail")
        self.detail.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        splitter.addWidget(self.detail)
        splitter.setSizes([300, 300])
        layout.addWidget(splitter)
        self.set_traces([])

    def set_traces(self, traces: list[TurnTrace]) -> None:
        self.traces = traces
        self.turn_picker.blockSignals(True)
        self.turn_picker.clear()
        for index, trace in enumerate(traces):
            self.turn_picker.addItem(
                f"Turn {index + 1} · {trace.track} · {len(trace.steps)} step(s)"
            )
        self.turn_picker.blockSignals(False)
        self.export_button.setEnabled(bool(traces))
        if traces:
            self.turn_picker.setCurrentIndex(len(traces) - 1)
            self._show_turn(len(traces) - 1)
        else:
            self.tree.clear()
            self.detail.setPlainText("Send a message: each step of its turn shows here.")

    def refresh(self) -> None:
        """The current turn grew (a new step, a verdict): show it again."""
        if self.traces:
            self.set_traces(self.traces)

    def _show_turn(self, index: int) -> None:
        self.tree.clear()
        if not 0 <= index < len(self.traces):
            return
        trace = self.traces[index]
        if offer := trace.offer:
            offered = offer["offered"]
            node = QTreeWidgetItem(
                [f"Tools offered: {len(offered)} of {len(offered) + offer['left_out']}"]
            )
            lines = [f"{name}: {why}" for name, why in offered.items()]
            lines.append(f"({offer['left_out']} more left out: they did not fit the request.)")
            node.setData(0, Qt.ItemDataRole.UserRole, "\n".join(lines))
            self.tree.addTopLevelItem(node)
        if trace.before:  # the documents searched with the person's words, before step 0
            rows = [row for event in trace.before for row in _event_rows(event)]
            node = self._node("Before the model: your documents searched first", rows)
            node.setData(0, Qt.ItemDataRole.UserRole, "The person's message was the query; "
                         "the passages went into the prompt as this search's result.")  # fmt: skip
        for step in trace.steps:
            self._node(f"Step {step.step} · {step.duration_ms or '…'} ms", step_sections(step))
        if trace.outcome is not None:
            outcome = QTreeWidgetItem([f"Outcome: {trace.outcome.kind}"])
            outcome.setData(0, Qt.ItemDataRole.UserRole, _pretty(event_to_dict(trace.outcome)))
            self.tree.addTopLevelItem(outcome)

    def _node(self, title: str, rows: list[tuple[str, str]]) -> QTreeWidgetItem:
        """A top-level node, expanded, with a child for each (title, text) row."""
        node = QTreeWidgetItem([title])
        for row_title, text in rows:
            child = QTreeWidgetItem([row_title])
            child.setData(0, Qt.ItemDataRole.UserRole, text)
            node.addChild(child)
        self.tree.addTopLevelItem(node)
        node.setExpanded(True)
        return node

    def _show_item(self, item: QTreeWidgetItem | None, _previous: object = None) -> None:
        text = item.data(0, Qt.ItemDataRole.UserRole) if item is not None else None
        self.detail.setPlainText(text if isinstance(text, str) else "")

    def current_trace(self) -> TurnTrace | None:
        index = self.turn_picker.currentIndex()
        return self.traces[index] if 0 <= index < len(self.traces) else None

    def _export(self) -> None:
        trace = self.current_trace()
        if trace is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Export turn", "turn.json", "JSON (*.json)")
        if path:
            export_trace(trace, Path(path))


def export_trace(trace: TurnTrace, path: Path) -> None:
    path.write_text(json.dumps(trace.to_dict(), ensure_ascii=False, indent=2), encoding="utf-8")
