"""A fault-injecting server for each backend's wire: cuts, resets, stalls, malformed and
oversized lines, surrogates, bad bytes, HTTP errors. Every turn ends in `TurnFinished` or
`TurnFailed` with a message a person can read, within seconds; nothing raises."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from desktop.core.events import Event, TextDelta, TurnFailed, TurnFinished
from desktop.core.loop import run_turn
from desktop.core.messages import Message
from desktop.core.providers.base import Provider
from desktop.core.providers.http import bounded_lines
from desktop.core.providers.koboldcpp import KoboldCppProvider
from desktop.core.providers.llamacpp import LlamaCppProvider
from desktop.core.providers.lmstudio import LMStudioProvider
from desktop.core.providers.ollama import OllamaProvider
from desktop.core.providers.registry import ProbingProvider
from desktop.core.tools.toolbox import Toolbox
from tests.core.providers.test_koboldcpp import PROPS
from tests.support.replay_server import Canned, ReplayServer

FAST = httpx.Timeout(connect=2.0, read=2.0, write=2.0, pool=2.0)


@dataclass(frozen=True)
class Wire:
    """How one backend frames an answer: its path, its content type, a line of payload."""

    name: str
    path: str
    content_type: str
    make: Callable[[str], ProbingProvider]
    frame: Callable[[bytes], bytes]
    token: Callable[[str], Any]
    finish: Any
    done: bytes = b""

    def answer(self, *tokens: str) -> list[bytes]:
        lines = [self.frame(json.dumps(self.token(t)).encode()) for t in tokens]
        return [*lines, self.frame(json.dumps(self.finish).encode()), self.done]


def sse_frame(payload: bytes) -> bytes:
    return b"data: " + payload + b"\n\n"


def openai_token(text: str) -> Any:
    return {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}


OPENAI_FINISH = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}

WIRES = [
    Wire("llamacpp", "/v1/chat/completions", "text/event-stream",
         lambda url: LlamaCppProvider(url, "m", timeout=FAST, loading_retries=(0.05,)),
         sse_frame, openai_token, OPENAI_FINISH, b"data: [DONE]\n\n"),
    Wire("lmstudio", "/v1/chat/completions", "text/event-stream",
         lambda url: LMStudioProvider(url, "m", timeout=FAST, loading_retries=(0.05,)),
         sse_frame, openai_token, OPENAI_FINISH, b"data: [DONE]\n\n"),
    Wire("ollama", "/api/chat", "application/x-ndjson",
         lambda url: OllamaProvider(url, "m", timeout=FAST),
         lambda payload: payload + b"\n",
         lambda text: {"message": {"role": "assistant", "content": text}, "done": False},
         {"message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop",
          "prompt_eval_count": 5, "eval_count": 2}),
    Wire("koboldcpp", "/api/extra/generate/stream", "text/event-stream",
         lambda url: KoboldCppProvider(url, "m", timeout=FAST, busy_retries=(0.05,)),
         lambda payload: b"event: message\ndata: " + payload + b"\n\n",
         lambda text: {"token": text, "finish_reason": None},
         {"token": "", "finish_reason": "stop"}),
]  # fmt: skip


def fault(wire: Wire, name: str) -> Canned:
    """The server's side of one fault, in this wire's framing."""
    hello = wire.answer("Hello", " there")[:2]  # two tokens, then the fault
    bad = wire.frame
    match name:
        case "clean answer":
            return Canned(pieces=wire.answer("Hello", " there"), content_type=wire.content_type)
        case "cut mid-answer":
            return Canned(pieces=hello, cut=True, content_type=wire.content_type)
        case "reset mid-answer":
            return Canned(pieces=hello, reset=True, content_type=wire.content_type)
        case "stall mid-answer":
            return Canned(pieces=hello, hang=True, content_type=wire.content_type)
        case "ends without finishing":
            return Canned(pieces=hello, content_type=wire.content_type)
        case "empty body":
            return Canned(pieces=[], content_type=wire.content_type)
        case "line not JSON":
            return Canned(pieces=[*hello, bad(b"{not json")], content_type=wire.content_type)
        case "line a JSON number":
            return Canned(pieces=[*hello, bad(b"42")], content_type=wire.content_type)
        case "line a JSON list":
            return Canned(pieces=[*hello, bad(b"[1, 2]")], content_type=wire.content_type)
        case "fields of the wrong type":
            odd = b'{"choices": "x", "message": 7, "token": ["a"], "done": "no"}'
            return Canned(pieces=[*hello, bad(odd)], content_type=wire.content_type)
        case "JSON nested 100,000 deep":
            deep = b"[" * 100_000 + b"]" * 100_000
            return Canned(pieces=[*hello, bad(deep)], content_type=wire.content_type)
        case "oversized line":  # 17 MB with no end of line
            return Canned(pieces=[*hello, *[b"x" * 1_000_000] * 17],
                          content_type=wire.content_type, pause_s=0)  # fmt: skip
        case "lone surrogate":
            token = json.dumps(wire.token("half \\ud83d emoji")).replace("\\\\ud83d", "\\ud83d")
            return Canned(
                pieces=[bad(token.encode()), *wire.answer()], content_type=wire.content_type
            )
        case "invalid UTF-8":
            encoded = json.dumps(wire.token("café"), ensure_ascii=False).encode()
            encoded = encoded.replace("é".encode(), b"\xe9\xff")  # not UTF-8
            return Canned(pieces=[bad(encoded), *wire.answer()], content_type=wire.content_type)
        case "HTTP 500 with a message":
            return Canned(500, "application/json", [b'{"error": {"message": "out of memory"}}'])
        case "HTTP 404 HTML page":
            return Canned(404, "text/html", [b"<html><body>Not Found</body></html>"])
        case "HTTP 401":
            return Canned(401, "application/json", [b'{"error": "invalid api key"}'])
        case "HTTP 503 forever":
            return Canned(503, "application/json", [b'{"error": "Loading model"}'])
        case "wrong content type":
            return Canned(pieces=[b"<html>a proxy page</html>"], content_type="text/html")
    raise AssertionError(name)


FAULTS = [
    "clean answer", "cut mid-answer", "reset mid-answer", "stall mid-answer",
    "ends without finishing", "empty body", "line not JSON", "line a JSON number",
    "line a JSON list", "fields of the wrong type", "JSON nested 100,000 deep",
    "oversized line", "lone surrogate", "invalid UTF-8", "HTTP 500 with a message",
    "HTTP 404 HTML page", "HTTP 401", "HTTP 503 forever", "wrong content type",
]  # fmt: skip
# What the person reads, per fault (any wire): a word of the message, or the answer.
EXPECTED = {
    "clean answer": "Hello there",
    "cut mid-answer": "mid-answer",
    "reset mid-answer": "mid-answer",
    "stall mid-answer": "did not answer in time",
    "ends without finishing": "mid-answer",
    "empty body": "mid-answer",
    "line not JSON": "not JSON",
    "line a JSON number": "not a JSON object",
    "line a JSON list": "not a JSON object",
    "fields of the wrong type": "",
    "JSON nested 100,000 deep": "not JSON",
    "oversized line": "longer than 16 MB",
    "lone surrogate": "half \ufffd emoji",
    "invalid UTF-8": "caf\ufffd",
    "HTTP 500 with a message": "out of memory",
    "HTTP 404 HTML page": "404",
    "HTTP 401": "invalid api key",
    "HTTP 503 forever": "503",
    "wrong content type": "",
}


async def one_turn(provider: Provider) -> tuple[list[Event], float]:
    started = time.monotonic()
    events = [e async for e in run_turn(provider, Toolbox(), [Message.user("Hi")])]
    return events, time.monotonic() - started


@pytest.mark.parametrize("name", FAULTS)
@pytest.mark.parametrize("wire", WIRES, ids=[w.name for w in WIRES])
async def test_every_fault_ends_in_a_clear_message(wire: Wire, name: str) -> None:
    async with ReplayServer() as server:
        server.route("GET", "/props", Canned.json(PROPS))  # KoboldCPP's chat template
        server.route("POST", wire.path, fault(wire, name))
        provider = wire.make(server.url)
        try:
            events, took = await asyncio.wait_for(one_turn(provider), 30)
        finally:
            await provider.aclose()
    end = events[-1]
    assert isinstance(end, TurnFinished | TurnFailed), end
    assert took < 15
    said = end.text if isinstance(end, TurnFinished) else end.message
    if isinstance(end, TurnFailed):
        assert len(said) > 20 and "Traceback" not in said
        assert server.url in said or "Something went wrong" not in said
    assert EXPECTED[name] in said, said
    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    if name.endswith("mid-answer"):
        assert shown.startswith("Hello")  # what was shown stays shown


@pytest.mark.parametrize("wire", WIRES, ids=[w.name for w in WIRES])
async def test_stop_during_a_stall_ends_at_once_and_hangs_up(wire: Wire) -> None:
    async with ReplayServer() as server:
        server.route("GET", "/props", Canned.json(PROPS))
        server.route("POST", wire.path, fault(wire, "stall mid-answer"))
        provider = wire.make(server.url)
        turn = asyncio.ensure_future(one_turn(provider))
        await asyncio.sleep(0.5)
        started = time.monotonic()
        turn.cancel()
        with pytest.raises(asyncio.CancelledError):
            await turn
        assert time.monotonic() - started < 2
        await asyncio.wait_for(server.client_left.wait(), 5)  # the stream was closed
        await provider.aclose()


class Pieces:
    def __init__(self, pieces: list[str]) -> None:
        self.pieces = pieces

    async def aiter_text(self) -> Any:
        for piece in self.pieces:
            yield piece


@settings(max_examples=500, deadline=None)
@given(
    lines=st.lists(st.text(alphabet="ab\u2028\x85{}", max_size=6), max_size=8),
    ends=st.lists(st.sampled_from(["\n", "\r", "\r\n"]), min_size=8, max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=80), max_size=6),
)
def test_lines_split_as_sse_says_wherever_the_pieces_break(
    lines: list[str], ends: list[str], cuts: list[int]
) -> None:
    """CR LF, CR or LF end a line, nothing else (JSON may hold U+2028), whichever piece
    boundary falls between a CR and its LF."""
    import re

    whole = "".join(line + end for line, end in zip(lines, ends, strict=False))
    at = sorted({min(c, len(whole)) for c in cuts})
    pieces = [whole[a:b] for a, b in zip([0, *at], [*at, len(whole)], strict=True) if whole[a:b]]
    expected = re.split(r"\r\n|\r|\n", whole)
    if expected and expected[-1] == "":
        expected.pop()

    async def split() -> list[str]:
        return [line async for line in bounded_lines(Pieces(pieces), "x")]  # type: ignore[arg-type]

    assert asyncio.run(split()) == expected
