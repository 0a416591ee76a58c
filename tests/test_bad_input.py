"""The misuse catalogue: every public entry point answers a wrong argument with a named error that
says what to pass instead (also the matching built-in), never a raw traceback from inside neurondev."""

from __future__ import annotations

import importlib.util
import traceback
import warnings
from pathlib import Path

import pytest
import torch

import neurondev
from neurondev import examples
from neurondev.gallery.collective import run_on_ranks
from neurondev.render.model_explorer import ModelExplorerFiles
from neurondev.xla import ranks as xla_ranks


def seed_graph():
    fn, args, _ = examples.get("seed").build()
    return neurondev.capture(fn, *args).graphs[0]


def seed_capture():
    fn, args, _ = examples.get("seed").build()
    return neurondev.capture(fn, *args)


def seed_explanation():
    return neurondev.explain(seed_capture(), run=False, quiet=True)


def one_input(x):
    return torch.zeros(4, device=x.device) + x


def doubled_one_by_one(x):
    for row in x:
        yield row * 2


def takes_run(x, run=False):
    return torch.zeros(4, device=x.device) + x if run else x


# (id, call, error class, built-in it also is, a phrase of the message)
# fmt: off
CATALOGUE = [
    ("diagnose-str", lambda: neurondev.diagnose("hello"), neurondev.InvalidSubjectError, TypeError, "got a str ('hello')"),
    ("diagnose-none", lambda: neurondev.diagnose(None), neurondev.InvalidSubjectError, TypeError, "got None; pass a torch.fx.GraphModule"),
    ("diagnose-module-class", lambda: neurondev.diagnose(torch.nn.Module), neurondev.InvalidSubjectError, TypeError, "the class Module (not an instance)"),
    ("diagnose-module", lambda: neurondev.diagnose(torch.nn.Linear(2, 2)), neurondev.InvalidSubjectError, TypeError, "neurondev.capture(fn, x)"),
    ("diagnose-graph", lambda: neurondev.diagnose(seed_graph().graph), neurondev.InvalidSubjectError, TypeError, "a torch.fx.Graph (gm.graph)"),
    ("diagnose-list-element", lambda: neurondev.diagnose([seed_graph(), 3]), neurondev.InvalidSubjectError, TypeError, "element [1] of the list"),
    ("diagnose-target-int", lambda: neurondev.diagnose(seed_graph(), target=5), neurondev.InvalidTargetError, ValueError, "torch would read an int as a CUDA index"),
    ("diagnose-target-unknown", lambda: neurondev.diagnose(seed_graph(), target="trainium"), neurondev.InvalidTargetError, ValueError, "not a device torch knows"),
    ("find_pins-function", lambda: neurondev.find_pins(one_input), neurondev.InvalidSubjectError, TypeError, "the function one_input"),
    ("run-function", lambda: neurondev.run_on_xla(one_input, torch.randn(4)), neurondev.InvalidSubjectError, TypeError, "capture it first"),
    ("run-capture", lambda: neurondev.run_on_xla(seed_capture(), torch.randn(64)), neurondev.InvalidSubjectError, TypeError, "capture.graphs[i], *capture.example_inputs[i]"),
    ("run-too-many-inputs", lambda: neurondev.run_on_xla(seed_graph(), torch.randn(64), torch.randn(64)), neurondev.InputCountError, TypeError, "takes 1 input(s) (l_args_0_), got 2"),
    ("run-too-many-inputs-no-timing", lambda: neurondev.run_on_xla(seed_graph(), torch.randn(64), torch.randn(64), repeat=0), neurondev.InputCountError, TypeError, "got 2"),
    ("run-no-inputs", lambda: neurondev.run_on_xla(seed_graph()), neurondev.InputCountError, TypeError, "got 0"),
    ("run-negative-repeat", lambda: neurondev.run_on_xla(seed_graph(), torch.randn(64), repeat=-1), neurondev.InvalidOptionError, ValueError, "an int >= 0"),
    ("run-rtol-alone", lambda: neurondev.run_on_xla(seed_graph(), torch.randn(64), rtol=1e-4), neurondev.InvalidOptionError, ValueError, "rtol was given alone"),
    ("run-negative-atol", lambda: neurondev.run_on_xla(seed_graph(), torch.randn(64), rtol=0.1, atol=-1), neurondev.InvalidOptionError, ValueError, "a finite number >= 0"),
    ("run-meta-input", lambda: neurondev.run_on_xla(seed_graph(), torch.empty(64, device="meta")), neurondev.XlaInputError, TypeError, "cannot move to xla"),
    ("pass-function", lambda: neurondev.DeviceRewriterPass()(one_input), neurondev.InvalidSubjectError, TypeError, "DeviceRewriterPass rewrites a traced graph"),
    ("pass-target-int", lambda: neurondev.DeviceRewriterPass(target=1), neurondev.InvalidTargetError, ValueError, "pass e.g. 'xla'"),
    ("pass-target-unknown", lambda: neurondev.DeviceRewriterPass(target="neuron"), neurondev.InvalidTargetError, ValueError, "not a device torch knows"),
    ("pass-positional-not-bool", lambda: neurondev.DeviceRewriterPass(rewrite_positional="no"), neurondev.InvalidOptionError, ValueError, "the documented kwargs-only algorithm"),
    ("rewrite_copy-str", lambda: neurondev.rewrite_copy("x"), neurondev.InvalidSubjectError, TypeError, "rewrite_copy copies and rewrites a traced graph, got a str"),
    ("ranks-zero", lambda: run_on_ranks(world_size=0), neurondev.UnsupportedWorldSizeError, ValueError, "an int >= 1; got 0"),
    ("ranks-three-on-pjrt-cpu", lambda: run_on_ranks(world_size=3), neurondev.UnsupportedWorldSizeError, ValueError, "Use world_size=1 or 2 here"),
    ("ranks-four-on-pjrt-cpu", lambda: run_on_ranks(world_size=4), neurondev.UnsupportedWorldSizeError, ValueError, "rendezvous"),
    ("ranks-case-not-importable", lambda: xla_ranks.run_on_ranks("neurondev.gallery.collective:no_such_case"), neurondev.InvalidOptionError, ValueError, '"package.module:function" importable'),
    ("ranks-case-not-a-string", lambda: xla_ranks.run_on_ranks(len), neurondev.InvalidOptionError, ValueError, "got <built-in function len>"),
    ("host_device-fallback-not-names", lambda: neurondev.host_device(fallback=[1]), neurondev.InvalidOptionError, ValueError, "a list of ATen op names such as 'aten::addmm'"),
    ("host_device-fallback-unknown-op", lambda: neurondev.host_device(fallback="aten::no_such_op"), neurondev.InvalidOptionError, ValueError, "torch has no 'aten::no_such_op'"),
    ("host_device-fallback-composite-op", lambda: neurondev.host_device(fallback=["aten::linear"]), neurondev.InvalidOptionError, ValueError, "name the ops they call"),
    ("explain-target-unknown", lambda: neurondev.explain(one_input, torch.randn(4), target="trainium"), neurondev.InvalidTargetError, ValueError, "not a device torch knows"),
    ("explain-target-neuron-not-loaded", lambda: neurondev.explain(one_input, torch.randn(4), target="neuron"), neurondev.DeviceUnavailableError, RuntimeError, "import torch_neuronx first"),
    ("check-target-neuron-not-loaded", lambda: neurondev.check(one_input, torch.randn(4), target="neuron:0"), neurondev.DeviceUnavailableError, RuntimeError, "TorchNeuron's device"),
    ("check-fallbacks-word", lambda: neurondev.check(one_input, torch.randn(4), fallbacks="strict"), neurondev.InvalidOptionError, ValueError, "fallbacks is 'error'"),
    ("describe-a-tensor", lambda: neurondev.describe(torch.ones(2)), neurondev.InvalidOptionError, ValueError, "describe takes one of neurondev's records"),
    ("describe-an-explanation", lambda: neurondev.describe(seed_capture()), neurondev.InvalidOptionError, ValueError, "not Capture"),
    ("capture-not-callable", lambda: neurondev.capture(torch.randn(3)), neurondev.NotCallableError, TypeError, "pass the function itself"),
    ("capture-no-inputs", lambda: neurondev.capture(one_input), neurondev.MissingInputsError, ValueError, "needs example inputs for x"),
    ("capture-module-no-inputs", lambda: neurondev.capture(torch.nn.Linear(2, 2)), neurondev.MissingInputsError, ValueError, "Linear needs example inputs for input"),
    ("compare_traces-meta-input", lambda: neurondev.compare_traces(one_input, torch.randn(4, device="meta")), neurondev.CaptureInputError, TypeError, "pass a tensor with values of the same shape, e.g. torch.randn(4,)"),
    ("capture-user-error", lambda: neurondev.capture(lambda x: x @ torch.randn(5, 5), torch.randn(3, 3)), neurondev.TraceError, RuntimeError, "tracing <lambda at test_bad_input.py"),
    ("capture-level", lambda: neurondev.capture(one_input, torch.randn(4), level="inductor"), neurondev.InvalidOptionError, ValueError, "'dynamo' (the graphs dynamo makes) or 'aten'"),
    ("explain-not-callable", lambda: neurondev.explain("f"), neurondev.NotCallableError, TypeError, "pass the function itself"),
    ("explain-generator-function", lambda: neurondev.explain(doubled_one_by_one, torch.randn(4)), neurondev.NotCallableError, TypeError, "is a generator function: calling it runs none of its code"),
    ("capture-generator-function", lambda: neurondev.capture(doubled_one_by_one, torch.randn(4)), neurondev.NotCallableError, TypeError, "lambda x: list(doubled_one_by_one(x))"),
    ("explain-int-target", lambda: neurondev.explain(one_input, torch.randn(4), target=0), neurondev.InvalidTargetError, ValueError, "CUDA index"),
    ("explain-target-meta", lambda: neurondev.explain(one_input, torch.randn(4), target="meta"), neurondev.InvalidTargetError, ValueError, "pass target='xla' (or 'xla:N')"),
    ("explain-target-cuda", lambda: neurondev.explain(one_input, torch.randn(4), target="cuda"), neurondev.InvalidTargetError, ValueError, "torch sees no CUDA device here"),
    ("explain-target-native-missing-index", lambda: neurondev.explain(one_input, torch.randn(4), target=_host("hostdev:3")), neurondev.InvalidTargetError, ValueError, "this process has hostdev:0"),
    ("check-target-native-missing-index", lambda: neurondev.check(one_input, torch.randn(4), target=_host("hostdev:1")), neurondev.InvalidTargetError, ValueError, "pass one of those, or 'hostdev'"),
    ("explain-target-missing-index", lambda: neurondev.explain(one_input, torch.randn(4), target="xla:1"), neurondev.InvalidTargetError, ValueError, "this XLA runtime has xla:0"),
    ("check-target-cpu", lambda: neurondev.check(one_input, torch.randn(4), target="cpu"), neurondev.InvalidTargetError, ValueError, "got target 'cpu'"),
    ("explain-rtol-nan", lambda: neurondev.explain(one_input, torch.randn(4), rtol=float("nan"), atol=float("nan")), neurondev.InvalidOptionError, ValueError, "a finite number >= 0"),
    ("explain-atol-inf", lambda: neurondev.explain(one_input, torch.randn(4), rtol=0.1, atol=float("inf")), neurondev.InvalidOptionError, ValueError, "a finite number >= 0"),
    ("explain-option-shadows-argument", lambda: neurondev.explain(takes_run, torch.randn(4), run=True), neurondev.OptionShadowsArgumentError, TypeError, "neurondev.explain(fn, run=...)(inputs..., run=...)"),
    ("check-select-unknown", lambda: neurondev.check(one_input, torch.randn(4), select=("E501",)), neurondev.InvalidOptionError, ValueError, "neurondev.rules() lists them"),
    ("check-ignore-int", lambda: neurondev.check(one_input, torch.randn(4), ignore=101), neurondev.InvalidOptionError, ValueError, "ignore takes rule codes"),
    ("check-select-empty-code", lambda: neurondev.check(one_input, torch.randn(4), select=("",)), neurondev.InvalidOptionError, ValueError, "select takes rule codes"),
    ("check-allow-int", lambda: neurondev.check(one_input, torch.randn(4), allow=5), neurondev.InvalidOptionError, ValueError, "allow is a list of strings"),
    ("explain-run-not-bool", lambda: neurondev.explain(one_input, torch.randn(4), run=1), neurondev.InvalidOptionError, ValueError, "run is True or False"),
    ("explain-atol-alone", lambda: neurondev.explain(one_input, torch.randn(4), atol=1e-3), neurondev.InvalidOptionError, ValueError, "atol was given alone"),
    ("explain-level", lambda: neurondev.explain(one_input, torch.randn(4), level="fx"), neurondev.InvalidOptionError, ValueError, "'dynamo' (the graphs dynamo makes) or 'aten'"),
    ("explain-native-capture", lambda: neurondev.explain(seed_capture(), native=True), neurondev.InvalidOptionError, ValueError, "pass the function and its inputs"),
    ("explain-aten-of-dynamo-capture", lambda: neurondev.explain(seed_capture(), level="aten"), neurondev.InvalidOptionError, ValueError, "level='aten'"),
    ("to_dot-which", lambda: seed_explanation().to_dot("middle"), neurondev.InvalidOptionError, ValueError, "'before' or 'after'"),
    ("RunRecord-device_type-node-int", lambda: neurondev.RunRecord(device="xla:0", node_devices={"copy_": "cpu"}).device_type(0), neurondev.InvalidOptionError, ValueError, "a str such as 'copy_'"),
    ("RunRecord-on_target-node-object", lambda: neurondev.RunRecord(device="xla:0").on_target(torch.fx.Graph().placeholder("x")), neurondev.InvalidOptionError, ValueError, "its name in the graph"),
    ("to_dot-section", lambda: seed_explanation().to_dot("before", section=3), neurondev.InvalidOptionError, ValueError, "a position from 0 to 0"),
    ("to_dot-section-str", lambda: seed_explanation().to_dot("before", section="graph 0"), neurondev.InvalidOptionError, ValueError, "or a SectionKey"),
    ("totals-which", lambda: seed_explanation().totals("middle"), neurondev.InvalidOptionError, ValueError, "'before' or 'after'"),
    ("compare_traces-not-callable", lambda: neurondev.compare_traces(None), neurondev.NotCallableError, TypeError, "pass the function itself"),
    ("compare_traces-no-inputs", lambda: neurondev.compare_traces(one_input), neurondev.MissingInputsError, ValueError, "needs example inputs for x"),
    ("examples-unknown-name", lambda: examples.get("nope"), neurondev.UnknownExampleError, KeyError, "no example 'nope'; known: seed"),
    ("explorer-not-an-explanation", lambda: __import__("neurondev.widgets").widgets.Explorer(seed_capture()), neurondev.InvalidSubjectError, TypeError, "neurondev.explain(fn, x).explore()"),
    ("check-allow-not-strings", lambda: neurondev.check(one_input, torch.randn(4), allow=[1]), neurondev.InvalidOptionError, ValueError, "list of strings"),
    ("check-missing-inputs", lambda: neurondev.check(one_input), neurondev.MissingInputsError, ValueError, "needs example inputs for x"),
    ("check-suggest-str", lambda: neurondev.check(one_input, torch.randn(4), suggest="yes"), neurondev.InvalidOptionError, ValueError, "suggest is True"),
    ("fix_of-node-name", lambda: seed_explanation().fix_of("out"), neurondev.InvalidSubjectError, TypeError, "one of this Explanation's pins (ex.pins[i])"),
    ("patch-root-int", lambda: seed_explanation().patch(root=5), neurondev.InvalidOptionError, ValueError, "root is the folder"),
    ("patch-root-missing", lambda: seed_explanation().patch(root="/no/such/folder"), neurondev.InvalidOptionError, ValueError, "an existing folder"),
    ("check-program-str", lambda: neurondev.check(one_input, torch.randn(4), program="yes"), neurondev.InvalidOptionError, ValueError, "program is True or False"),
    ("check-level", lambda: neurondev.check(one_input, torch.randn(4), level="fx"), neurondev.InvalidOptionError, ValueError, "'dynamo' (the graphs dynamo makes) or 'aten'"),
    ("rerun-target-cpu", lambda: seed_explanation().rerun(target="cpu"), neurondev.InvalidTargetError, ValueError, "got target 'cpu'"),
    ("save_html-missing-folder", lambda: seed_explanation().save_html("/no/such/folder/r.html"), neurondev.InvalidOptionError, ValueError, "the folder /no/such/folder does not exist"),
    ("save_html-int", lambda: seed_explanation().save_html(5), neurondev.InvalidOptionError, ValueError, "a path (a str or a pathlib.Path), got int 5"),
    ("save_svg-folder", lambda: seed_explanation().save_svg("/tmp"), neurondev.InvalidOptionError, ValueError, "is a folder: give a file name"),
    ("save_model_explorer-onto-a-file", lambda: seed_explanation().save_model_explorer(__file__), neurondev.InvalidOptionError, ValueError, "is a file, not a folder"),
    ("model_explorer-port-str", lambda: seed_explanation().model_explorer(port="abc"), neurondev.InvalidOptionError, ValueError, "port is a TCP port number"),
    ("model-explorer-files-url-port-str", lambda: ModelExplorerFiles(Path("graphs.json"), ()).url("8080"), neurondev.InvalidOptionError, ValueError, "got '8080'"),
    ("model-explorer-files-command-port-zero", lambda: ModelExplorerFiles(Path("graphs.json"), ()).command(0), neurondev.InvalidOptionError, ValueError, "from 1 to 65535"),
    ("fix_of-another-explanations-pin", lambda: seed_explanation().fix_of(_other_pin()), neurondev.InvalidSubjectError, TypeError, "is a pin of another one"),
    ("patch-root-without-the-file", lambda: _fixed_explanation().patch(root="/usr"), neurondev.InvalidOptionError, ValueError, "is not inside the folder /usr"),
    ("run-str-for-a-tensor", lambda: neurondev.run_on_xla(seed_graph(), "x"), neurondev.XlaInputError, TypeError, "is a tensor in the graph (float32, (64,)), got a str"),
    ("capture-meta-and-cpu-inputs", lambda: neurondev.capture(lambda a, b: a + b, torch.randn(2, device="meta"), torch.randn(2)), neurondev.CaptureInputError, TypeError, "some inputs are meta tensors"),
    ("backend-int-target", lambda: _backend_with_target(5), neurondev.InvalidTargetError, ValueError, "torch would read an int as a CUDA index"),
]
# fmt: on


