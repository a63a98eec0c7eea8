"""Search and repo files through huggingface_hub, against a local stand-in for the Hub."""

import pytest

from desktop.core.models.hub import Hub, HubError, HubFile, gguf_choices, quantisation
from tests.support.hub_server import FakeHub, HubFileData, HubRepoData


def repos() -> dict[str, HubRepoData]:
    return {
        "bartowski/Qwen2.5-0.5B-Instruct-GGUF": HubRepoData(
            {
                "Qwen2.5-0.5B-Instruct-Q4_K_M.gguf": HubFileData(b"q4" * 100),
                "Qwen2.5-0.5B-Instruct-Q8_0.gguf": HubFileData(b"q8" * 200),
                "README.md": HubFileData(b"# card"),
            },
            downloads=900,
            likes=40,
        ),
        "someone/qwen-tiny-GGUF": HubRepoData(
            {"tiny-Q2_K.gguf": HubFileData(b"x")}, downloads=5, likes=1
        ),
        "unsloth/gemma-3-4b-it-GGUF": HubRepoData(
            {
                "gemma-3-4b-it-Q4_K_M.gguf": HubFileData(b"g" * 300),
                "mmproj-F16.gguf": HubFileData(b"p" * 30),
            },
        ),
    }


async def test_search_finds_gguf_repos_most_downloaded_first() -> None:
    async with FakeHub(repos()) as hub:
        found = await Hub(hub.url).search("qwen")
        asked = hub.requests[0]
    assert [r.repo_id for r in found] == [
        "bartowski/Qwen2.5-0.5B-Instruct-GGUF", "someone/qwen-tiny-GGUF"
    ]  # fmt: skip
    assert (found[0].downloads, found[0].likes) == (900, 40)
    assert asked.path.startswith("/api/models?")
    assert "filter=gguf" in asked.path and "sort=downloads" in asked.path


async def test_a_repos_files_with_sizes_sha256_and_quantisation() -> None:
    async with FakeHub(repos()) as hub:
        choices = await Hub(hub.url).choices("bartowski/Qwen2.5-0.5B-Instruct-GGUF")
        asked = hub.requests[0].path
    assert "blobs=True" in asked or "blobs=true" in asked
    assert [(c.name, c.quant, c.size) for c in choices] == [
        ("Qwen2.5-0.5B-Instruct-Q4_K_M.gguf", "Q4_K_M", 200),
        ("Qwen2.5-0.5B-Instruct-Q8_0.gguf", "Q8_0", 400),
    ]
    import hashlib

    assert choices[0].files[0].sha256 == hashlib.sha256(b"q4" * 100).hexdigest()


async def test_a_vision_model_comes_with_its_projector() -> None:
    async with FakeHub(repos()) as hub:
        (choice,) = await Hub(hub.url).choices("unsloth/gemma-3-4b-it-GGUF")
    assert choice.projector is not None and choice.projector.name == "mmproj-F16.gguf"
    assert choice.size == 330


async def test_an_unknown_repo_and_an_unreachable_hub_are_said_plainly() -> None:
    async with FakeHub(repos()) as hub:
        with pytest.raises(HubError, match="No such model on Hugging Face"):
            await Hub(hub.url).files("nobody/nothing")
    with pytest.raises(HubError, match="Hugging Face cannot be reached; choose a model file"):
        await Hub("http://127.0.0.1:9").search("qwen")  # nothing listens on port 9


async def test_a_hub_that_never_answers_times_out_and_the_asking_ends() -> None:
    import time

    async with FakeHub(repos(), stall=True) as hub:
        began = time.monotonic()
        with pytest.raises(HubError, match=r"cannot be reached.*no answer in 1 s"):
            await Hub(hub.url, timeout_s=1).search("qwen")
    assert time.monotonic() - began < 5  # the child asking was killed, not waited for


def test_split_files_are_one_choice() -> None:
    parts = [HubFile(f"big-Q4_K_M-0000{i}-of-00003.gguf", 10, None) for i in (2, 1, 3)]
    (choice,) = gguf_choices(parts)
    assert choice.name == "big-Q4_K_M-00001-of-00003.gguf" and choice.size == 30
    assert [f.name for f in choice.files] == sorted(p.name for p in parts)
    assert quantisation("x/Llama-3.2-3B-Instruct-IQ4_XS.gguf") == "IQ4_XS"


QWEN_CARD = """---
license: apache-2.0
license_link: https://huggingface.co/Qwen/Qwen2.5-7B-Instruct/blob/main/LICENSE
base_model: Qwen/Qwen2.5-7B-Instruct
pipeline_tag: text-generation
---

# Qwen2.5-7B-Instruct-GGUF

<a href="https://chat.qwenlm.ai/"><img src="badge.svg"/></a>

## Introduction

Qwen2.5 is the latest series of **Qwen** large language models. For Qwen2.5, we release a
number of base language models and instruction-tuned language models ranging from 0.5 to
72 billion parameters. See [our blog](https://qwenlm.github.io/blog/qwen2.5/) for more.

```bash
pip install huggingface_hub
```
"""


def test_a_cards_summary_is_its_first_paragraph_of_prose() -> None:
    from desktop.core.models.hub import SUMMARY_CHARS, card_summary

    summary = card_summary(QWEN_CARD.split("---", 2)[2])
    assert summary.startswith("Qwen2.5 is the latest series of Qwen large language models.")
    assert "See our blog for more." in summary and "http" not in summary  # links as text
    assert card_summary("# Title\n\n| a | b |\n|---|---|\n\n```\ncode only here, long enough"
                        " to pass for prose if fences were ignored\n```\n") == ""  # fmt: skip
    long = card_summary("word " * 500)
    assert long.endswith("…") and len(long) <= SUMMARY_CHARS + 1


async def test_a_repos_card_in_brief_and_none_where_it_has_none() -> None:
    from desktop.core.models.hub import CARD_MAX_BYTES

    cards = {
        "Qwen/Qwen2.5-7B-Instruct-GGUF": HubRepoData({"README.md": HubFileData(QWEN_CARD.encode())}),
        "bare/no-card-GGUF": HubRepoData({"x-Q4_0.gguf": HubFileData(b"x")}),
        # Hostile: broken YAML, bytes that are not UTF-8, megabytes of one line.
        "odd/card-GGUF": HubRepoData({"README.md": HubFileData(
            b"---\nlicense: [unclosed\n---\n\xff\xfe" + b"A" * (4 * CARD_MAX_BYTES)
        )}),
    }  # fmt: skip
    async with FakeHub(cards) as hub:
        qwen = await Hub(hub.url).card("Qwen/Qwen2.5-7B-Instruct-GGUF")
        bare = await Hub(hub.url).card("bare/no-card-GGUF")
        odd = await Hub(hub.url).card("odd/card-GGUF")
    assert (qwen.licence, qwen.base_model) == ("apache-2.0", "Qwen/Qwen2.5-7B-Instruct")
    assert qwen.summary.startswith("Qwen2.5 is the latest series")
    assert (bare.licence, bare.base_model, bare.summary) == (None, None, "")
    assert odd.licence is None and len(odd.summary) <= 361
