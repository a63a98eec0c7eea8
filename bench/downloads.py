"""Download throughput through the app against a raw httpx download of the same file from
the same local server (a stand-in for the Hub on a real socket), side by side, alternating.

    python -m bench downloads [--mb 491] [--rounds 3]

The app's download includes what a person gets from it: the child process, the library's
ranged GET, the .part file and the sha256 check. Prints each side's median MB/s and the
ratio app/raw (target >= 0.9).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from desktop.core.models.download import download_file
from desktop.core.models.hub import HubFile
from tests.support.hub_server import FakeHub, HubFileData, HubRepoData

REPO, NAME = "bench/Big-GGUF", "big-Q4_K_M.gguf"


async def raw(url: str, target: Path) -> float:
    began = time.perf_counter()
    async with (
        httpx.AsyncClient(timeout=60) as client,
        client.stream("GET", f"{url}/{REPO}/resolve/main/{NAME}") as response,
    ):
        with target.open("wb") as out:
            async for chunk in response.aiter_bytes(1 << 20):
                out.write(chunk)
    return time.perf_counter() - began


async def app(url: str, file: HubFile, folder: Path) -> float:
    began = time.perf_counter()
    await download_file(REPO, file, folder, endpoint=url)
    return time.perf_counter() - began


async def run() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    # The catalogue's smallest model is 491 MB: downloads are that size or larger.
    parser.add_argument("--mb", type=int, default=491)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    content = os.urandom(args.mb * 1024 * 1024)
    data = HubFileData(content)
    file = HubFile(NAME, len(content), data.sha256)
    raw_s, app_s = [], []
    async with FakeHub({REPO: HubRepoData({NAME: data})}) as hub:
        await app(hub.url, file, Path(tempfile.mkdtemp()))  # warm: the fork server's start
        for _ in range(args.rounds):
            with tempfile.TemporaryDirectory() as work:
                raw_s.append(await raw(hub.url, Path(work) / "raw.bin"))
            with tempfile.TemporaryDirectory() as work:
                app_s.append(await app(hub.url, file, Path(work)))
    raw_rate = args.mb / statistics.median(raw_s)
    app_rate = args.mb / statistics.median(app_s)
    print(f"file: {args.mb} MB, rounds: {args.rounds}")
    print(f"raw httpx download : {raw_rate:8.1f} MB/s (median)")
    print(f"app download       : {app_rate:8.1f} MB/s (median; child, ranged GET, sha256)")
    print(f"ratio app/raw      : {app_rate / raw_rate:.3f} (target >= 0.9)")
    return 0


def main() -> None:
    sys.exit(asyncio.run(run()))


if __name__ == "__main__":
    main()
