"""Write and execute the tutorial notebooks (notebooks/*.ipynb), keeping their outputs.

Each notebook is defined here as cells of prose and code; this script writes it, runs it top to
bottom on the XLA device (nbclient, the venv's python3 kernel) and saves it with its outputs, so
the committed notebooks read well on a code host. tests/test_notebooks.py runs them again and
fails when a fresh run's key outputs differ from the committed ones.

    .venv/bin/python scripts/make_notebooks.py            # all
    .venv/bin/python scripts/make_notebooks.py 03         # the ones whose name starts with 03
"""

from __future__ import annotations

import sys
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"

SETUP = """import pandas as pd
pd.set_option("display.max_colwidth", 90)
import torch
import neurondev
from neurondev import examples"""

QUICKSTART = [
    (
        "md",
        """# Quickstart: why your graph breaks on XLA, in one call

When `torch.compile` traces a function, dynamo runs it with the inputs you gave. Traced on CPU,
`device=x.device` is evaluated to `device(type='cpu')` and written into the graph as a constant.
Run that graph on an XLA device (a Neuron core on Trainium, or PJRT's CPU device here) and those
tensors land on the host: the lazy XLA graph is cut to move data there (a *graph break*), or the
run fails. `neurondev.explain` shows it, fixes it, and measures both.""",
    ),
    ("code", SETUP),
    (
        "md",
        """## The seed example

A buffer made "on the same device as `x`" and filled with `copy_`.""",
    ),
    (
        "code",
        """def user_function(x):
    out = torch.empty(64, dtype=torch.float32, device=x.device)   # a buffer on x's device
    out.copy_(torch.relu(x) * 2)
    return out

ex = neurondev.explain(user_function, torch.randn(64), quiet=True)
ex""",
    ),
    (
        "md",
        """The card answers two questions, kept apart.

1. **Your program on XLA** (the first line and the first table): your whole function under
   `torch.compile`, its inputs on the XLA device, as written (torch_xla's `openxla` backend) and
   with the `neurondev` backend, each called twice, against the function run eagerly on CPU. Traced
   with the inputs on XLA, `device=x.device` *is* XLA: this function is fine as a program.
2. **Traced on CPU, the graph moved to XLA**: what a backend sees that traces on CPU and then runs
   the graph on XLA (vLLM's Neuron backend does): there the device is frozen to `cpu`.

The second part reads top to bottom: the headline (pins, then what happened on the XLA device before
and after `DeviceRewriterPass`), the pin table with the line of your code and what to write
instead, the fixed statement (verified: see the end of this notebook), both graphs (pins orange, breaks and the edges where values crossed devices red,
rewritten nodes blue), the measured figures, and the generated code before and after.

The same in plain text, for a terminal or a log:""",
    ),
    ("code", """print(ex.summary())"""),
    (
        "md",
        """Everything on the card is data too: `ex.program` holds the two program runs (`as_written`,
`rewritten`: each ok or failed with the line, compared with CPU, with the graphs, XLA compiles,
executions and transfers of each call), `ex.pin_table()` is a pandas DataFrame (one row per pin),
`ex.before` / `ex.after` hold one `RunRecord` per graph traced on CPU.""",
    ),
    (
        "code",
        """for run in (ex.program.as_written, ex.program.rewritten):
    print(f"{run.backend}: {neurondev.describe(run)}")
    print(f"   per call: graphs {[c.graphs for c in run.calls]}, transfers to host {[c.transfers_to_host for c in run.calls]}")
print("your program agrees with CPU:", ex.xla_matches_cpu, "| the CPU-traced graph on XLA agrees with CPU:", ex.graphs_match_cpu)""",
    ),
    ("code", """ex.pin_table()[["node", "function", "device", "kind", "line", "code"]]"""),
    (
        "code",
        """before, after = ex.before[0], ex.after[0]
print("breaks before:", [b.node for b in before.graph_breaks], "| transfers to host:", before.transfers_to_host)
print("breaks after: ", [b.node for b in after.graph_breaks], "| transfers to host:", after.transfers_to_host)
print("outputs on:", before.output_devices, "->", after.output_devices)
print("the rewrite changed no values:", ex.rewrite_preserves_values, "| the graph on XLA agrees with CPU:", ex.graphs_match_cpu)""",
    ),
    (
        "md",
        """## Explore

`ex.explore()` is an ipywidgets explorer: pick a pin to see its line, its node and where its
value travelled; toggle the graph before/after; change the focus radius; run again on another
target. (On a code host the widget does not render; run the notebook to use it.)""",
    ),
    ("code", """ex.explore()"""),
    (
        "md",
        """## Your own function

Put your function here. `explain(fn)` without inputs returns a callable, the form
`torch._dynamo.explain` uses. Here: the causal mask of attention, which fails outright on XLA
when frozen.""",
    ),
    (
        "code",
        """def attention_scores(x):
    n = x.shape[0]
    mask = torch.triu(torch.ones(n, n, device=x.device), diagonal=1).bool()
    return (x @ x.T).masked_fill(mask, float("-inf")).softmax(-1)

mine = neurondev.explain(attention_scores, quiet=True)(torch.randn(6, 8))
print(mine.summary())""",
    ),
    (
        "md",
        """`ex.save_html("report.html")` writes the card as one self-contained file (no script, nothing
from the network) to share; `ex.to_json()` gives the same as data for CI.

## The fix, verified, applied

For each pinned statement in your own code, `explain` writes the statement to put instead and
proves it: the fixed code, traced again with the same inputs, has no pin on the line and no new
one, traces on XLA as it does on CPU, and computes the same values on CPU. `ex.fixes` holds them;
`ex.patch()` is a diff for functions in files (`neurondev fix file.py:func --write` applies it).
This function lives in a notebook cell, so here the fix is applied to the cell's source:""",
    ),
    (
        "code",
        """import inspect

(fix,) = ex.fixes
print(f"{fix.where}: {fix.status}\\n  - {fix.before}\\n  + {fix.after}")
fixed_source = inspect.getsource(user_function).replace(fix.before, fix.after)
print(fixed_source)
exec(fixed_source)  # user_function is now the fixed one""",
    ),
    (
        "code",
        """fixed = neurondev.explain(user_function, torch.randn(64), quiet=True)
print(fixed.summary())
print("breaks before the pass:", fixed.totals("before").graph_breaks, "| outputs on:", fixed.before[0].output_devices)""",
    ),
    ("md", """No pin left, no break even before the pass: the function follows its input's device. Next: `02_why_devices_freeze.ipynb`."""),
]

