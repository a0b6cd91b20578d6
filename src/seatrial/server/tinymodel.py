"""Write a tiny Llama-style model directory (config + tokenizer, no weights) for ``--load-format dummy``.

Run by the *engine's* Python (it has ``tokenizers``), so this file imports nothing from seatrial:

    ENGINE_PYTHON tinymodel.py OUT_DIR [MAX_LEN] [--weights]

With ``--weights`` it also writes real random BF16 weights (``model.safetensors``, torch + safetensors
from the engine's venv), so the directory is a complete checkpoint that audit and plan can read and
vLLM can load without ``--load-format dummy``.

The tokenizer is a byte-level BPE trained in-process on generated text; vLLM loads it through
``PreTrainedTokenizerFast``. ``<think>`` and ``</think>`` are single (non-special) tokens, so the model
can be served with ``--reasoning-parser deepseek_r1``. head_dim is 64 because vLLM's CPU attention rejects 16.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

#: the BPE trainer's target; on this corpus it stops at ~450 tokens, once every word is one token
VOCAB_SIZE = 2048
WORDS = [
    "the",
    "model",
    "server",
    "request",
    "token",
    "cache",
    "prefix",
    "decode",
    "prefill",
    "latency",
    "throughput",
    "queue",
    "batch",
    "kernel",
    "memory",
    "tensor",
    "layer",
    "attention",
    "expert",
    "scale",
    "shard",
    "weight",
    "value",
    "python",
    "rust",
    "go",
    "java",
    "write",
    "function",
    "test",
    "class",
    "parse",
    "sort",
    "list",
    "map",
    "tree",
    "graph",
    "string",
    "number",
    "file",
    "read",
    "loop",
]
THINK_TOKENS = ("<think>", "</think>")
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)


def corpus(lines: int = 4000, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 24))) for _ in range(lines)]


def write_tokenizer(out: Path) -> tuple[int, int]:
    """tokenizer.json and tokenizer_config.json; returns the EOS id and how many tokens the tokenizer has."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    special = ["<|endoftext|>", "<|user|>", "<|assistant|>", "<|system|>"]
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE, special_tokens=special, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(corpus(), trainer=trainer)
    # reasoning markers as single, non-special vocabulary entries: vLLM's --reasoning-parser deepseek_r1
    # refuses a tokenizer without them, and skip_special_tokens must not strip them from the text
    think = [AddedToken(t, special=False, normalized=False) for t in THINK_TOKENS]
    tok.add_tokens(think)
    tok.save(str(out / "tokenizer.json"))
    cfg = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "eos_token": "<|endoftext|>",
        "bos_token": None,
        "unk_token": None,
        "model_max_length": 8192,
        "chat_template": CHAT_TEMPLATE,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(cfg, indent=2))
    eos = tok.token_to_id("<|endoftext|>")
    assert eos is not None
    return int(eos), tok.get_vocab_size(with_added_tokens=True)


def model_vocab(tokens: int) -> int:
    """The model's vocabulary: the tokenizer's, rounded up to 64 rows. A model row that no token has decodes
    to no text, and with random weights the model samples its rows about evenly: a 2,048-row model over a
    451-token tokenizer streamed 5 of 1,440 32-token chat answers with no text, 512 rows none
    (benchmarks/textless_answers.py)."""
    return -(-tokens // 64) * 64


def write_config(out: Path, eos_id: int, max_len: int, vocab: int) -> None:
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 256,
        "intermediate_size": 512,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 64,
        "vocab_size": vocab,
        "max_position_embeddings": max_len,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "bos_token_id": eos_id,
        "eos_token_id": eos_id,
    }
    (out / "config.json").write_text(json.dumps(config, indent=2))


def write_weights(out: Path) -> None:
    import torch
    from safetensors.torch import save_file

    cfg = json.loads((out / "config.json").read_text())
    h, inter, v = cfg["hidden_size"], cfg["intermediate_size"], cfg["vocab_size"]
    q, kv = cfg["num_attention_heads"] * cfg["head_dim"], cfg["num_key_value_heads"] * cfg["head_dim"]
    gen = torch.Generator().manual_seed(0)

    def rand(*shape: int) -> torch.Tensor:
        return (torch.randn(*shape, generator=gen) * 0.02).to(torch.bfloat16)

    t = {
        "model.embed_tokens.weight": rand(v, h),
        "model.norm.weight": torch.ones(h, dtype=torch.bfloat16),
        "lm_head.weight": rand(v, h),
    }
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        t |= {
            p + "self_attn.q_proj.weight": rand(q, h),
            p + "self_attn.k_proj.weight": rand(kv, h),
            p + "self_attn.v_proj.weight": rand(kv, h),
            p + "self_attn.o_proj.weight": rand(h, q),
            p + "mlp.gate_proj.weight": rand(inter, h),
            p + "mlp.up_proj.weight": rand(inter, h),
            p + "mlp.down_proj.weight": rand(h, inter),
            p + "input_layernorm.weight": torch.ones(h, dtype=torch.bfloat16),
            p + "post_attention_layernorm.weight": torch.ones(h, dtype=torch.bfloat16),
        }
    save_file(t, str(out / "model.safetensors"), metadata={"format": "pt"})


def main(argv: list[str]) -> int:
    flags = [a for a in argv[1:] if a.startswith("--")]
    args = [a for a in argv[1:] if not a.startswith("--")]
    out = Path(args[0])
    max_len = int(args[1]) if len(args) > 1 else 8192
    out.mkdir(parents=True, exist_ok=True)
    eos_id, tokens = write_tokenizer(out)
    write_config(out, eos_id, max_len, model_vocab(tokens))
    if "--weights" in flags:
        write_weights(out)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
