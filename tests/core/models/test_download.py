"""Downloads through huggingface_hub from a local stand-in for the Hub: progress, a cut
resumed, a resume after a cancel (as after a quit), a wrong sha256, a 404, no space."""

import asyncio
import hashlib
import io
import itertools
import os
from pathlib import Path

import pytest

from desktop.core.models.download import (
    DownloadError,
    Progress,
    download_choice,
    download_file,
    part_path,
)
from desktop.core.models.hub import Hub
from tests.support.hub_server import FakeHub, HubFileData, HubRepoData

REPO = "test/Tiny-GGUF"
CONTENT = os.urandom(3 * 1024 * 1024 + 17)
# huggingface_hub writes in chunks of 10 MB: a cut keeps whole chunks only.
BIG = os.urandom(25 * 1024 * 1024 + 3)
CHUNK = 10 * 1024 * 1024


def hub_with(**files: HubFileData) -> FakeHub:
    return FakeHub({REPO: HubRepoData({k.replace("__", "."): v for k, v in files.items()})})


async def test_a_download_lands_whole_and_checked_with_progress(tmp_path: Path) -> None:
    seen: list[Progress] = []
    async with hub_with(tiny_Q4_K_M__gguf=HubFileData(CONTENT)) as hub:
        (choice,) = await Hub(hub.url).choices(REPO)
        path = await download_choice(
            REPO, choice, tmp_path, endpoint=hub.url, on_progress=seen.append
        )
    assert path == tmp_path / "tiny_Q4_K_M.gguf"
    assert path.read_bytes() == CONTENT
    assert not part_path(tmp_path, choice.files[0]).exists()
    assert seen and seen[-1].total == len(CONTENT)
    assert all(a.done <= b.done for a, b in itertools.pairwise(seen))


async def test_a_connection_cut_halfway_is_resumed_from_where_it_stopped(tmp_path: Path) -> None:
    half = len(BIG) // 2
    async with hub_with(tiny_Q4_K_M__gguf=HubFileData(BIG, cut_after=half)) as hub:
        (choice,) = await Hub(hub.url).choices(REPO)
        path = await download_choice(REPO, choice, tmp_path, endpoint=hub.url)
        ranges = hub.ranges("tiny_Q4_K_M.gguf")
    assert path.read_bytes() == BIG
    assert ranges == ["", f"bytes={CHUNK}-"]  # the chunk that had arrived is not asked again


async def test_a_cancelled_download_resumes_next_time_without_refetching(tmp_path: Path) -> None:
    """As after Cancel or a quit: the bytes on disk are kept and not asked for again."""
    data = HubFileData(BIG, stall_after=15 * 1024 * 1024)  # then the network hangs
    async with hub_with(tiny_Q4_K_M__gguf=data) as hub:
        (choice,) = await Hub(hub.url).choices(REPO)
        (file,) = choice.files
        task = asyncio.ensure_future(download_file(REPO, file, tmp_path, endpoint=hub.url))
        part = part_path(tmp_path, file)
        for _ in range(400):
            await asyncio.sleep(0.05)
            if part.is_file() and part.stat().st_size >= CHUNK:
                break
        task.cancel()  # Cancel, or the app quits
        with pytest.raises(asyncio.CancelledError):
            await task
        assert part.stat().st_size == CHUNK  # what had arrived is kept
        hub.requests.clear()
        path = await download_file(REPO, file, tmp_path, endpoint=hub.url)
        ranges = hub.ranges("tiny_Q4_K_M.gguf")
    assert path.read_bytes() == BIG
    assert ranges == [f"bytes={CHUNK}-"]


async def test_a_wrong_sha256_deletes_the_file_and_says_so(tmp_path: Path) -> None:
    async with hub_with(tiny_Q4_K_M__gguf=HubFileData(CONTENT, wrong_sha=True)) as hub:
        (choice,) = await Hub(hub.url).choices(REPO)
        with pytest.raises(DownloadError, match=r"arrived damaged.*deleted"):
            await download_choice(REPO, choice, tmp_path, endpoint=hub.url)
    assert list(tmp_path.iterdir()) == []  # nothing half-written left behind