WHY = [
    (
        "md",
        """# Why devices freeze, and what to write instead

Dynamo does not read your code, it *runs* it, once per new kind of input, and records the tensor
operations into an FX graph. Every Python value it meets along the way that is not a tensor
operation (a shape, a flag, `x.device`) is evaluated on the spot and written into the graph as a
constant. That is why a graph traced on CPU says `device(type='cpu')`.""",
    ),
    ("code", SETUP),
    (
        "code",
        """def frozen(x):
    out = torch.zeros(x.shape[0], device=x.device)
    out.copy_(x * 2)
    return out

captured = neurondev.capture(frozen, torch.randn(8))
print(captured.graphs[0].code)""",
    ),
    (
        "md",
        """`device=x.device` became `device = device(type='cpu')`, and `x.shape[0]` became `8`: both were
decided while tracing. The tensor operations (`mul`, `copy_`) stay operations on the graph's
input, so they follow the input to whatever device it is on. A *method of the tensor* that makes
a new tensor is such an operation:""",
    ),
    (
        "code",
        """def follows(x):
    out = x.new_zeros(x.shape[0])
    out.copy_(x * 2)
    return out

print(neurondev.capture(follows, torch.randn(8)).graphs[0].code)""",
    ),
    (
        "md",
        """No device in the graph: `new_zeros` is called on `x` when the graph runs.

## The gallery, side by side

`neurondev.examples` holds the patterns met in real code, each explained, with what tracing on
CPU and running on XLA does to it (measured on the PJRT CPU device, stored with the example and
checked by the test suite). `verified fix` is the statement `explain` writes for the pattern's
line and proves by tracing the fixed code again (or why there is none).""",
    ),
    (
        "code",
        """gallery = examples.list()[["title", "freezes", "before", "after", "instead", "verified fix"]]
for name, fix in gallery["verified fix"].items():
    print(f"{name:>16}: {fix}")
gallery""",
    ),
    (
        "md",
        """Three kinds of outcome before the pass:

* **a break**: an XLA value is written into a host tensor (`copy_`, `mul_`, index assignment), so
  XLA executes what it has and copies the result down;
* **a failure**: an op that will not mix devices (`masked_fill` with a host mask) stops the run;
* **uploads**: a host tensor meets an XLA one in an ordinary op and is copied up, on every call.

After `DeviceRewriterPass` no pattern breaks. What still uploads comes from host data itself
(`torch.tensor([...])` of a Python list; `torch.arange(n).to(x)` with no device at all): no
device rewrite can move Python data, and the run names the node.""",
    ),
    (
        "code",
        """for name in ["seed", "literal-cpu", "causal-mask", "rotary", "tensor", "no-device-upload", "like-and-new"]:
    with examples.get(name).open() as (fn, args, kwargs):
        ex = neurondev.explain(fn, *args, **kwargs, quiet=True)
    print(f"{name:>16}: {ex.summary()}")""",
    ),
    (
        "md",
        """## Reading a pin table

`neurondev.diagnose` (and `ex.pin_table()`) has one row per pin. `kind` says where the device came
from: `frozen` (a tensor's `.device`, evaluated while tracing), `literal` (written in your code),
`variable` (a parameter or variable whose origin is not on that line), `assertion` (torch.export's
device checks). `location` says where it sits: `kwarg` (`device=`), `arg[i]` (positional, as in
`y.to(x.device)`), `method` (`.cpu()`); `kwargs_pass` says whether the seed document's kwargs-only
algorithm would rewrite it (positional pins need the default pass).""",
    ),
    (
        "code",
        """with examples.get("to-device-dtype").open() as (fn, args, kwargs):
    table = neurondev.diagnose(neurondev.capture(fn, *args, **kwargs))
table[["node", "function", "device", "location", "kind", "kwargs_pass", "default_pass", "line", "code"]]""",
    ),
]

