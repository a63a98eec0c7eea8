"""The accuracy bench runs from a clone alone: its data set is in the repository."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "bench" / "data" / "bfcl-dev"


def test_the_development_set_is_here_whole_with_its_licence() -> None:
    cases = (DATA / "cases.jsonl").read_bytes()
    assert hashlib.sha256(cases).hexdigest() == (
        "0a8663e7e8bdb0750ad3f117b4246b6459182a64bf1c494112868cad0ec2a63d"
    )
    assert "Apache License" in (DATA / "LICENSE").read_text()
    assert "Berkeley Function Calling Leaderboard" in (DATA / "README.md").read_text()


def test_its_checker_passes_its_own_self_test() -> None:
    done = subprocess.run(
        [sys.executable, str(DATA / "checker.py"), str(DATA / "cases.jsonl")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert "checks run: 500, failures: 0" in done.stdout


def test_the_bench_reads_it_from_the_repository() -> None:
    from bench import accuracy

    assert accuracy.DEFAULT_CASES == DATA / "cases.jsonl"


def test_every_benchmark_is_named_and_runs_from_the_package() -> None:
    done = subprocess.run([sys.executable, "-m", "bench"], capture_output=True, text=True,
                          timeout=60, cwd=DATA.parents[2])  # fmt: skip
    assert done.returncode == 0, done.stderr
    for name in ("accuracy", "overhead", "gui", "downloads", "selection_recall"):
        assert f"  {name} " in done.stdout
        shown = subprocess.run([sys.executable, "-m", "bench", name, "--help"],
                               capture_output=True, text=True, timeout=60,
                               cwd=DATA.parents[2])  # fmt: skip
        assert shown.returncode == 0 and "usage:" in shown.stdout, name
