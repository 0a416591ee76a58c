"""An Explanation as Model Explorer files: graph JSON (namespaces from the module stack) and node-data overlays.

Google's Model Explorer (``ai-edge-model-explorer``, the optional extra ``neurondev[explorer]``)
reads big graphs well: a hierarchy by namespace, search, and per-node data. Each section becomes
two graphs (before and after the pass); each overlay is one node-data file: the pins (and, after
the pass, the rewrites), graph breaks, crossings, uploads, CPU fallbacks, the device each node
ran on, and the node where XLA first differs from CPU. Nodes are labelled for people (what they
call, at which line; a weight by its dotted name), and the page opens where the findings are: the
first graph with a pin or a break, the layers that hold them expanded, the first pin named as
selected (Model Explorer 0.1 drops a selection when a node-data overlay loads after the layout).
Built with ``model_explorer.graph_builder``, ``node_data_builder`` and ``ModelExplorerConfig``;
nothing is drawn here.
"""

from __future__ import annotations

import dataclasses
import json
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch.fx

from neurondev._paths import serving_port
from neurondev.errors import ModelExplorerUnavailableError
from neurondev.fx.devices import function_name
from neurondev.fx.labels import node_label
from neurondev.fx.modules import module_path
from neurondev.fx.subgraphs import owner_of
from neurondev.render.sources import node_sources, source_drawn
from neurondev.trace.source import SourceLine

if TYPE_CHECKING:
    from neurondev.report.model import ExplanationData, Section
    from neurondev.runs.run_records import RunRecord

__all__ = ["OVERLAYS", "ModelExplorerFiles", "Opening", "graph_collection", "opening", "overlays", "save_model_explorer"]

OVERLAYS = ("pins", "graph breaks", "crossings", "uploads", "cpu fallbacks", "ran on the device", "first difference")
_COLOURS = {
    "pins": "#ffb347",
    "graph breaks": "#d62728",
    "crossings": "#d62728",
    "uploads": "#9467bd",
    "cpu fallbacks": "#8c564b",
    "first difference": "#d62728",
}


_EXPANDED_AT_MOST = 8  # layers expanded on opening: each one expanded costs Model Explorer a layout


@dataclasses.dataclass(frozen=True)
class Opening:
    """Where Model Explorer opens: ``graph`` (its id), the layers (namespaces) ``expanded`` and the
    ``overlay`` that colours the nodes (the one of the findings); an empty graph id opens the first
    graph as Model Explorer would.

    No node is selected. Model Explorer applies a ``selectedNodeId`` of its URL state only when its
    graph's layout finishes before its node data does: with the cores busy and Chromium throttled 8x,
    8 loads of 36 opened on the node (the side panel shows that node's values), the others on the
    graph (the panel lists the overlays); unloaded, 0 of 14. A page that opens one way or the
    other by timing is not one a person can be told about, so it always opens on the graph."""

    graph: str = ""
    expanded: tuple[str, ...] = ()
    overlay: str = "pins"

    def pane_state(self) -> dict[str, Any]:
        """Model Explorer's own pane state (its ``uiState`` URL data): a group node's id is its namespace
        followed by ``___group___``."""
        return {
            "deepestExpandedGroupNodeIds": [f"{namespace}___group___" for namespace in self.expanded],
            "selectedNodeId": "",  # see the class's docstring
            "selectedGraphId": self.graph,
            "selectedCollectionLabel": "",
            "widthFraction": 1,
        }