INSIDE = [
    (
        "md",
        """# Inside DeviceRewriterPass

One pass over the nodes (O(n)): every device argument that is not on the target is rewritten to
the target, in the format it was written in. This notebook takes it apart on small graphs.""",
    ),
    (
        "code",
        SETUP
        + """
from neurondev import DeviceRewriterPass
from neurondev.fx.devices import device_slots""",
    ),
    ("md", """## One node, before and after"""),
    (
        "code",
        """captured = neurondev.capture(examples.seed_function, torch.randn(64))
gm = captured.graphs[0]
node = next(n for n in gm.graph.nodes if n.name == "out")
print("before:", node.target.__name__, node.args, node.kwargs)
fixed, rewrites = neurondev.rewrite_copy(gm)
node_after = next(n for n in fixed.graph.nodes if n.name == "out")
print("after: ", node_after.target.__name__, node_after.args, node_after.kwargs)
print("the capture's graph is untouched:", node.kwargs["device"])""",
    ),
    (
        "md",
        """## The format is kept

A `str` stays a `str`, a `torch.device` stays a `torch.device`; an `int` (torch reads it as a CUDA
index) becomes the target string. The index comes from the target alone: `cuda:1` means nothing
on XLA.""",
    ),
    (
        "code",
        """import torch.fx

def graph_with(device):
    graph = torch.fx.Graph()
    graph.output(graph.call_function(torch.empty, (2,), {"device": device}))
    return torch.fx.GraphModule(torch.nn.Module(), graph)

rows = []
for old in ["cpu", "cuda:1", torch.device("cpu"), torch.device("cuda", 3), 0]:
    for target in ["xla", "xla:0"]:
        rewritten, (rewrite,) = neurondev.rewrite_copy(graph_with(old), target=target)
        rows.append({"old": repr(old), "target": target, "new": repr(rewrite.new), "type kept": type(rewrite.new).__name__})
pd.DataFrame(rows)""",
    ),
    (
        "md",
        """## The documented kwargs-only algorithm, and the default

The seed document rewrites `device=` kwargs only (`rewrite_positional=False` is exactly that).
Real code also pins devices positionally: `y.to(x.device)`, `mask.to(dev, dtype)`,
`torch.device(...)` calls, `.cpu()`. The default pass rewrites those too.""",
    ),
    (
        "code",
        """def mixed(x, y):
    a = torch.zeros(4, device=x.device)          # kwarg
    b = y.to(x.device)                           # positional
    c = (x * 2).cpu()                            # a method
    return a + b + c.to(x.device)

captured = neurondev.capture(mixed, torch.randn(4), torch.randn(4))
gm = captured.graphs[0]
for positional in (False, True):
    _, rewrites = neurondev.rewrite_copy(gm, rewrite_positional=positional)
    print(f"rewrite_positional={positional}:", [(r.node, r.location, str(r.old), str(r.new)) for r in rewrites])""",
    ),
    (
        "md",
        """## In a torch.fx pass pipeline

`DeviceRewriterPass` is a torch.fx `PassBase`: it returns `PassResult(graph_module, modified)`
with an honest `modified`, so it composes with `PassManager` (which reruns passes until nothing
changes when asked to). It edits the graph in place, as a pass in a pipeline does; it also
refreshes the fake tensors in `node.meta` so later passes see the new device.""",
    ),
    (
        "code",
        """from torch.fx.passes.infra.pass_manager import PassManager

pipeline_graph = neurondev.rewrite_copy(gm, target="cpu")[0]     # a private copy for the pipeline
manager = PassManager(passes=[DeviceRewriterPass(target="xla:0")], steps=2, run_checks_after_each_pass=True)
result = manager(pipeline_graph)
print("modified:", result.modified)
print("pins left:", len(neurondev.find_pins(result.graph_module, target="xla:0")))
print(result.graph_module.code)""",
    ),
    (
        "md",
        """## As a torch.compile backend

`torch.compile(fn, backend="neurondev")` runs the pass on every graph dynamo makes and hands it
to torch_xla's `openxla` backend. It is for inputs on XLA: there, a graph traced with the XLA
input has `device=xla:0` for `x.device`, but a literal `device="cpu"` still meets XLA values. The
backend moves that work to XLA, and gives each result back on the device your code gives it: swapping
`openxla` for `neurondev` changes no result's device (here the host: what you wrote), only where the
work before it runs.""",
    ),
    (
        "code",
        """from neurondev import xla

def literal(x):
    out = torch.zeros(64, device="cpu")
    out.copy_(torch.relu(x) * 2)
    return out

x = torch.randn(64)
for backend in ("openxla", "neurondev"):
    compiled = torch.compile(literal, backend=backend)
    result = compiled(x.to(xla.device()))
    print(f"{backend:>9}: output on {result.device}")
    torch._dynamo.reset()""",
    ),
]

COLLECTIVES = [
    (
        "md",
        """# Collectives: the seed document's reduce_scatter, on one and on two ranks

The seed document's own example: the result of `reduce_scatter_tensor` is XLA data, copied into
a buffer that tracing froze to CPU.""",
    ),
    ("code", SETUP),
    (
        "md",
        """## One rank, in this process

Tracing on CPU needs a process group for the collective: a gloo group of one.""",
    ),
    (
        "code",
        """with examples.get("collective").open() as (fn, args, kwargs):
    ex = neurondev.explain(fn, *args, **kwargs, quiet=True)
print(ex.summary())
ex""",
    ),
    (
        "md",
        """## Two ranks

`neurondev.gallery.collective.run_on_ranks(world_size=2)` starts a fresh process with two XLA devices
(`torch_xla`'s `xla_multiprocessing.spawn`; on PJRT CPU a thread per device), traces the example
per rank on CPU and runs it frozen and rewritten on each rank, in lock-step. Each rank's input is
different, so a wrong reduction cannot look right. PJRT's CPU device runs 1 or 2 ranks (more
abort in XLA's rendezvous, with or without neurondev); on Trainium the Neuron cores decide.""",
    ),
    (
        "code",
        """from neurondev.gallery.collective import run_on_ranks

results = run_on_ranks(world_size=2)
pd.DataFrame([
    {"rank": r.rank, "device": r.device, "expected": r.expected,
     "frozen breaks": r.frozen.graph_breaks, "frozen output on": r.frozen.output_devices,
     "rewritten breaks": r.rewritten.graph_breaks, "rewritten output on": r.rewritten.output_devices,
     "values right": r.frozen.matches_expected and r.rewritten.matches_expected}
    for r in results])""",
    ),
    (
        "code",
        """for r in results:
    print(f"rank {r.rank}: frozen breaks at {r.frozen.graph_breaks}, rewritten breaks at {r.rewritten.graph_breaks}, "
          f"values {r.rewritten.values} (expected {r.expected})")
    print(f"rank {r.rank} on {r.device}: frozen output on {r.frozen.output_devices}, rewritten output on "
          f"{r.rewritten.output_devices}, rewritten executions and transfers to host {r.rewritten.executions}, "
          f"{r.rewritten.transfers_to_host}; both equal the direct reduction: {r.frozen.matches_expected and r.rewritten.matches_expected}")""",
    ),
]

