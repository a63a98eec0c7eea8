"""The curated catalogue: its file checked, which models fit a machine, the recommendation."""

import json
from pathlib import Path

import pytest

from desktop.core.models.catalogue import (
    CatalogueError,
    Machine,
    fit,
    load_catalogue,
    recommend,
)

GB = 1024**3


def test_the_shipped_catalogue_reads_and_spans_families_and_sizes() -> None:
    models = load_catalogue()
    assert len({m.family for m in models}) >= 4
    sizes = [m.ram_gb for m in models]
    assert min(sizes) <= 1.0 and max(sizes) >= 7.0
    assert any(m.vision and m.projector for m in models)
    assert len({m.id for m in models}) == len(models)
    assert {m.purpose for m in models} == {"chat", "embeddings"}


def test_an_embedding_model_is_never_the_recommended_one() -> None:
    models = load_catalogue()
    tiny = Machine(int(0.5 * GB), 500 * GB)  # only the embedding models would fit
    assert any(fit(m, tiny).fits for m in models if m.purpose == "embeddings")
    assert recommend(models, tiny) is None


def test_fit_says_why_not() -> None:
    models = {m.id: m for m in load_catalogue()}
    small = Machine(ram_bytes=4 * GB, free_disk_bytes=100 * GB)
    assert fit(models["qwen2.5-1.5b"], small).fits
    too_big = fit(models["qwen2.5-7b"], small)
    assert not too_big.fits and too_big.why_not == "needs 7 GB of RAM; this machine has 4 GB"
    full = fit(models["qwen2.5-1.5b"], Machine(ram_bytes=64 * GB, free_disk_bytes=GB // 2))
    assert not full.fits and "of disk" in full.why_not


@pytest.mark.parametrize(
    ("ram_gb", "expected"),
    [(1, None), (1.5, "qwen2.5-0.5b"), (2, "llama3.2-1b"), (8, "phi3.5-mini"), (32, "llama3.1-8b")],
)
def test_the_recommendation_is_the_most_capable_that_fits(
    ram_gb: int, expected: str | None
) -> None:
    chosen = recommend(load_catalogue(), Machine(int(ram_gb * GB), 500 * GB))
    assert (chosen.id if chosen else None) == expected


@pytest.mark.parametrize(
    ("cores", "expected"),
    [(2, "qwen2.5-1.5b"), (4, "phi3.5-mini"), (8, "qwen2.5-7b"), (16, "llama3.1-8b")],
)
def test_on_few_cores_a_big_model_fits_but_a_quicker_one_is_recommended(
    cores: int, expected: str
) -> None:
    machine = Machine(32 * GB, 500 * GB, cores)
    chosen = recommend(load_catalogue(), machine)
    assert chosen is not None and chosen.id == expected
    eight_b = next(m for m in load_catalogue() if m.id == "llama3.1-8b")
    verdict = fit(eight_b, machine)
    assert verdict.fits and verdict.slow == (cores < 16)
    assert verdict.text() == ("fits" if cores >= 16 else "fits, slow on this CPU")


def test_where_no_model_is_quick_the_smallest_that_fits_is_recommended() -> None:
    chosen = recommend(load_catalogue(), Machine(32 * GB, 500 * GB, cores=0))
    assert chosen is not None and chosen.id == "qwen2.5-0.5b"


def test_a_damaged_catalogue_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "models.json"
    bad.write_text(json.dumps({"models": [{"id": "x", "repo": "not a repo"}]}))
    with pytest.raises(CatalogueError, match="cannot be read"):
        load_catalogue(bad)


def test_a_catalogue_model_is_found_with_the_projector_it_names() -> None:
    from desktop.core.models.catalogue import choice_for
    from desktop.core.models.hub import HubFile

    gemma = next(m for m in load_catalogue() if m.vision)
    assert gemma.projector is not None
    files = [
        HubFile(gemma.file, 3000, "a" * 64),
        HubFile("mmproj-model-bf16.gguf", 5, None),  # the smaller one, not the named one
        HubFile(gemma.projector, 800, "b" * 64),
        HubFile("README.md", 10, None),
    ]
    choice = choice_for(gemma, files)
    assert choice is not None and choice.projector == files[2]
    assert choice_for(gemma, files[:1]) is None  # the repo lost its projector
    assert choice_for(gemma, files[1:]) is None  # ... or its model
