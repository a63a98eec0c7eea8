"""The one interface the loop knows: `stream(messages, tools, options)`.

A provider yields text and thinking chunks as they arrive, usage when the backend reports
it, and ends with exactly one `Reply`: the whole text and the tool calls, if any. Which
track produced the calls (native, or emulated in the prompt) is invisible to the loop.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, assert_never

from desktop.core.backend_kind import Track as Track  # where the tracks are named
from desktop.core.errors import LoomchatError
from desktop.core.events import BrokenCall, ProviderEvent
from desktop.core.messages import Message, ToolCall, new_call_id
from desktop.core.tool_spec import ToolSpec


@dataclass(frozen=True)
class Capabilities:
    native_tools: bool = False
    vision: bool = False
    context_size: int | None = None
    slots: int = 1  # requests the server keeps apart, each with its own cached prompt


@dataclass(frozen=True)
class Features:
    """What a backend's wire format can do beyond chat, as data: read by the tracks, carried
    through every wrapper (a wrapper that forgot one would silently lose it)."""

    constrains_json: bool = False  # answers constrained to a JSON Schema
    reports_token_odds: bool = False  # the likeliest alternatives of each token
    takes_grammar: bool = False  # answers constrained to a GBNF grammar
    # The server keeps a prompt it has read and reads only what a later one adds to it.
    caches_prompt: bool = False
    # A last assistant message is continued (prefilled), not answered anew.
    continues_answer: bool = False


@dataclass(frozen=True)
class Probe:
    """A one-token request: how likely the answer is to open a call. `opening`: asked
    before a sampled answer, for how it would open at temperature 0; `alone`: the current
    turn asked without the earlier ones (the call gate's second look)."""

    alone: bool = False
    opening: bool = False
    kind: Literal["probe"] = "probe"


@dataclass(frozen=True)
class Constrained:
    """The step's calls written under the backend's grammar; the first pinned to `first`
    where the free answer named it; `weigh`: with its tokens' odds, for the arguments' odds."""

    first: str | None = None
    weigh: bool = False
    alone: bool = False
    kind: Literal["constrained"] = "constrained"


@dataclass(frozen=True)
class PlainAnswer:
    """The step's answer asked again in text, and why (the call gate said no call...)."""

    reason: str
    kind: Literal["plain"] = "plain"


# Which later part of a step a request is (see tracks/gate.py); None: the step's own request.
RequestPart = Probe | Constrained | PlainAnswer


# The prompts beside the conversation's own (see `RequestOptions.aside`).
Aside = Literal["turn alone", "in words"]
ASIDES: tuple[Aside, ...] = ("turn alone", "in words")


@dataclass(frozen=True)
class RequestOptions:
    temperature: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    # Native track only: "required" makes the backend constrain its answer to a tool call.
    tool_choice: Literal["auto", "required"] | None = None
    # Constrained decoding: the answer must be JSON matching this schema (the backend's
    # grammar makes anything else impossible). Only for backends with `constrains_json`.
    json_schema: dict[str, Any] | None = None
    # Ask for the likeliest alternatives of each generated token (`TokenOdds` events).
    # Only for backends with `reports_token_odds`.
    top_logprobs: int | None = None
    # A GBNF grammar the answer must match (the emulated track's "no call" answers keep the
    # tool prompt and forbid a call instead). Only for backends with `takes_grammar`.
    grammar: str | None = None
    # The tools of the turn after they were withdrawn (the last, tool-free step): a track
    # that can forbid calls keeps them in the prompt, whose prefix the server has cached.
    withdrawn_tools: tuple[ToolSpec, ...] = ()
    # Which part of a step this request is, for the trace (the opening probe comes before
    # the step's own request, the others after it); None: the step's own. Backends ignore it.
    part: RequestPart | None = None
    # A prompt that is not the conversation's own (the turn alone, or the conversation in
    # words for an answer without the tools): a server with more slots keeps each in its
    # own, so the conversation's prompt stays cached in the first and no request reads a
    # whole prompt again that it read a turn before.
    aside: Aside | None = None
    # Not a step: the prompts the next turn will start with, read into the server's cache
    # while the person reads the answer (`desktop.core.warm_up`). Nothing of it is shown.
    warm_up: bool = False
    # The tools whose exact repeats within a turn may run (the deduplicator's switch off for
    # them): elsewhere a track leaves a call made again out before it is made.
    repeats_allowed: tuple[str, ...] = ()

    @property
    def phase(self) -> Literal["opening", "call-odds", "constrained", "plain"] | None:
        """The part's name, as traces export it."""
        match self.part:
            case None:
                return None
            case Probe():
                return "opening" if self.part.opening else "call-odds"
            case Constrained():
                return "constrained"
            case PlainAnswer():
                return "plain"
            case _:
                assert_never(self.part)

    @property
    def reason(self) -> str | None:
        """Why a step's answer was asked again in text, where it was."""
        return self.part.reason if isinstance(self.part, PlainAnswer) else None


class ProviderError(LoomchatError):
    """A backend failure, with a message a person can act on ("... is not running at ...")."""


class Provider(Protocol):
    @property
    def capabilities(self) -> Capabilities: ...

    @property
    def features(self) -> Features: ...

    @property
    def label(self) -> str:
        """Who answers, for messages: "llama.cpp server at http://127.0.0.1:8080"."""
        ...

    def stream(
        self,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        options: RequestOptions,
    ) -> AsyncGenerator[ProviderEvent, None]: ...


class ProviderWrapper:
    """A provider over another (a track, the tracer): what the model can do and who answers
    are the inner provider's, whatever the order wrappers are stacked in."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner

    @property
    def capabilities(self) -> Capabilities:
        return self.inner.capabilities

    @property
    def features(self) -> Features:
        return self.inner.features

    @property
    def label(self) -> str:
        return self.inner.label


def checked_call(name: str, arguments: Any, call_id: str | None = None) -> ToolCall | BrokenCall:
    """A call whose arguments are an object, or a broken call that says what they were."""
    if isinstance(arguments, dict):
        return ToolCall(call_id or new_call_id(), name, arguments)
    kind = "null" if arguments is None else type(arguments).__name__
    return BrokenCall(name, arguments, f"Its arguments must be a JSON object, not {kind}.")


def split_calls(
    found: Iterable[ToolCall | BrokenCall],
) -> tuple[list[ToolCall], list[BrokenCall]]:
    items = list(found)
    return (
        [c for c in items if isinstance(c, ToolCall)],
        [c for c in items if isinstance(c, BrokenCall)],
    )
