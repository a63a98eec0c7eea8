"""A stand-in for the Hugging Face Hub on a real socket, answering what `huggingface_hub`
asks (read from its source): `GET /api/models` (search), `GET /api/models/{repo}` with
`blobs=True` (files with sizes and LFS sha256), `HEAD`/`GET /{repo}/resolve/main/{file}`
with `Range`, 404s with the `X-Error-Code` the library maps to its errors. Faults on
demand: a connection cut after some bytes (once, or every time), a wrong sha256 listed,
a stall."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

COMMIT = "a" * 40
MISSING = object()  # a field or header the hostile Hub leaves out


@dataclass
class HubFileData:
    content: bytes
    wrong_sha: bool = False  # list a sha256 that is not the content's
    cut_after: int | None = None  # close the connection after this many bytes of a GET
    cuts_left: int = 1  # how many GETs are cut (then they are served whole)
    stall: bool = False  # send nothing after the headers
    stall_after: int | None = None  # send this many bytes of a GET, then hang
    # A hostile Hub: what the listing says (MISSING: no "size" at all; any JSON value), a
    # name of another type, a body that is not the listing's.
    listed_size: object = None  # None: the content's length
    listed_name: object = None  # None: the file's own name
    content_length: object = None  # None: the body's length; MISSING: no header at all
    endless: bool = False  # after the content, bytes for ever (no Content-Length)
    ignore_range: bool = False  # always the whole file, with 200

    def __post_init__(self) -> None:
        self._real_sha256 = hashlib.sha256(self.content).hexdigest()  # once: files are big

    @property
    def sha256(self) -> str:
        return hashlib.sha256(b"other").hexdigest() if self.wrong_sha else self._real_sha256


@dataclass
class HubRepoData:
    files: dict[str, HubFileData]
    downloads: int = 0
    likes: int = 0


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]


@dataclass
class FakeHub:
    repos: dict[str, HubRepoData] = field(default_factory=dict)
    stall: bool = False  # accept connections and never answer
    requests: list[Request] = field(default_factory=list)
    url: str = ""
    _server: asyncio.Server | None = None
    _writers: set[asyncio.StreamWriter] = field(default_factory=set)
    _handlers: set[asyncio.Task[Any]] = field(default_factory=set)

    async def __aenter__(self) -> FakeHub:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        host, port = self._server.sockets[0].getsockname()[:2]
        self.url = f"http://{host}:{port}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in list(self._writers):  # keep-alive connections the client left open
            writer.close()
        for handler in list(self._handlers):  # a stalled answer sleeps: it ends here
            handler.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._server.wait_closed(), 2)

    def ranges(self, filename: str) -> list[str]:
        """The Range headers of the GETs of a file, in order ("" for none)."""
        return [
            r.headers.get("range", "")
            for r in self.requests
            if r.method == "GET" and r.path.split("?")[0].endswith("/" + filename)
        ]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if (me := asyncio.current_task()) is not None:
            self._handlers.add(me)
            me.add_done_callback(self._handlers.discard)
        self._writers.add(writer)
        try:
            while True:  # keep-alive: the library reuses its connections
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = {
                    k.strip().lower(): v.strip()
                    for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)
                }
                self.requests.append(Request(method, target, headers))
                if self.stall:
                    await reader.read()  # until the client goes
                    return
                if not await self._answer(method, target, headers, writer):
                    return
        except (ConnectionError, asyncio.CancelledError):  # ended by the client, or by the exit
            return
        finally:
            self._writers.discard(writer)
            writer.close()

    async def _answer(
        self, method: str, target: str, headers: dict[str, str], writer: asyncio.StreamWriter
    ) -> bool:
        """Answer one request; False when the connection must close."""
        parts = urlsplit(target)
        path, query = unquote(parts.path), parse_qs(parts.query)
        if path == "/api/models":
            return await self._json(writer, self._search(query))
        if path.startswith("/api/models/"):
            repo_id = path.removeprefix("/api/models/").split("/revision/")[0]
            repo = self.repos.get(repo_id)
            if repo is None:
                return await self._error(writer, 404, "RepoNotFound", "Repository not found")
            return await self._json(writer, self._info(repo_id, repo))
        if "/resolve/" in path:
            repo_id, _, rest = path.lstrip("/").partition("/resolve/")
            filename = rest.split("/", 1)[1] if "/" in rest else ""
            repo = self.repos.get(repo_id)
            if repo is None:
                return await self._error(writer, 404, "RepoNotFound", "Repository not found")
            file = repo.files.get(filename)
            if file is None:
                return await self._error(writer, 404, "EntryNotFound", "Entry not found")
            return await self._file(method, headers, file, writer)
        return await self._error(writer, 404, "", "Not found")

    def _search(self, query: dict[str, list[str]]) -> list[dict[str, Any]]:
        words = query.get("search", [""])[0].lower()
        found = [
            {"id": repo_id, "_id": repo_id, "downloads": repo.downloads, "likes": repo.likes,
             "tags": ["gguf"], "library_name": "gguf", "private": False}
            for repo_id, repo in self.repos.items()
            if words in repo_id.lower()
        ]  # fmt: skip
        found.sort(key=lambda m: -int(str(m["downloads"])))
        limit = int(query.get("limit", ["1000"])[0])
        return found[:limit]

    def _info(self, repo_id: str, repo: HubRepoData) -> dict[str, Any]:
        siblings = []
        for name, f in repo.files.items():
            size = len(f.content) if f.listed_size is None else f.listed_size
            sibling = {"rfilename": name if f.listed_name is None else f.listed_name,
                       "size": size, "blobId": "b" * 40,
                       "lfs": {"size": size, "sha256": f.sha256, "pointerSize": 134}}  # fmt: skip
            if size is MISSING:
                del sibling["size"], sibling["lfs"]
            siblings.append(sibling)
        return {"id": repo_id, "_id": repo_id, "sha": COMMIT, "siblings": siblings,
                "downloads": repo.downloads, "likes": repo.likes, "tags": ["gguf"]}  # fmt: skip

    async def _json(self, writer: asyncio.StreamWriter, body: Any) -> bool:
        data = json.dumps(body).encode()
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(data)}\r\n\r\n".encode()
            + data
        )
        await writer.drain()
        return True

    async def _error(self, writer: asyncio.StreamWriter, status: int, code: str, text: str) -> bool:
        data = json.dumps({"error": text}).encode()
        extra = f"X-Error-Code: {code}\r\nX-Error-Message: {text}\r\n" if code else ""
        writer.write(
            f"HTTP/1.1 {status} Not Found\r\nContent-Type: application/json\r\n{extra}"
            f"Content-Length: {len(data)}\r\n\r\n".encode()
            + data
        )
        await writer.drain()
        return True

    async def _file(
        self, method: str, headers: dict[str, str], file: HubFileData, writer: asyncio.StreamWriter
    ) -> bool:
        size = len(file.content)
        start = 0
        status = "200 OK"
        if file.ignore_range:
            headers = {k: v for k, v in headers.items() if k != "range"}
        if (wanted := headers.get("range", "")).startswith("bytes="):
            start = int(wanted.removeprefix("bytes=").split("-")[0] or 0)
            status = "206 Partial Content"
        body = memoryview(file.content)[start:]  # no copy of a file of hundreds of MB
        common = (
            f'ETag: "{file.sha256}"\r\nX-Linked-Etag: "{file.sha256}"\r\n'
            f"X-Linked-Size: {size}\r\nX-Repo-Commit: {COMMIT}\r\nAccept-Ranges: bytes\r\n"
        )
        if status.startswith("206"):
            common += f"Content-Range: bytes {start}-{size - 1}/{size}\r\n"
        length: object = len(body) if method == "GET" else size
        if file.content_length is not None:
            length = file.content_length
        if file.endless:
            length = MISSING
        sized = (
            f"Content-Length: {length}\r\n" if length is not MISSING else "Connection: close\r\n"
        )
        head = f"HTTP/1.1 {status}\r\nContent-Type: application/octet-stream\r\n{common}{sized}\r\n"
        writer.write(head.encode())
        if method == "HEAD":
            await writer.drain()
            return True
        if file.endless:
            writer.write(body)
            while True:  # until the client goes
                writer.write(b"\0" * 65536)
                await writer.drain()
        if file.stall:
            await asyncio.sleep(3600)
        if file.stall_after is not None and file.cuts_left > 0:
            file.cuts_left -= 1
            writer.write(body[: max(file.stall_after - start, 0)])
            await writer.drain()
            await asyncio.sleep(3600)  # until the client goes (its task is cancelled then)
        if file.cut_after is not None and file.cuts_left > 0:
            file.cuts_left -= 1
            writer.write(body[: max(file.cut_after - start, 0)])
            await writer.drain()
            return False  # closed mid-body
        for offset in range(0, len(body), 64 * 1024):
            writer.write(body[offset : offset + 64 * 1024])
            await writer.drain()
        return length is not MISSING  # a body without a length ends with the connection


def _serve_catalogue(gguf: str, catalogue: str) -> None:
    """Serve every text model of the catalogue with the bytes of one GGUF file, at an
    address printed on stdout, until killed: the installer test's stand-in for the Hub
    (whichever model this machine is recommended, it downloads and runs the small one)."""
    from pathlib import Path

    models = json.loads(Path(catalogue).read_text(encoding="utf-8"))["models"]
    model = HubFileData(Path(gguf).read_bytes())  # hashed once, served under every name
    hub = FakeHub()
    for entry in models:
        if not entry["vision"]:  # a projector cannot be stood in for by a text model
            hub.repos.setdefault(entry["repo"], HubRepoData({})).files[entry["file"]] = model

    async def run() -> None:
        async with hub:
            print(hub.url, flush=True)
            await asyncio.Event().wait()

    asyncio.run(run())


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=_serve_catalogue.__doc__)
    parser.add_argument("--gguf", required=True, help="the model file to serve")
    parser.add_argument("--catalogue", default="resources/models.json")
    arguments = parser.parse_args()
    _serve_catalogue(arguments.gguf, arguments.catalogue)
