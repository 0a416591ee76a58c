"""explain, check and the command on a native device, end to end on the host test device: copies to the host
and syncs instead of graph breaks, CPU fallbacks by line and module, the strict mode of CI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import neurondev
from neurondev import cli, examples
from neurondev.report.skips import Skip
from tests.helpers import line_of

HARNESS = Path(__file__).with_name("fallback_model.py")  # a user's model whose import makes aten::addmm fall back


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 4)

    def forward(self, x):
        return self.fc(x).relu()


@pytest.fixture
def device():
    yield neurondev.host_device()
    neurondev.host_device()  # every op native again


def test_the_seed_copies_to_the_host_at_copy_before_the_pass_and_stays_on_the_device_after(device):
    fn, args, kwargs = examples.get("seed").build()
    ex = neurondev.explain(fn, *args, **kwargs, target=device, quiet=True)
    (before,), (after,) = ex.before, ex.after
    (copy,) = before.host_copies
    assert (copy.node, copy.transfers_to_host, copy.line) == ("copy_", 1, line_of(examples.seed_function, "out.copy_"))
    assert before.graph_breaks == () and before.output_devices == ("cpu",) and before.transfers_to_host == 1
    assert after.host_copies == () and after.transfers_to_host == 0 and after.output_devices == ("hostdev:0",)
    assert after.ok and ex.graphs_match_cpu is True and ex.rewrite_preserves_values is True
    assert ex.program.as_written.ok and ex.xla_matches_cpu is True and ex.program.rewritten.stack == "native"
    summary = ex.summary()
    assert "Traced on CPU, the graph moved to hostdev:0" in summary and "1 copy(ies) to the host on hostdev:0 (copy_ at" in summary
    assert "graph break" not in summary and "XLA" not in summary
    native = neurondev.describe(ex.traces)  # the program's own trace on the device, beside the CPU one
    assert "traced natively on hostdev:0" in native and "XLA" not in native
    assert "graph break" not in ex._repr_html_().replace("Dynamo's own graph breaks", "")


def test_a_function_the_user_compiled_already_runs_on_the_device_as_its_original(device):
    """Called inside neurondev's compile, the user's compiled wrapper was compiled by its own backend, unseen: 0 graphs."""
    fn, args, kwargs = examples.get("seed").build()
    ex = neurondev.explain(torch.compile(fn, backend="eager"), *args, **kwargs, target=device, quiet=True)
    plain = neurondev.explain(fn, *args, **kwargs, target=device, quiet=True)
    for run, expected in ((ex.program.as_written, plain.program.as_written), (ex.program.rewritten, plain.program.rewritten)):
        assert run.ok and [c.graphs for c in run.calls] == [c.graphs for c in expected.calls] == [1, 0]
        assert run.transfers_to_host == expected.transfers_to_host and run.matches_cpu is True
    assert len(ex.traces.native.graphs) == len(plain.traces.native.graphs) >= 1


def test_an_empty_sequential_the_user_compiled_is_unwrapped_too():
    from neurondev.trace.callables import original_of

    empty = torch.nn.Sequential()
    assert not empty and original_of(torch.compile(empty)) is empty  # falsy, yet the original
    assert original_of(torch.nn.ReLU) is torch.nn.ReLU  # not compiled: itself


def test_check_in_strict_mode_names_each_fallback_with_the_line_of_the_linear_call_and_passes_once_native(device):
    neurondev.host_device(fallback=["aten::addmm"])
    with pytest.raises(neurondev.DevicePinsError) as failed:
        neurondev.check(Net(), torch.randn(2, 16), target=device, fallbacks="error")
    (finding,) = failed.value.findings
    assert (finding.kind, finding.function, finding.line) == ("fallback", "aten::addmm.out", line_of(Net.forward, "self.fc(x)"))
    assert "aten::addmm.out fell back to the CPU 1 time(s) per call" in str(failed.value) and " in fc" in str(failed.value)
    neurondev.host_device()
    assert neurondev.check(Net(), torch.randn(2, 16), target=device, fallbacks="error").name == "Net"


def test_the_fallback_table_of_a_tiny_gpt2_names_each_op_its_module_and_line(device, gpt2):
    neurondev.host_device(fallback=["aten::addmm", "aten::mm"])
    model, args, kwargs = gpt2
    table = neurondev.explain(model, *args, **kwargs, target=device, quiet=True).fallback_table()
    addmm = table[table.op == "aten::addmm.out"]
    assert len(addmm) == 8 and set(addmm.calls) == {1} and set(addmm.file.map(lambda f: Path(f).name)) == {"pytorch_utils.py"}
    assert list(addmm.module[:4]) == [f"transformer.h.0.{m}" for m in ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")]
    (lm_head,) = table[table.op == "aten::mm.out"].itertuples()
    assert lm_head.module == "lm_head" and Path(lm_head.file).name == "modeling_gpt2.py" and lm_head.bytes_copied > 0
    assert set(table.scenario) == {"your program"} and table.instead.str.startswith("nothing to write instead").all()


def test_the_command_explains_on_the_host_device_and_checks_in_strict_mode(device, capsys):
    arguments = ["check", f"{HARNESS}:Net", "--input", "randn(2, 16)", "--target", "hostdev"]
    strict = subprocess.run(
        [sys.executable, "-m", "neurondev", *arguments, "--fallbacks", "error"], capture_output=True, text=True, timeout=600
    )
    assert strict.returncode == 1, strict.stderr  # the installed command, in a process of its own
    line = next(i for i, text in enumerate(HARNESS.read_text().splitlines(), 1) if "self.fc(x)" in text)
    assert "aten::addmm.out fell back to the CPU 1 time(s) per call" in strict.stdout and f"fallback_model.py:{line}" in strict.stdout
    assert cli.main(arguments) == 0, capsys.readouterr()  # without --fallbacks error the same model passes (here, in this process)


TABLE = torch.arange(6, dtype=torch.float32)  # a host tensor in a global


def reads_a_global(x):
    return x * 2 + TABLE


def test_a_host_tensor_meeting_a_device_one_is_a_failure_with_its_line_as_on_xla(device):
    ex = neurondev.explain(reads_a_global, torch.randn(6), target=device, quiet=True)
    failure = ex.program.as_written.failure
    assert (failure.kind, failure.stage, failure.line) == ("mixed devices at compile time", "compile", line_of(reads_a_global, "TABLE"))
    assert "stays on the host while your inputs are on hostdev:0" in ex.summary()


@pytest.mark.xla
def test_an_xla_explanation_rerun_on_the_host_device_runs_its_graphs_there_and_leaves_xla_s_program_and_trace_behind(seed_explained):
    again = seed_explained.rerun(target=neurondev.host_device())  # ran XLA's native graphs on the host device: SIGSEGV
    assert again.runtime["device"] == "hostdev:0" and again.after[0].output_devices == ("hostdev:0",) and again.after[0].ok
    assert again.program is None and again.program_skipped == Skip("ran elsewhere", device="XLA", target="hostdev:0")
    assert again.traces is None and again.traces_skipped == again.program_skipped
    assert "explain the function again with target='hostdev:0'" in again.summary()
    assert "Your program on hostdev:0: not run (ran on XLA for the original" in again.summary()


def noisy(x):
    return x + torch.rand_like(x)


class Dropped(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = torch.nn.Dropout(0.5)
        self.fc = torch.nn.Linear(8, 8)

    def forward(self, x):
        return self.drop(self.fc(x))


@pytest.mark.parametrize("subject", [noisy, Dropped().train()], ids=["rand_like", "dropout"])
def test_a_program_with_random_ops_draws_as_cpu_did_and_never_differs_for_it(device, subject):
    x = torch.randn(4, 8)
    ex = neurondev.explain(subject, x, target=device, quiet=True)
    for run in (ex.program.as_written, ex.program.rewritten):
        assert run.ok and run.matches_cpu is True, (run.comparison, run.not_compared)  # seeded from the state CPU's call drew from
    assert "DIFFERS" not in ex.summary()


def test_the_fallbacks_of_an_exported_program_are_on_the_users_line_not_in_torch_nn(device):
    neurondev.host_device(fallback=["aten::addmm"])
    exported = torch.export.export(Net(), (torch.randn(2, 16),))
    table = neurondev.explain(exported, torch.randn(2, 16), target=device, quiet=True).fallback_table()
    assert set(table.line) == {line_of(Net.forward, "self.fc(x)")} and set(table.op) == {"aten::addmm.out"}


DEFAULT_DEVICE = """
import torch, neurondev
device = neurondev.host_device()
torch.set_default_device(device)

