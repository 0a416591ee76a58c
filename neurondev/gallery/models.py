"""The gallery's real-model code: small random-weight models from transformers, built without a download."""

from __future__ import annotations

import contextlib
from typing import Any

import torch

__all__ = ["tiny_gpt2", "tiny_llama"]


def tiny_gpt2(
    *, layers: int = 2, hidden: int = 64, heads: int = 2, sequence: int = 16, vocab: int = 1000
) -> tuple[torch.nn.Module, tuple[torch.Tensor], dict[str, Any]]:
    """A GPT-2 with random weights (no download) and its inputs: ``(model, (input_ids,), {"use_cache": False})``.

    Weights and inputs come from a private generator seed; the global RNG is left as it was.
    """
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(
        n_layer=layers,
        n_embd=hidden,
        n_head=heads,
        vocab_size=vocab,
        n_positions=max(64, sequence),
        bos_token_id=0,
        eos_token_id=0,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = GPT2LMHeadModel(config).eval()
        input_ids = torch.randint(0, vocab, (1, sequence))
    return model, (input_ids,), {"use_cache": False}


def tiny_llama(
    layers: int = 2,
    *,
    hidden: int = 64,
    heads: int = 2,
    kv_heads: int = 1,
    intermediate: int = 128,
    vocab: int = 1000,
    sequence: int = 16,
    meta: bool = False,
) -> tuple[torch.nn.Module, tuple[torch.Tensor], dict[str, Any]]:
    """A Llama with random weights (or, with ``meta``, on the meta device: no weight made) and its inputs:
    ``(model, (input_ids,), {"use_cache": False})``. Seeded privately; the global RNG is left as it was."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        num_hidden_layers=layers,
        hidden_size=hidden,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        intermediate_size=intermediate,
        vocab_size=vocab,
        max_position_embeddings=max(128, sequence),
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        with torch.device("meta") if meta else contextlib.nullcontext():
            model = LlamaForCausalLM(config).eval()
        input_ids = torch.randint(0, vocab, (1, sequence))
    return model, (input_ids,), {"use_cache": False}