REAL_MODEL = [
    (
        "md",
        """# A real model: tiny GPT-2 from transformers

A GPT-2 with 2 layers, hidden size 64 and random weights (no download). transformers builds
positions and masks with `torch.arange(..., device=...)` and moves masks with `.to(device)`:
pins in kwargs and positional ones.""",
    ),
    (
        "code",
        SETUP
        + """
from neurondev import testing as bridge""",
    ),
    (
        "code",
        """model, args, kwargs = examples.get("gpt2").build()
ex = neurondev.explain(model, *args, **kwargs, quiet=True)
print(ex.summary())
ex.pin_table()[["node", "function", "location", "kind", "line", "code"]]""",
    ),
    (
        "md",
        """The frozen graph fails outright at the position embedding. Now three versions of the same
graph on the XLA device: frozen, the seed document's kwargs-only pass, and the default pass.""",
    ),
    (
        "code",
        """gm, inputs = ex.capture.graphs[0], ex.capture.example_inputs[0]
variants = {
    "frozen": gm,
    "kwargs-only": neurondev.rewrite_copy(gm, rewrite_positional=False)[0],
    "default": neurondev.rewrite_copy(gm)[0],
}
runs = {name: neurondev.run_on_xla(graph, *inputs, repeat=10) for name, graph in variants.items()}
for name, run in runs.items():
    print(f"{name:>11}: breaks at {[b.node for b in run.graph_breaks]}, failed: {run.error is not None}")
pd.DataFrame([{"graph": name, "breaks at": [b.node for b in r.graph_breaks], "executions/call": r.executions,
               "to host/call": r.transfers_to_host, "to device/call": r.transfers_to_device,
               "ms/call": round(r.seconds * 1e3, 3) if r.seconds else None,
               "values vs CPU": neurondev.describe(r.comparison) if r.comparison else str(r.error)}
              for name, r in runs.items()])""",
    ),
    (
        "md",
        """The kwargs-only pass leaves the three positional `.to(device)` pins: each one cuts the graph
on every call (an execution, a copy down and a copy back up). The default pass leaves none, and
the logits equal eager's.

## openxla's own constructor mover

torch_xla's `openxla` backend moves constructors itself (`XLAConstructorMoverPass`). On a graph
traced on CPU it cannot help: the frozen GPT-2 does not even compile there.""",
    ),
    (
        "code",
        """rows = []
for rewrite in (False, True):
    report = bridge.bridge_report(gm, *inputs, rewrite=rewrite)
    rows.append({"backend": report.backend, "partitions": report.partitions,
                 "outputs on": report.output_devices, "error": report.error})
    print(f"{report.backend:>9}: error={report.error is not None}, outputs on {report.output_devices}")
pd.DataFrame(rows)""",
    ),
    (
        "md",
        """## A deep model: many layers, one picture

Real models repeat their layers 32 to 80 times, and with them every finding: the same crossing at
the same line of the same module in every layer. The focus view draws each such finding once, in
the first layer where it occurs, with its count ("× 4 layers"), and folds the identical layers
into one box. Here a 4-layer Llama (hidden 64, random weights), to keep the notebook quick: a
32-layer one draws the same picture, "× 32 layers" (the README shows it).""",
    ),
    (
        "code",
        """from transformers import LlamaConfig, LlamaForCausalLM

config = LlamaConfig(num_hidden_layers=4, hidden_size=64, num_attention_heads=2, num_key_value_heads=1,
                     intermediate_size=128, vocab_size=1000, max_position_embeddings=64)
torch.manual_seed(0)
deep = neurondev.explain(LlamaForCausalLM(config).eval(), torch.randint(0, 1000, (1, 16)), use_cache=False, quiet=True)
print(deep.summary())
dot = deep.to_dot("before")
print("nodes in the graph:", deep.sections[0].nodes, "| boxes drawn:", dot.count("[label="),
      "| folded:", "model.layers.1–3: 3 identical layers" in dot)""",
    ),
    (
        "code",
        """from IPython.display import SVG
SVG(deep.svg("before"))""",
    ),
    (
        "md",
        """## The same graphs in Model Explorer

Google's Model Explorer (`pip install 'neurondev[explorer]'`) reads big graphs well: the module
hierarchy, search, and per-node data. `save_model_explorer` writes the graphs before and after the
pass with one overlay per finding (pins, breaks, crossings, uploads, CPU fallbacks, the device each
node ran on); `deep.model_explorer()` starts it on this machine and shows it here (run the
notebook to see it; `assets/model-explorer.png` in the repository is what it looks like).""",
    ),
    (
        "code",
        """import tempfile
with tempfile.TemporaryDirectory(prefix="model-explorer-") as folder:  # a folder of yours keeps them
    files = deep.save_model_explorer(folder)
    print(files.graphs.name, [path.name for path in files.overlays])
    print("open with:", " ".join(files.command()[:1] + ["graphs.json", "..."]))""",
    ),
    (
        "md",
        """## Full size, without the weights

The model you ship may not fit the machine you debug on. Build it on the meta device (shapes,
no values) and explain it: it is traced on meta, no weight is materialised, the pins are found
and rewritten, and nothing runs (there are no values). Here the Llama-3-8B architecture: 32
layers, hidden 4096, vocabulary 128256. From a shell: `neurondev explain mypkg:Model --meta
--input 'randint(0, 128256, (1, 16))'`.""",
    ),
    (
        "code",
        """eight_b = LlamaConfig(num_hidden_layers=32, hidden_size=4096, num_attention_heads=32, num_key_value_heads=8,
                      intermediate_size=14336, vocab_size=128256, max_position_embeddings=128)
with torch.device("meta"):
    big = LlamaForCausalLM(eight_b)
full = neurondev.explain(big, torch.randint(0, 128256, (1, 16)), use_cache=False, quiet=True)
print("parameters:", round(sum(p.numel() for p in big.parameters()) / 1e9, 2), "billion, on", next(big.parameters()).device)
print("pins:", sorted({(p.function, p.where) for p in full.pins}))
print("same lines as the 4-layer one above:", {p.where for p in full.pins} == {p.where for p in deep.pins})
print(full.skipped)  # why nothing ran, as a value: its kind and facts
print(full)""",
    ),
]

