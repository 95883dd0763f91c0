"""VO failure classifiers (packages under the entry-point group
``glidein_tracing.failure_classifiers``), run where they cannot stop the forwarder.

A classifier is a VO's code: it may raise, call ``sys.exit``, hang, kill its process or
answer something that raises when read. So the classifiers run in one worker process
(spawned: it inherits none of the forwarder's open databases), one call at a time with a
time limit, and the worker catches ``BaseException`` and turns every answer into plain
strings before it leaves. A classifier that fails in any way, or is slower than the limit,
is disabled for the rest of the forwarder's pass with one message, and counted
(``disabled``, which the pass adds to its stats); the next pass tries it again. A worker
that hangs or dies is killed, and a new one is started when next needed.
"""

from __future__ import annotations

import logging
import multiprocessing
import time

from .rules import ENTRY_POINT_GROUP, MAX_VALUE, Decision, Facts, decision_problems

log = logging.getLogger(__name__)

TIME_LIMIT_S = 2.0        # one answer
START_LIMIT_S = 60.0      # the worker's start: a new interpreter that imports every classifier
ANSWER_KEYS = ("domain", "service", "label", "advice", "rule")


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

    def __init__(self, names=None, *, time_limit_s: float = TIME_LIMIT_S):
        self.names = list(installed() if names is None else names)
        self.time_limit_s = time_limit_s
        self.off: dict = {}           # name -> why, for this pass (or for good: did not load)
        self.broken: dict = {}        # name -> why it does not load (said once)
        self.disabled = 0             # classifiers disabled during this pass
        self._worker = None
        self._pipe = None

    def __len__(self):
        return len(self.names)

    def new_pass(self):
        """A new pass: every classifier that loads is tried again."""
        self.off = dict(self.broken)
        self.disabled = 0

    def classify(self, facts: Facts) -> Decision | None:
        for name in self.names:
            if name in self.off:
                continue
            decision = self._ask(name, facts)
            if decision is not None:
                return decision
        return None

    def close(self):
        if self._worker is not None:
            self._pipe.close()
            self._worker.kill()
            self._worker.join()
            self._worker = self._pipe = None

    # -- the forwarder's side of the worker --------------------------------------------------
    def _ask(self, name: str, facts: Facts) -> Decision | None:
        if not self._started() or name in self.off:     # the start found it does not load
            return None
        started = time.monotonic()
        try:
            self._pipe.send((name, tuple(facts)))
            if not self._pipe.poll(self.time_limit_s):
                self._restart()
                return self._disable(name, f"gave no answer within {self.time_limit_s:g} s")
            kind, value = self._pipe.recv()
        except (EOFError, OSError):
            self._restart()
            return self._disable(name, "ended its process")
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
        context = multiprocessing.get_context("spawn")
        self._pipe, theirs = context.Pipe()
        self._worker = context.Process(target=serve, args=(theirs, self.names), daemon=True,
                                       name="glidein-tracing-classifiers")
        self._worker.start()
        theirs.close()
        try:
            ready = self._pipe.poll(START_LIMIT_S)
            failed = self._pipe.recv() if ready else None
        except (EOFError, OSError):
            failed = None
        if failed is None:
            self._restart()
            for name in self.names:
                self.off.setdefault(name, "worker did not start")
            self.disabled += 1
            log.warning("failure classifiers did not start within %g s: none used in this pass", START_LIMIT_S)
            return False
        for name, why in failed.items():
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


def _describe(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {exc}"[:MAX_VALUE]
    except BaseException:   # noqa: BLE001 (a VO's exception whose str() raises)
        return type(exc).__name__


def serve(pipe, names):
    """The worker: import every classifier, say which do not load, then answer questions
    (name, facts) with ("ok", plain answer) or ("raised", why) until the pipe closes."""
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
    pipe.send(failed)
    while True:
        try:
            name, facts = pipe.recv()
        except (EOFError, OSError):
            return
        except BaseException:   # noqa: BLE001 (an interrupt meant for the forwarder)
            continue
        try:
            reply = ("ok", _plain(functions[name](Facts(*facts))))
        except BaseException as exc:   # noqa: BLE001 (SystemExit and KeyboardInterrupt too)
            reply = ("raised", _describe(exc))
        pipe.send(reply)
