"""`python -m desktop docs ...` as a script runs it, LOOMCHAT_DATA_DIR at a temporary data
folder."""

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.documents import pdf_pages


def docs(data: Path, *args: str) -> tuple[int, str, str]:
    env = {**os.environ, "LOOMCHAT_DATA_DIR": str(data)}
    done = subprocess.run(
        [sys.executable, "-m", "desktop", "docs", *args],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


def test_add_list_search_update_and_remove(tmp_path: Path) -> None:
    data, folder = tmp_path / "data", tmp_path / "papers"
    folder.mkdir()
    (folder / "router.pdf").write_bytes(pdf_pages(["Unplug it.", "Hold reset for ten seconds."]))
    (folder / "notes.md").write_text("# Garden\nWater the tomatoes twice a week.\n")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 nothing more")
    code, out, err = docs(data, "add", "home", str(folder))
    assert code == 0, err
    assert "home: 2 added, 0 updated" in out and "broken.pdf: has no text" in out
    assert "2/3 files" in err or "3/3 files" in err  # the progress line
    code, out, _ = docs(data, "search", "reset", "--json")
    (hit,) = [h for h in json.loads(out) if h["path"].endswith("router.pdf")]
    assert code == 0 and hit["page"] == 2 and hit["collection"] == "home"
    code, out, _ = docs(data, "search", "tomatoes")
    assert out.startswith("[1] notes.md — Garden")
    (folder / "notes.md").unlink()
    code, out, _ = docs(data, "index")
    assert "1 removed" in out
    code, out, _ = docs(data, "list", "--json")
    (listed,) = json.loads(out)
    assert (listed["name"], listed["files"], listed["pages"]) == ("home", 1, 2)
    assert docs(data, "remove", "home")[0] == 0
    assert json.loads(docs(data, "list", "--json")[1]) == []


def test_bad_arguments_exit_2_and_an_unknown_collection_1(tmp_path: Path) -> None:
    code, _, err = docs(tmp_path, "add", "x", str(tmp_path / "nowhere"))
    assert code == 2 and "no such file or folder" in err
    code, _, err = docs(tmp_path, "remove", "nothing")
    assert code == 1 and "no document collection named 'nothing'" in err