BEYOND = [
    (
        "md",
        """# Beyond device arguments

`DeviceRewriterPass` fixes device *arguments*. Two things it cannot see: Python that branches on
the device while dynamo traces, and the graphs aot_autograd compiles for training. This notebook
shows both, the native graph as the yardstick of the fix, and a guard that keeps a code base clean.""",
    ),
    ("code", SETUP),
    (
        "md",
        """## Trace twice: device-specialised code

Dynamo runs your Python with the real inputs, so `if x.device.type == "cpu"` is decided while
tracing. Model libraries do this (for instance picking a dtype a CPU kernel supports). A CPU trace
bakes in the CPU branch; no rewrite of device arguments changes it. `compare_traces` traces again
with the inputs on XLA and aligns the two traces by your source line.""",
    ),
    (
        "code",
        """def counts_by_sign(x):
    flags = (x > 0).float() if x.device.type == "cpu" else (x > 0).int()
    counts = torch.histc(flags, bins=2, min=0, max=1)
    return x * torch.arange(x.shape[0], device=x.device) + counts.sum()

comparison = neurondev.compare_traces(counts_by_sign, torch.randn(8))
for difference in comparison.differences:
    print(neurondev.describe(difference))
failure = comparison.native_failure
print(f"native run fails at {failure.node} (line {failure.line} of the cell): {type(failure.exception).__name__}: {failure.exception}")""",
    ),
    (
        "md",
        """The `flags` line is traced as `.float()` on CPU and `.int()` on XLA; the `arange` line differs only
by its device, which the pass fixes. The XLA branch then fails at `histc` (no int kernel): the
native trace shows what running on XLA really means for this code.

## The native graph as the yardstick

Where the two traces agree, the graph traced natively on XLA is the limit of the fix.
`explain(..., native=True)` measures the rewritten graph against it, side by side.""",
    ),
    (
        "code",
        """def buffer_and_positions(x):
    out = torch.empty(x.shape[0], device=x.device)
    out.copy_(torch.relu(x) * 2 + torch.arange(x.shape[0], device=x.device))
    return out

ex = neurondev.explain(buffer_and_positions, torch.randn(64), native=True, quiet=True)
print(neurondev.describe(ex.traces))
timing = ex.sections[0].native
print(f"per call: rewritten {timing.rewritten * 1e3:.3f} ms, native {timing.native * 1e3:.3f} ms (a wall-clock figure: it varies with the machine)")
ex""",
    ),
    (
        "md",
        """## What only running your program shows

Some code runs on XLA eagerly, traces cleanly on CPU, and still fails as a program: dynamo traces
with the values on XLA, the Python between its graphs runs on XLA values, and torch_xla's bridge
joins the graphs. `explain` runs your function that way every time (`ex.program`), so these are
found with the line that fails and what it is:""",
    ),
    (
        "code",
        """SCALE = torch.ones(8) * 2    # a tensor in a global: it stays on the host when the inputs go to XLA

def reads_a_global(x):
    return torch.relu(x) * SCALE

def numpy_between_graphs(x):
    h = torch.relu(x) + 1
    k = h.numpy().max()
    return h / float(k)

for fn in (reads_a_global, numpy_between_graphs):
    run = neurondev.explain(fn, torch.randn(8), quiet=True).program.as_written
    print(f"{fn.__name__}: {run.failure.kind} at line {run.failure.line} of the cell ({run.failure.stage}): {run.failure.message}")""",
    ),
    (
        "md",
        """The global is a *host value*: the card says to pass it in or make it a buffer (`model.to(xla)`
moves buffers, not globals). The NumPy call needs the value on the host in the middle of the
program. Code that branches on the device is the third kind: it runs, but computes something else
on XLA, and the two traces, aligned by line, say where:""",
    ),
    (
        "code",
        """def branches(x):
    if x.device.type == "cpu":
        return x * 2
    return x * 3

branched = neurondev.explain(branches, torch.randn(8), quiet=True)
print("your program agrees with CPU:", branched.xla_matches_cpu, "| the CPU graph moved to XLA agrees:", branched.graphs_match_cpu)
for line in branched.device_specialised:
    print(neurondev.describe(line))""",
    ),
    (
        "md",
        """## ATen level: the graphs a training step compiles

For training, aot_autograd turns each dynamo graph into a forward and a backward graph of ATen
ops, and those are what run. They carry pins too: constructors from your code
(`aten.arange.default(..., device=cpu)`), and ones autograd makes itself (`aten.scalar_tensor`
in the backward of `torch.where`).""",
    ),
    (
        "code",
        """class Regressor(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(8, 4)

    def forward(self, x, y):
        h = self.lin(x)
        keep = torch.arange(h.shape[-1], device=x.device) < 3
        h = torch.where(h.masked_fill(~keep, 0.0) > 0, h, 0.1 * h)
        return ((h - y) ** 2).mean()

torch.manual_seed(0)
model, x, y = Regressor(), torch.randn(5, 8), torch.randn(5, 4)
training = neurondev.explain(model, x, y, level="aten", quiet=True)
for section in training.sections:
    print(f"{section.label}: pins {[p.function for p in section.pins]}, "
          f"after the pass: {len(section.after.graph_breaks)} breaks, the graph on XLA agrees with CPU: {section.cpu_verdict.matches}")""",
    ),
    (
        "code",
        """import copy
reference = copy.deepcopy(model)
reference(x, y).backward()
weight_grad = training.sections[1].after.outputs[0].cpu()
print("weight gradient on XLA equals eager CPU:", torch.allclose(weight_grad, reference.lin.weight.grad))""",
    ),
    (
        "md",
        """## A guard for CI

`neurondev.check` raises `DevicePinsError` (an `AssertionError`) listing every pin and every
device-specialised line with its line and what to write instead, unless allowed by node name,
`file:line` or a pattern. In a test suite, the pytest plugin gives a fixture and a marker:

```python
def test_model_has_no_device_pins(neurondev_check):
    neurondev_check(model, torch.randn(1, 16), allow=["masking_utils.py:*"])
```

and from a shell: `neurondev check mymodel.py:forward --input 'randn(1, 16)'` (exit 1 with pins).""",
    ),
    (
        "code",
        """try:
    neurondev.check(buffer_and_positions, torch.randn(64))
except neurondev.DevicePinsError as error:
    print(error)""",
    ),
    (
        "code",
        """fixed = lambda x: x.new_empty(x.shape[0]).copy_(torch.relu(x) * 2)
print("clean:", neurondev.check(fixed, torch.randn(64)).pins == ())""",
    ),
]