def _other_pin():
    return neurondev.explain(one_input, torch.randn(4), run=False, quiet=True).pins[0]


def _fixed_explanation():
    return neurondev.explain(examples.get("seed").build()[0], torch.randn(64), run=False, quiet=True)


def _host(target):
    neurondev.host_device()
    return target


def _backend_with_target(target):
    from neurondev import xla

    gm = torch.fx.symbolic_trace(lambda a, b: a + b)
    return neurondev.backend(gm, [torch.randn(2).to(xla.device()), torch.randn(2)], target=target)


# Rows whose call reaches the XLA device (a run, an XLA device count, an explain that runs): they need torch_xla.
NEEDS_XLA = {
    "run-meta-input",
    "compare_traces-meta-input",
    "explain-target-missing-index",
    "fix_of-another-explanations-pin",
    "patch-root-without-the-file",
    "backend-int-target",
}


@pytest.mark.parametrize(
    "call, error, builtin, phrase",
    [pytest.param(*row[1:], marks=[pytest.mark.xla] if row[0] in NEEDS_XLA else []) for row in CATALOGUE],
    ids=[row[0] for row in CATALOGUE],
)
def test_misuse_is_a_named_error_that_says_what_to_pass(call, error, builtin, phrase):
    with pytest.raises(error) as caught:
        call()
    assert isinstance(caught.value, neurondev.NeurondevError) and isinstance(caught.value, builtin)
    assert phrase in str(caught.value)


