"""Each rule's minimal example, run by the call that reports it, and the code to use instead, which yields no finding."""

from __future__ import annotations

import dataclasses

__all__ = ["EXAMPLES", "Example", "RELATED"]


@dataclasses.dataclass(frozen=True)
class Example:
    """A rule's example: ``source`` (a script that reports the rule), ``instead`` (the same program written so that it
    does not), ``command`` (how to run it, when not with ``python``: a torchrun job), ``needs`` (what no machine of
    the project has: the example is shown, not run)."""

    source: str
    instead: str = ""
    command: str = ""
    needs: str = ""


_FROZEN = """\
import torch

def scaled(x):
    out = torch.empty(64, device=x.device)   # frozen to cpu when traced on CPU
    out.copy_(torch.relu(x) * 2)
    return out

import neurondev
neurondev.check(scaled, torch.randn(64))
"""
_FROZEN_INSTEAD = """\
import torch

def scaled(x):
    out = x.new_empty(64)   # a Tensor method: x's device when it runs, not when it was traced
    out.copy_(torch.relu(x) * 2)
    return out

import neurondev
neurondev.check(scaled, torch.randn(64))
"""
_LITERAL = """\
import torch

def scaled(x):
    out = torch.zeros(64, device="cpu")
    return out + x

import neurondev
neurondev.check(scaled, torch.randn(64))
"""
_LITERAL_INSTEAD = """\
import torch

def scaled(x):
    out = torch.zeros_like(x)   # on x's device, whatever it is
    return out + x

import neurondev
neurondev.check(scaled, torch.randn(64))
"""
_VARIABLE = """\
import torch
DEVICE = torch.device("cpu")

def scaled(x):
    return x + torch.ones(64, device=DEVICE)

import neurondev
neurondev.check(scaled, torch.randn(64))
"""
_VARIABLE_INSTEAD = """\
import torch

def scaled(x):
    return x + x.new_ones(64)   # x's device at run time

import neurondev
neurondev.check(scaled, torch.randn(64))
"""
_GENERATED = """\
import torch

# code made at run time (a template, a code generator): no file holds its lines
namespace = {"torch": torch}
exec("def scaled(x):\\n    out = torch.empty(64, device=x.device)\\n    out.copy_(x * 2)\\n    return out\\n", namespace)

import neurondev
neurondev.check(namespace["scaled"], torch.randn(64))
"""
_GENERATED_INSTEAD = """\
import torch

namespace = {"torch": torch}
exec("def scaled(x):\\n    out = x.new_empty(64)\\n    out.copy_(x * 2)\\n    return out\\n", namespace)

import neurondev
neurondev.check(namespace["scaled"], torch.randn(64))
"""
_ASSERTION = """\
import torch

class Moved(torch.nn.Module):
    def forward(self, x):
        return x.to("cpu") * 2   # torch.export checks .to()'s input with aten._assert_tensor_metadata

exported = torch.export.export(Moved(), (torch.randn(4),))

import neurondev
neurondev.check(exported, torch.randn(4), select=("ND105",))
"""
_ASSERTION_INSTEAD = """\
import torch

class Moved(torch.nn.Module):
    def forward(self, x):
        return x * 2   # the tensor stays where the caller put it

exported = torch.export.export(Moved(), (torch.randn(4),))

import neurondev
neurondev.check(exported, torch.randn(4), select=("ND105",))
"""
_HOST_VALUE = """\
import torch

class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.ones(64)           # a plain attribute: model.to(device) leaves it on the CPU

    def forward(self, x):
        return x * self.scale

import neurondev
neurondev.check(Scaled(), torch.randn(64))
"""
_HOST_VALUE_INSTEAD = """\
import torch

class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.ones(64))   # a buffer: model.to(device) moves it

    def forward(self, x):
        return x * self.scale

import neurondev
neurondev.check(Scaled(), torch.randn(64))
"""
_CPU_KERNEL = """\
import torch

def attention(q, k, v):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v)

import neurondev
q = torch.randn(1, 2, 8, 16)
neurondev.check(attention, q, q, q, level="aten")
"""
_CPU_KERNEL_INSTEAD = """\
import torch

def attention(q, k, v):
    return torch.nn.functional.scaled_dot_product_attention(q, k, v)

import neurondev
q = torch.randn(1, 2, 8, 16)
neurondev.check(attention, q, q, q)   # traced by dynamo: the device chooses its own kernel
"""
_SPECIALISED = """\
import torch

def branchy(x):
    if x.device.type == "cpu":
        return x * 2
    return x + x

import neurondev
neurondev.check(branchy, torch.randn(64))   # needs torch_xla: the second trace runs on XLA
"""
_SPECIALISED_INSTEAD = """\
import torch

def branchy(x):
    return x * 2   # one program for every device

import neurondev
neurondev.check(branchy, torch.randn(64))
"""
_BREAK = """\
import torch

def scaled(x):
    y = torch.relu(x)
    print(end="")              # dynamo cannot trace a print: a second graph
    return y * 2

import neurondev
neurondev.check(scaled, torch.randn(64), select=("ND109",))
"""
_BREAK_INSTEAD = """\
import torch

def scaled(x):
    y = torch.relu(x)
    return y * 2               # print after the compiled call, not inside it

import neurondev
neurondev.check(scaled, torch.randn(64), select=("ND109",))
"""
_ON_DEVICE = """\
import torch

def scaled(x):
    out = torch.empty(64, device=x.device)   # frozen to cpu when traced on CPU
    out.copy_(torch.relu(x) * 2)
    return out

import neurondev
neurondev.check(scaled, torch.randn(64), select=("ND201",))   # runs the graph traced on CPU on the device
"""
_ON_DEVICE_INSTEAD = _FROZEN_INSTEAD.replace("torch.randn(64))", 'torch.randn(64), select=("ND201",))')
_COPY = """\
import torch
import neurondev

def scaled(x):
    y = torch.relu(x)
    total = y.sum().cpu()      # a copy to the host in the middle of the program
    return y * total.to(x.device)

device = neurondev.host_device()   # the host test device: a native device counts each copy with its line
neurondev.check(scaled, torch.randn(64), target=device, select=("ND202",))
"""
_COPY_INSTEAD = """\
import torch
import neurondev

def scaled(x):
    y = torch.relu(x)
    return y * y.sum()         # the total stays on the device

device = neurondev.host_device()
neurondev.check(scaled, torch.randn(64), target=device, select=("ND202",))
"""
_UPLOAD = """\
import torch
import neurondev

def shifted(x):
    offsets = torch.tensor([1.0, 2.0, 3.0, 4.0]).to(x.device)   # made on the host, copied up on every call
    return x + offsets

device = neurondev.host_device()   # the host test device: a native device counts each copy with its line
neurondev.check(shifted, torch.randn(4), target=device, select=("ND203",))
"""
_UPLOAD_INSTEAD = """\
import torch
import neurondev

def shifted(x):
    offsets = torch.arange(1, 5, dtype=x.dtype, device=x.device)   # made on the device
    return x + offsets

device = neurondev.host_device()
neurondev.check(shifted, torch.randn(4), target=device, select=("ND203",))
"""
_SYNC = """\
import torch
import neurondev

def normalised(x):
    return x / x.abs().max().item()   # the host waits for the device to give Python a number

device = neurondev.host_device()
neurondev.check(normalised, torch.randn(64), target=device, select=("ND204",))
"""
_SYNC_INSTEAD = """\
import torch
import neurondev

def normalised(x):
    return x / x.abs().max()   # a tensor: the device divides, the host does not wait

device = neurondev.host_device()
neurondev.check(normalised, torch.randn(64), target=device, select=("ND204",))
"""
_FALLBACK = """\
import torch
import neurondev

def embed(ids, weight):
    return torch.nn.functional.embedding(ids, weight)

device = neurondev.host_device(fallback=["aten::index_select"])   # the host test device, index_select left to the CPU
ids, weight = torch.tensor([1, 2]), torch.randn(4, 8)
neurondev.check(embed, ids, weight, target=device, fallbacks="error")
"""
_FALLBACK_INSTEAD = """\
import torch
import neurondev

def embed(ids, weight):
    return torch.nn.functional.one_hot(ids, weight.shape[0]).to(weight.dtype) @ weight   # a matmul the device has

device = neurondev.host_device(fallback=["aten::index_select"])
ids, weight = torch.tensor([1, 2]), torch.randn(4, 8)
neurondev.check(embed, ids, weight, target=device, fallbacks="error")
"""
_UNSEEN = """\
import torch
import neurondev

def scaled(x):
    return torch.relu(x) * 2

neurondev.check(scaled, torch.randn(64), target="neuron", fallbacks="error")   # TorchNeuron compiles whole graphs
"""
_UNSEEN_INSTEAD = """\
import torch
import neurondev

def scaled(x):
    return torch.relu(x) * 2

neurondev.check(scaled, torch.randn(64), target=neurondev.host_device(), fallbacks="error")   # every op seen
"""
_RUN_ERROR = """\
import torch

def scaled(x):
    bias = torch.zeros(64, device="cpu")
    return torch.addcmul(bias, x, x)

import neurondev
neurondev.check(scaled, torch.randn(64), select=("ND207",))   # runs the graph traced on CPU on XLA
"""
_RUN_ERROR_INSTEAD = """\
import torch

def scaled(x):
    bias = torch.zeros_like(x)
    return torch.addcmul(bias, x, x)

import neurondev
neurondev.check(scaled, torch.randn(64), select=("ND207",))
"""
_DIFFER = """\
import torch

def activated(x):
    return torch.tanh(x) * 2

import neurondev
torch.manual_seed(0)
neurondev.check(activated, torch.randn(1000), rtol=0.0, atol=0.0, select=("ND208", "ND209"))   # exact: no tolerance
"""
_DIFFER_INSTEAD = """\
import torch

def activated(x):
    return torch.tanh(x) * 2

import neurondev
neurondev.check(activated, torch.randn(1000), select=("ND208", "ND209"))   # the default tolerance: XLA's tanh is within it
"""
_MIXED = """\
import torch

class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = torch.ones(64)

    def forward(self, x):
        return x * self.scale

import neurondev
neurondev.check(Scaled(), torch.randn(64), program=True)
"""
_MIXED_INSTEAD = """\
import torch

class Scaled(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("scale", torch.ones(64))

    def forward(self, x):
        return x * self.scale

import neurondev
neurondev.check(Scaled(), torch.randn(64), program=True)
"""
_DEFAULT_DEVICE = """\
import torch
import torch_xla

def noisy(x):
    return x + torch.randn(64)   # a factory call: the default device should apply to it

torch.set_default_device(torch_xla.device())   # every factory call on XLA, as the program expects
import neurondev
neurondev.check(noisy, torch.randn(64), program=True)
"""
_DEFAULT_DEVICE_INSTEAD = """\
import torch
import torch_xla

def noisy(x):
    return x + torch.randn(64, device=x.device)   # the device said, not assumed

torch.set_default_device(torch_xla.device())
import neurondev
neurondev.check(noisy, torch.randn(64), program=True)
"""
_HOST_ONLY = """\
import torch

def normalised(x):
    h = torch.relu(x) + 1
    k = h.numpy().max()        # a host-only call: dynamo splits the graph here
    return h / float(k)

import neurondev
neurondev.check(normalised, torch.randn(8), program=True)
"""
_HOST_ONLY_INSTEAD = """\
import torch

def normalised(x):
    h = torch.relu(x) + 1
    return h / h.max()         # torch's max: on the device

import neurondev
neurondev.check(normalised, torch.randn(8), program=True)
"""
_WRONG_DEVICE = """\
import torch

@torch.compiler.disable   # runs eagerly, outside the compiled graphs
def add_bias(y):
    return torch.addcmul(torch.zeros(64), y, y)   # a CPU tensor meets the device's result at run time

def scaled(x):
    return add_bias(torch.relu(x)) * 2

import neurondev
neurondev.check(scaled, torch.randn(64), program=True)
"""
_WRONG_DEVICE_INSTEAD = _WRONG_DEVICE.replace(
    "torch.zeros(64), y, y)   # a CPU tensor meets", "torch.zeros_like(y), y, y)   # on y's device: no CPU tensor meets"
)
_FAILURE = """\
import torch

def sparse_sum(x):
    return x.to_sparse().sum()   # XLA has no sparse tensors

import neurondev
neurondev.check(sparse_sum, torch.randn(8), program=True)
"""
_FAILURE_INSTEAD = """\
import torch

def sparse_sum(x):
    return x.sum()   # dense: every device has it

import neurondev
neurondev.check(sparse_sum, torch.randn(8), program=True)
"""
_FINDINGS = 'print([(finding["rule"], finding["where"]) for finding in watched.to_dict()["findings"]])\n'
_RECOMPILE = (
    """\
import torch
import neurondev

step = torch.compile(lambda x, lr: x * lr, backend="eager")
with neurondev.watch() as watched:
    for lr in (0.1, 0.2, 0.3):
        step(torch.ones(4), lr)
print(watched.summary())
"""
    + _FINDINGS
)
_RECOMPILE_INSTEAD = (
    """\
import torch
import neurondev

step = torch.compile(lambda x, lr: x * lr, backend="eager")
lr = torch.tensor(0.1)
with neurondev.watch() as watched:
    for value in (0.1, 0.2, 0.3):
        lr.fill_(value)        # a tensor the graph reads: one graph for every value
        step(torch.ones(4), lr)
"""
    + _FINDINGS
)
_FLAG = (
    """\
import torch
import neurondev

def step(x, training):
    return torch.dropout(x, 0.1, training)   # a bool: one graph per value

compiled = torch.compile(step, backend="eager")
with neurondev.watch() as watched:
    for training in (True, False, True, False):
        compiled(torch.ones(4), training)
print(watched.summary())
"""
    + _FINDINGS
)
_FLAG_INSTEAD = (
    """\
import torch
import neurondev

def step(x, training):
    return torch.dropout(x, 0.1, training)

train_step = torch.compile(lambda x: step(x, True), backend="eager")   # one compiled function per mode
eval_step = torch.compile(lambda x: step(x, False), backend="eager")
with neurondev.watch() as watched:
    for training in (True, False, True, False):
        (train_step if training else eval_step)(torch.ones(4))
"""
    + _FINDINGS
)
_LIBRARY = (
    """\
import torch
import transformers
import neurondev

def sample_scores(logits, config):
    return torch.softmax(logits / config.temperature, dim=-1)   # a library object's own number

config = transformers.GenerationConfig(do_sample=True, temperature=0.7)
compiled = torch.compile(sample_scores, backend="eager")
with neurondev.watch() as watched:
    for temperature in (0.7, 0.8, 0.9):
        config.temperature = temperature
        compiled(torch.ones(4), config)
print(watched.summary())
"""
    + _FINDINGS
)
_LIBRARY_INSTEAD = (
    """\
import torch
import neurondev

def sample_scores(logits, temperature):
    return torch.softmax(logits / temperature, dim=-1)   # a tensor argument

compiled = torch.compile(sample_scores, backend="eager")
temperature = torch.tensor(0.7)
with neurondev.watch() as watched:
    for value in (0.7, 0.8, 0.9):
        temperature.fill_(value)
        compiled(torch.ones(4), temperature)
"""
    + _FINDINGS
)
_CACHE = (
    """\
import torch
import neurondev

def decode(token, cache):
    return torch.cat([cache, token]), token * 2   # the cache grows by one each call

compiled = torch.compile(decode, backend="eager", dynamic=False)
cache = torch.zeros(1, 4)
with neurondev.watch() as watched:
    for _ in range(3):
        cache, _ = compiled(torch.ones(1, 4), cache)
print(watched.summary())
"""
    + _FINDINGS
)
_CACHE_INSTEAD = (
    """\
import torch
import neurondev

def decode(token, cache, position):
    return cache.index_copy(0, position, token), token * 2   # a static cache: written in place of growing

compiled = torch.compile(decode, backend="eager", dynamic=False)
cache, position = torch.zeros(8, 4), torch.tensor([0])
with neurondev.watch() as watched:
    for _ in range(3):
        cache, _ = compiled(torch.ones(1, 4), cache, position)
        position += 1
"""
    + _FINDINGS
)
_SIZE = (
    """\
import torch
import neurondev

step = torch.compile(lambda x: x.relu() * 2, backend="eager", dynamic=False)
with neurondev.watch() as watched:
    for size in (8, 8, 5, 8):   # a short batch
        step(torch.ones(size))
print(watched.summary())
"""
    + _FINDINGS
)
_SIZE_INSTEAD = (
    """\
import torch
import neurondev

step = torch.compile(lambda x: x.relu() * 2, backend="eager", dynamic=False)
with neurondev.watch() as watched:
    for size in (8, 8, 5, 8):
        step(torch.nn.functional.pad(torch.ones(size), (0, 8 - size)))   # padded to one size
"""
    + _FINDINGS
)
_DECODE = (
    """\
import torch
import neurondev

def next_token(input_ids):
    return (input_ids * 3 + 1)[:, -1:]   # a stand-in for a model's forward

compiled = torch.compile(next_token, backend="eager", dynamic=False)
with neurondev.watch() as watched:
    input_ids = torch.ones(1, 6, dtype=torch.long)   # the prompt
    for _ in range(4):
        input_ids = compiled(input_ids)               # then one token a step, as generate() does
print(watched.summary())
"""
    + _FINDINGS
)
_DECODE_INSTEAD = (
    """\
import torch
import neurondev

def next_token(input_ids):
    return (input_ids * 3 + 1)[:, -1:]

prefill = torch.compile(next_token, backend="eager", dynamic=False)   # the prompt's graph
decode = torch.compile(lambda ids: next_token(ids), backend="eager", dynamic=False)   # and the token's, apart
with neurondev.watch() as watched:
    input_ids = prefill(torch.ones(1, 6, dtype=torch.long))
    for _ in range(3):
        input_ids = decode(input_ids)
"""
    + _FINDINGS
)
_LIMIT = (
    """\
import torch
import neurondev

step = torch.compile(lambda x, lr: x * lr, backend="eager", dynamic=False)
with torch._dynamo.config.patch(recompile_limit=2), neurondev.watch() as watched:   # dynamo's default is 8
    for lr in (0.1, 0.2, 0.3, 0.4):
        step(torch.ones(4), lr)
print(watched.summary())
"""
    + _FINDINGS
)
_LIMIT_INSTEAD = (
    """\
import torch
import neurondev

step = torch.compile(lambda x, lr: x * lr, backend="eager", dynamic=False)
lr = torch.tensor(0.1)
with torch._dynamo.config.patch(recompile_limit=2), neurondev.watch() as watched:
    for value in (0.1, 0.2, 0.3, 0.4):
        lr.fill_(value)   # the cause removed: nothing to recompile
        step(torch.ones(4), lr)
"""
    + _FINDINGS
)
_OTHER = (
    """\
import torch
import neurondev

step = torch.compile(lambda x: x * 2, backend="eager", dynamic=False)
with neurondev.watch() as watched:
    for dtype in (torch.float32, torch.float32, torch.float64):   # a new dtype: a guard none of the named causes
        step(torch.ones(4, dtype=dtype))
print(watched.summary())
"""
    + _FINDINGS
)
_OTHER_INSTEAD = (
    """\
import torch
import neurondev

step = torch.compile(lambda x: x * 2, backend="eager", dynamic=False)
with neurondev.watch() as watched:
    for dtype in (torch.float32, torch.float32, torch.float64):
        step(torch.ones(4, dtype=dtype).to(torch.float32))   # one dtype into the compiled code
"""
    + _FINDINGS
)
_XLA_PROGRAM = (
    """\
import torch
import torch_xla
import neurondev

x = torch.ones(4, device=torch_xla.device())
with neurondev.watch(xla_analysis=True) as watched:   # torch_xla's own analysis names each program's trigger
    for n in range(10):
        watched.step()
        x = x * 2 + 1
        if n == 3:
            x = torch.cat([x, x])   # a new shape in step 4: XLA compiles a new program
        torch_xla.sync()
print(watched.summary())
"""
    + _FINDINGS
)
_XLA_PROGRAM_INSTEAD = (
    """\
import torch
import torch_xla
import neurondev

x = torch.ones(8, device=torch_xla.device())   # made at its final size once,
torch_xla.sync()                               # and before the loop, not in its first step
with neurondev.watch(xla_analysis=True) as watched:
    for n in range(10):
        watched.step()
        x = x * 2 + 1
        torch_xla.sync()
"""
    + _FINDINGS
)
_NOT_STEADY = (
    """\
import torch
import neurondev

step = torch.compile(lambda x: x.relu() * 2, backend="eager", dynamic=False)
with torch._dynamo.config.patch(recompile_limit=64), neurondev.watch() as watched:
    for size in range(1, 13):
        step(torch.ones(size))   # a new size every step, never marked dynamic: the loop never settles
print(watched.summary())
"""
    + _FINDINGS
)
_NOT_STEADY_INSTEAD = (
    """\
import torch
import neurondev

step = torch.compile(lambda x: x.relu() * 2, backend="eager", dynamic=False)
with torch._dynamo.config.patch(recompile_limit=64), neurondev.watch() as watched:
    for size in range(1, 13):
        bucket = 8 if size <= 8 else 16
        step(torch.nn.functional.pad(torch.ones(size), (0, bucket - size)))   # two sizes in all: 8 and 16
print(watched.summary())
"""
    + _FINDINGS
)
_RANKS = """\
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, size = dist.get_rank(), dist.get_world_size()
step = torch.compile(lambda x: (x * 2).sum(), backend="eager", dynamic=False)
for rows in (4, 4, 4, 3 if rank == size - 1 else 4):   # the last rank's last batch is short
    total = step(torch.ones(rows, 8))
    dist.all_reduce(total)
dist.destroy_process_group()
"""
_RANKS_INSTEAD = """\
import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank, size = dist.get_rank(), dist.get_world_size()
step = torch.compile(lambda x: (x * 2).sum(), backend="eager", dynamic=False)
for rows in (4, 4, 4, 3 if rank == size - 1 else 4):
    batch = torch.nn.functional.pad(torch.ones(rows, 8), (0, 0, 0, 4 - rows))   # every rank: 4 rows, the padding zeros
    total = step(batch)
    dist.all_reduce(total)
dist.destroy_process_group()
"""
_TORCHRUN = "torchrun --nproc-per-node 2 -m neurondev watch example.py"

