"""What llama-server's prompt cache keeps when the call gate's second look asks about the
turn alone, side by side per server layout, on the real server and the bundled model.

    .venv/bin/python bench/slot_cache.py

Each layout gets a fresh server and three one-token requests: a long conversation's prompt,
the prompt of its last turn alone (sharing the conversation's first part), the
conversation's prompt again. Prints, for each, the tokens evaluated, the tokens taken from
the cache (`timings.cache_n`) and the milliseconds: the third request is what a plain
answer after the second look costs. With two slots, `--pin` sends the turn alone to slot 1
and the conversation to slot 0 (`id_slot`).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from desktop.core.runtime import LlamaServer, ensure_bundled_model

LAYOUTS: list[tuple[str, list[str], bool]] = [
    ("one slot (the app's)", [], False),
    ("two slots, unified KV", ["--parallel", "2", "--kv-unified"], False),
    ("two slots, unified KV, pinned", ["--parallel", "2", "--kv-unified"], True),
    ("two slots, split KV, pinned", ["--parallel", "2", "--no-kv-unified"], True),
]


def prompts() -> tuple[str, str]:
    tools = " ".join(f"Tool {i}: does thing number {i} with care." for i in range(60))
    earlier = " ".join(
        f"Turn {i}: the user asked about topic {i} and got an answer." for i in range(80)
    )
    head = f"You are helpful. {tools}"
    turn = "User: tell me a joke\nAssistant:"
    return f"{head}\n{earlier}\n{turn}", f"{head}\n{turn}"


async def measure(extra: list[str], pin: bool) -> list[tuple[str, int, int, float]]:
    # 8k: with two split slots, each has 4k, room for the 2.3k-token conversation.
    server = LlamaServer(
        model=ensure_bundled_model(), threads=2, context_size=8192, extra_args=extra
    )
    await server.start()
    conversation, alone = prompts()
    rows = []
    try:
        async with httpx.AsyncClient(base_url=server.base_url, timeout=600) as client:
            for name, prompt, slot in (
                ("conversation", conversation, 0),
                ("turn alone", alone, 1),
                ("conversation again", conversation, 0),
            ):
                body: dict[str, object] = {"prompt": prompt, "n_predict": 1, "cache_prompt": True}
                if pin:
                    body["id_slot"] = slot
                timings = (await client.post("/completion", json=body)).json()["timings"]
                rows.append(
                    (name, timings["prompt_n"], timings.get("cache_n", 0), timings["prompt_ms"])
                )
    finally:
        server.stop()
    return rows


async def main() -> None:
    print("| layout | request | evaluated | from the cache | ms |")
    print("| --- | --- | --- | --- | --- |")
    for layout, extra, pin in LAYOUTS:
        for name, evaluated, cached, ms in await measure(extra, pin):
            print(f"| {layout} | {name} | {evaluated} | {cached} | {ms:.0f} |")


if __name__ == "__main__":
    asyncio.run(main())