LOOPS = [
    (
        "md",
        """# Loops: why it keeps compiling

On Trainium every new XLA program is a neuronx-cc compile of tens of seconds to minutes, so after
"why does my graph break" comes "why does it keep compiling". `neurondev.watch()` records a loop step
by step (a step is a call of the function you compiled, or what you mark): every dynamo compile, with
the reason in words (which value failed its guard, what it was and what it became, the line that reads
it), and every XLA program torch_xla compiled, which is what costs minutes on Trainium. A loop is steady
only when its last steps compiled nothing, dynamo *or* XLA. The loop runs exactly as it would without it.""",
    ),
    ("code", SETUP + "\nfrom neurondev import xla, testing\ndevice = xla.device()"),
    (
        "md",
        """## A decode loop with transformers' default cache

The cache grows by one position per token, so every step is a new shape; importing torch_xla turns
dynamo's automatic dynamic shapes off, so every shape is a new graph.""",
    ),
    (
        "code",
        """model, (ids,), _ = testing.tiny_llama(2)
model = model.to(device)
forward = model.forward
model.forward = torch.compile(forward, backend="openxla")

# dynamo's recompile limit is 8; 4 here reaches it sooner, to keep the notebook quick
with torch._dynamo.config.patch(recompile_limit=4), neurondev.watch() as growing:
    model.generate(ids.to(device), max_new_tokens=7, do_sample=False)
print(growing.summary())
growing.compiles[["function", "index", "kind", "value", "before", "after"]]""",
    ),
    (
        "md",
        """Four compiles, then dynamo's recompile limit: `forward` runs uncompiled from there, every op
traced lazily on XLA on every step. The card shows the same, with a chart per stretch of time:""",
    ),
    ("code", "growing"),
    (
        "md",
        """## The same loop with a static cache

A static cache is preallocated at its full length: the shapes stop changing after the first decode
step, and dynamo is done after two compiles. `neurondev.watch(fn)` wraps the compiled forward, so each
call gets a row. (Dynamo keeps what it compiled on the function's code, and gave up on it above: start afresh.)""",
    ),
    (
        "code",
        """torch._dynamo.reset()
model.forward = neurondev.watch(torch.compile(forward, backend="openxla"))
model.generate(ids.to(device), max_new_tokens=6, do_sample=False, cache_implementation="static")
steady = model.forward
print(steady.summary())
print("dynamo compiles per call:", list(steady.calls["compiled"]))
print("XLA programs per call after the second:", sorted(set(steady.calls["xla_compiles"][2:])), "| steady state:", steady.steady_state)
steady""",
    ),
    (
        "md",
        """Dynamo is steady, XLA is not: a new XLA program on every token. transformers' `generate` reads a tensor
made from `input_ids`, which grows by one token a step, to decide whether to stop, and torch_xla's bridge
syncs the forward's lazy inputs: each step's lazy graph is new. Run the loop as a script under
`neurondev watch generate.py` and torch_xla's own analysis of each compile (`PT_XLA_DEBUG_LEVEL=2`, which
a process can only turn on before its first XLA compile) names the line: transformers' stop check in
`generation/utils.py`. A decode loop of your own over a preallocated token buffer avoids it.""",
    ),
    (
        "md",
        """## A training loop: a float learning-rate schedule and a short last batch""",
    ),
    (
        "code",
        """torch.manual_seed(0)
net = torch.nn.Linear(4, 2).to(device)

def step(x, lr):
    loss = net(x).pow(2).mean()
    return loss * lr

def batches(sizes):
    return [torch.arange(n * 4, dtype=torch.float32).reshape(n, 4).div(10).to(device) for n in sizes]

torch._dynamo.reset()
compiled = torch.compile(step, backend="openxla")
with neurondev.watch() as training:
    lr = 0.1
    for x in batches([8, 8, 8, 8, 5]):
        compiled(x, lr).item()
        lr *= 0.9
print(training.summary())
for advice in training.advice:
    print("-", neurondev.describe(advice))""",
    ),
    (
        "md",
        """The advice, applied: the rate is a tensor on the device, changed in place (the graph reads it
instead of baking it in), and the short batch is padded to the bucket size 8 on the host, before it
moves (its padded rows are masked out of the loss; padding on the device would make a program of its own).""",
    ),
    (
        "code",
        """def padded_step(x, rows, lr):
    loss = (net(x).pow(2).mean(-1) * rows).sum() / rows.sum()
    return loss * lr

def padded(x, size=8):  # on the host, before the batch moves
    x = x.cpu()
    rows = torch.zeros(size)
    rows[: x.shape[0]] = 1
    return torch.cat([x, x.new_zeros(size - x.shape[0], x.shape[1])]).to(device), rows.to(device)

SIZES = [8, 8, 8, 8, 8, 8, 5]
torch._dynamo.reset()
compiled = neurondev.watch(torch.compile(padded_step, backend="openxla"))
lr = torch.tensor(0.1, device=device)
for x in batches(SIZES):
    compiled(*padded(x), lr).item()
    lr.mul_(0.9)
print(compiled.summary())
print("dynamo compiles per call:", list(compiled.calls["compiled"]), "| XLA programs per call:", list(compiled.calls["xla_compiles"]))""",
    ),
    (
        "md",
        """Dynamo compiles once now, but XLA compiles a new program on the first steps: `lr.mul_(0.9)` is lazy and
nothing cuts the lazy graph between steps, so each call hands the compiled graph a pending computation
that torch_xla's bridge compiles on its own (here it repeats after a few steps; in a loop whose pending
state grows, gradient accumulation without a sync, it never does). One `torch_xla.sync()` at the end of
each step cuts it:""",
    ),
    (
        "code",
        """import torch_xla

torch._dynamo.reset()
compiled = neurondev.watch(torch.compile(padded_step, backend="openxla"))
lr = torch.tensor(0.1, device=device)
for x in batches(SIZES):
    compiled(*padded(x), lr).item()
    lr.mul_(0.9)
    torch_xla.sync()  # the end of the step
print(compiled.summary())
print("dynamo compiles per call:", list(compiled.calls["compiled"]), "| XLA programs per call:", list(compiled.calls["xla_compiles"]))""",
    ),
    (
        "md",
        """Steady from the first call. The verdict follows a rule written down on the loops page, one a user can
check by hand against the step table: each step's new work (a function's first compile, a recompile, a new XLA
program), the warm-up left out (the first two steps, a function's first compile), and then one of a few classes,
each with its exit code. Three loops of the same step, each ending differently:""",
    ),
    (
        "code",
        """def loop(sizes):
    torch._dynamo.reset()
    step = torch.compile(lambda x: net(x).pow(2).mean(), backend="openxla", dynamic=False)
    with neurondev.watch() as w:
        for rows in sizes:
            step(torch.randn(rows, 4, device=device)).item()
            torch_xla.sync()
    s = w.record.steady
    return f"{s.kind:>15}: new work counted at steps {list(s.counted)}, exit code {s.exit_code}"

print(loop([8] * 4 + [5] + [8] * 5))      # a short batch at step 5, then 5 quiet steps: steady after it
print(loop([8] * 6 + [5]))                # a short last batch: a late recompile, too few steps after it to tell
print(loop([8, 8, 9, 9, 10, 10, 11, 11]))  # a new size every 2 steps to the end: recurring, period 2
print(loop([8, 9, 10, 11, 12]))           # a new size every step: keeps compiling""",
    ),
    (
        "md",
        """From a terminal, `neurondev watch train.py --epochs 1` runs a script the same way, with torch_xla's
analysis of every XLA compile on (the line that triggered it), checks a sync advice by running the script
again with `torch_xla.sync()` at the end of each step, and exits with the verdict's code: 0 when steady, after a
late recompile or one step, 1 when compiles go on, recur or reach dynamo's recompile limit, 2 when the script
raised (`--html`, `--json` for the reports).""",
    ),
]


