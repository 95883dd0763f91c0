"""The embedded default store: a directory of OTLP JSON Lines files.

Each line is one OTLP ExportTraceServiceRequest in JSON, the format the OTel Collector's
file exporter writes and its ``otlpjsonfile`` receiver reads back, so a store can be
replayed into any collector. The exporter never writes a span (trace id, span id) that the
store already holds: exporting the same glidein twice (live, then recovered from stderr)
leaves one copy.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections import defaultdict
from pathlib import Path

from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from .otlp_json import encode_request, flatten_request

FILE_PREFIX = "traces-"
FILE_SUFFIX = ".jsonl"
ROTATE_BYTES = 64 * 1024 * 1024


def default_store_dir() -> Path:
    """Where the store lives when no --store is given: the user's data dir."""
    env = os.environ.get("GLIDEIN_TRACING_STORE")
    if env:
        return Path(env)
    import platformdirs
    return Path(platformdirs.user_data_dir("glidein_tracing")) / "store"


def _store_files(directory: Path):
    return sorted(p for p in Path(directory).glob(f"{FILE_PREFIX}*{FILE_SUFFIX}") if p.is_file())


class StoreReadReport:
    def __init__(self):
        self.lines = 0
        self.bad_lines = 0
        self.spans = 0


def iter_store(directory, report: StoreReadReport | None = None):
    """Yield every span in the store as a plain dict (otlp_json.flatten_request)."""
    report = report or StoreReadReport()
    for path in _store_files(Path(directory)):
        with open(path, "rb") as handle:
            for raw in handle:
                report.lines += 1
                try:
                    request = json.loads(raw)
                except ValueError:
                    report.bad_lines += 1
                    continue
                for span in flatten_request(request):
                    report.spans += 1
                    yield span


def read_store(directory) -> dict:
    """All traces in a store: {trace_id: [span dicts]} (first copy of each span id kept)."""
    traces = defaultdict(dict)
    for span in iter_store(directory):
        traces[span["trace_id"]].setdefault(span["span_id"], span)
    return {trace: list(spans.values()) for trace, spans in traces.items()}


class JsonLinesStoreExporter(SpanExporter):
    """Append spans to the store directory, skipping spans it already holds."""

    def __init__(self, directory=None, rotate_bytes: int = ROTATE_BYTES):
        self.directory = Path(directory) if directory else default_store_dir()
        self.directory.mkdir(parents=True, exist_ok=True)
        self.rotate_bytes = rotate_bytes
        self._seen: set | None = None
        self._shutdown = False
        self.written = 0
        self.duplicates = 0

    def _load_seen(self) -> set:
        if self._seen is None:
            self._seen = {(s["trace_id"], s["span_id"]) for s in iter_store(self.directory)}
        return self._seen

    def _current_file(self) -> Path:
        files = _store_files(self.directory)
        if files and files[-1].stat().st_size < self.rotate_bytes:
            return files[-1]
        number = int(files[-1].name[len(FILE_PREFIX):-len(FILE_SUFFIX)]) + 1 if files else 0
        return self.directory / f"{FILE_PREFIX}{number:06d}{FILE_SUFFIX}"

    def export(self, spans) -> SpanExportResult:
        if self._shutdown:
            return SpanExportResult.FAILURE
        try:
            with open(self.directory / ".lock", "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                self._seen = None  # another writer may have added spans: reload under the lock
                seen = self._load_seen()
                fresh = []
                for span in spans:
                    key = (format(span.context.trace_id, "032x"), format(span.context.span_id, "016x"))
                    if key in seen:
                        self.duplicates += 1
                        continue
                    seen.add(key)
                    fresh.append(span)
                if fresh:
                    line = json.dumps(encode_request(fresh), separators=(",", ":")) + "\n"
                    with open(self._current_file(), "a", encoding="utf-8") as handle:
                        handle.write(line)
                        handle.flush()
                        os.fsync(handle.fileno())
                    self.written += len(fresh)
            return SpanExportResult.SUCCESS
        except OSError:
            return SpanExportResult.FAILURE

    def shutdown(self) -> None:
        self._shutdown = True

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True
