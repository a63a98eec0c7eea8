"""A tiny BERT embedding model as a real GGUF, random weights, written with gguf's own
writer: llama-server loads and serves it like any embedding model, in a second, with no
download. Its vectors mean nothing; the plumbing around them is what is tested."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np

VOCABULARY = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"abcdefghijklmnopqrstuvwxyz"]
WIDTH, LAYERS, HEADS, FEED = 32, 2, 2, 64


def tiny_bert(path: Path, seed: int = 7) -> Path:
    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(str(path), "bert")
    writer.add_name("tiny-bert")
    writer.add_context_length(512)
    writer.add_embedding_length(WIDTH)
    writer.add_feed_forward_length(FEED)
    writer.add_block_count(LAYERS)
    writer.add_head_count(HEADS)
    writer.add_layer_norm_eps(1e-12)
    writer.add_causal_attention(False)
    writer.add_pooling_type(gguf.PoolingType.MEAN)
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre("default")
    writer.add_token_type_count(2)
    # WordPiece in llama.cpp's form: a word's first piece behind the phantom space.
    writer.add_token_list([t if t.startswith("[") else "\u2581" + t for t in VOCABULARY])
    writer.add_token_types([gguf.TokenType.CONTROL] * 5 + [gguf.TokenType.NORMAL] * 26)
    for key, token in (("bos", "[CLS]"), ("sep", "[SEP]"), ("unk", "[UNK]"),
                       ("pad", "[PAD]"), ("mask", "[MASK]")):  # fmt: skip
        getattr(writer, f"add_{key}_token_id")(VOCABULARY.index(token))

    def add(name: str, *shape: int) -> None:
        writer.add_tensor(name, (rng.standard_normal(shape) * 0.1).astype(np.float32))

    add("token_embd.weight", len(VOCABULARY), WIDTH)
    add("token_types.weight", 2, WIDTH)
    add("position_embd.weight", 512, WIDTH)
    add("token_embd_norm.weight", WIDTH)
    add("token_embd_norm.bias", WIDTH)
    for n in range(LAYERS):
        for part, rows, columns in (("attn_q", WIDTH, WIDTH), ("attn_k", WIDTH, WIDTH),
                                    ("attn_v", WIDTH, WIDTH), ("attn_output", WIDTH, WIDTH),
                                    ("ffn_up", FEED, WIDTH), ("ffn_down", WIDTH, FEED)):  # fmt: skip
            add(f"blk.{n}.{part}.weight", rows, columns)
            add(f"blk.{n}.{part}.bias", rows)
        for norm in ("attn_output_norm", "layer_output_norm"):
            add(f"blk.{n}.{norm}.weight", WIDTH)
            add(f"blk.{n}.{norm}.bias", WIDTH)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