@pytest.mark.parametrize("verb", [neurondev.capture, lambda fn, x: neurondev.explain(fn, x, quiet=True)], ids=["capture", "explain"])
def test_the_users_own_error_while_tracing_is_chained_not_swallowed(verb):
    def fn(x):
        raise ValueError("the user's bug")

    with pytest.raises(neurondev.TraceError, match="the user's bug") as caught:
        verb(fn, torch.randn(2))
    assert isinstance(caught.value.__cause__, ValueError)


def test_the_error_is_raised_by_neurondev_itself_not_from_deep_inside_a_dependency():
    with pytest.raises(neurondev.InputCountError) as caught:
        neurondev.run_on_xla(seed_graph(), torch.randn(64), torch.randn(64))
    frames = traceback.extract_tb(caught.value.__traceback__)
    assert "neurondev" in frames[-1].filename and "site-packages/torch" not in frames[-1].filename


@pytest.mark.parametrize(
    "make, phrase",
    [
        (lambda: (lambda x: 3, (torch.randn(3),)), ("no tensor operation", "no tensor op")),
        (lambda: (lambda x: x * 2, (torch.randn(3, 3).to_sparse(),)), ("not a dense tensor", "not a dense input")),
    ],
    ids=["returns-an-int", "sparse-input"],
)
def test_a_capture_that_records_no_graph_says_why(make, phrase):
    fn, args = make()
    words, kind = phrase
    with pytest.warns(neurondev.NoGraphWarning, match=words):
        captured = neurondev.capture(fn, *args)
    assert captured.graphs == () and [note.kind for note in captured.notes] == [kind]
    assert words in neurondev.describe(captured.notes[0])


