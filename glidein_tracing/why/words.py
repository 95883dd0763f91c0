"""A diagnosis in words (``glidein-tracing why``'s text): sentences the way HTCondor's
``htcondor job status`` answers, every fact written out (durations, counts, names), never a
Python value; the same sentences are ``text`` in ``--json``."""

from __future__ import annotations

from ..core import waiting_reasons as wr
from . import diagnosis as d


def duration(seconds) -> str:
    """3 d 4 h, 2 h 10 min, 45 min, 30 s: the largest unit and the next (when not zero)."""
    seconds = max(0, int(seconds))
    days, hours, minutes = seconds // 86400, seconds // 3600 % 24, seconds // 60 % 60
    if days:
        return f"{days} d" + (f" {hours} h" if hours else "")
    if hours:
        return f"{hours} h" + (f" {minutes} min" if minutes else "")
    return f"{minutes} min" if minutes else f"{seconds} s"


def listing(items) -> str:
    """a, b and c."""
    items = [str(i) for i in items]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _plural(n, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def _entries(facts: dict) -> str:
    names = [str(e).split("@", 1)[0] for e in facts.get("reason_entries") or facts.get("entries") or ()]
    return listing(names) or "the matching entries"


def _sites(facts: dict) -> str:
    """The sites of the entries that give the reason (their GLIDEIN_Site), or "the site"."""
    return listing(str(site) for site in facts.get("sites") or ()) or "the site"


def _ago(facts: dict) -> str:
    seconds = facts.get("for_s")
    if not isinstance(seconds, (int, float)):
        return ""
    return " just now" if seconds < 60 else f" {duration(seconds)} ago"


def _for(facts: dict) -> str:
    """ for 2 h 10 min; for less than a minute (a period that began this Frontend cycle)."""
    seconds = facts.get("for_s")
    if not isinstance(seconds, (int, float)):
        return ""
    return " for less than a minute" if seconds < 60 else f" for {duration(seconds)}"


def _fit(facts: dict) -> str:
    fit = facts.get("fit") or {}
    words = []
    for key, what, unit in (("memory_mb", "memory", "MB"), ("cpus", "cores", ""), ("disk_kib", "disk", "KiB")):
        item = fit.get(key)
        if item and not item["fits"]:
            words.append(f"it asks for {item['job']:,}{' ' + unit if unit else ''} of {what}, the largest idle "
                         f"glidein has {item['largest_idle_glidein']:,}{' ' + unit if unit else ''}")
    unusable = fit.get("unusable_idle_glideins") or {}
    causes = {"retiring": "retiring", "memory": "with too little memory", "cpus": "with too few cores",
              "disk": "with too little disk", "time": "with too little time left"}
    if unusable:
        words.insert(0, listing(f"{n} {causes.get(k, k)}" for k, n in unusable.items()))
    minimum = facts.get("part_glidein_min_memory")
    if isinstance(minimum, (int, float)):
        words.append(f"the group's PartGlideinMinMemory is {minimum:,} MB")
    return "; ".join(words)


def _match_evidence(facts: dict) -> str:
    """The evidence of no_matching_entry and unknown: the expression, the job's values, the
    entries it was tried on."""
    out = ""
    if facts.get("match_expr"):
        out += f" The group's match expression: {facts['match_expr']}."
    if facts.get("job_values"):
        out += f" The job's values: {listing(facts['job_values'])}."
    tried = facts.get("group_entries") or ()
    count = facts.get("group_entry_count")
    if tried:
        more = f" (of {count:,})" if isinstance(count, int) and count > len(tried) else ""
        out += f" The entries tried{more}: {'; '.join(map(str, tried))}."
    return out


def reason_sentence(item: d.Diagnosis) -> str:
    """The reason with its numbers, in one or two sentences."""
    f, reason = item.facts, item.reason
    entries, ago, lasted = _entries(f), _ago(f), _for(f)
    if item.category == d.HELD:
        code = f"{f.get('hold_code_name')} (hold code {f.get('hold_code')})"
        reason = str(f.get("hold_reason") or "").strip()
        said = f' HTCondor says: "{reason}"' + ("" if reason.endswith((".", "!", "?")) else ".") if reason else ""
        return f"It was put on hold: {code}: {item.meaning}.{said}"
    if item.category == d.EVICTED:
        starts = f.get("num_job_starts") or 1
        by = ("a system problem (the glidein or the site went away), not by the job" if f.get("system_problem")
              else "a policy or the job itself")
        text = f"It ran {'once' if starts == 1 else f'{starts:,} times'} and was evicted by {by}"
        if f.get("vacate_reason"):
            text += f' ("{f["vacate_reason"]}")'
        now = f.get("now_waiting")
        if not now:
            return text + "."
        waiting = d.Diagnosis(item.job, item.status, now["category"], now["meaning"], item.action, item.reason,
                              facts=f)
        return f"{text}. Now it waits again. {reason_sentence(waiting)}"
    if item.category == d.NOT_WAITING and item.meaning == f"the job is {item.status}":
        return "It is not waiting to start."
    if item.category in (d.NO_RECORD, d.NOT_WAITING):
        return item.meaning[0].upper() + item.meaning[1:] + "."
    if reason == "transfer_queue":
        return "It has a slot and waits in the schedd's transfer queue to send its input files."
    if reason == "cooldown":
        return (f"A start of it failed; HTCondor holds it back in a cool-down until {f['cooldown_until']} "
                f"(in {duration(f['cooldown_left_s'])}).")
    if reason == "running_cap":
        return (f"You already run {_plural(f['running_jobs'], 'job')} at this schedd, as many as your "
                f"user record allows (MaxJobsRunning {f['max_jobs_running']:,}): it starts no more of yours.")
    if reason == "site_queue":
        queued = f.get("queued_glideins")
        still = f"{queued:,} are" if isinstance(queued, int) else "they are"
        sites = _sites(f)
        queue = "the site's batch queue" if sites == "the site" else f"the batch queue of {sites}"
        return f"Glideins for it were requested at {entries}{ago}; {still} still in {queue}."
    if reason == "requested":
        return (f"The Frontend requested glideins for it at {entries}{ago}; the Factory submits them in "
                "its next cycle.")
    if reason == "validation":
        running = f.get("running_at_site")
        at_site = f" ({_plural(running, 'glidein')} running at {_sites(f)})" if isinstance(running, int) else ""
        return (f"Glideins start at {entries}{at_site} but none joins the pool: they have failed "
                f"validation{lasted}.")
    if reason == "unusable_idle_glideins":
        idle = f.get("idle_glideins")
        text = (f"{_plural(idle, 'idle glidein') if isinstance(idle, int) else 'Idle glideins'} at {entries} "
                "count as capacity, so the Frontend asks for no more, but none can run the job")
        fit = _fit(f)
        return text + (f": {fit}." if fit else ".")
    if reason == "limit":
        limits = listing(f.get("limits") or ()) or "a limit"
        return f"The Frontend's {limits} has stopped new glideins at {entries}{lasted}."
    if reason == "downtime":
        # the period is the job's, not the downtime's (which may have begun long before)
        waited = f"; your job has waited on it{lasted}" if lasted else ""
        return (f"{entries} {'is' if ' and ' not in entries else 'are'} in downtime: the Frontend requests no "
                f"glideins there until it ends{waited}.")
    if reason == "not_requested":
        return (f"The Frontend has requested no glideins at {entries}{lasted}, though they match the job "
                "(it may be removing glideins there).")
    if reason == "glidein_idle":
        return (f"An idle glidein at {entries} fits the job; HTCondor's negotiator should start it within "
                "a negotiation cycle or two.")
    if reason == "no_matching_entry":
        return ("No entry of the Frontend group matches the job: no glidein that could run it will ever be "
                "requested." + _match_evidence(f))
    if reason == "unknown":
        error = f" ({f['match_error']})" if f.get("match_error") else ""
        return ("The Frontend could not evaluate its group's match expression on the job" + error
                + ", so whether any entry can run it is not known, and no glidein is requested for it."
                + _match_evidence(f))
    return item.meaning[0].upper() + item.meaning[1:] + "."


def advice_sentence(item: d.Diagnosis) -> str:
    """Whether waiting helps and who can act: "Waiting helps; nothing to do."."""
    helps = {wr.HELPS_YES: "Waiting helps", wr.HELPS_NO: "Waiting does not help",
             wr.HELPS_UNKNOWN: "Waiting may not help"}[item.helps]
    if item.actor == wr.ACTOR_NOBODY:
        return f"{helps}; nothing to do."
    who = "you can act" if item.actor == wr.ACTOR_YOU else "the operators can act"
    return f"{helps}; {who}: {item.action}."


def opening(item: d.Diagnosis) -> str:
    """Job 1234.0 has been idle for 2 h 10 min."""
    if item.status == "unknown" or ("@" not in item.job and item.status in ("idle", "not idle")):
        return f"Submission {item.job}:"
    job = item.job.split("@", 1)[0]
    since = item.facts.get("status_for_s")
    if isinstance(since, (int, float)) and item.status in ("idle", "running"):
        return f"Job {job} has been {item.status} for {duration(since)}."
    return f"Job {job} is {item.status}."


def estimate_sentence(estimate: dict | None) -> str:
    if not estimate:
        return ""
    if estimate.get("low_s") is None:
        return f"No estimate of when it starts: {estimate['why_none']}."
    low, high = duration(estimate["low_s"]), duration(estimate["high_s"])
    return (f"It will likely start between {low} and {high} from now ({estimate['interval']} % interval, "
            f"from {estimate['glideins']:,} glideins at {listing(estimate['entries'])} in the last "
            f"{estimate['days']:g} days).")


def sentences(item: d.Diagnosis) -> str:
    """The whole answer for one job, as one paragraph."""
    parts = [opening(item), reason_sentence(item)]
    then = item.facts.get("then")
    if then:
        waiting = reason_sentence(d.Diagnosis(item.job, item.status, then["category"], then["category"], "",
                                              then["reason"], facts=item.facts))
        lower = waiting[:1].lower() + waiting[1:] if waiting[1:2].islower() else waiting
        parts.append(f"After that, the Frontend's reason: {lower}")
    parts.append(advice_sentence(item))
    parts.append(estimate_sentence(item.estimate))
    return " ".join(p for p in parts if p)


def evidence_line(evidence: d.Evidence) -> str:
    where = f" (trace {evidence.trace_id}, span {evidence.span_id})" if evidence.span_id else ""
    return f"{evidence.when + ': ' if evidence.when else ''}{evidence.what}{where}"
