"""Write a GGUF that llama.cpp's ``llama-server`` serves: a Llama-architecture model with random weights and a
real tokenizer, for tests (the tests' tiny model) and for a GPU host (a real shape, e.g. Llama-3.2-1B).

Run by a Python that imports llama.cpp's own ``gguf`` package (the vendored ``gguf-py`` on PYTHONPATH, or
PyPI's ``gguf``), so this file imports nothing from seatrial:

    python llamagguf.py OUT.gguf --hf-dir DIR          # config.json + tokenizer.json of an HF model folder
    python llamagguf.py OUT.gguf --shape llama-3.2-1b --vocab ggml-vocab-llama-bpe.gguf

``--hf-dir``: the folder tinymodel.py writes (its byte-level BPE tokenizer.json and config.json).
``--shape``: a built-in config (:data:`SHAPES`) with the ``tokenizer.*`` keys copied from ``--vocab`` (one of
llama.cpp's ``models/ggml-vocab-*.gguf``, which hold a real tokenizer and no weights). Weights are random
(normal, std 0.02; norms 1) in F16 (``--dtype f32`` for F32), written one tensor at a time.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

#: real model shapes; the tokenizer comes from ``--vocab``
SHAPES: dict[str, dict[str, Any]] = {
    "llama-3.2-1b": {
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_hidden_layers": 16,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0,
        "tie_word_embeddings": True,
    },
}


def hf_tokenizer(folder: Path) -> dict[str, Any]:
    """tokenizer.* values from a byte-level BPE ``tokenizer.json`` (+ tokenizer_config.json's chat template)."""
    from gguf import TokenType

    tok = json.loads((folder / "tokenizer.json").read_text())
    vocab: dict[str, int] = dict(tok["model"]["vocab"])
    added = {a["content"]: a for a in tok.get("added_tokens", [])}
    for content, a in added.items():
        vocab[content] = a["id"]
    tokens = [""] * (max(vocab.values()) + 1)
    for text, i in vocab.items():
        tokens[i] = text
    types = [
        (TokenType.CONTROL if added[t]["special"] else TokenType.USER_DEFINED) if t in added else TokenType.NORMAL
        for t in tokens
    ]
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok["model"]["merges"]]
    cfg = json.loads((folder / "tokenizer_config.json").read_text())
    eos = vocab[cfg["eos_token"]]
    return {"model": "gpt2", "pre": "gpt-2", "tokens": tokens, "types": [int(t) for t in types],
            "merges": merges, "bos": eos, "eos": eos, "add_bos": False,
            "chat_template": cfg.get("chat_template")}  # fmt: skip


def copy_vocab(writer: Any, vocab: Path) -> int:
    """Every ``tokenizer.*`` key of ``vocab`` copied to ``writer``; returns the token count."""
    from gguf import GGUFReader, GGUFValueType

    reader = GGUFReader(str(vocab))
    n = 0
    for name, f in reader.fields.items():
        if not name.startswith("tokenizer."):
            continue
        value = f.contents()
        kind = f.types[0]
        if kind == GGUFValueType.ARRAY:
            writer.add_array(name, value)
            if name == "tokenizer.ggml.tokens":
                n = len(value)
        else:
            writer.add_key_value(name, value, kind)
    if not n:
        raise SystemExit(f"{vocab}: no tokenizer.ggml.tokens")
    return n


def add_tokenizer(writer: Any, t: dict[str, Any]) -> int:
    writer.add_tokenizer_model(t["model"])
    writer.add_tokenizer_pre(t["pre"])
    writer.add_token_list(t["tokens"])
    writer.add_token_types(t["types"])
    writer.add_token_merges(t["merges"])
    writer.add_bos_token_id(t["bos"])
    writer.add_eos_token_id(t["eos"])
    writer.add_add_bos_token(t["add_bos"])
    if t["chat_template"]:
        writer.add_chat_template(t["chat_template"])
    return len(t["tokens"])