NATIVE = [
    (
        "md",
        """# Native devices: copies, syncs and CPU fallbacks, by line

Today's Neuron SDK runs PyTorch natively on a `neuron` device (TorchNeuron, through PyTorch's PrivateUse1
mechanism), and Google's TPU is moving the same way. On such a device a graph traced on CPU does not
fail: a pinned value is computed on the host and copied, and every op the backend lacks falls back to
the CPU (two copies and a sync each). Nothing says so. This notebook runs on neurondev's **host test
device**, `hostdev`: a real PrivateUse1 backend, built here, whose memory is host memory (it is for
learning and testing: it is not an accelerator, and not Neuron). You choose which ATen ops fall back.""",
    ),
    ("code", SETUP + "\ndevice = neurondev.host_device()\nprint(device)"),
    (
        "md",
        """## The seed, on the host device

The same buffer as in the quickstart: traced on CPU its device is frozen. On XLA the `copy_` cut the lazy
graph; here it copies the result to the host, and the output stays there.""",
    ),
    (
        "code",
        """fn, args, kwargs = examples.get("seed").build()
seed = neurondev.explain(fn, *args, **kwargs, target=device, quiet=True)
print(seed.summary())
before, after = seed.before[0], seed.after[0]
print("copies to the host before:", [(c.node, c.transfers_to_host, c.where) for c in before.host_copies], "| outputs on", before.output_devices)
print("copies to the host after: ", [(c.node, c.transfers_to_host) for c in after.host_copies], "| outputs on", after.output_devices)""",
    ),
    (
        "md",
        """## A tiny GPT-2 whose matrix multiplications fall back

`host_device(fallback=[...])` makes the named ATen ops have no kernel on the device: they reach the
backend's boxed fallback, which copies their inputs to the host, runs the CPU kernel and copies the
results back, as an op a real backend's table marks CPU_FALLBACK does. neurondev reads which ops fall
back from the dispatcher's own tables and attributes each to the line and module it ran in.""",
    ),
    (
        "code",
        """from neurondev import testing

neurondev.host_device(fallback=["aten::addmm", "aten::mm"])
model, args, kwargs = testing.tiny_gpt2()
gpt2 = neurondev.explain(model, *args, **kwargs, target=device, quiet=True)
print(neurondev.describe(gpt2.program.rewritten))
table = gpt2.fallback_table()
print(len(table), "rows:", table.op.value_counts().to_dict())
table[["op", "calls", "bytes_copied", "line", "module"]]""",
    ),
    (
        "md",
        """Each `Conv1D` of GPT-2 (transformers' `pytorch_utils.py`) runs `addmm`, and the language-model head
runs `mm`: every call copies its weights to the host and back. On Trainium this is the table to read when
a model is slower than it should be. The same program on XLA, beside it (XLA has kernels for both):""",
    ),
    (
        "code",
        """on_xla = neurondev.explain(model, *args, **kwargs, target="xla", quiet=True)
for name, ex in (("hostdev", gpt2), ("xla", on_xla)):
    run = ex.program.rewritten
    print(f"{name}: runs {run.ok}, agrees with CPU {run.matches_cpu}, CPU fallbacks per call {sum(f.calls for f in run.fallbacks)}")""",
    ),
    (
        "md",
        """## The CI guard in strict mode

`check(..., fallbacks="error")` runs the program on the device and fails on every op that falls back,
with its line, as the strict modes of some backends do (but with lines). With the op native again, it
passes.""",
    ),
    (
        "code",
        """class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc(x).relu()

neurondev.host_device(fallback=["aten::addmm"])
try:
    neurondev.check(Net(), torch.randn(2, 16), target=device, fallbacks="error")
except neurondev.DevicePinsError as failed:
    print(failed)
neurondev.host_device()  # every op native again
print("clean:", neurondev.check(Net(), torch.randn(2, 16), target=device, fallbacks="error").name)""",
    ),
    (
        "md",
        """From a terminal: `neurondev explain model.py:forward --input 'randn(4, 64)' --target hostdev`, and
`neurondev check ... --target hostdev --fallbacks error` for CI. On a Trainium machine with TorchNeuron
the default target is its `neuron` device, and the same calls run there.""",
    ),
    (
        "md",
        """## Two ranks, one of them ragged

The host device has collectives (gloo on host copies), so a DDP job runs on it under `torchrun`.
`neurondev/gallery/ragged_ranks.py` trains on two ranks, each on its own shard; the last rank's shard is
a sample short, so its last batch has 3 rows where the other's has 4. `neurondev watch` under torchrun
watches both ranks, and rank 0 says where they diverge ([ND412](../rules/ND412.html)); `--pad` is the fix.
See the how-to guide *Across ranks*.""",
    ),
    (
        "code",
        """import json, subprocess, sys, tempfile
from neurondev.gallery import ragged_ranks

def watched_job(*arguments):
    with tempfile.TemporaryDirectory() as folder:
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2",
                   "-m", "neurondev", "watch", "--json", f"{folder}/ranks.json", ragged_ranks.__file__, *arguments]
        done = subprocess.run(command, capture_output=True, text=True, cwd=folder)
        return done.returncode, json.load(open(f"{folder}/ranks.json"))

code, job = watched_job()
print("exit code:", code)
for divergence in job["divergence"]:
    print(divergence["rule"], divergence["text"])
for data in job["ranks"]:
    print(f"rank {data['rank']} compiles:", [(row["kind"], row["step"]) for row in data["compiles"]])
code, job = watched_job("--pad")
print("padded: exit code", code, "| divergences:", job["divergence"])""",
    ),
]

