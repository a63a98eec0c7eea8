"""A hostile or broken Hub (a stand-in on a real socket, speaking what huggingface_hub
asks): bodies larger than the listing, endless ones, a Content-Length that does not fit,
a server that cuts every connection or ignores ranges, listings with no size, a negative
one, a name that is not text, terminal escapes in a repo's name, two files that land on
one name, a full disk. Each ends in a clear message and a bounded time; no `.part`
larger than the listing stays, nothing is reported downloaded that is not the file."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from desktop.cli_models import models_command
from desktop.core.models.download import DownloadError, download_choice, download_file
from desktop.core.models.hub import Hub, HubFile
from desktop.core.models.transfer import MAX_CONNECTIONS, Failed, fetch
from tests.support.hub_server import MISSING, FakeHub, HubFileData, HubRepoData

REPO = "test/Hostile-GGUF"
GGUF = b"GGUF" + os.urandom(4096 - 4)
KB4 = 4096


def hub_of(files: dict[str, HubFileData], repo: str = REPO) -> FakeHub:
    return FakeHub({repo: HubRepoData(files)})


def left_in(folder: Path) -> dict[str, int]:
    return {p.name: p.stat().st_size for p in folder.iterdir()} if folder.is_dir() else {}


@pytest.mark.parametrize(
    "served",
    [
        HubFileData(GGUF, listed_size=KB4, content_length=48 * 1024 * 1024),
        HubFileData(GGUF, listed_size=KB4, endless=True),
        HubFileData(GGUF + os.urandom(48 * 1024 * 1024), listed_size=KB4),
    ],
    ids=["2 GB Content-Length", "endless body", "48 MB body"],
)
async def test_more_than_the_listing_is_never_kept(tmp_path: Path, served: HubFileData) -> None:
    async with hub_of({"m.gguf": served}) as hub:
        (choice,) = await Hub(hub.url).choices(REPO)
        started = time.monotonic()
        with pytest.raises(DownloadError, match="not the file Hugging Face lists"):
            await download_choice(REPO, choice, tmp_path, endpoint=hub.url)
        assert time.monotonic() - started < 20
    assert not any(name.startswith("m.gguf") for name in left_in(tmp_path))


async def test_a_server_that_cuts_every_connection_is_given_up_on(tmp_path: Path) -> None:
    size = 40 * 1024 * 1024
    served = HubFileData(b"GGUF" + bytes(size - 4), cut_after=2 * 1024 * 1024, cuts_left=10**6)
    async with hub_of({"m.gguf": served}) as hub:
        (choice,) = await Hub(hub.url).choices(REPO)
        started = time.monotonic()
        with pytest.raises(DownloadError, match="cut off"):
            await download_choice(REPO, choice, tmp_path, endpoint=hub.url)
        assert time.monotonic() - started < 30
        assert len(hub.ranges("m.gguf")) == MAX_CONNECTIONS
    assert left_in(tmp_path).get("m.gguf.part", 0) <= size


async def test_a_server_that_ignores_ranges_starts_over_and_is_bounded(tmp_path: Path) -> None:
    big = b"GGUF" + os.urandom(25 * 1024 * 1024)
    served = HubFileData(big, cut_after=15 * 1024 * 1024, cuts_left=10**6, ignore_range=True)
    async with hub_of({"m.gguf": served}) as hub:
        (choice,) = await Hub(hub.url).choices(REPO)
        with pytest.raises(DownloadError):
            await download_choice(REPO, choice, tmp_path, endpoint=hub.url)
        assert len(hub.ranges("m.gguf")) == MAX_CONNECTIONS
    assert left_in(tmp_path).get("m.gguf.part", 0) <= len(big)


@pytest.mark.parametrize("listed", [0, MISSING, -1, "big"], ids=["0", "missing", "-1", "text"])
async def test_a_size_the_hub_does_not_give_is_checked_after_the_download(
    tmp_path: Path, listed: object
) -> None:
    async with hub_of({"m.gguf": HubFileData(GGUF, listed_size=listed),
                       "empty.gguf": HubFileData(b"", listed_size=listed)}) as hub:  # fmt: skip
        choices = {c.name: c for c in await Hub(hub.url).choices(REPO)}
        assert choices["m.gguf"].files[0].size == 0  # unknown, not trusted
        path = await download_choice(REPO, choices["m.gguf"], tmp_path, endpoint=hub.url)
        assert path.read_bytes() == GGUF
        with pytest.raises(DownloadError, match="empty file"):
            await download_choice(REPO, choices["empty.gguf"], tmp_path, endpoint=hub.url)
    assert "empty.gguf" not in left_in(tmp_path) and "empty.gguf.part" not in left_in(tmp_path)


async def test_a_listed_name_of_another_type_is_left_out(tmp_path: Path) -> None:
    async with hub_of(
        {"m.gguf": HubFileData(GGUF), "x.gguf": HubFileData(GGUF, listed_name=5)}
    ) as hub:
        files = await Hub(hub.url).files(REPO)
    assert [f.name for f in files] == ["m.gguf"]


async def test_one_name_for_two_files_gives_the_second_a_longer_name(tmp_path: Path) -> None:
    one, two = b"GGUF" + b"1" * 500, b"GGUF" + b"2" * 500
    async with hub_of({"v1/m.gguf": HubFileData(one), "v2/m.gguf": HubFileData(two)}) as hub:
        choices = {c.name: c for c in await Hub(hub.url).choices(REPO)}
        first = await download_choice(REPO, choices["v1/m.gguf"], tmp_path, endpoint=hub.url)
        second = await download_choice(REPO, choices["v2/m.gguf"], tmp_path, endpoint=hub.url)
        again = await download_choice(REPO, choices["v2/m.gguf"], tmp_path, endpoint=hub.url)
        fetched = len(hub.ranges("m.gguf"))
    assert (first.name, first.read_bytes()) == ("m.gguf", one)
    assert (second.name, second.read_bytes()) == ("v2-m.gguf", two)
    assert again == second and fetched == 2  # downloaded before: not fetched again
    async with hub_of({"m.gguf": HubFileData(b"GGUF" + b"3" * 700)}, "other/Repo") as hub:
        (choice,) = await Hub(hub.url).choices("other/Repo")
        third = await download_choice("other/Repo", choice, tmp_path, endpoint=hub.url)
    assert third.name == "other-Repo-m.gguf" and first.read_bytes() == one


@contextlib.contextmanager
def small_disk(tmp_path: Path, size: str) -> Iterator[Path]:
    folder = tmp_path / "small"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                             capture_output=True)  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip("a small disk needs a tmpfs mount, which this machine does not allow")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=False)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="tmpfs")
async def test_a_full_disk_deletes_the_part_and_frees_the_disk(tmp_path: Path) -> None:
    data = b"GGUF" + os.urandom(12 * 1024 * 1024)
    with small_disk(tmp_path, "4m") as disk:
        # The listing says it fits: the disk fills while it arrives.
        async with hub_of({"m.gguf": HubFileData(data)}) as hub:
            unknown = HubFile("m.gguf", 0, None)  # of unknown size: no space check first
            with pytest.raises(DownloadError, match="could not be written"):
                await download_file(REPO, unknown, disk, endpoint=hub.url)
        assert not any(name.endswith(".part") for name in left_in(disk))


def test_the_transfer_says_a_full_disk_and_asks_to_delete(tmp_path: Path) -> None:
    """The child's side alone, on a device that is always full."""
    found = fetch(REPO, "m.gguf", "http://127.0.0.1:9", "/dev/full", 10)
    assert isinstance(found, Failed) and found.kind in ("disk", "offline")


