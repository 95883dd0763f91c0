"""When will my job start? An 80 % interval from the glidein table's history at the entries a
waiting job's reason names (``why --table``; method and limits: docs/why-waiting.md, "When will
it start"; calibration: bench/bench_why_estimate.py).

The model: a job waiting for a glidein starts on the first glidein at its entries that delivers
a job. Each glidein of the last ``days`` days at those entries is one draw from the entries'
history: either it delivered (time from its submission to its first job's start: the site
queue, the validation, the wait for a job on it) or it failed before any job (validation
failed, killed: time from its submission to the failure, after which another glidein is
needed); glideins that ran and got no job (no demand then) tell nothing about a waiting job and
are left out. A start is then a run of failures ended by a delivery, drawn from the history
(with its share of failures), and the interval is the 10th to the 90th percentile of the draws;
a job whose glideins were requested some time ago counts only the draws longer than that, less
what it has waited. A glidein that fits and is idle already (``glidein_idle``) needs only the
wait for its first job.

Read with DuckDB over the table as analyze reads it (analysis/dataset.py), one query per set
of entries.
"""

from __future__ import annotations

import time

from . import diagnosis as d
from .words import duration

DAYS = 7.0
INTERVAL = 80                 # per cent: from the 10th to the 90th percentile
MIN_GLIDEINS = 30             # delivered glideins needed at the entries for an estimate
DRAWS = 4000                  # simulated starts per estimate (a fixed seed: the same table, the same answer)
MIN_DRAWS_LEFT = 200          # draws longer than the wait so far needed for an estimate
MAX_FAILURES = 30             # a longer run of failures is cut (p(failure) ** 30 is negligible)

# the reasons whose start is the next glidein that delivers; the others get no estimate, with
# the reason in words
_FROM_GLIDEINS = {"site_queue", "requested", "validation"}
_NONE = {
    "no_matching_entry": "no entry matches the job, so no glidein will come",
    "unknown": "the Frontend could not tell which entries can run the job",
    "downtime": "the entries are in downtime, and the table does not say when it ends",
    "limit": "no glidein is requested for it while the limit holds, and the table cannot say when it lifts",
    "not_requested": "no glidein is requested for it now, and the table cannot say when one will be",
    "unusable_idle_glideins": "it waits for the idle glideins that cannot run it to leave, which the table does not record",
    "cooldown": "after its cool-down, what follows depends on the glideins, which the reason does not name",
    "running_cap": "it waits for your own running jobs to end",
    "transfer_queue": "the table does not record the schedd's transfer queue",
}


def _quantiles(values, low_q: float, high_q: float):
    import numpy as np
    return [float(v) for v in np.quantile(values, [low_q, 0.5, high_q])]


