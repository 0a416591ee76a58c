"""Full-size architectures without their weights: a model on the meta device (and inputs given as
shapes) is traced on meta, its pins found and rewritten, no weight materialised, nothing run."""

from __future__ import annotations

import pytest
import torch

import neurondev
from neurondev import testing
from neurondev.render.sentences import why_text
from neurondev.report.fixes.records import FixCheck
from neurondev.report.skips import Skip

# One worker runs this module (an xdist group): its 6-layer Llama on meta is explained once a run, not once a
# worker (2 s each, measured).
pytestmark = [pytest.mark.xla, pytest.mark.xdist_group("meta-llama")]
pytest.importorskip("transformers")


def llama(layers: int, *, meta: bool):
    return testing.tiny_llama(layers, heads=4, kv_heads=2, vocab=512, sequence=8, meta=meta)


@pytest.fixture(scope="module")
def on_meta():
    model, args, kwargs = llama(6, meta=True)
    return model, neurondev.explain(model, *args, **kwargs, quiet=True)


def test_a_model_on_meta_is_traced_on_meta_without_materialising_a_weight(on_meta):
    model, ex = on_meta
    assert ex.capture.device == "meta" and ex.notes[0].kind == "meta"
    traced_copy = ex.capture.owners[0]
    assert all(p.device.type == "meta" for p in [*traced_copy.parameters(), *model.parameters()])
    assert len(ex.capture.graphs) == 1 and ex.pins


def test_the_pins_are_those_of_the_same_config_with_two_layers_and_real_weights(on_meta):
    _, ex = on_meta
    model, args, kwargs = llama(2, meta=False)
    small = neurondev.explain(model, *args, **kwargs, quiet=True, run=False)
    assert small.pins and {(p.function, p.where) for p in ex.pins} == {(p.function, p.where) for p in small.pins}
    assert {p.device for p in ex.pins if not p.output_transfer} <= {torch.device("meta"), "meta"}


@pytest.mark.dot
def test_meta_pins_are_rewritten_to_xla_and_nothing_runs_with_how_to_run_a_slice(on_meta):
    _, ex = on_meta
    assert ex.rewrites and {str(r.new) for r in ex.rewrites} == {"xla"}
    assert ex.before == () and ex.skipped == Skip("traced on meta") and "num_hidden_layers=2" in ex.summary()
    assert "traced on the meta device" in ex.summary() and ex._repr_html_().count("<svg") == 2


def test_meta_inputs_alone_trace_on_meta_too():
    def scale(x):
        return x * torch.arange(x.shape[-1], device=x.device)

    captured = neurondev.capture(scale, torch.empty(3, 8, device="meta"))
    (pin,) = neurondev.find_pins(captured.graphs[0], traced_on_meta=True)
    assert captured.device == "meta" and pin.device == torch.device("meta") and pin.default_pass


def test_on_meta_a_fix_is_proposed_but_not_called_verified():
    def buffer(x):
        out = torch.zeros(x.shape, device=x.device)
        return out + x

    explanation = neurondev.explain(buffer, torch.empty(3, 8, device="meta"), quiet=True)
    (fix,) = explanation.fixes
    assert fix.after == "out = x.new_zeros(x.shape, dtype=torch.get_default_dtype())" and not fix.verified
    assert fix.check == FixCheck("traced on meta") and why_text(fix).startswith("not verified: traced on the meta device")


def test_the_models_default_call_on_meta_says_to_pass_use_cache_false():
    model, args, _ = llama(2, meta=True)  # without use_cache=False: transformers' DynamicCache is made in the trace
    with pytest.raises(neurondev.TraceError, match=r"cache_utils.py:\d+ .*pass use_cache=False$"):
        neurondev.explain(model, *args, quiet=True)
    assert all(p.device.type == "meta" for p in model.parameters())
