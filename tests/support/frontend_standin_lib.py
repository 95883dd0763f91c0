"""Stand-in for GlideinWMS frontend/glideinFrontendLib.py (master of early 2026), for the
frontend_hooks tests; see tests/support/frontend_standin.py for the element side.

Mirrors the names, signatures and results the element and frontend_hooks rely on:
``getCondorQ(schedd_names, constraint=None, format_list=None, want_format_completion=True,
job_status_filter=(1, 2))`` -> {schedd: query} whose ``fetchStored()`` is {(ClusterId, ProcId):
{attr: value}} holding only the format list's attributes (completed with JobStatus,
EnteredCurrentStatus, ServerTime, RemoteHost); ``getIdleCondorQ``, ``getRunningCondorQ``, ``getOldCondorQ``, ``getIdleVomsCondorQ``;
``getCondorStatus(
collector_names, constraint=None, format_list=None, want_format_completion=True)`` and
``getIdleCondorStatus`` (with the PartGlideinMinMemory floor for partitionable slots);
``hashJob``; ``getGlideinCpusNum``, which the multicore policy's match clause calls;
``countMatch(match_obj, condorq_dict, glidein_dict,
attr_dict, ignore_down_entries, condorq_match_list=None, match_policies=[])`` -> four dicts of
matching job counts per glideid, ``(None, None, None)`` for the unmatched, evaluating
``match_obj`` in this module's namespace with ``job``, ``glidein`` and ``attr_dict`` once per
job kind and entry (an evaluation that raises is no match, as the real one counts it).

Instead of schedds, the job ads are read from files in the format ``condor_q -l`` writes
(``JOB_AD_FILES``: schedd -> path), parsed with HTCondor's classad2; instead of a collector,
the glidein slots come from ``SLOTS`` (a list of attribute dicts).
"""

try:   # condorMonitor imports the bindings at its import (the old ones first, then these)
    import classad2  # noqa: F401
    import htcondor2  # noqa: F401
except ImportError:   # a group process that queries no schedd runs without them
    pass

JOB_AD_FILES = {}
SLOTS = []
QUERIES = []   # the format lists asked for, in order (what the schedd would have been sent)


class StoredQuery:
    """condorMonitor's query objects: the data by ``fetchStored()``."""

    def __init__(self, data):
        self.stored_data = data

    def fetchStored(self, constraint_func=None):
        if constraint_func is None:
            return dict(self.stored_data)
        return {k: v for k, v in self.stored_data.items() if constraint_func(v)}


def _complete(format_list, extra):
    names = {name for name, _type in format_list}
    return list(format_list) + [item for item in extra if item[0] not in names]


def _value(ad, key):
    try:
        value = ad.eval(key)
    except Exception:
        return None
    return value if isinstance(value, (bool, int, float, str)) else None


def getCondorQ(schedd_names, constraint=None, format_list=None, want_format_completion=True,
               job_status_filter=(1, 2)):
    if format_list is not None and want_format_completion:
        format_list = _complete(format_list, [("JobStatus", "i"), ("EnteredCurrentStatus", "i"),
                                              ("ServerTime", "i"), ("RemoteHost", "s")])
    QUERIES.append(list(format_list or ()))
    out = {}
    for schedd in schedd_names:
        with open(JOB_AD_FILES[schedd]) as handle:   # one ad at a time: parseAds over a
            # whole file slows down with its length (each next ad costs more)
            ads = [classad2.parseOne(text, classad2.ParserType.Old)
                   for text in handle.read().split("\n\n") if text.strip()]
        data = {}
        for ad in ads:
            keys = [name for name, _type in format_list] if format_list is not None else list(ad.keys())
            job = {}
            for key in keys:
                value = _value(ad, key)
                if value is not None:
                    job[key] = value
            if job_status_filter and job.get("JobStatus") not in job_status_filter:
                continue
            data[(_value(ad, "ClusterId"), _value(ad, "ProcId"))] = job
        out[schedd] = StoredQuery(data)
    return out


def getIdleCondorQ(condorq_dict):
    return {schedd: StoredQuery(query.fetchStored(lambda el: el.get("JobStatus") == 1))
            for schedd, query in condorq_dict.items()}


def getRunningCondorQ(condorq_dict):
    return {schedd: StoredQuery(query.fetchStored(lambda el: el.get("JobStatus") == 2))
            for schedd, query in condorq_dict.items()}