EXAMPLES: dict[str, Example] = {
    "ND101": Example(_FROZEN, _FROZEN_INSTEAD),
    "ND102": Example(_LITERAL, _LITERAL_INSTEAD),
    "ND103": Example(_VARIABLE, _VARIABLE_INSTEAD),
    "ND104": Example(_GENERATED, _GENERATED_INSTEAD),
    "ND105": Example(_ASSERTION, _ASSERTION_INSTEAD),
    "ND106": Example(_HOST_VALUE, _HOST_VALUE_INSTEAD),
    "ND107": Example(_CPU_KERNEL, _CPU_KERNEL_INSTEAD),
    "ND108": Example(_SPECIALISED, _SPECIALISED_INSTEAD),
    "ND109": Example(_BREAK, _BREAK_INSTEAD),
    "ND201": Example(_ON_DEVICE, _ON_DEVICE_INSTEAD),
    "ND202": Example(_COPY, _COPY_INSTEAD),
    "ND203": Example(_UPLOAD, _UPLOAD_INSTEAD),
    "ND204": Example(_SYNC, _SYNC_INSTEAD),
    "ND205": Example(_FALLBACK, _FALLBACK_INSTEAD),
    "ND206": Example(_UNSEEN, _UNSEEN_INSTEAD, needs="torch-neuronx and a Trainium instance"),
    "ND207": Example(_RUN_ERROR, _RUN_ERROR_INSTEAD),
    "ND208": Example(_DIFFER, _DIFFER_INSTEAD),
    "ND209": Example(_DIFFER, _DIFFER_INSTEAD),
    "ND301": Example(_MIXED, _MIXED_INSTEAD),
    "ND302": Example(_DEFAULT_DEVICE, _DEFAULT_DEVICE_INSTEAD),
    "ND303": Example(_HOST_ONLY, _HOST_ONLY_INSTEAD),
    "ND304": Example(_WRONG_DEVICE, _WRONG_DEVICE_INSTEAD),
    "ND305": Example(_FAILURE, _FAILURE_INSTEAD),
    "ND401": Example(_RECOMPILE, _RECOMPILE_INSTEAD),
    "ND402": Example(_FLAG, _FLAG_INSTEAD),
    "ND403": Example(_LIBRARY, _LIBRARY_INSTEAD),
    "ND404": Example(_CACHE, _CACHE_INSTEAD),
    "ND405": Example(_SIZE, _SIZE_INSTEAD),
    "ND406": Example(_DECODE, _DECODE_INSTEAD),
    "ND407": Example(_LIMIT, _LIMIT_INSTEAD),
    "ND408": Example(_OTHER, _OTHER_INSTEAD),
    "ND410": Example(_XLA_PROGRAM, _XLA_PROGRAM_INSTEAD),
    "ND411": Example(_NOT_STEADY, _NOT_STEADY_INSTEAD),
    "ND412": Example(_RANKS, _RANKS_INSTEAD, command=_TORCHRUN),
}

