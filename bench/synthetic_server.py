"""A local OpenAI-compatible server that streams a long answer at a fixed rate.

    python -m bench.synthetic_server --tokens 4000 --rate 2000

Prints `ready PORT` once it listens on 127.0.0.1. Each token is one SSE event, as
llama.cpp sends them; they go out in small batches every few milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

WORDS = [
    "The",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "the",
    "lazy",
    "dog.",
    "**Bold**",
    "and",
    "`code`",
    "and",
    "[links](http://example.invalid)",
    "in",
    "Markdown,",
    "with\n\n-",
    "lists\n-",
    "of",
    "items\n\n",
]


def event(payload: dict[str, object]) -> bytes:
    return f"data: {json.dumps(payload)}\n\n".encode()


async def serve(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, tokens: int, rate: float
) -> None:
    head = await reader.readuntil(b"\r\n\r\n")
    length = 0
    for line in head.decode("latin-1").split("\r\n"):
        if line.lower().startswith("content-length:"):
            length = int(line.split(":")[1])
    await reader.readexactly(length)
    if head.startswith(b"GET /v1/models"):
        body = json.dumps(
            {"object": "list", "data": [{"id": "synthetic", "object": "model"}]}
        ).encode()
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
            + str(len(body)).encode()
            + b"\r\nConnection: close\r\n\r\n"
            + body
        )
    elif head.startswith(b"POST /v1/chat/completions"):
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
        )
        started = time.perf_counter()
        sent = 0
        while sent < tokens:
            due = min(tokens, int((time.perf_counter() - started) * rate) + 1)
            batch = b"".join(
                event(
                    {"choices": [{"index": 0, "delta": {"content": WORDS[i % len(WORDS)] + " "}}]}
                )
                for i in range(sent, due)
            )
            sent = due
            writer.write(batch)
            await writer.drain()
            await asyncio.sleep(0.004)
        writer.write(event({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
        writer.write(
            event({"choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": tokens}})
        )
        writer.write(b"data: [DONE]\n\n")
    else:
        writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
    await writer.drain()
    writer.close()


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tokens", type=int, default=4000)
    parser.add_argument("--rate", type=float, default=2000)
    args = parser.parse_args()
    server = await asyncio.start_server(
        lambda r, w: serve(r, w, args.tokens, args.rate), "127.0.0.1", 0
    )
    print("ready", server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
