"""The Model Explorer files: nodes labelled for people, the page opening on the findings, the URL built
with Model Explorer's own ModelExplorerConfig (the browser test shows a person sees it)."""

from __future__ import annotations

import json
import urllib.parse

import pytest
import torch

import neurondev
from neurondev.render.model_explorer import Opening, opening, save_model_explorer

pytestmark = pytest.mark.xla
pytest.importorskip("model_explorer", reason="the setup installs neurondev[explorer] for the tests")


def clean(x):
    return torch.zeros_like(x) + x * 2


def _url_data(url: str) -> dict:
    query = urllib.parse.urlsplit(url).query
    return json.loads(urllib.parse.parse_qs(query)["data"][0])


def test_it_opens_on_the_graph_of_the_first_pin_with_the_layer_holding_the_pins_expanded(gpt2_explained):
    where = opening(gpt2_explained)
    assert where == Opening("graph 0 before", ("transformer",), "pins")


def test_a_graph_break_without_a_pin_is_where_it_opens_otherwise_the_first_graph(seed_capture):
    seed = neurondev.explain(seed_capture, quiet=True)
    assert seed.sections[0].before.graph_breaks  # the seed's copy_ into a host buffer breaks the graph
    assert opening(seed).graph == "graph 0 before" and opening(seed).overlay == "pins"
    assert opening(seed).expanded == ()  # the pin is at the top of the function: no layer to expand
    assert opening(neurondev.explain(clean, torch.randn(4), run=False, quiet=True)) == Opening()


def test_the_url_is_model_explorers_own_with_the_pane_state_and_the_colouring_overlay_last(gpt2_explained, tmp_path):
    from model_explorer.config import ModelExplorerConfig

    files = save_model_explorer(gpt2_explained, tmp_path)
    data = _url_data(files.url(8123))
    config = ModelExplorerConfig().add_model_from_path(str(files.graphs))
    own = json.loads(urllib.parse.unquote(config.to_url_param_value()))
    assert data["models"] == own["models"] and files.url(8123).startswith("http://127.0.0.1:8123/?data=")
    assert sorted(data["nodeData"]) == sorted(str(path) for path in files.overlays)
    assert data["nodeData"][-1].endswith("overlay-pins.json")  # the last one added colours the nodes
    pane = data["uiState"]["paneStates"][0]
    assert pane["selectedGraphId"] == "graph 0 before" and pane["selectedNodeId"] == ""  # Opening's docstring: why none
    assert pane["deepestExpandedGroupNodeIds"] == ["transformer___group___"]


def test_without_findings_the_url_has_no_pane_state(tmp_path):
    files = save_model_explorer(neurondev.explain(clean, torch.randn(4), run=False, quiet=True), tmp_path)
    assert "uiState" not in _url_data(files.url(8080))


def test_nodes_are_labelled_by_what_they_call_and_weights_by_their_names(gpt2_explained, tmp_path):
    files = save_model_explorer(gpt2_explained, tmp_path)
    graph = json.loads(files.graphs.read_text())["graphs"][0]
    labels = {node["id"]: node["label"] for node in graph["nodes"]}
    pin = gpt2_explained.pins[0]
    assert labels[pin.node] == f"{pin.function} at {pin.source.where}"
    assert "transformer.wte.weight" in labels.values() and "output" in labels.values()
    assert not [label for label in labels.values() if label.startswith(("l_fn_", "L_fn_"))]
    attributes = {kv["key"]: kv["value"] for kv in next(n for n in graph["nodes"] if n["id"] == pin.node)["attrs"]}
    assert attributes["node"] == pin.node and attributes["module"] == "transformer"  # the pin table's name, kept
