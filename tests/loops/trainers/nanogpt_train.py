"""nanoGPT's train.py, in small: a GPT, gradient accumulation, a learning rate from get_lr(it) into each param group,
autocast, estimate_loss() every few iterations, a checkpoint when the validation loss improves, the model compiled.
Run as `neurondev watch nanogpt_train.py openxla` (PJRT_DEVICE=CPU) or `... nanogpt_train.py aot_eager` (the host
device), OUT_DIR naming the checkpoint's folder.

Before each call of the compiled model, and once after, the script writes down the runtime's own counts (dynamo's
graphs, torch_xla's programs) and prints them as one JSON line."""

import math
import os
import sys

import torch
from runtime_record import print_record, record_each_call
from torch import nn
from torch.nn import functional

backend = sys.argv[1] if len(sys.argv) > 1 else "openxla"
if backend == "openxla":
    import torch_xla

    device = torch_xla.device()
else:  # the host device: a PrivateUse1 accelerator, as TorchNeuron's
    import neurondev

    device = neurondev.host_device()

# the configuration, as train.py's globals
out_dir = os.environ.get("OUT_DIR", "out")
eval_interval, eval_iters, max_iters = 4, 2, 8
gradient_accumulation_steps, batch_size, block_size = 2, 4, 16
learning_rate, min_lr, warmup_iters, lr_decay_iters = 1e-3, 1e-4, 3, 8
vocab_size, n_embd, n_head = 64, 32, 2


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(n_embd), nn.LayerNorm(n_embd)
        self.attn = nn.MultiheadAttention(n_embd, n_head, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        h = self.ln_1(x)
        mask = torch.ones(x.shape[1], x.shape[1], dtype=torch.bool, device=x.device).triu(1)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab_size, n_embd), nn.Embedding(block_size, n_embd)
        self.block, self.ln_f = Block(), nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab_size, bias=False)

    def forward(self, idx, targets=None):
        pos = torch.arange(0, idx.shape[1], dtype=torch.long, device=idx.device)
        logits = self.lm_head(self.ln_f(self.block(self.wte(idx) + self.wpe(pos))))
        loss = None if targets is None else functional.cross_entropy(logits.view(-1, vocab_size), targets.view(-1))
        return logits, loss


data = {
    split: torch.randint(0, vocab_size, (512,), generator=torch.Generator().manual_seed(seed)) for split, seed in (("train", 1), ("val", 2))
}
generator = torch.Generator().manual_seed(3)


def get_batch(split):
    ix = torch.randint(len(data[split]) - block_size, (batch_size,), generator=generator)
    x = torch.stack([data[split][i : i + block_size] for i in ix])
    y = torch.stack([data[split][i + 1 : i + 1 + block_size] for i in ix])
    return x.to(device), y.to(device)


def get_lr(it):
    if it < warmup_iters:
        return learning_rate * (it + 1) / (warmup_iters + 1)
    ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (learning_rate - min_lr)


torch.manual_seed(0)
model = GPT().to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate, weight_decay=0.1)
model = torch.compile(model, backend=backend)
record_each_call(model, backend)
autocast = torch.autocast(device_type=device.type, dtype=torch.bfloat16)


@torch.no_grad()
def estimate_loss():
    out = {}
    model.eval()
    for split in ("train", "val"):
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            x, y = get_batch(split)
            with autocast:
                _, loss = model(x, y)
            losses[k] = loss.item()
        out[split] = losses.mean()
    model.train()
    return out


best_val_loss = 1e9
for it in range(max_iters + 1):
    lr = get_lr(it)
    for param_group in optimizer.param_groups:
        param_group["lr"] = lr
    if it % eval_interval == 0:
        losses = estimate_loss()
        if losses["val"] < best_val_loss:
            best_val_loss = losses["val"]
            os.makedirs(out_dir, exist_ok=True)
            checkpoint = {"model": model._orig_mod.state_dict(), "optimizer": optimizer.state_dict(), "iter_num": it}
            torch.save(checkpoint, os.path.join(out_dir, "ckpt.pt"))
    if it == max_iters:
        break
    for _micro_step in range(gradient_accumulation_steps):
        x, y = get_batch("train")
        with autocast:
            _, loss = model(x, y)
            loss = loss / gradient_accumulation_steps
        loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    if backend == "openxla":
        torch_xla.sync()  # what a port of train.py to XLA adds: the step's graph cut at the step's end
print_record(backend)