NOTEBOOK_CELLS = {
    "01_quickstart.ipynb": QUICKSTART,
    "02_why_devices_freeze.ipynb": WHY,
    "03_inside_the_pass.ipynb": INSIDE,
    "04_collectives.ipynb": COLLECTIVES,
    "05_real_model.ipynb": REAL_MODEL,
    "06_beyond_device_arguments.ipynb": BEYOND,
    "07_loops.ipynb": LOOPS,
    "08_native_devices.ipynb": NATIVE,
}


def build(cells: list[tuple[str, str]]):
    import nbformat

    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell(text) if kind == "md" else nbformat.v4.new_code_cell(text) for kind, text in cells]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.metadata["language_info"] = {"name": "python"}
    return notebook


def execute(notebook, timeout: int = 900):
    """Run every cell in a fresh kernel, then shut it down gracefully: a kernel killed at once leaves behind what its
    Python removes at exit (the temporary folder torch_xla's import makes, one per notebook, in /tmp)."""
    import nbclient

    client = nbclient.NotebookClient(notebook, kernel_name="python3", timeout=timeout, resources={"metadata": {"path": str(NOTEBOOKS)}})
    client.execute()
    return notebook


# Cards link each finding to its rule's page: in the committed outputs, the page beside the tutorial in the built
# site (site/tutorials/NN.html -> site/rules/CODE.html), not this checkout's file:// path.
SITE_FROM_A_TUTORIAL = "../"


def main(prefixes: list[str]) -> None:
    import os

    import nbformat

    os.environ.setdefault("NEURONDEV_DOCS_URL", SITE_FROM_A_TUTORIAL)  # the kernels inherit it

    for name, cells in NOTEBOOK_CELLS.items():
        if prefixes and not any(name.startswith(prefix) for prefix in prefixes):
            continue
        notebook = execute(build(cells))
        nbformat.write(notebook, NOTEBOOKS / name)
        print(NOTEBOOKS / name)


if __name__ == "__main__":
    main(sys.argv[1:])