class Estimator:
    """Estimates for many diagnoses over one table (opened once, one query per entry set)."""

    def __init__(self, table, now: float | None = None, days: float = DAYS):
        self.table, self.days = table, days
        self.now = time.time() if now is None else now
        self._data = None
        self._error = ""
        self._samples: dict = {}

    def _dataset(self):
        if self._data is None and not self._error:
            from ..analysis.dataset import DatasetError, NothingMatches, open_dataset
            try:
                self._data = open_dataset(self.table, since=self.now - self.days * 86400, until=self.now)
            except NothingMatches as exc:
                self._error = f"the glidein table holds no glidein that ended in the last {self.days:g} days ({exc.held})"
            except DatasetError as exc:
                self._error = f"the glidein table cannot be read ({exc})"
        return self._data

    def samples(self, entries: tuple) -> dict:
        """The history at ``entries``: per glidein that delivered, the time from its submission
        to its first job and from its start (HTCondor's) to it; per glidein that failed before
        any job, the time from its submission to the failure (the end of its setup when its
        validation failed, else its end)."""
        if entries not in self._samples:
            data = self._dataset()
            if data is None:
                return {}
            from ..table.aggregates import sql_text
            listed = ", ".join(map(sql_text, entries))
            rows = data.con.execute(f"""
                SELECT jobs > 0 AND job_started_at[1] IS NOT NULL AS delivered,
                       epoch(job_started_at[1]) - epoch(submitted_at) AS to_first_job,
                       idle_before_first_job_s,
                       coalesce(CASE WHEN outcome = 'validation_failed' THEN epoch(node_start_at) + setup_s END,
                                epoch(ended_at)) - epoch(submitted_at) AS to_failure,
                       queue_wait_s
                FROM glideins
                WHERE entry IN ({listed}) AND submitted_at IS NOT NULL
                  AND (jobs > 0 OR outcome = 'validation_failed' OR (failed AND coalesce(jobs, 0) = 0))
            """).fetchall()
            delivered = [r for r in rows if r[0] and r[1] is not None and r[1] >= 0]
            self._samples[entries] = {
                "to_first_job": [r[1] for r in delivered],
                "after_start": [r[2] for r in delivered if r[2] is not None and r[2] >= 0],
                "queue_wait": [r[4] for r in delivered if r[4] is not None],
                "to_failure": [max(0.0, r[3]) for r in rows if not r[0] and r[3] is not None],
            }
        return self._samples[entries]

    def for_diagnosis(self, item: d.Diagnosis) -> dict | None:
        """The estimate of one waiting job (None: it is not waiting for a start)."""
        if item.category in (d.HELD, d.NOT_WAITING) or item.status not in ("idle", "running"):
            return None
        if item.reason in _NONE:
            return {"why_none": _NONE[item.reason]}
        entries = tuple(sorted({str(e).split("@", 1)[0] for e in
                                item.facts.get("reason_entries") or item.facts.get("entries") or ()}))
        if not entries:
            return {"why_none": "the Frontend's record, which names the entries, is missing"}
        waited = item.facts.get("for_s") if item.reason != "requested" else 0
        return self.estimate(entries, waited if isinstance(waited, (int, float)) else 0,
                             glidein_there=item.reason == "glidein_idle")

    def estimate(self, entries: tuple, waited: float = 0.0, glidein_there: bool = False) -> dict:
        """The interval of the time left until a start at ``entries``, having waited ``waited``
        seconds already (see the module doc)."""
        out = {"entries": list(entries), "days": self.days, "interval": INTERVAL, "waited_s": int(waited)}
        samples = self.samples(entries)
        if not samples:
            return {**out, "why_none": self._error}
        delivered, failed = len(samples["to_first_job"]), len(samples["to_failure"])
        out.update(glideins=delivered + failed, delivered=delivered, failed=failed)
        where = f"{' and '.join(entries)} in the last {self.days:g} days"
        if delivered < MIN_GLIDEINS:
            return {**out, "why_none": f"only {delivered} glideins at {where} delivered a job ({MIN_GLIDEINS} needed)"}
        import numpy as np
        rng = np.random.default_rng(0)
        if glidein_there:
            starts = rng.choice(np.array(samples["after_start"] or [0.0]), DRAWS)
        else:
            starts = rng.choice(np.array(samples["to_first_job"]), DRAWS)
            if failed:
                share = failed / (delivered + failed)
                failures = np.minimum(rng.geometric(1 - share, DRAWS) - 1, MAX_FAILURES)
                costs = rng.choice(np.array(samples["to_failure"]), (DRAWS, MAX_FAILURES))
                starts = starts + (costs * (np.arange(MAX_FAILURES) < failures[:, None])).sum(axis=1)
        left = starts[starts > waited] - waited
        if len(left) < MIN_DRAWS_LEFT:
            share = 100.0 * (1 - len(left) / DRAWS)
            return {**out, "why_none": f"it has waited {duration(waited)}, longer than {share:.0f} % of the starts "
                                       f"at {where} took"}
        low, median, high = _quantiles(left, (1 - INTERVAL / 100) / 2, 1 - (1 - INTERVAL / 100) / 2)
        out.update(low_s=int(low), median_s=int(median), high_s=int(high + 0.999),
                   failure_share=round(failed / (delivered + failed), 4),
                   queue_wait_median_s=_median(samples["queue_wait"]),
                   after_start_median_s=_median(samples["after_start"]))
        return out


def _median(values):
    import numpy as np
    return int(np.median(values)) if values else None

