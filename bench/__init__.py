"""Loomchat's product benchmarks, each a module run as `python -m bench NAME [options]`.
Each prints ratios measured side by side in one run; `docs/benchmarks.md` keeps the latest
figures with their commands."""
