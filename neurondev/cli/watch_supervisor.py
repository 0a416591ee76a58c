"""The watch command's script in a child process it watches over: a script killed by a signal (SIGKILL, the kernel's
out-of-memory killer, a crash in native code) still leaves its record, the steps up to its last, and how it ended."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import pickle
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["Journal", "child_journal", "supervised"]

_CHILD: list[Path] = []  # in the child: where it keeps its record so far (never in the environment: its own runs would share it)
_SHARE = 0.05  # the journal's writes take at most this share of the run's time


def supervised(options: argparse.Namespace, report: Callable[[Any, argparse.Namespace], None], *, rank: bool = False) -> int | None:
    """Fork: the child returns None and runs the watch; the parent waits and returns the child's exit code, or, when a
    signal killed it, writes the record the child kept with ``report`` (a Watch and the options: the summary and the
    files asked for) and returns 128 + the signal, as a shell does. ``rank``: a
    rank of a torchrun job, whose record goes to rank 0 by the job's exchange (a killed one is named missing there).
    None also where there is no fork (Windows) or in a child already."""
    if not hasattr(os, "fork") or _CHILD:
        return None
    folder = Path(tempfile.mkdtemp(prefix="neurondev-watch-"))
    journal = folder / "record.pickle"
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        from neurondev._paths import SCRATCH

        os.environ[SCRATCH] = str(folder)  # neurondev's own scratch folders, removed with this one
        _CHILD.append(journal)
        _signalled_when_parent_dies(signal.SIGKILL)
        return None
    if rank:
        _signalled_when_parent_dies(signal.SIGTERM)
    try:
        code = os.waitstatus_to_exitcode(_Waiting(pid).status())
        if code >= 0:
            return code
        if rank:
            print(f"neurondev: this rank's script was killed by {signal.Signals(-code).name} (signal {-code})", file=sys.stderr)
            return 128 - code
        return _killed(-code, journal, options, report)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def child_journal() -> Path | None:
    """In the supervised child: the file its record so far goes to; None elsewhere."""
    return _CHILD[-1] if _CHILD else None


class Journal:
    """Called at each step's mark in the child: the record so far, pickled to ``path`` (replaced whole, never half
    written), at most ``_SHARE`` of the time since the last write; stops, and says why, when the record cannot be kept."""

    def __init__(self, path: Path, record_of: Any) -> None:
        self.path, self.record_of = Path(path), record_of
        self.next_at = 0.0

    def __call__(self) -> None:
        start = time.perf_counter()
        if start < self.next_at:
            return
        kept = self.path.with_suffix(".next")
        try:
            kept.write_bytes(pickle.dumps(self.record_of()))
            os.replace(kept, self.path)
        except (pickle.PicklingError, TypeError, AttributeError, OSError) as error:
            self.next_at = float("inf")
            print(f"neurondev: the record is not kept as the script runs ({type(error).__name__}: {error})", file=sys.stderr)
            return
        took = time.perf_counter() - start
        self.next_at = time.perf_counter() + took / _SHARE


class _Waiting:
    """The parent's wait for its child. Ctrl-C reaches the child (one process group) and is the script's to handle;
    SIGTERM and SIGHUP sent to this process are passed on to it, and a child that has not ended ``DEADLINE`` seconds
    later (held in native code with Python's lock, where no Python handler runs) is killed: a stop is a stop, never a
    hang."""

    DEADLINE = 25.0  # the child's own report has 20 s (rank_run.REPORT_DEADLINE); torchrun kills a rank after 30 s

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.asked: float | None = None  # when a stop was passed on

    def status(self) -> int:
        handlers = {number: signal.signal(number, self._forward) for number in (signal.SIGTERM, signal.SIGHUP)}
        handlers[signal.SIGINT] = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            while True:
                done, status = os.waitpid(self.pid, os.WNOHANG)
                if done:
                    return status
                if self.asked is not None and time.monotonic() - self.asked > self.DEADLINE:
                    print(f"neurondev: the script did not stop within {self.DEADLINE:.0f} s of the signal: killed", file=sys.stderr)
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(self.pid, signal.SIGKILL)
                    self.asked = float("inf")
                time.sleep(0.05)
        finally:
            for number, handler in handlers.items():
                signal.signal(number, handler)

    def _forward(self, signum: int, frame: Any) -> None:
        with contextlib.suppress(ProcessLookupError):  # the child has ended already
            os.kill(self.pid, signum)
        if self.asked is None:
            self.asked = time.monotonic()


def _signalled_when_parent_dies(signum: int) -> None:
    """Linux (PR_SET_PDEATHSIG): ``signum`` to this process when the one that started it dies. The child takes SIGKILL
    (nothing outlives the command killed, as a script run directly would not); a rank's supervising process takes
    SIGTERM when torchrun's agent dies, passes it on, and a script held in native code is killed ``_Waiting.DEADLINE``
    seconds later, instead of an orphan rank waiting for ever."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signum)
    except (OSError, AttributeError):
        pass


def _killed(signum: int, journal: Path, options: argparse.Namespace, report: Callable[[Any, argparse.Namespace], None]) -> int:
    """The report of a script a signal killed: the record its child kept, how it ended, and 128 + the signal."""
    name = signal.Signals(signum).name
    if not journal.is_file():
        print(f"neurondev: the script was killed by {name} (signal {signum}) before its first step: nothing was recorded", file=sys.stderr)
        return 128 + signum
    from neurondev.loops.record import Raised
    from neurondev.results.watched import Watch

    age = time.time() - journal.stat().st_mtime
    record = pickle.loads(journal.read_bytes())
    ended = Raised(name, f"killed by {name} (signal {signum})", len(record.compiles), signal=signum)
    report(Watch.of(dataclasses.replace(record, raised=ended)), options)
    print(
        f"neurondev: the script was killed by {name} (signal {signum}): the record above is up to its step {len(record.steps)}, "
        f"kept {age:.1f} s before it ended (kept at most every {1 / _SHARE:.0f} times the time keeping it takes)",
        file=sys.stderr,
    )
    return 128 + signum
