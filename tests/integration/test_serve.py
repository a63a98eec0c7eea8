"""`python -m desktop serve` as a person starts it, over the real llama-server and the small
real model, driven by the `openai` client's own tool-calling loop: the model's call comes
back as a standard tool call, the client runs it, and the model answers with its result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import openai

from desktop.core.runtime import LlamaServer

MULTIPLY: Any = {
    "type": "function",
    "function": {
        "name": "multiply",
        "description": "Multiply two whole numbers exactly.",
        "parameters": {"type": "object", "properties": {
            "a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]},
    },
}  # fmt: skip


def test_the_openai_clients_tool_loop_completes_against_desktop_serve(
    llama_server: LlamaServer, tmp_path: Path
) -> None:
    env = {**os.environ, "LOOMCHAT_DATA_DIR": str(tmp_path)}
    command = [sys.executable, "-m", "desktop", "serve", "--provider", "llamacpp",
               "--url", llama_server.base_url, "--port", "0"]  # fmt: skip
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first.startswith("Loomchat API at http://127.0.0.1:"), first
        url = first.split()[3]
        token = process.stdout.readline().removeprefix("token: ").strip()
        client = openai.OpenAI(api_key=token, base_url=url, max_retries=0, timeout=240)
        messages: list[Any] = [
            {"role": "user", "content": "What is 1234 times 5678? Use the multiply tool."}
        ]
        called: list[dict[str, int]] = []
        for _ in range(3):  # the loop as the client's docs write it
            answer = client.chat.completions.create(
                model="any", messages=messages, tools=[MULTIPLY], temperature=0, seed=42
            )
            message = answer.choices[0].message
            if not message.tool_calls:
                break
            assert answer.choices[0].finish_reason == "tool_calls"
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                assert call.type == "function"
                arguments = json.loads(call.function.arguments)
                called.append(arguments)
                product = arguments["a"] * arguments["b"]
                messages.append({"role": "tool", "tool_call_id": call.id, "content": str(product)})
        assert called and called[0] == {"a": 1234, "b": 5678}
        assert answer.choices[0].finish_reason == "stop"
        assert "7006652" in (message.content or "").replace(",", "")
        client.close()
    finally:
        process.terminate()
        process.wait(30)
        if process.stdout is not None:
            process.stdout.close()