@dataclasses.dataclass(frozen=True)
class ModelExplorerFiles:
    """What ``save_model_explorer`` wrote: the graph collection and one node-data file per overlay,
    and where the page opens."""

    graphs: Path
    overlays: tuple[Path, ...]
    opening: Opening = Opening()

    def url(self, port: int) -> str:
        """The page of a Model Explorer serving on ``port`` that opens the graphs with their overlays,
        on the findings (``ModelExplorerConfig``'s URL data with the pane state added)."""
        serving_port(port)
        from model_explorer.config import ModelExplorerConfig

        config = ModelExplorerConfig().add_model_from_path(str(self.graphs))
        colouring = _overlay_file(self.opening.overlay)
        for path in sorted(self.overlays, key=lambda path: path.name == colouring):  # the last added colours the nodes
            config.add_node_data_from_path(str(path))
        data = json.loads(urllib.parse.unquote(config.to_url_param_value()))
        if self.opening.graph:
            data["uiState"] = {"paneStates": [self.opening.pane_state()]}
        return f"http://127.0.0.1:{port}/?data={urllib.parse.quote(json.dumps(data))}"

    def command(self, port: int = 8080) -> list[str]:
        """The model-explorer command that opens them (loopback only, no browser)."""
        serving_port(port)
        node_data = ",".join(str(path) for path in self.overlays)
        return [
            "model-explorer",
            str(self.graphs),
            "--host=127.0.0.1",
            f"--port={port}",
            "--no_open_in_browser",
            f"--node_data_paths={node_data}",
        ]


def _builders() -> tuple[Any, Any]:
    try:
        from model_explorer import graph_builder, node_data_builder
    except ImportError as error:
        raise ModelExplorerUnavailableError(
            "Model Explorer is an optional extra: pip install 'neurondev[explorer]' (or pip install ai-edge-model-explorer)"
        ) from error
    return graph_builder, node_data_builder


def graph_id(section: Section, which: str) -> str:
    return f"{section.label} {which}"


def graph_collection(explanation: ExplanationData) -> Any:
    """A ``GraphCollection`` with the graph of every section before and after the pass."""
    builder, _ = _builders()
    graphs = [
        builder.Graph(id=graph_id(section, which), nodes=_nodes(builder, gm, section, which))
        for section in explanation.sections
        for which, gm in (("before", section.traced), ("after", section.rewritten))
    ]
    return builder.GraphCollection(label=f"neurondev {explanation.name}", graphs=graphs)


def _nodes(builder: Any, gm: torch.fx.GraphModule, section: Section, which: str) -> list[Any]:
    pins = {owner_of(gm, pin.node): pin for pin in section.pins} if which == "before" else {}
    rewrites = {owner_of(gm, r.node): r for r in section.rewrites} if which == "after" else {}
    record = section.before if which == "before" else section.after
    sources = node_sources(gm, section.pins if which == "before" else (), record)
    nodes = []
    for node in gm.graph.nodes:
        attrs = _attributes(node, pins.get(node.name), rewrites.get(node.name), record, source_drawn(node, sources))
        edges = [builder.IncomingEdge(sourceNodeId=source.name, targetNodeInputId=str(i)) for i, source in enumerate(node.all_input_nodes)]
        nodes.append(
            builder.GraphNode(
                id=node.name,  # the name the card and the pin table use (an attribute too)
                label=node_label(node),
                namespace=_namespace(node),
                attrs=[builder.KeyValue(k, v) for k, v in attrs.items()],
                incomingEdges=edges,
            )
        )
    return nodes


def _overlay_file(overlay: str) -> str:
    return f"overlay-{overlay.replace(' ', '-')}.json"


def _namespace(node: torch.fx.Node) -> str:
    return module_path(node).replace(".", "/")


def opening(explanation: ExplanationData) -> Opening:
    """The first graph with a finding (a pin, else a graph break), coloured by its pins (else its
    breaks), the layers holding its pins and breaks expanded (at most ``_EXPANDED_AT_MOST``)."""
    for section in explanation.sections:
        gm = section.traced
        by_name = {node.name: node for node in gm.graph.nodes}
        pinned = [owner for pin in section.pins if (owner := owner_of(gm, pin.node)) is not None]
        breaks = [b.node for b in (section.before.graph_breaks if section.before is not None else ()) if b.node in by_name]
        found = list(dict.fromkeys(pinned + breaks))
        if found:
            namespaces = [_namespace(by_name[name]) for name in found]
            expanded = tuple(dict.fromkeys(n for n in namespaces if n))[:_EXPANDED_AT_MOST]
            return Opening(graph_id(section, "before"), expanded, "pins" if pinned else "graph breaks")
    return Opening()


