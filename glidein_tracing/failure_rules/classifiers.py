"""VO failure classifiers (packages under the entry-point group
``glidein_tracing.failure_classifiers``), run where they cannot stop the forwarder.

A classifier is a VO's code: it may raise, call ``sys.exit``, hang, kill its process, fork,
print escapes, signal its parent or answer something that raises when read. So the
classifiers run in one worker process, one call at a time with a time limit per answer and a
budget per pass, and the worker catches ``BaseException`` and turns every answer into plain
strings before it leaves. A classifier that fails in any way, is slower than the limit or
spends its pass's budget is disabled for the rest of the forwarder's pass with one message,
and counted (``disabled``, which the pass adds to its stats); the next pass tries it again.

The fence around the worker:
- a new interpreter (``python -m`` this module), inheriting none of the forwarder's open
  files but one pipe, with stdin, stdout and stderr on /dev/null, in a session of its own;
- where the kernel allows unprivileged user namespaces (EL9 does by default), inside new
  user, PID and mount namespaces (util-linux ``unshare``) with its own ``/proc``: there it
  is PID 1, its parent is 0, no process outside can be named (``kill``, ``/proc/PID``), and
  every process it started dies with it; elsewhere under a shell, so that its parent is not
  the forwarder (a classifier that reads the shell's parent from ``/proc`` can still signal it);
- answers come back as bounded JSON (never pickle: the forwarder unpickles nothing of a
  VO's), and are cleaned of control characters;
- at the end of each pass the worker is killed with its whole session.
It still runs as the forwarder's user: its files are within the worker's reach
(docs/operators.md, Failure rules and downtimes).
"""

from __future__ import annotations

import functools
import json
import logging
import os
import signal
import subprocess
import sys
import time
from multiprocessing.connection import Connection, Pipe

from ..core.terminal import CONTROL_OR_NEWLINE_RE
from .rules import ENTRY_POINT_GROUP, MAX_VALUE, Decision, Facts, decision_problems

log = logging.getLogger(__name__)

TIME_LIMIT_S = 2.0        # one answer
PASS_BUDGET_S = 10.0      # one classifier, all its answers of one pass together
START_LIMIT_S = 60.0      # the worker's start: a new interpreter that imports every classifier
MAX_REPLY_BYTES = 64 * 1024
ANSWER_KEYS = ("domain", "service", "label", "advice", "rule")
FENCE = ("unshare", "--user", "--pid", "--mount-proc", "--fork", "--kill-child")
GRANDCHILD = ("sh", "-c", '"$@" & wait', "sh")   # without namespaces: its parent is a shell, not the forwarder