def test_an_already_compiled_function_is_unwrapped_and_said_so():
    compiled = torch.compile(one_input)
    with warnings.catch_warnings():
        warnings.simplefilter("error", neurondev.NoGraphWarning)
        captured = neurondev.capture(compiled, torch.randn(4))
    assert len(captured.graphs) == 1 and len(neurondev.diagnose(captured)) == 1
    note = captured.notes[0]
    assert (note.kind, note.original) == ("already compiled", "one_input")
    assert "already compiled with torch.compile" in neurondev.describe(note)


def test_watch_misuse_is_named():
    with pytest.raises(neurondev.NotCallableError, match="pass the function itself"):
        neurondev.watch(5)
    with neurondev.watch(), pytest.raises(neurondev.NestedWatchError, match="watches do not nest"), neurondev.watch():
        pass
    with pytest.raises(neurondev.NotCallableError, match="is a context manager"):
        neurondev.watch()(1)
    with pytest.raises(neurondev.InvalidOptionError, match=r"record is the WatchRecord of a finished watch .*got dict"):
        neurondev.Watch(record={"steps": []})
    with neurondev.watch() as watched:
        pass
    with pytest.raises(neurondev.InvalidOptionError, match="timeout is a number of seconds above 0"):
        watched.across_ranks(timeout=0)
    with pytest.raises(neurondev.InvalidOptionError, match="folder is an existing folder every rank can write to"):
        watched.across_ranks(__file__)
    alone = watched.across_ranks()  # no torchrun: a job of one rank, nothing written
    assert [data["rank"] for data in alone.to_dict()["ranks"]] == [0] and alone.divergence == ()
    with pytest.raises(neurondev.InvalidOptionError, match="is a folder: give a file name"):
        watched.save_trace("/tmp")
    with pytest.raises(neurondev.InvalidOptionError, match="a path .*got int 5"):
        watched.save_trace(5)
    with pytest.raises(neurondev.InvalidOptionError, match="this watch has recorded nothing yet"):
        neurondev.watch().cost_table()
    assert list(watched.cost_table()["seconds"]) == []  # nothing ran in the block: no cost, no error


