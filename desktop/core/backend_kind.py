"""The kinds of backend Loomchat talks to: the one list that the provider registry, the
settings file's schema and the CLI's `--provider` choices are all built from; and the
tool-calling tracks a conversation can be on."""

from __future__ import annotations

from typing import Literal, get_args

BackendKind = Literal["ollama", "lmstudio", "koboldcpp", "llamacpp", "openai", "vllm", "sglang"]
BACKEND_KINDS: tuple[BackendKind, ...] = get_args(BackendKind)

# Emulated is the default for local models; auto takes the calibration's choice.
Track = Literal["auto", "native", "emulated"]
TRACKS: tuple[Track, ...] = get_args(Track)