@functools.lru_cache(maxsize=1)
def fence() -> tuple:
    """The command prefix the worker runs under: FENCE when this host allows unprivileged
    user namespaces, else GRANDCHILD (said once)."""
    try:
        done = subprocess.run([*FENCE, "true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=START_LIMIT_S, check=False)
        if done.returncode == 0:
            return FENCE
    except (OSError, subprocess.SubprocessError):
        pass
    log.warning("failure classifiers run in a session of their own but without namespaces (no "
                "unprivileged user namespaces here): one that looks for the forwarder's pid can signal it")
    return GRANDCHILD


def installed_entry_points(group: str) -> list:
    """The installed entry points of a group, on every supported Python (3.9's
    ``entry_points()`` is a dict by group; 3.10 added ``select``)."""
    from importlib.metadata import entry_points
    points = entry_points()
    return list(points.select(group=group) if hasattr(points, "select") else points.get(group, ()))


def installed() -> list[str]:
    """The names of the installed classifiers (entry-point metadata only: nothing imported)."""
    return sorted({point.name for point in installed_entry_points(ENTRY_POINT_GROUP)})


class Classifiers:
    """The installed classifiers, asked in name order after the rules: the first that
    decides wins."""

    def __init__(self, names=None, *, time_limit_s: float = TIME_LIMIT_S, pass_budget_s: float = PASS_BUDGET_S):
        self.names = list(installed() if names is None else names)
        self.time_limit_s = time_limit_s
        self.pass_budget_s = pass_budget_s
        self.off: dict = {}           # name -> why, for this pass (or for good: did not load)
        self.broken: dict = {}        # name -> why it does not load (said once)
        self.disabled = 0             # classifiers disabled during this pass
        self.spent: dict = {}         # name -> seconds its answers took in this pass
        self._worker = None
        self._pipe = None

    def __len__(self):
        return len(self.names)

    def new_pass(self):
        """A new pass: every classifier that loads is tried again, with a new budget."""
        self.close()
        self.off = dict(self.broken)
        self.disabled = 0
        self.spent = {}

    def classify(self, facts: Facts) -> Decision | None:
        for name in self.names:
            if name in self.off:
                continue
            decision = self._ask(name, facts)
            if decision is not None:
                return decision
        return None

    def close(self):
        """Kill the worker and everything it started (its session; its namespaces' processes
        die with it)."""
        if self._worker is not None:
            self._pipe.close()
            try:
                os.killpg(self._worker.pid, signal.SIGKILL)
            except OSError:
                pass
            self._worker.wait()
            self._worker = self._pipe = None

    # -- the forwarder's side of the worker --------------------------------------------------
    def _ask(self, name: str, facts: Facts) -> Decision | None:
        if not self._started() or name in self.off:     # the start found it does not load
            return None
        left = self.pass_budget_s - self.spent.get(name, 0.0)
        if left <= 0:
            return self._disable(name, f"spent its {self.pass_budget_s:g} s for this pass")
        started = time.monotonic()
        try:
            self._pipe.send_bytes(json.dumps([name, list(facts)]).encode())
            answered = self._pipe.poll(min(self.time_limit_s, left))
            self.spent[name] = self.spent.get(name, 0.0) + time.monotonic() - started
            if not answered:
                self._restart()
                if left < self.time_limit_s:
                    return self._disable(name, f"spent its {self.pass_budget_s:g} s for this pass")
                return self._disable(name, f"gave no answer within {self.time_limit_s:g} s")
            kind, value = _reply(self._pipe.recv_bytes(MAX_REPLY_BYTES))
        except (EOFError, BrokenPipeError, ConnectionResetError):
            self._restart()
            return self._disable(name, "ended its process")
        except (OSError, ValueError, TypeError, RecursionError):   # over MAX_REPLY_BYTES, not JSON, too deep
            self._restart()
            return self._disable(name, "answered something that is not an answer")
        if kind == "raised":
            return self._disable(name, f"raised {value}")
        if value is None:
            return None
        values = dict(value, name=f"{name}:{value.get('rule') or 'classifier'}"[:MAX_VALUE])
        problems = decision_problems(values)
        if problems:
            return self._disable(name, f"answered badly ({'; '.join(problems)})")
        log.debug("failure classifier %s answered in %.3f s", name, time.monotonic() - started)
        return Decision(values["name"], values["domain"], values["service"], values["label"], values["advice"])

    def _disable(self, name: str, why: str) -> None:
        self.off[name] = why
        self.disabled += 1
        log.warning("failure classifier %s %s: disabled for this pass", name, why)
        return None

    def _started(self) -> bool:
        """Whether a worker is running (started now if needed, the classifiers that do not
        load named once and left out)."""
        if self._worker is not None:
            return True
        self._pipe, theirs = Pipe()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        self._worker = subprocess.Popen(
            [*fence(), sys.executable, "-m", __name__, str(theirs.fileno())], pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, env=env)
        theirs.close()
        try:
            self._pipe.send_bytes(json.dumps(self.names).encode())
            ready = self._pipe.poll(START_LIMIT_S)
            failed = json.loads(self._pipe.recv_bytes(MAX_REPLY_BYTES)) if ready else None
        except (EOFError, OSError, ValueError, RecursionError):
            failed = None
        if not isinstance(failed, dict):
            self._restart()
            for name in self.names:
                self.off.setdefault(name, "worker did not start")
            self.disabled += 1
            log.warning("failure classifiers did not start within %g s: none used in this pass", START_LIMIT_S)
            return False
        for name, why in failed.items():
            name, why = _clean(name), _clean(why)
            if name not in self.broken:
                log.warning("failure classifier %s does not load: %s", name, why)
            self.broken[name] = self.off[name] = why
        return True

    def _restart(self):
        """Kill the worker (hung or dead); the next question starts a new one."""
        if self._worker is not None:
            self.close()


def _plain(answer) -> dict | None:
    """A classifier's answer as plain short strings: None, or {key: str}."""
    if answer is None:
        return None
    if not hasattr(answer, "get"):
        return {}
    return {key: str(answer.get(key) or "")[:MAX_VALUE] for key in ANSWER_KEYS}


def _clean(value) -> str:
    """A string from the worker, short and without control characters (an ESC stored raw
    would reach every terminal that shows the span)."""
    return CONTROL_OR_NEWLINE_RE.sub("", str(value))[:MAX_VALUE]


def _reply(data: bytes) -> tuple:
    """("ok", {key: clean str} or None) or ("raised", clean str) from the worker's JSON;
    ValueError when it is anything else."""
    kind, value = json.loads(data)      # a list of two, else ValueError or TypeError
    if kind == "raised":
        return kind, _clean(value)
    if kind != "ok" or not (value is None or isinstance(value, dict)):
        raise ValueError("not an answer")
    return kind, None if value is None else {key: _clean(value.get(key) or "") for key in ANSWER_KEYS}


def _describe(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {exc}"[:MAX_VALUE]
    except BaseException:   # noqa: BLE001 (a VO's exception whose str() raises)
        return type(exc).__name__


def serve(pipe: Connection):
    """The worker: read the names, import every classifier, say which do not load, then
    answer questions [name, facts] with ["ok", plain answer] or ["raised", why] until the
    pipe closes."""
    names = json.loads(pipe.recv_bytes())
    functions, failed = {}, {}
    points = {p.name: p for p in installed_entry_points(ENTRY_POINT_GROUP)}
    for name in names:
        try:
            function = points[name].load()
            if not callable(function):
                raise TypeError("not callable")
            functions[name] = function
        except BaseException as exc:   # noqa: BLE001 (a VO's import may even exit)
            failed[name] = _describe(exc)
    pipe.send_bytes(json.dumps(failed).encode())
    while True:
        try:
            name, facts = json.loads(pipe.recv_bytes())
        except (EOFError, OSError):
            return
        except BaseException:   # noqa: BLE001 (an interrupt meant for the forwarder)
            continue
        try:
            reply = ["ok", _plain(functions[name](Facts(*facts)))]
        except BaseException as exc:   # noqa: BLE001 (SystemExit and KeyboardInterrupt too)
            reply = ["raised", _describe(exc)]
        pipe.send_bytes(json.dumps(reply).encode())


if __name__ == "__main__":
    serve(Connection(int(sys.argv[1])))