async def test_search_results_cannot_write_to_the_terminal(tmp_path: Path) -> None:
    hostile = "evil/\x1b]0;owned\x07\x1b[2J-GGUF"
    async with FakeHub({hostile: HubRepoData({"m.gguf": HubFileData(GGUF)})}) as hub:
        os.environ["HF_ENDPOINT"] = hub.url
        try:
            out, err = io.StringIO(), io.StringIO()
            args = type("Args", (), {"verb": "search", "query": "evil", "limit": 5, "json": False})
            assert await models_command(args(), out, err) == 0
        finally:
            del os.environ["HF_ENDPOINT"]
    assert "\x1b" not in out.getvalue() and "\x07" not in out.getvalue()
    assert "evil/" in out.getvalue()


async def test_models_commands_say_what_is_wrong_never_a_traceback(tmp_path: Path) -> None:
    from tests.test_cli_models import models

    many = {f"m-{i:03}-Q4_K_M.gguf": HubFileData(GGUF) for i in range(100)}
    data = tmp_path / "data"
    async with hub_of({**many, "UPPER.GGUF": HubFileData(GGUF)}) as hub:
        code, _, err = await models(data, hub.url, "download", REPO, "x" * 300 + ".gguf")
        assert code == 1 and len(err) < 2000 and "and 91 more" in err  # one short line
        code, out, err = await models(data, hub.url, "download", REPO, "UPPER.GGUF")
        assert code == 0, err
        code, out, _ = await models(data, hub.url, "list")
        assert out.startswith("UPPER.GGUF\t")  # one rule for the suffix, whatever its case
        code, _, err = await models(data, hub.url, "delete", "y" * 300 + ".gguf")
        assert code == 1 and "Traceback" not in err and "There is no model named" in err
        code, _, _ = await models(data, hub.url, "delete", "UPPER.GGUF")
        assert code == 0 and not (data / "models" / "UPPER.GGUF").exists()
        blocked = tmp_path / "blocked"
        blocked.mkdir()
        (blocked / "models").write_text("a file where the folder should be")
        code, _, err = await models(blocked, hub.url, "download", REPO, "UPPER.GGUF")
        assert code == 1 and "cannot be written" in err and "Traceback" not in err
