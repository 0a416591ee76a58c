"""The gallery's real-model code: small random-weight models from transformers, built without a download."""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["tiny_gpt2"]


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