def f(x):
    return x + torch.randn(4)

x = torch.randn(4)
ex = neurondev.explain(f, x, target=device, quiet=True)
failure = ex.program.as_written.failure
print("failure:", None if failure is None else (failure.kind, failure.line))
try:
    neurondev.check(f, x, target=device)
    print("check: passes")
except neurondev.DevicePinsError as error:
    print("check:", [(finding.kind, finding.function, finding.line) for finding in error.findings])
print("default device kept:", torch.get_default_device())
"""


def test_a_default_device_torch_compile_ignores_is_a_finding_with_its_line_and_the_cpu_trace_ignores_it_too(tmp_path):
    from neurondev._compat import torch_at_least

    script = tmp_path / "default_device.py"
    script.write_text(DEFAULT_DEVICE)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    printed = done.stdout.splitlines()
    assert printed[-1] == "default device kept: hostdev:0"  # the user's setting is theirs again after explain and check
    if torch_at_least((2, 13)):  # torch 2.13 applies the default device to torch.randn: nothing to find
        assert printed[:2] == ["failure: None", "check: passes"]
    else:  # torch 2.9 leaves torch.randn on the CPU under torch.compile (PyTorch issue 175953)
        kind = "default device ignored under torch.compile"
        assert printed[:2] == [f"failure: ('{kind}', 7)", f"check: [('program', '{kind}', 7)]"]


def test_the_strict_check_fails_closed_where_the_program_cannot_be_seen_whole(device):
    import dataclasses

    from neurondev.results.check import fallback_findings

    ex = neurondev.explain(Net(), torch.randn(2, 16), target=device, quiet=True)
    assert fallback_findings(ex) == []  # every op passed the dispatcher: nothing fell back
    # what a TorchNeuron run records: its graphs are neuron's compiler's, their ops unseen by the dispatcher
    programs = dataclasses.replace(ex.program, rewritten=dataclasses.replace(ex.program.rewritten, unseen="neuron"))
    (finding,) = fallback_findings(dataclasses.replace(ex, program=programs))
    assert (finding.kind, finding.rule, finding.why, finding.compiler) == ("fallback", "ND206", "unseen", "neuron")
    assert "cannot verify fallbacks here: inside the graphs neuron's compiler runs" in neurondev.describe(finding)


class Recurrent(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.gru = torch.nn.GRU(8, 8, batch_first=True)

    def forward(self, x):
        hidden, _ = self.gru(x)  # dynamo runs recurrent modules eagerly: the program does, on the device
        return hidden


class Rotary(torch.nn.Module):
    """Complex rotary embeddings and an autocast region, as a real model holds them."""

    def __init__(self):
        super().__init__()
        self.register_buffer("frequencies", torch.polar(torch.ones(4), torch.linspace(0, 1, 4)))
        self.out = torch.nn.Linear(8, 4)

    def forward(self, hidden):
        pairs = torch.view_as_complex(hidden.reshape(*hidden.shape[:-1], 4, 2)) * self.frequencies
        rotated = torch.view_as_real(pairs).flatten(-2)
        with torch.autocast(device_type=hidden.device.type, dtype=torch.bfloat16):
            return self.out(rotated).float()


RECURRENT = """
from tests.native.test_explain_native import Recurrent, explained_from_a_checkpoint
explained_from_a_checkpoint(Recurrent, {folder!r})
print("explained")
"""


def test_a_gru_from_a_checkpoint_explains_with_the_cpus_values(tmp_path):
    """In a process of its own, without torch_xla: with torch_xla loaded, torch.compile of an nn.GRU on the CPU fails
    ("Expected all tensors in the given list to be XLA tensors", torch_xla 2.9, measured)."""
    from tests.helpers import HIDE_TORCH_XLA, run_python

    done = run_python(HIDE_TORCH_XLA + RECURRENT.format(folder=str(tmp_path)))
    assert done.returncode == 0 and done.stdout.strip().endswith("explained"), done.stderr[-2000:]


def test_complex_rotary_embeddings_and_autocast_from_a_checkpoint_explain_with_the_cpus_values(device, tmp_path):
    ex = explained_from_a_checkpoint(Rotary, str(tmp_path))
    assert [(r.location, r.old, r.new) for r in ex.rewrites] == [("arg[0]", "cpu", "hostdev")]  # the autocast region's device type
    assert ex.graphs_match_cpu is True and ex.sections[0].rewrite_verdict.status == "fixed"  # before it: the region cast nothing


def explained_from_a_checkpoint(kind, folder):
    """``kind`` saved, loaded onto the host device from the checkpoint, and explained there: its program agrees with CPU."""
    from pathlib import Path

    device = neurondev.host_device()
    torch.manual_seed(0)
    checkpoint = Path(folder) / "checkpoint.pt"
    torch.save(kind().state_dict(), checkpoint)
    model = kind()
    state = torch.load(checkpoint, map_location="hostdev")  # a checkpoint loaded onto the device
    assert {value.device for value in state.values()} == {device}
    model.load_state_dict(state)
    ex = neurondev.explain(model, torch.randn(2, 5, 8), target=device, quiet=True)
    assert ex.program.as_written.matches_cpu is True and ex.program.rewritten.matches_cpu is True
    return ex


def test_the_command_refuses_a_device_index_this_machine_lacks_before_anything_runs(device, capsys):
    assert cli.main(["explain", f"{HARNESS}:Net", "--input", "randn(2, 16)", "--target", "hostdev:3"]) == 2
    assert "target 'hostdev:3' does not exist here: this process has hostdev:0" in capsys.readouterr().err
    neurondev.host_device()  # the harness made aten::addmm fall back


def test_explain_inside_a_watch_counts_its_program_in_the_accounting_that_saw_it(device):
    neurondev.host_device(fallback=["aten::addmm"])
    with neurondev.watch():  # on torch 2.13 the watch's own accounting is on, and sees the program's ops first
        ex = neurondev.explain(Net(), torch.randn(2, 16), target=device, quiet=True)
    assert [(f.op, f.calls, f.line) for f in ex.program.as_written.fallbacks] == [
        ("aten::addmm.out", 1, line_of(Net.forward, "self.fc(x)"))
    ]
    assert ex.program.as_written.calls[-1].fallback_calls == 1


def scaled_and_shifted(x):
    return x * 2 + 1  # a Python number beside a device tensor: a wrapped scalar, which cpu_fallback hands _to_cpu


def test_a_fallback_with_a_python_number_operand_runs_as_without_neurondev_and_is_counted_as_the_device_logged_it(device):
    """The accounting saw cpu_fallback's _to_cpu of a wrapped number as a Python int and could not call it again: the
    user's program raised (explain, and inside a watch the user's own loop)."""
    from neurondev.devices.host.loader import extension

    neurondev.host_device(fallback=["aten::add"])
    x = torch.randn(4)
    start = extension().event_count()
    expected = scaled_and_shifted(x.to(device)).cpu()
    logged = extension().events(start)
    copied = sum(e[3] for e in logged if e[0] == "copy" and e[1] == "aten::add.out")  # the fallback's own copies
    assert [e for e in logged if e[0] == "fallback"] == [("fallback", "aten::add.out", "", copied)] and copied == 3 * 16
    explained = neurondev.explain(scaled_and_shifted, x, target=device, quiet=True)
    program = explained.program.as_written
    assert program.ok and program.matches_cpu is True and torch.equal(expected, scaled_and_shifted(x))
    table = explained.fallback_table()
    assert table[["op", "calls", "bytes_copied", "line"]].values.tolist() == [
        ["aten::add.out", 1, copied, line_of(scaled_and_shifted, "x * 2 + 1")]
    ]
    with neurondev.watch() as watched:
        for _ in range(3):
            scaled_and_shifted(x.to(device))
    assert watched.record.raised is None


def split_by_a_host_read(x):
    return x * x.sum().item()  # dynamo splits the function at .item()


@pytest.mark.parametrize("place", ["hostdev", pytest.param("xla", marks=pytest.mark.xla)])
def test_json_of_a_function_dynamo_splits_carries_its_break_as_a_finding(device, place, tmp_path):
    target = device if place == "hostdev" else "xla"
    explained = neurondev.explain(split_by_a_host_read, torch.randn(4), target=target, quiet=True)
    data = json.loads(explained.to_json())
    (split,) = [f for f in data["findings"] if f["rule"] == "ND109"]  # dynamo's own graph break
    assert split["line"] == line_of(split_by_a_host_read, "x.sum().item()") and split["reason"] and split["text"]
    report = tmp_path / "split.json"
    code = cli.main(["explain", f"{__file__}:split_by_a_host_read", "--input", "randn(4)", "--target", str(target), "--json", str(report)])
    assert code in (0, 1) and json.loads(report.read_text())["findings"]


def test_allowing_an_op_by_its_name_allows_the_overload_that_fell_back(device):
    """allow=["aten::addmm"] once allowed the fallback; findings now name aten::addmm.out, and the name alone allows it."""
    neurondev.host_device(fallback=["aten::addmm"])
    with pytest.raises(neurondev.DevicePinsError) as failed:
        neurondev.check(Net(), torch.randn(2, 16), target=device, fallbacks="error")
    assert [(f.rule, f.function) for f in failed.value.findings] == [("ND205", "aten::addmm.out")]
    assert neurondev.check(Net(), torch.randn(2, 16), target=device, fallbacks="error", allow=["aten::addmm"]) is not None
    assert neurondev.check(Net(), torch.randn(2, 16), target=device, fallbacks="error", allow=["aten::addmm.out"]) is not None
    with pytest.raises(neurondev.DevicePinsError):
        neurondev.check(Net(), torch.randn(2, 16), target=device, fallbacks="error", allow=["aten::add"])


@pytest.mark.parametrize("accounting", ["log", "observer"])
def test_a_printed_device_tensor_is_a_copy_to_the_host_on_its_line_as_the_device_logged_it(device, accounting, monkeypatch, capsys):
    """torch turns dispatch modes off while it prints a tensor: a mode counted 0 copies where the device logged one
    (16 bytes). The device's own log sees it, and so does the dispatcher's observer (no mode: the dispatcher's record)."""
    from neurondev.devices.host.loader import extension
    from tests.native import programs

    monkeypatch.setenv("NEURONDEV_ACCOUNTING", accounting)
    with neurondev.watch() as watched:
        for _ in range(3):
            start = extension().event_count()
            programs.prints(torch.randn(4, device=device))
            logged = [e for e in extension().events(start) if e[0] == "copy" and e[2] == "to_host"]
            watched.step()
    capsys.readouterr()
    assert [(e[2], e[3]) for e in logged] == [("to_host", 16)]
    copies = [n for n in watched.steps["copies_to_host"] if n]
    assert copies == [1, 1, 1] and watched.record.native_total.transfers_to_host == 3
    lines = [text for text in watched.steps["device_lines"] if isinstance(text, str)]
    assert len(lines) == 3 and all(f"1 copy(ies) to host at programs.py:{line_of(programs.prints, 'print(y)')}" in text for text in lines)


def test_your_programs_copies_through_the_neurondev_backend_are_on_your_lines_not_the_callers(device):
    """The backend gives a result back on the host where the program as written leaves it: that copy was put on the
    line that called explain, then on the returned h + 1's; it is the line that asks for the host, h = (x * 2).to("cpu")
    (the pass moved the work after it to the device, so the copy comes at the result, but that line is the one to
    change), as the other two scenarios name it."""
    from tests.native import programs

    for fn, text, direction in (
        (programs.to_host, 'h = (x * 2).to("cpu")', "to host"),
        (programs.as_tensor, "torch.as_tensor", "to device"),
    ):
        table = neurondev.explain(fn, torch.randn(4), target=device, quiet=True).transfer_table()
        rewritten = table[table["scenario"] == "your program, neurondev backend"]
        assert rewritten[["direction", "calls", "bytes", "line"]].values.tolist() == [[direction, 1, 16, line_of(fn, text)]]


@pytest.mark.parametrize("accounting", ["log", "observer"])
@pytest.mark.parametrize("name, text", [("reads", ".item()"), ("masks", "y[y > 0] = 0.0"), ("branches", "(x > 0).any()")])
def test_check_selecting_nd204_fails_on_your_programs_own_syncs_with_their_lines(device, accounting, name, text, monkeypatch):
    """Syncs were findings only in the graphs traced on CPU (dynamo splits at a host read: the program's own syncs
    were never checked); a boolean mask's write (y[y > 0] = 0.0) was no sync, its read was."""
    from tests.native import programs

    monkeypatch.setenv("NEURONDEV_ACCOUNTING", accounting)
    fn = getattr(programs, name)
    with pytest.raises(neurondev.DevicePinsError) as failed:
        neurondev.check(fn, torch.randn(4), target=device, select=("ND204",))
    assert {(f.rule, f.line) for f in failed.value.findings} == {("ND204", line_of(fn, text))}
    assert neurondev.check(fn, torch.randn(4), target=device, select=("ND204",), allow=[f"programs.py:{line_of(fn, text)}"])