# The rules a page sends its reader on to: the same cause seen at another stage, or the next thing to read.
RELATED: dict[str, tuple[str, ...]] = {
    "ND101": ("ND102", "ND103", "ND201"),
    "ND102": ("ND101", "ND103"),
    "ND103": ("ND101", "ND102"),
    "ND104": ("ND101",),
    "ND105": ("ND102",),
    "ND106": ("ND301", "ND203"),
    "ND107": ("ND205",),
    "ND108": ("ND101",),
    "ND109": ("ND303", "ND204"),
    "ND201": ("ND101", "ND202"),
    "ND202": ("ND201", "ND204"),
    "ND203": ("ND106", "ND202"),
    "ND204": ("ND202", "ND109"),
    "ND205": ("ND107", "ND206"),
    "ND206": ("ND205",),
    "ND207": ("ND101", "ND102", "ND301"),
    "ND208": ("ND209",),
    "ND209": ("ND208",),
    "ND301": ("ND106", "ND207", "ND304"),
    "ND302": ("ND301",),
    "ND303": ("ND109", "ND204"),
    "ND304": ("ND301",),
    "ND305": ("ND301", "ND304"),
    "ND401": ("ND407", "ND411"),
    "ND402": ("ND401",),
    "ND403": ("ND401",),
    "ND404": ("ND405", "ND406"),
    "ND405": ("ND404", "ND411", "ND412"),
    "ND406": ("ND404",),
    "ND407": ("ND401", "ND411"),
    "ND408": ("ND401", "ND405"),
    "ND410": ("ND411", "ND405"),
    "ND411": ("ND401", "ND405", "ND407", "ND410"),
    "ND412": ("ND405", "ND410"),
}
