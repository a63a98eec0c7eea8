"""KoboldCPP against a local server replaying its KoboldAI and OpenAI byte streams."""

import asyncio
import base64
import json

import pytest

from desktop.core.events import Reply, TextChunk
from desktop.core.messages import Image, Message
from desktop.core.providers.base import Capabilities, ProviderError, RequestOptions
from desktop.core.providers.koboldcpp import KoboldCppProvider
from tests.core.providers.streams import WEATHER, collect
from tests.support.replay_server import Canned, ReplayServer, resplit, sse

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
STREAM = "/api/extra/generate/stream"
TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
PROPS = {"chat_template": TEMPLATE, "bos_token": "", "eos_token": "<|im_end|>", "n_ctx": 4096,
         "modalities": {"vision": False}}  # fmt: skip


def kobold_sse(*tokens: str, finish: str = "stop") -> list[bytes]:
    """KoboldCPP's stream: `event: message` with a token each, the last with the finish
    reason, and no [DONE]."""
    events = [{"token": t, "finish_reason": None} for t in tokens]
    events.append({"token": "", "finish_reason": finish})
    return [
        f"event: message\ndata: {json.dumps(e, ensure_ascii=False)}\n\n".encode() for e in events
    ]


@pytest.mark.parametrize("sizes", [[1], [7, 13], [4096]])
async def test_tokens_stream_without_a_done_marker(sizes: list[int]) -> None:
    async with ReplayServer() as server:
        server.route("GET", "/props", Canned.json(PROPS))
        server.route(
            "POST",
            STREAM,
            Canned(pieces=resplit(kobold_sse("Hel", "lo, ", "wörld ✓"), sizes), pause_s=0.001),
        )
        events = await collect(KoboldCppProvider(server.url))
    assert "".join(e.text for e in events if isinstance(e, TextChunk)) == "Hello, wörld ✓"
    reply = events[-1]
    assert (
        isinstance(reply, Reply)
        and reply.text == "Hello, wörld ✓"
        and reply.finish_reason == "stop"
    )


async def test_generate_body_uses_the_models_template_and_sends_the_limit() -> None:
    messages = [Message.system("Be brief."), Message.user("Look:", [Image.from_bytes(PNG)])]
    async with ReplayServer() as server:
        server.route("GET", "/props", Canned.json(PROPS))
        server.route("POST", STREAM, Canned(pieces=kobold_sse("ok")))
        provider = KoboldCppProvider(server.url, capabilities=Capabilities(context_size=4096))
        await collect(provider, messages, options=RequestOptions(temperature=0.2, seed=5))
    body = server.requests[-1].json()
    assert (
        body["prompt"]
        == "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nLook:<|im_end|>\n<|im_start|>assistant\n"
    )
    assert body["max_length"] == 1024  # always sent: KoboldCPP stops at 512 otherwise
    assert body["max_context_length"] == 4096
    assert (body["temperature"], body["sampler_seed"]) == (0.2, 5)
    assert body["images"] == [base64.b64encode(PNG).decode()]
    assert body["stop_sequence"] == ["<|im_end|>"] and body["trim_stop"] is True
    assert body["genkey"].startswith("KCPP")


async def test_without_props_the_prompt_is_chatml() -> None:
    async with ReplayServer() as server:
        server.route("POST", STREAM, Canned(pieces=kobold_sse("ok")))
        await collect(
            KoboldCppProvider(server.url),
            [Message.user("hi")],
            options=RequestOptions(max_tokens=50),
        )
    body = server.requests[-1].json()
    assert body["prompt"] == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert body["max_length"] == 50 and body["stop_sequence"] == ["<|im_end|>"]


async def test_native_tools_go_to_the_openai_endpoint_with_max_tokens() -> None:
    """Edge case 31: the output-token limit is sent on the native path too."""
    chunks = [{"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": None}]},
              {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}]  # fmt: skip
    async with ReplayServer() as server:
        server.route("POST", "/v1/chat/completions", Canned(pieces=sse(*chunks)))
        await collect(KoboldCppProvider(server.url), tools=[WEATHER])
    body = server.requests[-1].json()
    assert body["max_tokens"] == 1024 and body["tools"][0]["function"]["name"] == "get_weather"


async def test_stop_calls_abort_with_the_genkey() -> None:
    async with ReplayServer() as server:
        server.route("POST", STREAM, Canned(pieces=kobold_sse("a", "b")[:2], hang=True))
        server.route("POST", "/api/extra/abort", Canned.json({"success": "true", "done": "true"}))
        provider = KoboldCppProvider(server.url)

        async def consume() -> None:
            async for _ in provider.stream([Message.user("q")], [], RequestOptions()):
                pass

        task = asyncio.create_task(consume())
        for _ in range(500):  # until the answer is streaming (a busy machine is slow)
            if any(r.path == STREAM for r in server.requests):
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.wait_for(server.client_left.wait(), 5)
    generate = next(r for r in server.requests if r.path == STREAM).json()
    abort = next(r for r in server.requests if r.path == "/api/extra/abort")
    assert abort.json() == {"genkey": generate["genkey"]}


async def test_busy_is_retried_then_reported() -> None:
    busy = {
        "detail": {"msg": "Server is busy; please try again later.", "type": "service_unavailable"}
    }
    answers = [Canned.json(busy, status=503)]

    def route(request: object) -> Canned:
        return answers.pop(0) if answers else Canned(pieces=kobold_sse("free"))

    async with ReplayServer() as server:
        server.route("POST", STREAM, route)
        events = await collect(KoboldCppProvider(server.url, busy_retries=(0.01,)))
        assert isinstance(events[-1], Reply) and events[-1].text == "free"
        server.route("POST", STREAM, Canned.json(busy, status=503))
        with pytest.raises(
            ProviderError, match=r"answered HTTP 503: Server is busy; please try again later\."
        ):
            await collect(KoboldCppProvider(server.url, busy_retries=(0.01,)))


async def test_wrong_password() -> None:
    body = {
        "detail": {
            "error": "Unauthorized",
            "msg": "Authentication key is missing or invalid.",
            "type": "unauthorized",
        }
    }
    async with ReplayServer() as server:
        server.route("POST", STREAM, Canned.json(body, status=401))
        with pytest.raises(
            ProviderError, match=r"needs its password.*Authentication key is missing or invalid\."
        ):
            await collect(KoboldCppProvider(server.url))


async def test_stream_cut_before_the_finish_reason() -> None:
    async with ReplayServer() as server:
        server.route("POST", STREAM, Canned(pieces=kobold_sse("par", "tial")[:2], cut=True))
        with pytest.raises(ProviderError, match="mid-answer"):
            await collect(KoboldCppProvider(server.url))


async def test_probe_and_model_list() -> None:
    version = {"result": "KoboldCpp", "version": "1.102", "protected": False, "llm": True, "txt2img": False,
               "vision": True, "audio": False, "transcribe": False, "multiplayer": False, "websearch": False,
               "tts": False, "embeddings": False, "savedata": False, "admin": False, "guidance": False}  # fmt: skip
    async with ReplayServer() as server:
        server.route("GET", "/api/extra/version", Canned.json(version))
        server.route("GET", "/api/extra/true_max_context_length", Canned.json({"value": 8192}))
        server.route(
            "GET", "/api/v1/model", Canned.json({"result": "koboldcpp/Mistral-7B-Instruct"})
        )
        provider = KoboldCppProvider(server.url)
        assert await provider.list_models() == ["Mistral-7B-Instruct"]
        assert await provider.probe() == Capabilities(
            native_tools=False, vision=True, context_size=8192
        )
