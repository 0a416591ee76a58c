"""The stage clock: one bar per stage on stderr (none when quiet), the time of each stage, a step callback."""

from __future__ import annotations

from neurondev.report.progress import Stages


def test_each_stage_is_timed_and_each_step_calls_back(capsys):
    steps = []
    with Stages(("trace", "run"), quiet=True, on_step=lambda: steps.append(1)) as stages:
        stages.start("trace")
        stages.start("run", total=3)
        for _ in range(3):
            stages.advance()
        stages.start("trace")  # a stage met twice adds up
    assert stages.seen == ["trace", "run", "trace"] and set(stages.seconds) == {"trace", "run"}
    assert all(seconds >= 0 for seconds in stages.seconds.values()) and len(steps) == 3
    assert capsys.readouterr() == ("", "")  # quiet draws nothing


def test_a_bar_names_the_stage_and_its_place_on_stderr_never_stdout(capsys):
    with Stages(("trace", "run"), name="explain") as stages:
        stages.start("run", total=2)
        stages.advance(2)
    out, err = capsys.readouterr()
    assert out == "" and "neurondev explain: run (2/2)" in err
