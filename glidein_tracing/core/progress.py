"""Progress of long work, shown on a terminal only (tqdm, on stderr).

Whatever can run longer than a few seconds (the synthetic generator, the analysis' stages, a
backfill, writing rollups) says how far it is, so an operator can tell slow from stuck. Not on
a terminal (a service, cron, a pipe, a test) or with ``--quiet`` nothing is printed, and
where tqdm is not installed the work runs silent too: progress is never a reason to fail.
"""

from __future__ import annotations

import contextlib
import sys
import threading


def on_terminal(quiet: bool = False, stream=None) -> bool:
    """Whether progress is shown: not ``quiet`` and stderr (or ``stream``) is a terminal."""
    stream = sys.stderr if stream is None else stream
    try:
        return not quiet and stream.isatty()
    except (AttributeError, ValueError):      # no isatty, or a closed stream
        return False


class _Silent:
    """What a bar does when none is shown: nothing."""

    def update(self, n=1):
        pass

    def set_postfix_str(self, text="", refresh=True):
        pass

    def refresh(self):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def bar(total=None, *, desc: str, unit: str = "it", enabled: bool = True, unit_scale: bool = False,
        bar_format: str | None = None):
    """A tqdm bar on stderr (``update(n)``, ``close()``, a context manager) when ``enabled``
    and tqdm is installed; else one that shows nothing. Cleared when closed."""
    if not enabled:
        return _Silent()
    try:
        from tqdm import tqdm
    except ImportError:
        return _Silent()
    return tqdm(total=total, desc=desc, unit=unit, unit_scale=unit_scale, leave=False, file=sys.stderr,
                dynamic_ncols=True, bar_format=bar_format)


class Stages:
    """A bar of named stages (``with stages.stage("failures"): ...``) whose clock keeps
    ticking while a stage runs: a stage is often one SQL query, which says nothing as it goes."""

    def __init__(self, total: int, *, desc: str, enabled: bool = True, tick_s: float = 1.0):
        self.bar = bar(total, desc=desc, unit="stage", enabled=enabled,
                       bar_format="{desc}: {bar} stage {n_fmt}/{total_fmt}, {elapsed}{postfix}")
        self._stop = threading.Event()
        self._ticker = None
        if not isinstance(self.bar, _Silent):
            self._ticker = threading.Thread(target=self._tick, args=(tick_s,), daemon=True)
            self._ticker.start()

    def _tick(self, tick_s: float):
        while not self._stop.wait(tick_s):
            self.bar.refresh()

    @contextlib.contextmanager
    def stage(self, name: str):
        self.bar.set_postfix_str(name)
        yield
        self.bar.update(1)

    def close(self):
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join()
        self.bar.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
