"""The inspector: for each step of a turn, what went to the model, what came back raw,
the parsed calls with their verdicts and dedupe decisions, and the results. Exportable."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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

from desktop.core.events import RejectionStage
from desktop.core.tracing import TurnTrace
from desktop.core.tracks.odds import arguments_odds, call_odds
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


def step_sections(
    step: dict[str, Any], gate: dict[str, Any] | None = None
) -> list[tuple[str, str]]:
    """(title, text) rows of one step, in the order a person reads them; `gate` is the
    turn's call gate (its bar and where the bar came from)."""
    request = step["request"]
    rows = []
    for message in request["messages"]:
        text = "\n".join(
            part.get("text", f"[{part.get('mime')} image, {part.get('bytes')} bytes]")
            for part in message.get("parts", [])
        )
        if message.get("tool_calls"):
            text += "\n" + _pretty(message["tool_calls"])
        rows.append((f"→ {message['role']}", text))
    if request["tools"]:
        rows.append(("→ tools (native)", _pretty(request["tools"])))
    rows.append(("→ options", _pretty(request["options"])))
    if step.get("thinking"):
        rows.append(("← thinking", step["thinking"]))
    rows.append(("← raw output", step.get("raw_output") or "(nothing)"))
    for phase in step.get("phases", []):
        options = phase["request"]["options"]
        output = phase.get("raw_output") or "(nothing)"
        # The gate's second look asks about the turn alone (its odds, and the calls whose
        # arguments it weighs): its prompt is not the step's.
        alone = phase["request"]["messages"] != request["messages"]
        second = alone and gate is not None and "alone_bar" in gate
        if options.get("phase") in ("call-odds", "opening"):
            odds = "\n".join(f"{p:6.1%}  {token!r}" for token, p in phase.get("token_odds", []))
            if options["phase"] == "opening":
                title = "→ greedy opening of a sampled answer (one-token probe)"
            elif second:
                title = "→ odds of a call, the turn alone (second look)"
            else:
                title = "→ odds of a call (one-token probe)"
            rows.append((title, _pretty(options)))
            rows.append(("← first token's likeliest alternatives", odds or output))
            if gate is not None:
                judged_by = (
                    {"bar": gate["alone_bar"], "source": gate["alone_source"]} if second else gate
                )
                rows.append(_gate_row(phase.get("token_odds", []), judged_by))
        elif options.get("phase") == "plain":
            # Traces from before the reason was recorded: only the gate answered in text.
            reason = options.get("reason") or "the call gate said no call"
            rows.append((f"→ plain answer ({reason})", ""))
            rows.append(("← plain output", output))
        else:
            where = ", the turn alone" if second else ""
            schema = _pretty(options.get("json_schema"))
            rows.append((f"→ constrained re-ask{where} (JSON Schema)", schema))
            rows.append(("← constrained output", output))
            chosen = phase.get("chosen_tokens", [])
            if chosen and gate is not None and gate.get("arguments_bar") is not None:
                rows.append(_arguments_row(chosen, float(gate["arguments_bar"])))
    if step.get("error"):
        rows.append(("← error", step["error"]))
    for event in step["events"]:
        kind = event["kind"]
        if kind == "tool_call":
            rows.append((f"parsed call: {event['name']}", _pretty(event["arguments"])))
        elif kind == "tool_rejected":
            verdict = VERDICTS.get(event.get("stage", ""), "rejected")
            rows.append((f"verdict: {event['name']} {verdict}", event["reason"]))
        elif kind == "tool_started":
            rows.append((f"verdict: {event['name']} valid, not a repeat: run", ""))
        elif kind == "tool_result":
            status = (
                f"error: {event['error']}" if event["error"] else f"{event['duration_ms']:.0f} ms"
            )
            images = ", ".join(f"{i['mime']} {i['size']} bytes" for i in event["images"])
            text = event["content"] + (f"\n[images: {images}]" if images else "")
            rows.append((f"result: {event['name']} ({status})", text))
        elif kind == "usage":
            tokens = f"{event['prompt_tokens']} prompt + {event['completion_tokens']} completion"
            rows.append(("usage", f"{tokens} tokens"))
        elif kind == "warning":
            rows.append(("warning", event["message"]))
    return rows


def _gate_row(alternatives: list[list[Any]], gate: dict[str, Any]) -> tuple[str, str]:
    odds = call_odds((str(token), float(p)) for token, p in alternatives)
    bar, source = float(gate["bar"]), gate["source"]
    if source == "uncalibrated":  # no bar yet: the model's own choice stands
        return (
            f"call gate: {odds:.2f}, no bar until calibrated: call",
            "Until this model is calibrated, its own choice to call stands; the probe's "
            "odds are shown for comparison with the bar it will get.",
        )
    if odds >= bar:
        return (f"call gate: {odds:.2f} ≥ bar {bar:.2f}: call", f"The bar is {source}.")
    return (
        f"call gate: {odds:.2f} < bar {bar:.2f}: plain answer",
        f"The bar is {source}. Below it the model answers in text, without tools.",
    )


def _arguments_row(tokens: list[list[Any]], bar: float) -> tuple[str, str]:
    """The verdict on a call under the gate's bar, by how sure the model was of its
    arguments."""
    odds = arguments_odds((str(token), float(p)) for token, p in tokens)
    if odds is None:
        return ("arguments' odds: none weighed: plain answer", "The call had no arguments.")
    verdict = "call" if odds >= bar else "plain answer"
    sign = "≥" if odds >= bar else "<"
    return (
        f"arguments' odds: {odds:.2f} {sign} bar {bar:.2f}: {verdict}",
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
        trace = self.traces[index].to_dict()
        if offer := trace.get("offer"):
            offered = offer["offered"]
            node = QTreeWidgetItem(
                [f"Tools offered: {len(offered)} of {len(offered) + offer['left_out']}"]
            )
            lines = [f"{name}: {why}" for name, why in offered.items()]
            lines.append(f"({offer['left_out']} more left out: they did not fit the request.)")
            node.setData(0, Qt.ItemDataRole.UserRole, "\n".join(lines))
            self.tree.addTopLevelItem(node)
        for step in trace["steps"]:
            node = QTreeWidgetItem([f"Step {step['step']} · {step.get('duration_ms') or '…'} ms"])
            for title, text in step_sections(step, trace.get("gate")):
                child = QTreeWidgetItem([title])
                child.setData(0, Qt.ItemDataRole.UserRole, text)
                node.addChild(child)
            self.tree.addTopLevelItem(node)
            node.setExpanded(True)
        if trace["outcome"]:
            outcome = QTreeWidgetItem([f"Outcome: {trace['outcome']['kind']}"])
            outcome.setData(0, Qt.ItemDataRole.UserRole, _pretty(trace["outcome"]))
            self.tree.addTopLevelItem(outcome)

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
