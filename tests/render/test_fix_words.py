"""What to write instead of each kind of pin: the pin table's few words and the card's sentence agree."""

from __future__ import annotations

import torch

import neurondev
from neurondev.render.fix_words import BACKEND_FIX, fix_for, short_fix


def pins_of(fn, *inputs):
    return {pin.function: pin for pin in neurondev.find_pins(neurondev.capture(fn, *inputs).graphs[0])}


def constructors(x):
    a = torch.zeros(4, device=x.device)
    b = torch.randn(4, device=x.device)
    c = torch.arange(4, device=x.device)
    return a + b + c + x


def literal(x):
    return x + torch.ones(4, device="cpu") + torch.randn(4, device="cpu")


def test_each_constructor_gets_the_spelling_that_follows_the_device_or_the_backend():
    pins = pins_of(constructors, torch.randn(4))
    assert short_fix(pins["torch.zeros"]) == "x.new_zeros(...)" and "write x.new_zeros(size)" in fix_for(pins["torch.zeros"])
    assert short_fix(pins["torch.randn"]) == "torch.randn_like(x), or the neurondev backend"
    assert "torch.randn_like(x) when the shape is x's" in fix_for(pins["torch.randn"])
    assert short_fix(pins["torch.arange"]) == "the neurondev backend" and fix_for(pins["torch.arange"]) == BACKEND_FIX


def test_a_device_written_out_is_said_to_be_written_not_frozen():
    pins = pins_of(literal, torch.randn(4))
    ones, randn = pins["torch.ones"], pins["torch.randn"]
    assert ones.kind == randn.kind == "literal"
    assert "write x.new_ones(size)" in fix_for(ones) and "the device written in torch.ones(..., device=...)" in fix_for(ones)
    assert "frozen" not in fix_for(ones)  # nothing was frozen: the line says cpu
    assert fix_for(randn).startswith("the device is written out in your code: remove it")
