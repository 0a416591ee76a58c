"""A restarted torchrun job's JSON: its attempt, and the earlier attempts of the same run kept from the file it replaces."""

from __future__ import annotations

import json

from neurondev.results.attempts import attempt_of, numbered

JOB = {"schema": 3, "world_size": 2, "ranks": [], "missing": []}


def test_each_attempt_keeps_the_earlier_ones_of_its_run_oldest_first(tmp_path):
    path = tmp_path / "job.json"
    first = numbered(JOB, str(path), {"TORCHELASTIC_RESTART_COUNT": "0", "TORCHELASTIC_RUN_ID": "r1"})
    assert (first["attempt"], first["run_id"], first["earlier_attempts"]) == (0, "r1", [])
    path.write_text(json.dumps(first))
    second = numbered(JOB, str(path), {"TORCHELASTIC_RESTART_COUNT": "1", "TORCHELASTIC_RUN_ID": "r1"})
    path.write_text(json.dumps(second))
    third = numbered(JOB, str(path), {"TORCHELASTIC_RESTART_COUNT": "2", "TORCHELASTIC_RUN_ID": "r1"})
    assert [e["attempt"] for e in third["earlier_attempts"]] == [0, 1]
    assert all("earlier_attempts" not in e for e in third["earlier_attempts"])


def test_another_runs_file_a_later_attempts_or_a_file_that_is_no_job_is_not_carried(tmp_path):
    path = tmp_path / "job.json"
    path.write_text(json.dumps({**JOB, "attempt": 0, "run_id": "other"}))
    assert numbered(JOB, str(path), {"TORCHELASTIC_RESTART_COUNT": "1", "TORCHELASTIC_RUN_ID": "r1"})["earlier_attempts"] == []
    path.write_text(json.dumps({**JOB, "attempt": 3, "run_id": "r1"}))
    assert numbered(JOB, str(path), {"TORCHELASTIC_RESTART_COUNT": "1", "TORCHELASTIC_RUN_ID": "r1"})["earlier_attempts"] == []
    path.write_text("not json {")
    assert numbered(JOB, str(path), {"TORCHELASTIC_RESTART_COUNT": "1", "TORCHELASTIC_RUN_ID": "r1"})["earlier_attempts"] == []
    assert numbered(JOB, None, {"TORCHELASTIC_RESTART_COUNT": "1"})["earlier_attempts"] == []
    assert attempt_of({"TORCHELASTIC_RESTART_COUNT": "x"}) == 0 and attempt_of({}) == 0
