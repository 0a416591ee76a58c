"""Greedy decoding with transformers' generate() on a tiny Llama, the forward compiled: run as
`neurondev watch llama_generate.py openxla dynamic` (PJRT_DEVICE=CPU) or `... aot_eager static` (the host device).

The loop: generate() with a 'dynamic' cache (transformers' default, growing by one position a token) or a 'static'
one (preallocated, written at an index: what ND404 advises); or the user's own decode loop over a static cache and a
preallocated token buffer, its position a device tensor ('own': what the advice for generate's growing ids says), or
a Python int made into one each step and the tokens concatenated onto a growing tensor instead of a buffer
('own-arange-cat': torch.arange(cur, cur + 1), torch.cat). Before each call of the compiled forward, and once after, the
script writes down the runtime's own counts (dynamo's graphs, torch_xla's programs) and prints them as one JSON line."""

import sys

import torch
from runtime_record import print_record, record_each_call
from transformers import LlamaConfig, LlamaForCausalLM

backend, cache = (sys.argv[1:] + ["openxla", "dynamic"][len(sys.argv) - 1 :])[:2]
if backend == "openxla":
    import torch_xla

    device = torch_xla.device()
else:  # the host device: a PrivateUse1 accelerator, as TorchNeuron's
    import neurondev

    device = neurondev.host_device()


torch.manual_seed(0)
config = LlamaConfig(
    hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
    vocab_size=64, max_position_embeddings=64,
)  # fmt: skip
model = LlamaForCausalLM(config).to(device).eval()
record_each_call(model, backend)
model.forward = torch.compile(model.forward, backend=backend, dynamic=False)
prompt = torch.randint(1, 64, (1, 8), generator=torch.Generator().manual_seed(1)).to(device)


def decode(prompt: torch.Tensor, new: int, *, arange: bool = False, cat: bool = False) -> torch.Tensor:
    """Greedy decoding over a static cache: the tokens written into a preallocated buffer, a sync per token."""
    from transformers import StaticCache

    length = prompt.shape[1]
    cache = StaticCache(config=config, max_cache_len=length + new)
    tokens = torch.zeros(1, length + new, dtype=torch.long, device=device)
    tokens[:, :length] = prompt
    logits = model(input_ids=prompt, past_key_values=cache, cache_position=torch.arange(length, device=device)).logits
    position = torch.tensor([length], device=device)
    for cur in range(length, length + new):
        token = logits[:, -1].argmax(-1, keepdim=True)
        if arange:
            position = torch.arange(cur, cur + 1, device=device)  # a Python int in a factory call: a constant
        if cat:
            prompt = torch.cat([prompt, token], dim=1)  # a tensor one token longer each step
        else:
            tokens.index_copy_(1, position, token)
        logits = model(input_ids=token, past_key_values=cache, cache_position=position, position_ids=position[None]).logits
        position = position + 1
        if backend == "openxla":
            torch_xla.sync()
    return prompt if cat else tokens


with torch.no_grad():
    if cache.startswith("own"):
        generated = decode(prompt, 8, arange=cache == "own-arange-cat", cat=cache == "own-arange-cat")
    else:
        options = {"cache_implementation": "static"} if cache == "static" else {}
        generated = model.generate(prompt, max_new_tokens=8, do_sample=False, pad_token_id=0, disable_compile=True, **options)
print("tokens:", generated.cpu().tolist()[0][:16])
print_record(backend)
