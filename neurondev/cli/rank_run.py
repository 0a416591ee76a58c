"""One rank of a torchrun job under a neurondev command: it reports what it saw however it ends, and never holds the job.

A rank posts its record when its script ends (finished, raised, or exited with a code); rank 0 then collects every
rank's and writes the job's report. When torchrun stops the job (its agent sends SIGTERM to every rank once one has
failed), a rank may be blocked in a collective that will never complete: a thread of its own, woken by the signal
through Python's wakeup file descriptor, posts the record as it stands (rank 0 also collects and writes), and the
process then ends by SIGTERM as it would have without neurondev.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

__all__ = ["REPORT_DEADLINE", "OnTerminate", "RankReport", "ended"]

_TERMINATED_COLLECT_SECONDS = 15.0  # torchrun kills a rank 30 s after its SIGTERM: rank 0 writes before that
REPORT_DEADLINE = 20.0  # seconds after SIGTERM a rank ends by it, reported or not (an orphan rank has no agent to kill it)


def ended(raised: BaseException | None, code: int) -> dict[str, Any]:
    """How a rank's script ended: 'finished', 'raised' (the exception's type), or 'exited' (its sys.exit code)."""
    if raised is None:
        return {"how": "finished", "code": code}
    if isinstance(raised, SystemExit):
        return {"how": "exited", "code": code}
    return {"how": "raised", "code": code, "exception": type(raised).__name__}


class RankReport:
    """What one rank posts, and, on rank 0, the job's report it writes: each once, from whichever thread comes first
    (the script's end, or torchrun's SIGTERM)."""

    def __init__(self, session: Any, record_of: Callable[[], Any], write: Callable[[Any], None], *, trace: bool = False) -> None:
        self.session, self._record_of, self._write = session, record_of, write
        self._trace = trace  # the rank's trace events go with its record (rank 0 writes the job's trace)
        self._posting, self._writing = threading.Lock(), threading.Lock()
        self._posted = self._written = False

    def post(self, ending: dict[str, Any]) -> None:
        from neurondev.render.json import plain, watch_dict

        with self._posting:
            if not self._posted:
                record, rank = self._record_of(), self.session.where.rank
                data = {"rank": rank, **plain(watch_dict(record)), "ended": ending}
                if self._trace:
                    from neurondev.render.trace_events import trace_events

                    data["trace"] = plain(trace_events(record, pid=rank, process=f"rank {rank}")["traceEvents"])
                self.session.post(data)
                self._posted = True

    def write(self, *, timeout: float | None, wait: float | None = None) -> Any:
        """Rank 0: every rank's record collected, merged, and written (once); None elsewhere, when written already, or
        when another thread is writing it and has not finished in ``wait`` seconds."""
        from neurondev.results.jobs import Ranks, merged

        if self.session.where.rank != 0 or not self._writing.acquire(timeout=-1 if wait is None else wait):
            return None
        try:
            if self._written:
                return None
            job = Ranks(*merged(*self.session.collect(timeout=timeout)))
            self._write(job)
            self._written = True
            return job
        finally:
            self._writing.release()

    def terminated(self, signum: int) -> None:
        """torchrun is stopping the job: this rank's record as it stands, and on rank 0 the report with what came."""
        self.post({"how": "terminated", "signal": signal.Signals(signum).name})
        self.write(timeout=_TERMINATED_COLLECT_SECONDS, wait=_TERMINATED_COLLECT_SECONDS)


class OnTerminate:
    """From ``__init__`` (in the main thread) to ``close``: SIGTERM calls ``report(signum)`` once, even while the main
    thread is blocked in C++ (a collective waiting for a rank that is gone), then ends the process by that signal."""

    def __init__(self, report: Callable[[int], None]) -> None:
        self._report = report
        self._once = threading.Lock()
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)
        self._previous_fd = signal.set_wakeup_fd(self._write, warn_on_full_buffer=False)
        self._previous = signal.signal(signal.SIGTERM, self._handler)
        self._thread = threading.Thread(target=self._wait, name="neurondev-sigterm", daemon=True)
        self._thread.start()

    def _handler(self, signum: int, frame: Any) -> None:
        """The main thread, between two bytecodes: the report runs on a thread of its own (the main thread may hold
        what it needs, rank 0's collection say), and the main thread goes on until the process ends."""
        threading.Thread(target=self._terminate, args=(signum,), name="neurondev-sigterm-report", daemon=True).start()

    def _wait(self) -> None:  # its own thread: Python's C handler writes each signal's number to the pipe
        while True:
            try:
                data = os.read(self._read, 64)
            except OSError:
                return
            if not data:
                return
            if signal.SIGTERM in data and signal.getsignal(signal.SIGTERM) == self._handler:
                self._terminate(signal.SIGTERM)

    def _terminate(self, signum: int) -> None:
        if not self._once.acquire(blocking=False):
            return  # the other thread reports and ends the process
        deadline = threading.Timer(REPORT_DEADLINE, _end_by, args=(signum,))  # a report blocked (the store gone) never holds the rank
        deadline.daemon = True
        deadline.start()
        try:
            self._report(signum)
        except Exception as error:  # the report is a courtesy: the rank still ends as torchrun asked
            print(f"neurondev: could not report this rank before it stops ({type(error).__name__}: {error})", file=sys.stderr)
        _end_by(signum)

    def close(self) -> None:
        """Put back SIGTERM's handler and the wakeup descriptor (the main thread)."""
        if signal.getsignal(signal.SIGTERM) == self._handler:
            signal.signal(signal.SIGTERM, self._previous)
        signal.set_wakeup_fd(self._previous_fd)
        os.close(self._write)


def _end_by(signum: int) -> None:
    """End this process by ``signum`` with the default action, from any thread (Python lets only the main thread set
    a handler, so libc's ``signal`` puts the default back)."""
    from neurondev._paths import remove_scratch

    sys.stdout.flush()
    sys.stderr.flush()
    remove_scratch()  # the exit handlers that would remove neurondev's scratch folders never run after a signal
    try:
        import ctypes

        ctypes.CDLL(None).signal(signum, 0)  # SIG_DFL
        os.kill(os.getpid(), signum)
        time.sleep(5)
    finally:
        os._exit(128 + signum)
