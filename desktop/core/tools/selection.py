"""Which tools a turn offers, when there are more than fit.

Ten MCP servers bring 50-100 tools; each costs 100-200 prompt tokens on every step, and a
small model's choice drowns among them. So when the tool prompt would pass a share of the
context (or a count), a turn offers only the tools that fit its request best: ranked by
BM25 (the `bm25s` library) over each tool's name, description and parameters, plus the
tools the user pinned and those used earlier in the conversation. The choice is made
once per turn, in the toolbox's own order, so the prompt's prefix stays the same from
step to step (the server's prompt cache keeps it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from desktop.core.tools.toolbox import Tool

# Offer every tool while the tool prompt stays under both of these.
MAX_TOOLS = 12
MAX_CONTEXT_SHARE = 0.25
# How many tools a selection offers at most, pinned and used ones aside: the fewest that
# lose no tool a longer list finds (tests/bench/test_selection_recall.py holds it so);
# each tool more is one more near tool for a small model to pick instead. The calibration
# offers as many beside a question, so the gate's bars are measured on such choices. And
# how weak a match may be next to the best one (a stray shared word is no reason to offer
# it).
SELECTED = 3
WEAKEST_SHARE = 0.4
_CHARS_PER_TOKEN = 4  # a rough estimate, enough to compare with a share of the context
# What is indexed of one tool: a description from an MCP server may be any size.
MAX_INDEXED_CHARS = 4_000
MAX_INDEXED_VALUES = 50  # of one parameter's enum


@dataclass(frozen=True)
class Offer:
    """The tools a turn offers, and why each one is there (for the inspector)."""

    tools: list[Tool]
    reasons: dict[str, str] = field(default_factory=dict)
    left_out: int = 0

    @property
    def selected(self) -> bool:
        return self.left_out > 0

    def to_dict(self) -> dict[str, Any]:
        return {"offered": self.reasons, "left_out": self.left_out}


def words_of(text: str) -> str:
    """Names split into words: get_weather, getWeather, math.factorial -> get weather..."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return re.sub(r"[_.\-/]+", " ", text)


def parameter_text(name: str, spec: Any) -> str:
    """A parameter's name, description and the values it takes: a request names "Start
    Date" or "Celsius" more often than the parameter that holds it."""
    if not isinstance(spec, dict):
        return name
    items = spec.get("items")
    values = [*_enum_of(spec), *(_enum_of(items) if isinstance(items, dict) else [])]
    return " ".join([name, str(spec.get("description", "")), *values])


def _enum_of(spec: dict[str, Any]) -> list[str]:
    enum = spec.get("enum")
    if not isinstance(enum, list):
        return []
    return [str(v)[:100] for v in enum[:MAX_INDEXED_VALUES] if isinstance(v, str | int | float)]


def tool_text(tool: Tool) -> str:
    parameters = " ".join(parameter_text(name, spec) for name, spec in tool.properties.items())
    examples = " ".join(example.prompt for example in tool.examples)
    text = f"{tool.name} {tool.name} {tool.description[:MAX_INDEXED_CHARS]} {examples} {parameters}"
    return words_of(text[:MAX_INDEXED_CHARS])


def prompt_tokens(tools: Sequence[Tool]) -> int:
    """About how many tokens these tools cost in the prompt, on every step."""
    size = sum(len(t.name) + len(t.description) + len(json.dumps(t.properties)) for t in tools)
    return size // _CHARS_PER_TOKEN


def needs_selection(tools: Sequence[Tool], context_size: int | None) -> bool:
    if len(tools) > MAX_TOOLS:
        return True
    return bool(context_size) and prompt_tokens(tools) > MAX_CONTEXT_SHARE * (context_size or 0)


class ToolSelector:
    """A BM25 index over the tools, built once for a set of tools."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        import bm25s  # numpy: loaded only when there are many tools
        import Stemmer  # "driving" finds "drive"

        self.tools = list(tools)
        self._bm25s = bm25s
        self._stemmer = Stemmer.Stemmer("english")
        self._index = bm25s.BM25()
        texts = [tool_text(t) for t in self.tools]
        corpus = bm25s.tokenize(texts, stemmer=self._stemmer, show_progress=False)
        self._index.index(corpus, show_progress=False)

    def scores(self, request: str) -> list[float]:
        """Each tool's match with the request, in the tools' order."""
        query = self._bm25s.tokenize(
            [words_of(request)], stemmer=self._stemmer, show_progress=False
        )
        if not query.vocab:
            return [0.0] * len(self.tools)
        ranked, scores = self._index.retrieve(query, k=len(self.tools), show_progress=False)
        by_tool = {int(i): float(s) for i, s in zip(ranked[0], scores[0], strict=True)}
        return [by_tool.get(i, 0.0) for i in range(len(self.tools))]

    def select(
        self,
        request: str,
        *,
        pinned: Iterable[str] = (),
        used: Iterable[str] = (),
        limit: int = SELECTED,
    ) -> Offer:
        """The tools that fit `request` best (a score above nothing), at most `limit`,
        plus the pinned and used ones; in the tools' own order."""
        reasons: dict[str, str] = {}
        for name in pinned:
            reasons[name] = "pinned"
        for name in used:
            reasons.setdefault(name, "used earlier in this conversation")
        scores = self.scores(request)
        floor = max(max(scores, default=0.0) * WEAKEST_SHARE, 1e-9)
        scored = sorted(
            ((score, index) for index, score in enumerate(scores) if score >= floor),
            key=lambda pair: (-pair[0], pair[1]),
        )
        for score, index in scored[:limit]:
            reasons.setdefault(self.tools[index].name, f"matches the request ({score:.1f})")
        offered = [t for t in self.tools if t.name in reasons]
        return Offer(
            offered, {t.name: reasons[t.name] for t in offered}, len(self.tools) - len(offered)
        )


def every_tool(tools: Sequence[Tool], reason: str = "all tools fit") -> Offer:
    return Offer(list(tools), {t.name: reason for t in tools})


def offer_for(
    tools: Sequence[Tool],
    request: str,
    *,
    context_size: int | None = None,
    pinned: Iterable[str] = (),
    used: Iterable[str] = (),
) -> Offer:
    """All tools while they fit, else a selection for `request`."""
    if not needs_selection(tools, context_size):
        return every_tool(tools)
    return ToolSelector(tools).select(request, pinned=pinned, used=used)