def test_an_accounting_that_does_not_exist_is_named_with_the_two_there_are(monkeypatch):
    neurondev.host_device()
    monkeypatch.setenv("NEURONDEV_ACCOUNTING", "fast")
    with pytest.raises(neurondev.InvalidOptionError, match=r"NEURONDEV_ACCOUNTING is 'observer' .* or 'log' .*got 'fast'"):
        neurondev.explain(lambda x: x + 1, torch.randn(2), target="hostdev", quiet=True)


@pytest.mark.parametrize(
    "argv, phrase",
    [
        (["watch", "--html", "/no/such/folder/w.html", "train.py"], "the folder /no/such/folder does not exist"),
        (["watch", "no_such_script.py"], "no script no_such_script.py"),
        (["watch", "--ranks-timeout", "0", __file__], "--ranks-timeout is a number of seconds above 0"),
        (["watch", "--stop-after-calls", "0", __file__], "--stop-after-calls is a number of calls above 0"),
        (["watch", "--trace", "/no/such/folder/t.json", "train.py"], "the folder /no/such/folder does not exist"),
        (
            ["explain", "neurondev/gallery/patterns.py:seed_function", "--input", "randn(64)", "--model-explorer", __file__],
            "is a file, not a folder",
        ),
        (["explain", "neurondev/gallery/patterns.py:seed_function", "--meta", "--input", "randn(64)"], "--meta builds an nn.Module class"),
        (
            ["check", "neurondev/gallery/patterns.py:seed_function", "--input", "randn(64)", "--select", "ND1,F401"],
            "neurondev.rules() lists them",
        ),
        (["docs", "ND999", "--no-open"], "takes a rule's code (neurondev.rules() lists them"),
        (["docs", "--serve", "--port", "70000", "--no-open"], "--port is a port number (0 to 65535"),
    ],
    ids=[
        "watch-html-folder",
        "watch-no-script",
        "watch-ranks-timeout-0",
        "watch-stop-after-no-calls",
        "watch-trace-folder",
        "explain-model-explorer-onto-a-file",
        "explain-meta-on-a-function",
        "check-select-ruff-code",
        "docs-unknown-rule",
        "docs-port-out-of-range",
    ],
)
def test_the_command_refuses_bad_input_before_it_runs_anything(argv, phrase, capsys):
    from neurondev import cli

    assert cli.main(argv) == 2
    assert phrase in capsys.readouterr().err