def add_hparams(writer: Any, c: dict[str, Any], vocab: int) -> None:
    head_dim = c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]
    writer.add_context_length(c["max_position_embeddings"])
    writer.add_embedding_length(c["hidden_size"])
    writer.add_block_count(c["num_hidden_layers"])
    writer.add_feed_forward_length(c["intermediate_size"])
    writer.add_head_count(c["num_attention_heads"])
    writer.add_head_count_kv(c["num_key_value_heads"])
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_rope_dimension_count(head_dim)
    writer.add_rope_freq_base(c["rope_theta"])
    writer.add_layer_norm_rms_eps(c["rms_norm_eps"])
    writer.add_vocab_size(vocab)


def tensor_shapes(c: dict[str, Any], vocab: int) -> dict[str, tuple[int, ...]]:
    """GGUF tensor name -> shape (rows, columns as in PyTorch's Linear.weight)."""
    h, ff = c["hidden_size"], c["intermediate_size"]
    hd = c.get("head_dim") or h // c["num_attention_heads"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd
    shapes: dict[str, tuple[int, ...]] = {"token_embd.weight": (vocab, h), "output_norm.weight": (h,)}
    if not c.get("tie_word_embeddings"):
        shapes["output.weight"] = (vocab, h)
    for i in range(c["num_hidden_layers"]):
        p = f"blk.{i}."
        shapes |= {p + "attn_norm.weight": (h,), p + "attn_q.weight": (q, h), p + "attn_k.weight": (kv, h),
                   p + "attn_v.weight": (kv, h), p + "attn_output.weight": (h, q), p + "ffn_norm.weight": (h,),
                   p + "ffn_gate.weight": (ff, h), p + "ffn_up.weight": (ff, h), p + "ffn_down.weight": (h, ff)}  # fmt: skip
    return shapes


def write(out: Path, config: dict[str, Any], tokenizer: dict[str, Any] | Path, dtype: str, seed: int) -> None:
    from gguf import GGMLQuantizationType, GGUFWriter, LlamaFileType

    writer = GGUFWriter(str(out), "llama")
    writer.add_name("seatrial random llama")
    ftype = np.float16 if dtype == "f16" else np.float32
    writer.add_file_type(LlamaFileType.MOSTLY_F16 if dtype == "f16" else LlamaFileType.ALL_F32)
    vocab = copy_vocab(writer, tokenizer) if isinstance(tokenizer, Path) else add_tokenizer(writer, tokenizer)
    add_hparams(writer, config, vocab)
    shapes = tensor_shapes(config, vocab)
    for name, shape in shapes.items():  # declared first, data streamed after: one tensor in memory at a time
        kind = GGMLQuantizationType.F32 if len(shape) == 1 or dtype == "f32" else GGMLQuantizationType.F16
        nbytes = int(np.prod(shape)) * (4 if kind == GGMLQuantizationType.F32 else 2)
        writer.add_tensor_info(name, shape, np.dtype(np.float32 if len(shape) == 1 else ftype), nbytes, kind)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    rng = np.random.default_rng(seed)
    for name, shape in shapes.items():
        if len(shape) == 1:
            data = np.ones(shape, dtype=np.float32)
        else:
            data = (rng.standard_normal(shape, dtype=np.float32) * 0.02).astype(ftype)
        writer.write_tensor_data(data)
        del name
    writer.close()


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--hf-dir", type=Path, help="config.json + tokenizer.json (tinymodel.py's folder)")
    src.add_argument("--shape", choices=sorted(SHAPES), help="a built-in config; needs --vocab")
    ap.add_argument("--vocab", type=Path, help="a ggml-vocab-*.gguf whose tokenizer.* keys are copied")
    ap.add_argument("--dtype", choices=("f16", "f32"), default="f16")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.hf_dir:
        config = json.loads((args.hf_dir / "config.json").read_text())
        write(args.out, config, hf_tokenizer(args.hf_dir), args.dtype, args.seed)
    else:
        if not args.vocab or not args.vocab.is_file():
            ap.error("--shape needs --vocab FILE (a ggml-vocab-*.gguf)")
        write(args.out, SHAPES[args.shape], args.vocab, args.dtype, args.seed)
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