def _attributes(node: torch.fx.Node, pin: Any, rewrite: Any, record: RunRecord | None, source: SourceLine | None) -> dict[str, str]:
    """What a person reads in Model Explorer's side panel: what the node calls, the user's line, the device."""
    attrs = {"node": node.name, "op": node.op, "function": function_name(node), "module": module_path(node) or "(top)"}
    if source is not None:
        attrs.update({"line": source.where, "code": source.code})
    if pin is not None:
        attrs["device pin"] = f"device={pin.device} ({pin.kind}, {pin.location})"
    if rewrite is not None:
        attrs["rewritten"] = f"{rewrite.old} -> {rewrite.new}"
    if record is not None and record.device_of(node.name) is not None:
        attrs["ran on"] = str(record.device_of(node.name))
    return attrs


def overlays(explanation: ExplanationData) -> dict[str, Any]:
    """One ``ModelNodeData`` per overlay in ``OVERLAYS``, each with data for every graph."""
    _, data = _builders()
    result = {}
    for overlay in OVERLAYS:
        graphs = {}
        for section in explanation.sections:
            for which, record in (("before", section.before), ("after", section.after)):
                values = _values(overlay, section, which, record)
                colour = _COLOURS.get(overlay, "#2ca02c")
                results = {name: data.NodeDataResult(value=value, bgColor=colour if value else None) for name, value in values.items()}
                graphs[graph_id(section, which)] = data.GraphNodeData(results=results, name=overlay)
        result[overlay] = data.ModelNodeData(graphsData=graphs)
    return result


def _values(overlay: str, section: Section, which: str, record: RunRecord | None) -> dict[str, float]:
    """The overlay's number per node: a pin (or rewrite) 1; a break's executions and host transfers;
    crossings in or out; transfers up; fallbacks; 1 for a node on the target device, 0 on the host; the max abs
    error of the first node whose value on the device differs from CPU. A pin inside a body a higher-order
    op calls marks the node that calls it."""
    if overlay == "pins":
        gm = section.traced if which == "before" else section.rewritten
        names = [p.node for p in section.pins] if which == "before" else [r.node for r in section.rewrites]
        return {owner: 1 for name in names if (owner := owner_of(gm, name)) is not None}
    if overlay == "first difference":
        first = section.cpu_verdict.first_difference if section.cpu_verdict is not None else None
        return {first.node: first.comparison.max_abs_error} if first is not None and which == "after" else {}
    if record is None:
        return {}
    if overlay == "graph breaks":
        return {b.node: b.executions + b.transfers_to_host for b in record.graph_breaks}
    if overlay == "crossings":
        counts: dict[str, float] = {}
        for crossing in record.crossings:
            counts[crossing.node] = counts.get(crossing.node, 0) + 1
        return counts
    if overlay == "uploads":
        return {u.node: u.transfers_to_device for u in record.uploads}
    if overlay == "cpu fallbacks":
        return dict(record.node_fallbacks)
    return {name: 1 if record.on_target(name) else 0 for name in record.node_devices}


def save_model_explorer(explanation: ExplanationData, folder: str | Path) -> ModelExplorerFiles:
    """Write ``graphs.json`` and one ``overlay-<name>.json`` per overlay into ``folder`` (made if missing)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    collection = graph_collection(explanation)
    graphs = folder / "graphs.json"
    graphs.write_text(json.dumps(dataclasses.asdict(collection)), encoding="utf-8")
    paths = []
    for name, node_data in overlays(explanation).items():
        path = folder / _overlay_file(name)
        node_data.save_to_file(str(path))
        paths.append(path)
    return ModelExplorerFiles(graphs, tuple(paths), opening(explanation))