@pytest.mark.skipif(
    importlib.util.find_spec("torch_xla") is not None, reason="torch_xla is installed: make test's second run (today's torch) has none"
)
def test_explain_on_xla_where_torch_xla_is_not_installed_is_a_usage_error_before_anything_runs(capsys):
    from neurondev import cli

    assert cli.main(["explain", "neurondev/gallery/patterns.py:seed_function", "--input", "randn(64)", "--target", "xla"]) == 2
    error = capsys.readouterr().err
    assert "--target xla runs your program on an XLA device, and torch_xla is not installed here" in error
    assert "leave --target out to find the pins on CPU" in error


@pytest.mark.parametrize(
    "given", ["javascript:alert(1)", "https://docs.example/\n<script>", "data:text/html,x", 'https://x/" onmouseover="a']
)
def test_a_docs_url_that_is_no_web_or_file_address_is_refused_before_it_reaches_a_link(monkeypatch, given):
    from neurondev import rulebook

    monkeypatch.setenv("NEURONDEV_DOCS_URL", given)
    with pytest.raises(neurondev.InvalidOptionError, match="NEURONDEV_DOCS_URL is an http, https or file URL"):
        rulebook.docs_url()
    for fine in ("https://docs.example/neurondev", "file:///srv/site/", "../"):  # a relative path: a site beside the page
        monkeypatch.setenv("NEURONDEV_DOCS_URL", fine)
        assert rulebook.rule_named("ND101").url.startswith(fine)


@pytest.mark.skipif(
    importlib.util.find_spec("torch_xla") is not None, reason="torch_xla is installed: make test's second run (today's torch) has none"
)
def test_strict_fallbacks_where_no_device_ran_the_program_say_so_and_where_to_run_it():
    from neurondev.gallery.patterns import seed_function

    with pytest.raises(neurondev.DevicePinsError) as failed:
        neurondev.check(seed_function, torch.randn(64), target="xla", select=("ND206",), fallbacks="error")
    said = str(failed.value)
    assert said.startswith("seed_function did not run on the device: its fallbacks were not checked") and "fell back" not in said
    assert "write instead: nothing in your code: run the check where the device is" in said
