"""Ollama's models over its wire: /api/tags, a replayed /api/pull stream (per-layer
progress, an error line, a cut), /api/delete."""

import pytest

from desktop.core.providers.base import ProviderError
from desktop.core.providers.ollama import OllamaProvider
from desktop.core.providers.ollama_models import PullProgress, delete, installed, pull
from tests.support.replay_server import Canned, ReplayServer, ndjson, resplit

A, B = "sha256:" + "a" * 64, "sha256:" + "b" * 64
PULL = [
    {"status": "pulling manifest"},
    {"status": f"pulling {A[7:19]}", "digest": A, "total": 1000, "completed": 0},
    {"status": f"pulling {A[7:19]}", "digest": A, "total": 1000, "completed": 600},
    {"status": f"pulling {B[7:19]}", "digest": B, "total": 50, "completed": 50},
    {"status": f"pulling {A[7:19]}", "digest": A, "total": 1000, "completed": 1000},
    {"status": "verifying sha256 digest"},
    {"status": "writing manifest"},
    {"status": "success"},
]


async def test_installed_models_with_their_details() -> None:
    tags = {"models": [
        {"name": "qwen2.5:7b", "model": "qwen2.5:7b", "size": 4683087332, "digest": "x",
         "details": {"format": "gguf", "family": "qwen2", "parameter_size": "7.6B",
                     "quantization_level": "Q4_K_M"}},
        {"name": 5}, "junk",
    ]}  # fmt: skip
    async with ReplayServer() as server:
        server.route("GET", "/api/tags", Canned.json(tags))
        provider = OllamaProvider(server.url)
        (model,) = await installed(provider)
        await provider.aclose()
    assert (model.name, model.size, model.family, model.parameters, model.quantisation) == (
        "qwen2.5:7b", 4683087332, "qwen2", "7.6B", "Q4_K_M"
    )  # fmt: skip


async def test_a_pull_reports_per_layer_progress_to_success() -> None:
    seen: list[tuple[str, int, int]] = []

    def note(progress: PullProgress) -> None:
        seen.append((progress.status, progress.completed, progress.total))

    async with ReplayServer() as server:
        server.route("POST", "/api/pull", Canned(pieces=resplit(ndjson(*PULL), [7, 50, 3])))
        provider = OllamaProvider(server.url)
        done = await pull(provider, "qwen2.5:7b", note)
        await provider.aclose()
        assert server.requests[0].json() == {"model": "qwen2.5:7b", "stream": True}
    assert done.status == "success" and (done.completed, done.total) == (1050, 1050)
    assert (f"pulling {A[7:19]}", 600, 1000) in seen
    assert seen[-1] == ("success", 1050, 1050)


async def test_an_error_line_ends_the_pull_with_its_message() -> None:
    lines = ndjson(PULL[0], {"error": "pull model manifest: file does not exist"})
    async with ReplayServer() as server:
        server.route("POST", "/api/pull", Canned(pieces=lines))
        provider = OllamaProvider(server.url)
        with pytest.raises(ProviderError, match="could not pull nope: pull model manifest"):
            await pull(provider, "nope")
        await provider.aclose()


async def test_a_cut_pull_says_it_did_not_finish() -> None:
    async with ReplayServer() as server:
        server.route("POST", "/api/pull", Canned(pieces=ndjson(*PULL[:3]), cut=True))
        provider = OllamaProvider(server.url)
        with pytest.raises(ProviderError, match=r"broke mid-answer|before it finished"):
            await pull(provider, "qwen2.5:7b")
        await provider.aclose()


async def test_delete_and_deleting_what_is_not_there() -> None:
    async with ReplayServer() as server:
        server.route("DELETE", "/api/delete", Canned(200, "application/json", [b""]))
        provider = OllamaProvider(server.url)
        await delete(provider, "qwen2.5:7b")
        assert server.requests[0].json() == {"model": "qwen2.5:7b"}
        server.route("DELETE", "/api/delete", Canned.json({"error": "model 'x' not found"}, 404))
        with pytest.raises(ProviderError, match="Ollama has no model named x"):
            await delete(provider, "x")
        await provider.aclose()