async def test_a_file_gone_from_the_hub_is_a_clear_message(tmp_path: Path) -> None:
    async with hub_with(tiny_Q4_K_M__gguf=HubFileData(CONTENT)) as hub:
        (choice,) = await Hub(hub.url).choices(REPO)
        del hub.repos[REPO].files["tiny_Q4_K_M.gguf"]
        with pytest.raises(DownloadError, match="is not on Hugging Face"):
            await download_choice(REPO, choice, tmp_path, endpoint=hub.url)


async def test_too_little_free_space_is_said_before_anything_is_fetched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import psutil

    real = psutil.disk_usage

    def nearly_full(path: str) -> object:
        usage = real(path)
        return type(usage)(usage.total, usage.total - 1000, 1000, 99.9)

    monkeypatch.setattr(psutil, "disk_usage", nearly_full)
    async with hub_with(tiny_Q4_K_M__gguf=HubFileData(CONTENT)) as hub:
        (choice,) = await Hub(hub.url).choices(REPO)
        with pytest.raises(DownloadError, match="Not enough free disk space"):
            await download_choice(REPO, choice, tmp_path, endpoint=hub.url)
        assert hub.ranges("tiny_Q4_K_M.gguf") == []


async def test_split_parts_and_the_projector_all_come_along(tmp_path: Path) -> None:
    one, two, proj = CONTENT[:1000], CONTENT[1000:2500], b"projector" * 10
    async with FakeHub({REPO: HubRepoData({
        "big-Q4_K_M-00001-of-00002.gguf": HubFileData(one),
        "big-Q4_K_M-00002-of-00002.gguf": HubFileData(two),
        "mmproj-F16.gguf": HubFileData(proj),
    })}) as hub:  # fmt: skip
        (choice,) = await Hub(hub.url).choices(REPO)
        path = await download_choice(REPO, choice, tmp_path, endpoint=hub.url)
    assert path.name == "big-Q4_K_M-00001-of-00002.gguf"
    assert (tmp_path / "big-Q4_K_M-00002-of-00002.gguf").read_bytes() == two
    # Beside its model under the model's name: another repo's "mmproj-F16.gguf" would clash.
    assert (tmp_path / "big-Q4_K_M-00001-of-00002.mmproj.gguf").read_bytes() == proj
    assert not (tmp_path / "mmproj-F16.gguf").exists()
    assert hashlib.sha256(path.read_bytes()).digest() == hashlib.sha256(one).digest()


async def test_a_hostile_file_name_or_a_planted_link_writes_nowhere_else(tmp_path: Path) -> None:
    from desktop.core.models.download import local_name
    from desktop.core.models.hub import HubFile

    models = tmp_path / "models"
    assert local_name(HubFile("../../evil.gguf", 3, None)) == "evil.gguf"  # flattened into models/
    for name in ("..", ".hidden.gguf", "x\\..\\y.gguf", "notes.txt", "dir/"):
        with pytest.raises(DownloadError, match="not a model file name"):
            await download_file(REPO, HubFile(name, 3, None), models, endpoint="http://127.0.0.1:9")
    target = tmp_path / "elsewhere.bin"
    target.write_bytes(b"precious")
    models.mkdir(exist_ok=True)
    (models / "tiny_Q4_K_M.gguf.part").symlink_to(target)
    async with hub_with(tiny_Q4_K_M__gguf=HubFileData(CONTENT)) as hub:
        (choice,) = await Hub(hub.url).choices(REPO)
        path = await download_choice(REPO, choice, models, endpoint=hub.url)
    assert path.read_bytes() == CONTENT and target.read_bytes() == b"precious"
    assert not path.is_symlink()


def test_the_writer_thread_hashes_what_it_writes_and_a_full_disk_is_raised(
    tmp_path: Path,
) -> None:
    import errno

    from desktop.core.models.transfer import HashingWriter as _HashingWriter

    path = tmp_path / "x.part"
    with path.open("wb") as out:
        writer = _HashingWriter(out)
        for piece in (CONTENT[:1000], CONTENT[1000:]):
            writer.write(piece)
        digest = writer.hexdigest(path)
        writer.close()
    assert path.read_bytes() == CONTENT
    assert digest == hashlib.sha256(CONTENT).hexdigest()

    class FullDisk(io.BytesIO):
        def write(self, data: object) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    writer = _HashingWriter(FullDisk())
    writer.write(b"a" * 100)
    with pytest.raises(OSError, match="No space left"):
        writer.hexdigest(path)
    writer.close()
