"""A hostile MCP server for the fault tests, written on the wire by hand (newline-delimited
JSON-RPC on stdio) so that it can send what no library would: `python mcp_raw_server.py
SPEC.json`. The spec says what it lists and answers:

    {"tools": [...],              the `tools/list` result's tools, as they are
     "results": {NAME: RESULT},   a `tools/call` result per tool name
     "huge": {NAME: BYTES},       answer NAME with one text block of BYTES bytes, one line
     "id_last": true,             write the answer's id last ({"result": ..., "id": 4})
     "helper": MARKER,            start a helper in the server's group (`sleep 600 MARKER`)
     "exit_on_eof": true}         exit at once when the input closes (the helper stays)
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any


def answer(request_id: Any, result: Any, id_last: bool) -> None:
    body = {"result": result, "jsonrpc": "2.0", "id": request_id} if id_last else {
        "jsonrpc": "2.0", "id": request_id, "result": result}  # fmt: skip
    sys.stdout.write(json.dumps(body) + "\n")
    sys.stdout.flush()


def huge_answer(request_id: Any, size: int, id_last: bool) -> None:
    """A text result of `size` bytes, written in pieces (never whole in memory here)."""
    text_start = '{"content": [{"type": "text", "text": "'
    head = f'{{"jsonrpc": "2.0", "id": {json.dumps(request_id)}, "result": ' if not id_last else (
        '{"jsonrpc": "2.0", "result": ')  # fmt: skip
    sys.stdout.write(head + text_start)
    piece = "x" * (1024 * 1024)
    for _ in range(size // len(piece)):
        sys.stdout.write(piece)
    tail = '"}]}' + (f', "id": {json.dumps(request_id)}}}' if id_last else "}")
    sys.stdout.write(tail + "\n")
    sys.stdout.flush()


def main() -> None:
    with open(sys.argv[1], encoding="utf-8") as file:
        spec = json.load(file)
    id_last = bool(spec.get("id_last"))
    if marker := spec.get("helper"):
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", marker],
                         stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:
            continue
        method = message.get("method")
        if method == "server/discover":
            sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": {
                "code": -32601, "message": "Method not found"}}) + "\n")  # fmt: skip
            sys.stdout.flush()
        elif method == "initialize":
            answer(message["id"], {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}}, "serverInfo": {"name": "raw", "version": "1"},
            }, id_last)  # fmt: skip
        elif method == "tools/list":
            answer(message["id"], {"tools": spec.get("tools", [])}, id_last)
        elif method == "tools/call":
            name = message["params"]["name"]
            if name in spec.get("huge", {}):
                huge_answer(message["id"], int(spec["huge"][name]), id_last)
            else:
                result = spec.get("results", {}).get(name, {"content": [
                    {"type": "text", "text": f"called {name}"}]})  # fmt: skip
                answer(message["id"], result, id_last)
        else:
            answer(message["id"], {}, id_last)
    if spec.get("exit_on_eof"):
        sys.exit(0)


if __name__ == "__main__":
    main()
