"""torch_xla's own dump of the graphs it syncs, read back: a Python number baked into each program, and a tensor that
grows, each named at the line that made it, from a dump torch_xla wrote in a process of its own."""

import os
import subprocess
import sys

import pytest

from neurondev.xla.saved_graphs import ENVIRONMENT, changes, parse

pytestmark = pytest.mark.xla

LOOP = """
import torch, torch_xla
device = torch_xla.device()
grown = torch.zeros(1, 2, device=device)
kept = torch.zeros(4, device=device)
torch_xla.sync()
for cur in range(3, 7):
    position = torch.arange(cur, cur + 1, device=device)
    kept = kept + 1
    grown = torch.cat([grown, grown[:, :1] + position], dim=1)
    torch_xla.sync()
    kept = kept * 2
    torch_xla.sync()
"""


@pytest.fixture(scope="module")
def dumped(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dump")
    script = folder / "loop.py"
    script.write_text(LOOP)
    environment = {**os.environ, **ENVIRONMENT, "XLA_SAVE_TENSORS_FILE": str(folder / "graphs.hlo"), "PJRT_DEVICE": "CPU"}
    subprocess.run([sys.executable, str(script)], check=True, timeout=300, env=environment, capture_output=True)
    return script, parse("".join(path.read_text() for path in sorted(folder.glob("graphs.hlo*"))))


def test_every_synced_graph_is_read_with_its_hash_and_the_line_that_synced_it(dumped):
    script, graphs = dumped
    assert len(graphs) == 9  # the start's, then two syncs a step, four steps
    assert all(len(graph.graph_hash) == 32 for graph in graphs)
    assert [graph.frames[-1][1] for graph in graphs] == [6] + [11, 13] * 4  # the sync's own line, in the script
    assert len({graph.graph_hash for graph in graphs[2::2]}) == 1  # kept * 2: one program, run four times


def test_a_baked_number_and_a_growing_size_are_named_at_their_lines_with_their_values(dumped):
    script, graphs = dumped
    found = {(change.kind, change.line): change for change in changes(graphs)}
    number = found[("number", 8)]  # torch.arange(cur, cur + 1): cur is a constant of each program
    assert number.file == str(script) and number.values == ("3", "4", "5", "6") and number.op == "prim__Constant"
    size = found[("size", 10)]  # torch.cat onto grown: one longer each step
    assert size.values[:2] == ("[1,2]", "[1,3]") and len(size.values) == 4
    assert not any(line == 12 for _, line in found)  # kept * 2 never changes: no cause
