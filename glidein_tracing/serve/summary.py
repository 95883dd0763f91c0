"""The operators' analysis summary: ``glidein-tracing analyze`` over the glidein table's last
days (its document and its summary text, analysis/report.py), made at most once per
``TTL_S`` for each number of days, whoever asks: one analysis costs seconds, a page view must
not."""

from __future__ import annotations

import json
import threading
import time

TTL_S = 600


class Summaries:
    def __init__(self, table: str, ttl_s: float = TTL_S):
        self.table, self.ttl_s = table, ttl_s
        self._made: dict = {}                 # days -> (when, answer)
        self._lock = threading.Lock()         # one analysis at a time; the others wait for it

    def of_days(self, days: int) -> dict:
        """{days, generated_at, text, analysis} of the glideins that ended in the last ``days`` days."""
        with self._lock:
            made = self._made.get(days)
            if made is None or time.time() - made[0] > self.ttl_s:
                made = (time.time(), self._analyze(days))
                self._made[days] = made
            return made[1]

    def _analyze(self, days: int) -> dict:
        from ..analysis import report
        from ..analysis.dataset import open_dataset
        since = time.time() - days * 86400
        data = open_dataset(self.table, since=since)
        try:
            doc = report.analyze(data, source={"table": [self.table], "filters": {"since": since}})
        finally:
            data.con.close()
        return {"days": days, "generated_at": time.strftime("%Y-%m-%d %H:%M:%SZ", time.gmtime()),
                "text": report.summary_text(doc), "analysis": json.loads(json.dumps(doc, default=str))}
