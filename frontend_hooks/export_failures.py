"""One exporter traceback an hour, across the Frontend's group processes.

GlideinWMS starts a new process for every group, every cycle, so a lasting exporter failure
(a collector gone, a bad endpoint) made the SDK log the same traceback every cycle of every
group. A filter on the SDK's span-export loggers lets a record's traceback through when the
stamp file (``<temp dir>/frontend_hooks-export-traceback-<uid>``, its modification time)
says none was logged for ``INTERVAL_S``; other records keep their message, without the
traceback and saying why.
"""

from __future__ import annotations

import logging
import os
import time

INTERVAL_S = 3600.0
# the loggers that report a failed span export: the SDK's batch and simple processors
SDK_EXPORT_LOGGERS = ("opentelemetry.sdk._shared_internal", "opentelemetry.sdk.trace.export")


def stamp_path():
    # imported here: only a failed export needs them, and every group process would pay their
    # import at start (bench_frontend_startup.py)
    import tempfile
    from pathlib import Path

    return Path(tempfile.gettempdir()) / f"frontend_hooks-export-traceback-{os.getuid()}"


def _traceback_due(now: float) -> bool:
    """Whether no process logged an export traceback within INTERVAL_S (and note that this
    one does). A stamp that cannot be read or written lets the traceback through."""
    path = stamp_path()
    try:
        if now - path.stat().st_mtime < INTERVAL_S:
            return False
    except OSError:
        pass
    try:
        path.touch()
        os.utime(path, (now, now))
    except OSError:
        pass
    return True


class OneTracebackPerInterval(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and not _traceback_due(time.time()):
            record.msg = (f"{record.getMessage()} (traceback not repeated: at most one an hour "
                          f"across the Frontend's group processes, see {stamp_path()})")
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


def install() -> None:
    """Put the filter on the SDK's export loggers (once)."""
    for name in SDK_EXPORT_LOGGERS:
        sdk_log = logging.getLogger(name)
        if not any(isinstance(f, OneTracebackPerInterval) for f in sdk_log.filters):
            sdk_log.addFilter(OneTracebackPerInterval())
