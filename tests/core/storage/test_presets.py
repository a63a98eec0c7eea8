"""Presets on disk: the built-in ones, a round trip, renames, the default, import and
export, and damaged or hostile files."""

import json
from pathlib import Path

import pytest

from desktop.core.storage.presets import BUILT_IN, Preset, PresetBook, PresetError


def test_with_no_file_the_built_in_presets_and_a_default(tmp_path: Path) -> None:
    book = PresetBook.load(tmp_path / "presets.json")
    assert book.presets == list(BUILT_IN) and book.default_preset == BUILT_IN[0]
    assert book.problem is None


def test_a_round_trip_keeps_every_field_and_the_default(tmp_path: Path) -> None:
    path = tmp_path / "presets.json"
    book = PresetBook.load(path)
    tutor = Preset(
        "French tutor", "Answer in French.", temperature=0.2, tools=False, track="native"
    )
    book.put(tutor)
    book.default = "French tutor"
    book.save()
    again = PresetBook.load(path)
    assert again.get("French tutor") == tutor and again.default == "French tutor"
    assert json.loads(path.read_text())["version"] == 1


def test_a_rename_keeps_the_place_and_the_default_and_names_stay_unique() -> None:
    book = PresetBook()
    book.default = "Concise"
    book.put(Preset("Brief", "Be brief."), replacing="Concise")
    assert [p.name for p in book.presets][1] == "Brief" and book.default == "Brief"
    with pytest.raises(PresetError, match="already a preset named 'Assistant'"):
        book.put(Preset("Assistant"), replacing="Brief")
    book.remove("Brief")
    assert book.default == "Assistant" and book.get("Brief") is None


def test_export_then_import_with_a_name_that_is_taken(tmp_path: Path) -> None:
    book = PresetBook()
    book.export("Concise", tmp_path / "concise.json")
    imported = book.import_file(tmp_path / "concise.json")
    assert imported.name == "Concise (2)" and imported.system_prompt == BUILT_IN[1].system_prompt
    assert book.import_file(tmp_path / "concise.json").name == "Concise (3)"


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"\xff\xfe\x00",
        json.dumps({"name": ""}).encode(),
        json.dumps({"name": "x", "temperature": "hot"}).encode(),
        json.dumps({"name": "x", "track": "teleport"}).encode(),
        json.dumps([1, 2]).encode(),
        b" " * 1_200_000,
    ],
)
def test_a_hostile_preset_file_is_refused_with_a_reason(tmp_path: Path, content: bytes) -> None:
    source = tmp_path / "bad.json"
    source.write_bytes(content)
    book = PresetBook()
    with pytest.raises(PresetError, match=r"bad\.json (is not a preset|is too large)"):
        book.import_file(source)
    assert book.presets == list(BUILT_IN)


def test_a_damaged_presets_file_gives_the_built_in_ones_and_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "presets.json"
    path.write_text('{"presets": [{"name": 5}]}')
    book = PresetBook.load(path)
    assert book.problem is not None and "could not be read" in book.problem
    assert book.presets == list(BUILT_IN)
    (kept,) = tmp_path.glob("presets.json.unreadable-*")  # set aside, said, never saved over
    assert kept.read_text() == '{"presets": [{"name": 5}]}' and kept.name in book.problem
    book.save()
    assert kept.read_text() == '{"presets": [{"name": 5}]}'


def test_a_hand_edited_file_with_twins_and_no_default_still_works(tmp_path: Path) -> None:
    path = tmp_path / "presets.json"
    path.write_text(json.dumps({"default": "gone", "presets": [
        {"name": "A", "system_prompt": "first"}, {"name": "A", "system_prompt": "second"},
    ]}))  # fmt: skip
    book = PresetBook.load(path)
    assert [p.system_prompt for p in book.presets] == ["first"] and book.default == "A"


def test_a_preset_names_the_collections_it_searches_and_old_files_search_all(
    tmp_path: Path,
) -> None:
    path = tmp_path / "presets.json"
    # As the code before collections wrote it: no "collections" key.
    old = {"version": 1, "default": "Plain",
           "presets": [{"name": "Plain", "system_prompt": "", "temperature": None,
                        "tools": True, "track": ""}]}  # fmt: skip
    path.write_text(json.dumps(old))
    book = PresetBook.load(path)
    plain = book.get("Plain")
    assert plain is not None and plain.collections is None and book.problem is None
    work = Preset("Work", collections=("Manuals", "Contracts"))
    book.put(work)
    book.save()
    saved = json.loads(path.read_text())["presets"]
    assert saved[-1]["collections"] == ["Manuals", "Contracts"]
    assert PresetBook.load(path).get("Work") == work
    with pytest.raises(PresetError, match="collections"):
        Preset.from_dict({"name": "x", "collections": "Manuals"})
