"""explain's memory: its copies of the inputs go with its result (none left in dynamo's caches), and a large input
is said before it is copied."""

from __future__ import annotations

import gc
import warnings

import pytest
import torch

import neurondev
from neurondev.cli import command as cli
from neurondev.report.input_memory import PEAK_PER_INPUT_BYTE, input_bytes


def pinned(x):
    return torch.ones(x.shape, device=x.device) + x


def doubled(x):
    return x * 2


def _copies_of(shape: tuple[int, ...]) -> int:
    """Tensors with real memory of ``shape`` that Python's collector can reach, on any device."""
    from torch._subclasses.fake_tensor import FakeTensor

    gc.collect()
    with warnings.catch_warnings():  # isinstance on a module's deprecated attribute warns
        warnings.simplefilter("ignore")
        found = [o for o in gc.get_objects() if isinstance(o, torch.Tensor) and not isinstance(o, FakeTensor)]
    return sum(1 for t in found if t.device.type != "meta" and tuple(t.shape) == shape)


def test_an_explanation_deleted_leaves_no_copy_of_its_inputs_behind():
    """dynamo keeps every backend it was given for the process's life: neurondev's recorders held each explain's
    copies of the inputs (8 per explain on XLA), so a notebook that explained again and again grew without end."""
    shape = (3, 4099)
    x = torch.randint(0, 10, shape)
    alone = _copies_of(shape)
    for _ in range(2):
        ex = neurondev.explain(pinned, x, quiet=True)
        assert ex.pins and _copies_of(shape) > alone
        del ex
    assert _copies_of(shape) == alone


def test_a_large_input_is_said_before_it_is_copied_with_its_size_and_a_smaller_one_to_pass():
    x = torch.zeros(70_000_000)  # 280 MB: explain would need about 16x that
    with pytest.warns(neurondev.LargeInputWarning) as said:
        neurondev.explain(doubled, x, run=False, quiet=True)
    text = str(said[0].message)
    assert "the inputs hold 280.0 MB" in text and f"{PEAK_PER_INPUT_BYTE}x" in text and "smaller input" in text
    with warnings.catch_warnings():
        warnings.simplefilter("error", neurondev.LargeInputWarning)
        neurondev.explain(doubled, torch.zeros(1000), run=False, quiet=True)  # a small input: nothing said


def test_the_command_says_a_large_input_in_one_line(tmp_path, capsys):
    script = tmp_path / "big.py"
    script.write_text("def doubled(x):\n    return x * 2\n")
    cli.main(["explain", f"{script}:doubled", "--input", "zeros(70000000)", "--no-run"])
    lines = [line for line in capsys.readouterr().err.splitlines() if "inputs hold" in line]
    assert lines == [lines[0]] and lines[0].startswith("neurondev: warning: the inputs hold 280.0 MB")


def test_input_bytes_counts_each_storage_once_with_a_modules_weights_and_nothing_on_meta():
    x = torch.zeros(10)
    module = torch.nn.Linear(4, 2)
    assert input_bytes(doubled, (x, x[:5]), {"y": torch.zeros(3, dtype=torch.int64)}) == 40 + 24
    assert input_bytes(module, (torch.zeros(4),), {}) == 16 + (8 + 2) * 4
    assert input_bytes(doubled, (torch.zeros(10**9, device="meta"),), {}) == 0
