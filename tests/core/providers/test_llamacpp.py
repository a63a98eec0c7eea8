"""llama-server's own additions to the OpenAI wire, against a real local HTTP server."""

from typing import Any

from desktop.core.messages import Message
from desktop.core.providers.base import Aside, RequestOptions
from desktop.core.providers.llamacpp import LlamaCppProvider
from tests.support.replay_server import Canned, ReplayServer, sse

PATH = "/v1/chat/completions"
ANSWER = [{"choices": [{"index": 0, "delta": {"content": "x"}, "finish_reason": "stop"}]}]


async def bodies_sent(
    props: dict[str, Any], *asides: Aside | None
) -> tuple[int, list[dict[str, Any]]]:
    """The slots the provider read from `/props`, and the bodies of one request per aside."""
    async with ReplayServer() as server:
        server.route("GET", "/props", Canned.json(props))
        server.route("GET", "/v1/models", Canned.json({"data": []}))
        server.route("POST", PATH, Canned(pieces=sse(*ANSWER)))
        provider = LlamaCppProvider(server.url)
        provider.capabilities = await provider.probe()
        for aside in asides:
            options = RequestOptions(aside=aside)
            async for _ in provider.stream([Message.user("hi")], [], options):
                pass
        await provider.aclose()
    return provider.capabilities.slots, [r.json() for r in server.requests if r.path == PATH]


async def test_the_conversation_and_each_aside_keep_a_slot_of_their_own() -> None:
    asides: list[Aside | None] = [None, "turn alone", "in words", None]
    slots, bodies = await bodies_sent({"total_slots": 3}, *asides)
    assert slots == 3
    assert [b["id_slot"] for b in bodies] == [0, 1, 2, 0]


async def test_with_two_slots_the_asides_share_the_second() -> None:
    slots, bodies = await bodies_sent({"total_slots": 2}, None, "turn alone", "in words", None)
    assert slots == 2
    assert [b["id_slot"] for b in bodies] == [0, 1, 1, 0]


async def test_with_one_slot_or_none_said_no_slot_is_named() -> None:
    for props in ({"total_slots": 1}, {}, {"total_slots": "two"}, {"total_slots": -3}):
        slots, bodies = await bodies_sent(props, None, "turn alone", "in words")
        assert slots == 1 and all("id_slot" not in b for b in bodies)
