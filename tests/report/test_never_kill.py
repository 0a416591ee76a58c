"""explain never kills the process: a custom op with autograd after a pin (every MoE model), a
dimension marked dynamic. Each case runs in a fresh Python, as a notebook kernel would, with
torch_xla not imported before neurondev needs it (a crash there would take pytest down too)."""

from __future__ import annotations

import pytest

from tests.helpers import HIDE_TORCH_XLA, run_python

pytestmark = pytest.mark.xla

# The minimal form of transformers' MoE experts: a torch.library.custom_op with register_autograd,
# an input that requires grad, downstream of a pin.
CUSTOM_OP = """
import torch, neurondev

@torch.library.custom_op("nd_test::scale", mutates_args=())
def scale(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return x * w

@scale.register_fake
def _(x, w):
    return torch.empty_like(x)

def setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)

def backward(ctx, grad):
    x, w = ctx.saved_tensors
    return grad * w, grad * x

scale.register_autograd(backward, setup_context=setup)

def experts(x, w):
    bias = torch.ones(x.shape[-1], device=x.device)
    return scale(x + bias, w)

x, w = torch.randn(4, 8), torch.randn(8, requires_grad=True)
"""


DYNAMIC = """
def accumulate(x):
    out = torch.zeros(x.shape[0], device=x.device)
    out.copy_(x.sum(1))
    return out
x = torch.randn(6, 4)
torch._dynamo.mark_dynamic(x, 0)
ex = neurondev.explain(accumulate, x, quiet=True)
print("breaks:", ex.totals("before").graph_breaks, ex.totals("after").graph_breaks, "failures:", ex.totals("after").failures)
print("note:", any(note.kind == "dynamic marks kept" for note in ex.notes))
print("card:", "traced with a dynamic dimension" in ex._repr_html_())
"""


def test_a_custom_op_after_a_pin_and_a_dimension_marked_dynamic_never_abort_in_any_entry_point():
    """Both cases in one fresh Python (one start-up): a crash in either ends it with the stderr shown."""
    result = run_python(
        CUSTOM_OP
        + """
import sys
explained = neurondev.explain(experts, x, w, quiet=True, native=True)  # every stage of explain, the native trace too
print("explain:", explained.totals("after").graph_breaks)
print("native:", explained.traces is not None)
try:
    neurondev.check(experts, x, w)
except neurondev.DevicePinsError as error:
    print("check:", [f.node for f in error.findings])
graph, rewrites = neurondev.rewrite_copy(neurondev.capture(experts, x, w).graphs[0])
print("rewrite_copy:", [r.node for r in rewrites])
"""
        + DYNAMIC
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert "explain: 0" in lines and "native: True" in lines
    assert "check: ['bias']" in lines and "rewrite_copy: ['bias']" in lines
    # a dimension marked dynamic runs with its concrete size (it aborted the process before)
    assert "breaks: 1 0 failures: 0" in result.stdout and "note: True" in result.stdout and "card: True" in result.stdout


def test_without_torch_xla_the_rewrite_leaves_node_meta_as_traced_instead_of_aborting():
    result = run_python(
        HIDE_TORCH_XLA
        + CUSTOM_OP
        + """
result = neurondev.DeviceRewriterPass()(neurondev.capture(experts, x, w).graphs[0])
print("modified:", result.modified, "meta refreshed:", result.meta_refreshed)
"""
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "modified: True meta refreshed: False" in result.stdout


def test_a_tiny_mixtral_is_explained_without_importing_torch_xla_first():
    result = run_python("""
import torch, neurondev
from transformers import MixtralConfig, MixtralForCausalLM
config = MixtralConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
                       num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2, max_position_embeddings=64)
torch.manual_seed(0)
model = MixtralForCausalLM(config).eval()
ids = torch.randint(0, 128, (1, 8))
ex = neurondev.explain(model, ids, use_cache=False, quiet=True)
print("pins:", len(ex.pins), "runs:", len(ex.after), "failures:", ex.totals("after").failures)
first = ex.first_difference
print("first difference:", first.function, first.module, first.where)
print("summary:", ex.summary())
print("programs:", ex.program.as_written.ok, ex.program.rewritten.ok, ex.program.rewritten.matches_cpu)
print("program fails at:", ex.program.as_written.failure.where, ex.program.as_written.failure.message)
print("device-specialised:", sorted({d.where for d in ex.device_specialised}))
""")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "runs: 1 failures: 0" in result.stdout
    # transformers' grouped_mm_fallback custom op is where XLA departs from CPU (max abs 8.34 measured op by op)
    assert "first difference: transformers.grouped_mm_fallback model.layers.0.mlp.experts moe.py:" in result.stdout
    assert "XLA differs from CPU first at out (transformers.grouped_mm_fallback, moe.py:" in result.stdout
    # as a program, Mixtral on XLA takes its MoE code's XLA branch: histc of int32 counts, which XLA runs on the CPU, where it fails
    assert "programs: False False None" in result.stdout
    assert "program fails at: moe.py:" in result.stdout and '"histogram_cpu" not implemented' in result.stdout
    assert "device-specialised: ['moe.py:" in result.stdout
