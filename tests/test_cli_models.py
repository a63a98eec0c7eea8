"""`python -m desktop models ...` as a script runs it: HF_ENDPOINT points the library at a
local stand-in for the Hub, LOOMCHAT_DATA_DIR at a temporary data folder."""

import asyncio
import hashlib
import json
import os
import sys
from pathlib import Path

from tests.support.hub_server import FakeHub, HubFileData, HubRepoData

REPO = "test/Tiny-GGUF"
CONTENT = os.urandom(2 * 1024 * 1024 + 5)


async def models(data: Path, hub_url: str, *args: str) -> tuple[int, str, str]:
    env = {**os.environ, "HF_ENDPOINT": hub_url, "LOOMCHAT_DATA_DIR": str(data)}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "desktop", "models", *args, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


def hub() -> FakeHub:
    return FakeHub({
        REPO: HubRepoData({"tiny-Q4_K_M.gguf": HubFileData(CONTENT)}, downloads=7, likes=2),
        "test/Other-GGUF": HubRepoData({"o-Q8_0.gguf": HubFileData(b"o")}, downloads=1),
    })  # fmt: skip


async def test_search_prints_repos_and_json(tmp_path: Path) -> None:
    async with hub() as server:
        code, out, _ = await models(tmp_path, server.url, "search", "tiny")
        assert code == 0 and out.split("\t")[0] == REPO
        code, out, _ = await models(tmp_path, server.url, "search", "gguf", "--json")
    assert code == 0
    assert json.loads(out) == [
        {"repo_id": REPO, "downloads": 7, "likes": 2},
        {"repo_id": "test/Other-GGUF", "downloads": 1, "likes": 0},
    ]


async def test_download_then_list_then_delete(tmp_path: Path) -> None:
    async with hub() as server:
        code, out, err = await models(
            tmp_path, server.url, "download", REPO, "tiny-Q4_K_M.gguf", "--json"
        )
        assert code == 0, err
        done = json.loads(out)
        path = tmp_path / "models" / "tiny-Q4_K_M.gguf"
        assert done == {"path": str(path), "size": len(CONTENT),
                        "sha256": hashlib.sha256(CONTENT).hexdigest()}  # fmt: skip
        assert path.read_bytes() == CONTENT
        assert "[##############################] 100%" in err  # the text progress bar
        code, out, _ = await models(tmp_path, server.url, "list", "--json")
        (listed,) = json.loads(out)
        assert listed["name"] == "tiny-Q4_K_M.gguf" and listed["size"] == len(CONTENT)
        assert listed["problem"].startswith("not a readable GGUF file")  # random bytes
        code, out, _ = await models(tmp_path, server.url, "delete", "tiny-Q4_K_M.gguf")
        assert code == 0 and not path.exists()


async def test_failures_exit_1_with_a_message_and_bad_arguments_2(tmp_path: Path) -> None:
    async with hub() as server:
        code, _, err = await models(tmp_path, server.url, "download", REPO, "nope.gguf")
        assert code == 1 and "has no GGUF file 'nope.gguf'" in err
        code, _, err = await models(tmp_path, server.url, "download", "nobody/x", "a.gguf")
        assert code == 1 and "No such model on Hugging Face" in err
        code, _, err = await models(tmp_path, server.url, "delete", "../../etc/passwd")
        assert code == 1 and "There is no model named" in err
        code, _, err = await models(tmp_path, server.url, "fetch")
        assert code == 2 and "invalid choice: 'fetch'" in err
    code, _, err = await models(tmp_path, "http://127.0.0.1:9", "search", "qwen")
    assert code == 1 and "Hugging Face cannot be reached; choose a model file instead" in err
    assert "Traceback" not in err
