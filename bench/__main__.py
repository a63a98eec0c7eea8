"""`python -m bench NAME [options]`: run one benchmark; with no name, list them."""

from __future__ import annotations

import importlib
import sys

BENCHMARKS = {
    "accuracy": "tool-call accuracy on the BFCL development set, through the real server",
    "everyday": "everyday conversations through the app's session: right turns, formats, speed",
    "loops": "answers that go round in circles: the app's against the server's, side by side",
    "overhead": "tokens/s through the tool loop against a raw HTTP client, same server",
    "gui": "launch time, idle memory, the event loop's longest stall, opening a long chat",
    "downloads": "a model download through the app against a raw download, same stand-in Hub",
    "selection_recall": "how often the tool selection offers a case's tools (no model)",
    "documents": "document collections: indexing speed, index size, search latency by size",
    "retrieval": "document search quality: Python's library reference, recall@5 and MRR",
    "answers": "answers from documents: none, a collection, the page attached (the model)",
    "code_runner": "the code runner: print(1+1) fenced against plain, hostile programs' ends",
    "api": "desktop serve against llama-server's API: BFCL accuracy, added latency",
    "code_answers": "the code runner against the calculator: arithmetic and data questions",
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in BENCHMARKS:
        width = max(map(len, BENCHMARKS))
        print("usage: python -m bench NAME [options]   (NAME --help for its options)\n")
        for name, what in BENCHMARKS.items():
            print(f"  {name:<{width}}  {what}")
        return 0 if not argv else 2
    module = importlib.import_module(f"bench.{argv[0]}")
    sys.argv = [f"python -m bench {argv[0]}", *argv[1:]]
    module.main()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
