"""The tutorial notebooks run top to bottom on the real XLA device, show what they promise, and the
committed copies (with outputs) agree with a fresh run."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
import make_notebooks  # noqa: E402

pytestmark = [pytest.mark.xla, pytest.mark.slow]

# What each notebook must show (in its printed output), beyond running without an error.
KEY_TEXT = {
    "01_quickstart.ipynb": [
        "Your program on XLA (torch.compile): as written (openxla) runs (1 graph(s), 0 transfer(s) to the host per call) and agrees",
        "Traced on CPU, the graph moved to XLA: 1 frozen device pin(s) (torch.empty at",
        "-> 1 graph break(s) on xla:0 (copy_ pulls a value to the host). After DeviceRewriterPass: 0 breaks, 0 transfers to the host; "
        "the rewrite changed no values; the graph on XLA agrees with CPU.",
        "per call: graphs [1, 0], transfers to host [0, 0]",
        "your program agrees with CPU: True | the CPU-traced graph on XLA agrees with CPU: True",
        "the rewrite changed no values: True | the graph on XLA agrees with CPU: True",
        "breaks before: ['copy_'] | transfers to host: 1",
        "breaks after:  [] | transfers to host: 0",
        "fails on xla:0 at masked_fill",
        "In[2]:2: verified",
        "  + out = x.new_empty(64, dtype=torch.float32)   # a buffer on x's device",
        "breaks before the pass: 0 | outputs on: ('xla:0',)",
    ],
    "02_why_devices_freeze.ipynb": [
        "out = torch.zeros(8, device = device(type='cpu'))",
        "out = l_args_0_.new_zeros(8)",
        "Traced on CPU, the graph moved to XLA: No device pin",
        "Traced on CPU, the graph moved to XLA: 1 frozen device pin(s) (torch.tensor at patterns.py:",
        "1 upload(s) of host data per call (table)",
        "            seed: out = x.new_empty(64, dtype=torch.float32)",  # the gallery table's verified fix column
        "          arange: no spelling: compile through the neurondev backend",
        "like-and-new: nothing to fix in your code",
    ],
    "03_inside_the_pass.ipynb": [
        "after:  empty (64,) {'dtype': torch.float32, 'device': device(type='xla')}",
        "rewrite_positional=False: [('a', 'kwarg', 'cpu', 'xla')]",
        "('b', 'arg[1]', 'cpu', 'xla'), ('c', 'method', 'cpu', 'xla')",
        "pins left: 0",
        "openxla: output on cpu",
        "neurondev: output on cpu",
    ],
    "04_collectives.ipynb": [
        "rank 0: frozen breaks at ('copy_',), rewritten breaks at (), values (100.0, 102.0, 104.0, 106.0)",
        "rank 1: frozen breaks at ('copy_',), rewritten breaks at (), values (108.0, 110.0, 112.0, 114.0)",
        # the two-rank run's facts (this notebook is the suite's two-rank test: tests/xla/test_ranks.py checks the rest)
        "rank 0 on xla:0: frozen output on ('cpu',), rewritten output on ('xla:0',), rewritten executions and transfers to host 0, 0; "
        "both equal the direct reduction: True",
        "rank 1 on xla:1: frozen output on ('cpu',), rewritten output on ('xla:1',), rewritten executions and transfers to host 0, 0; "
        "both equal the direct reduction: True",
    ],
    "05_real_model.ipynb": [
        "fails on xla:0 at position_embeds (modeling_gpt2.py:",
        "frozen: breaks at [], failed: True",
        "kwargs-only: breaks at ['to', 'to_1', 'to_2'], failed: False",
        "default: breaks at [], failed: False",
        "openxla: error=True",
        "neurondev: error=False, outputs on ['xla:0']",
        "| folded: True",
        "same lines as the 4-layer one above: True",
        "Skip(kind='traced on meta', device=None, error=None, target=None)",
        "graph(s), not run (traced on meta)>",
    ],
    "06_beyond_device_arguments.ipynb": [
        "CPU trace ['operator.gt', 'Tensor.float'], XLA trace ['operator.gt', 'Tensor.int']",
        "native run fails at counts (line 3 of the cell): NotImplementedError",
        "the CPU trace, rewritten, is the graph traced natively on XLA",
        "graph 0 forward: pins ['aten.arange.default'], after the pass: 0 breaks, the graph on XLA agrees with CPU: True",
        "reads_a_global: mixed devices at compile time at line 4 of the cell (compile):",
        "numpy_between_graphs: host-only call between graphs at line 9 of the cell (python):",
        "your program agrees with CPU: False | the CPU graph moved to XLA agrees: True",
        "graph 0 backward: pins ['aten.scalar_tensor.default', 'aten.scalar_tensor.default'], after the pass: 0 breaks",
        "weight gradient on XLA equals eager CPU: True",
        "2 device pin(s) frozen into the graph of buffer_and_positions",
        "clean: True",
    ],
    "07_loops.ipynb": [
        "Watched the block (7 call(s) of the compiled function): LlamaForCausalLM.forward compiled 4 time(s) (1 first, 3 recompiles, "
        "then dynamo's recompile limit (4): it runs uncompiled",
        # the two calls after the limit run uncompiled, each a step of its own, with the XLA programs their lazy ops make
        "No steady state: dynamo compiled until its recompile limit at step 5, then the function ran uncompiled for the 2 step(s) after it, "
        "XLA compiling programs in 2 of them.",
        "input_ids changed size at dimension 1: 16 -> 1: the prompt, then one token a step: the second call is the decode step's own graph",
        "cache.layers[0].keys changed at 2 compiles (16 -> 17 -> 18): a size growing by one per call (a cache or a sequence)",
        "LlamaForCausalLM.forward: cache.layers[0].keys grows by one position per call (a cache or a sequence): a new shape every step: "
        "use a static cache (cache_implementation='static' in transformers generate",
        "Watched LlamaForCausalLM.forward (6 calls): LlamaForCausalLM.forward compiled 2 time(s) (1 first, 1 recompile).",
        "dynamo compiles per call: [1, 1, 0, 0, 0, 0]",
        "XLA programs per call after the second: [1] | steady state: never",  # dynamo is steady, XLA is not
        "No steady state: XLA keeps compiling from call 3 to the end (call 6)",
        "a Python number burned into the graph (read at In[5]:6); x changed size at dimension 0: 8 -> 5",
        "pad to a few bucket sizes (8), or drop the short last batch",
        "Watched padded_step (7 calls): padded_step compiled 1 time(s) (1 first).",
        "dynamo compiles per call: [1, 0, 0, 0, 0, 0, 0] | XLA programs per call: [1, 1, 1, 0, 0, 0, 0]",
        "Steady state after call 1 (the warm-up): nothing compiled after it, dynamo or XLA.",  # with the sync
        # the rule's classes, each by its loop
        "steady: new work counted at steps [5], exit code 0",
        "late: new work counted at steps [7], exit code 0",
        "recurring: new work counted at steps [3, 5, 7], exit code 1",
        "keeps compiling: new work counted at steps [2, 3, 4, 5], exit code 1",
    ],
    "08_native_devices.ipynb": [
        "copies to the host before: [('copy_', 1, 'patterns.py:40')] | outputs on ('cpu',)",
        "copies to the host after:  [] | outputs on ('hostdev:0',)",
        "9 rows: {'aten::addmm.out': 8, 'aten::mm.out': 1}",
        "hostdev: runs True, agrees with CPU True, CPU fallbacks per call 9",
        "xla: runs True, agrees with CPU True, CPU fallbacks per call 0",
        "aten::addmm.out fell back to the CPU 1 time(s) per call (464 bytes copied) in fc",
        "clean: Net",
        "exit code: 1",
        "ND412 step 4: rank 1 recompiled Linear.forward and rank 0 did not (rank 1: args[0] changed size at dimension 0: 4 -> 3 at ragged_ranks.py:52 [ND405])",
        "rank 0 compiles: [('first', 1)]",
        "rank 1 compiles: [('first', 1), ('recompile', 4)]",
        "padded: exit code 0 | divergences: []",
    ],
}
_TIMING = re.compile(r"\d+(?:\.\d+)?\s?(?:ms|s)\b")
# A float printed from XLA math may differ in its last bits between processors: a fact is the text
# around it, never the figure itself.
_FLOAT = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)|[-+]?\d+\.\d+")
# When several lines of a library read a guarded value (transformers' deprecation wrapper reads kwargs at
# two lines), which one dynamo names varies between processes (134 or 173 in CI, same versions): the
# line in a library's file is masked; the notebook's own lines (read at In[N]:L) are not.
_LIBRARY_READ = re.compile(r"(read at [\w.-]+\.py):\d+")
# Where a watched loop's time went: its lines in the order of seconds measured on this machine (close costs trade places)
_COSTS = re.compile(r"Where the time went \(the runtime's own clocks\): .*? watched\. ")
# gloo's C++ logging reaches stdout at its own pace, from the kernel and its rank processes: its newline can
# arrive after the kernel's next print ('...ranks is : 1rank 0: frozen ...'), so the message is cut out
# wherever it lands rather than its line dropped (a loaded run lost the rank's line that way).
_LIBRARY_NOISE = re.compile(r"\[Gloo\] Rank \d+ is connected to \d+ peer ranks\. Expected number of connected peer ranks is :\s*\d+")


def printed(notebook) -> list[str]:
    """Every line the notebook printed (stdout), durations masked and library noise left out. A cell's
    stream is joined before it is split into lines: the kernel flushes on a timer, so one print can
    arrive in two chunks ('clean:' and ' True')."""
    lines = []
    for cell in notebook.cells:
        text = "".join(o["text"] for o in cell.get("outputs", []) if o.get("output_type") == "stream" and o.get("name") == "stdout")
        lines += [_TIMING.sub("<time>", line.rstrip()) for line in _LIBRARY_NOISE.sub("", text).splitlines() if line.strip()]
    return lines


def facts(notebook) -> list[str]:
    """The printed lines with every float masked, and the costliest lines of a watch (their order is timing's): what must
    agree between machines."""
    return [_LIBRARY_READ.sub(r"\1:<line>", _FLOAT.sub("<float>", _COSTS.sub("<costs> ", line))) for line in printed(notebook)]


def errors(notebook) -> list[str]:
    return [f"{o.ename}: {o.evalue}" for cell in notebook.cells for o in cell.get("outputs", []) if o.output_type == "error"]


def html_of(notebook) -> str:
    return "\n".join(o.get("data", {}).get("text/html", "") for cell in notebook.cells for o in cell.get("outputs", []))


@pytest.mark.parametrize("name", sorted(make_notebooks.NOTEBOOK_CELLS))
def test_each_notebook_runs_clean_shows_its_key_outputs_and_matches_the_committed_copy(name):
    import nbformat  # here, not at collection: jsonschema's import builds 38 parsers (2.8 s) in a worker that may run no notebook

    committed = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    assert [c.source for c in committed.cells] == [c.source for c in make_notebooks.build(make_notebooks.NOTEBOOK_CELLS[name]).cells], (
        "the committed notebook is not what scripts/make_notebooks.py defines: run it again"
    )
    notebook = make_notebooks.execute(make_notebooks.build(make_notebooks.NOTEBOOK_CELLS[name]))
    assert errors(notebook) == []
    text = "\n".join(printed(notebook))
    for key in KEY_TEXT[name]:
        assert key in text, key
    differing = [(was, now) for was, now in zip(facts(committed), facts(notebook)) if was != now]
    assert len(facts(committed)) == len(facts(notebook)) and not differing, (
        f"committed outputs differ from a fresh run (run scripts/make_notebooks.py); first difference:\n{differing[:1]}"
    )
    assert errors(committed) == []


@pytest.mark.dot
def test_the_quickstart_carries_the_card_with_both_graphs_and_the_explorer():
    import nbformat

    committed = nbformat.read(ROOT / "notebooks" / "01_quickstart.ipynb", as_version=4)
    html = html_of(committed)
    assert html.count("<svg") >= 2 and "neurondev-card" in html
    widget_outputs = [
        o for c in committed.cells for o in c.get("outputs", []) if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    assert widget_outputs and "widgets" in committed.metadata


def test_gloo_logging_is_cut_out_wherever_its_newline_lands():
    import nbformat

    gloo = "[Gloo] Rank 0 is connected to 1 peer ranks. Expected number of connected peer ranks is : 1"
    late_newline = [
        nbformat.v4.new_output("stream", name="stdout", text=text) for text in (gloo, "rank 0: frozen", "\n\n", gloo + "\n", "done\n")
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(outputs=late_newline)])
    assert printed(notebook) == ["rank 0: frozen", "done"]
    before_its_number = [nbformat.v4.new_output("stream", name="stdout", text=text) for text in (gloo[:-1], "\n1\n", "done\n")]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(outputs=before_its_number)])
    assert printed(notebook) == ["done"]