def getOldCondorQ(condorq_dict, min_age):
    return {schedd: StoredQuery(query.fetchStored(
        lambda el: el.get("ServerTime", 0) - el.get("EnteredCurrentStatus", 0) >= min_age))
        for schedd, query in condorq_dict.items()}


def getIdleVomsCondorQ(condorq_dict):
    return {schedd: StoredQuery(query.fetchStored(lambda el: "x509UserProxyFirstFQAN" in el))
            for schedd, query in condorq_dict.items()}


def getCondorStatus(collector_names, constraint=None, format_list=None, want_format_completion=True):
    if format_list is not None and want_format_completion:
        format_list = _complete(format_list, [("State", "s"), ("Activity", "s"), ("GLIDEIN_Factory", "s"),
                                              ("GLIDEIN_Name", "s"), ("GLIDEIN_Entry_Name", "s"),
                                              ("GLIDECLIENT_Name", "s"), ("GLIDEIN_Schedd", "s")])
    keys = None if format_list is None else {name for name, _type in format_list}
    data = {slot["Name"]: {k: v for k, v in slot.items() if keys is None or k in keys}
            for slot in SLOTS}
    return {collector: StoredQuery(data) for collector in collector_names}


def getIdleCondorStatus(status_dict, min_memory=2500):
    """Unclaimed idle slots; a partitionable one only when not yet partitioned or with free
    cores and more than ``min_memory`` MB free (the group's PartGlideinMinMemory)."""
    def idle(el):
        return (el.get("State") == "Unclaimed" and el.get("Activity") == "Idle"
                and (not el.get("PartitionableSlot") or el.get("TotalSlots") == 1
                     or (el.get("Cpus", 0) > 0 and el.get("Memory", 2501) > min_memory
                         and (el.get("TotalGpus", 0) == 0 or el.get("Gpus", 0) > 0))))
    return {collector: StoredQuery(query.fetchStored(idle)) for collector, query in status_dict.items()}


def hashJob(condorq_el, condorq_match_list=None):
    keys = sorted(condorq_el)
    if condorq_match_list is not None:
        keys = [k for k in keys if k in condorq_match_list]
    return tuple((k, condorq_el[k]) for k in keys)


def getGlideinCpusNum(glidein, estimate_cpus=True):
    """An entry's cores per glidein: GLIDEIN_CPUS (1 when unset); with estimate_cpus, a
    keyword (auto, slot, node) or a value <= 0 means GLIDEIN_ESTIMATED_CPUS (1 when unset).
    The multicore policy's clause in every match expression calls it."""
    cpus = str(glidein["attrs"].get("GLIDEIN_CPUS", 1))
    try:
        number = int(cpus)
    except ValueError:
        number = None
    if number is not None and (number > 0 or not estimate_cpus):
        return number
    if estimate_cpus:
        return int(str(glidein["attrs"].get("GLIDEIN_ESTIMATED_CPUS", 1)))
    keyword = cpus.upper()
    if keyword in ("AUTO", "SLOT"):
        return -1
    if keyword == "NODE":
        return 0
    raise ValueError(cpus)


def countMatch(match_obj, condorq_dict, glidein_dict, attr_dict, ignore_down_entries,
               condorq_match_list=None, match_policies=[]):
    kinds = {}
    for query in condorq_dict.values():
        for job in query.fetchStored().values():
            kind = hashJob(job, condorq_match_list)
            kinds.setdefault(kind, [job, 0])[1] += 1
    counts = {glideid: 0 for glideid in glidein_dict}
    unmatched = 0
    for job, number in kinds.values():
        matched = False
        for glideid, glidein in glidein_dict.items():
            down = str(glidein["attrs"].get("GLIDEIN_In_Downtime", False)) == "True"
            if ignore_down_entries and down:
                continue
            try:   # evaluated in this module's namespace, where getGlideinCpusNum is
                match = eval(match_obj, globals(), {"job": job, "glidein": glidein, "attr_dict": attr_dict})
                for policy in match_policies:
                    if match is not True:
                        break
                    match = policy.pyObject.match(job, glidein)
            except Exception:   # the real one logs these at debug level: no match
                match = False
            if match == True:  # noqa: E712 - countMatch's own test
                counts[glideid] += number
                matched = True
        if not matched:
            unmatched += number
    counts[(None, None, None)] = unmatched
    return counts, dict(counts), dict(counts), dict(counts)
