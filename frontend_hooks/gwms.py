"""What frontend_hooks reads of GlideinWMS: the arguments and results of the Frontend calls the
instrumentor wraps (by the real signatures in ``frontend/glideinFrontendElement.py``) and the
group element's state that job.waiting decides on. The one module that knows GlideinWMS's
objects and names, so that following a GlideinWMS change touches this file only; each reader
names the GlideinWMS function whose data it reads (GlideinWMS master of early 2026)."""

from __future__ import annotations

import sys
from collections.abc import Mapping

from frontend_hooks import conventions as c


# What the instrumentor patches. frontend/glideinFrontend.py (spawn_group) runs every group,
# every cycle, as ``python glideinFrontendElement.py PPID WORK_DIR GROUP ACTION``;
# glideinFrontendElement.iterate_one is one cycle, and per entry it calls ENTRY_METHODS in
# this order, build_resource_classad last; glideinFrontendInterface.MultiAdvertizeWork.add
# takes the request's params; glideinFrontendLib.getCondorQ and getCondorStatus query the
# schedds and the collector.
ELEMENT_MODULE = "glideinwms.frontend.glideinFrontendElement"
INTERFACE_MODULE = "glideinwms.frontend.glideinFrontendInterface"
LIB_MODULE = "glideinwms.frontend.glideinFrontendLib"
ELEMENT_CLASS = "glideinFrontendElement"
ADVERTIZER_CLASS = "MultiAdvertizeWork"
ELEMENT_SCRIPT = "glideinFrontendElement.py"   # also spelled in frontend_hooks/autoload/sitecustomize.py
CYCLE_METHOD = "iterate_one"
ENTRY_METHODS = ("compute_glidein_min_idle", "compute_glidein_max_run", "decide_removal_type",
                 "build_resource_classad")
ENTRY_LAST_METHOD = "build_resource_classad"


def arg(args, kwargs, index: int, name: str, default=None):
    """An argument of a wrapped call by the real signature's position (self excluded) or name."""
    if len(args) > index:
        return args[index]
    return kwargs.get(name, default)


def number(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    return None


def put(span, name: str, value) -> None:
    if value is None:
        return
    if isinstance(value, (bool, str)):
        span.set_attribute(name, value)
        return
    value = number(value)
    if value is not None:
        span.set_attribute(name, value)


def _put_limits(span, limits) -> None:
    if isinstance(limits, Mapping) and limits:
        span.set_attribute(c.LIMITS_TRIGGERED, sorted(str(key) for key in limits))


def name_in_call(cycle, method: str, args, kwargs):
    """The entry (request name) the call is about, when its arguments say; else None."""
    if method == "compute_glidein_min_idle":
        # iterate_one passes count_status = self.count_status_multi[request_name]: the
        # same dict object, so it names the entry before decide_removal_type does.
        count_status = arg(args, kwargs, 0, "count_status")
        if cycle.count_status_names is None:
            multi = getattr(cycle.element, "count_status_multi", None)
            cycle.count_status_names = {id(value): key for key, value in multi.items()} \
                if isinstance(multi, Mapping) else {}
        name = cycle.count_status_names.get(id(count_status))
        multi = getattr(cycle.element, "count_status_multi", None)
        if isinstance(name, str) and multi.get(name) is count_status:
            return name
    elif method == "decide_removal_type":
        glideid = arg(args, kwargs, 2, "glideid")
        if isinstance(glideid, tuple) and len(glideid) >= 2 and isinstance(glideid[1], str):
            return glideid[1]
    elif method == "build_resource_classad":
        name = arg(args, kwargs, 1, "request_name")
        if isinstance(name, str):
            return name
    return None


# Attributes from each call, by the real signatures (frontend/glideinFrontendElement.py).
def _after_compute_glidein_min_idle(span, args, kwargs, result) -> None:
    # (count_status, total_glideins, total_idle_glideins, fe_total_glideins,
    #  fe_total_idle_glideins, global_total_glideins, global_total_idle_glideins,
    #  effective_idle, effective_oldidle, limits_triggered) -> glidein_min_idle;
    # iterate_one passes effective_idle_mc as effective_idle.
    put(span, c.EFFECTIVE_IDLE_MC, arg(args, kwargs, 7, "effective_idle"))
    put(span, c.REQ_IDLE_GLIDEINS, result)
    _put_limits(span, arg(args, kwargs, 9, "limits_triggered"))


def _after_compute_glidein_max_run(span, args, kwargs, result) -> None:
    # (prop_jobs, real, idle_glideins) -> glidein_max_run
    put(span, c.REQ_MAX_GLIDEINS, result)


def _after_decide_removal_type(span, args, kwargs, result) -> None:
    # (count_jobs, count_status, glideid) -> (remove_excess_str, remove_excess_margin)
    glideid = arg(args, kwargs, 2, "glideid")
    if isinstance(glideid, tuple) and glideid and isinstance(glideid[0], str):
        span.set_attribute(c.FACTORY_POOL, glideid[0])
    count_status = arg(args, kwargs, 1, "count_status")
    if isinstance(count_status, Mapping):
        put(span, c.GLIDEINS_TOTAL, count_status.get("Total"))
        put(span, c.IDLE_GLIDEINS, count_status.get("Idle"))
        put(span, c.RUNNING_GLIDEINS, count_status.get("Running"))
    if isinstance(result, tuple) and result and isinstance(result[0], str):
        span.set_attribute(c.REMOVE_EXCESS, result[0])


def _after_build_resource_classad(span, args, kwargs, result) -> None:
    # (this_stats_arr, request_name, glidein_el, glidein_in_downtime, factory_pool_node,
    #  my_identity, limits_triggered) -> ResourceClassad
    stats = arg(args, kwargs, 0, "this_stats_arr")
    if isinstance(stats, (tuple, list)) and len(stats) == c.STATS_TUPLE_LENGTH:
        for index, key in c.STATS_TUPLE_ATTRIBUTES.items():
            put(span, key, number(stats[index]))
    glidein_el = arg(args, kwargs, 2, "glidein_el")
    attrs = glidein_el.get("attrs") if isinstance(glidein_el, Mapping) else None
    if isinstance(attrs, Mapping):
        for key, ad_attr in ((c.ENTRY, "EntryName"), (c.GLIDEIN_NAME, "GlideinName"),
                             (c.FACTORY, "FactoryName")):
            if isinstance(attrs.get(ad_attr), str):
                span.set_attribute(key, attrs[ad_attr])
    downtime = arg(args, kwargs, 3, "glidein_in_downtime")
    if isinstance(downtime, bool):
        span.set_attribute(c.IN_DOWNTIME, downtime)
    pool = arg(args, kwargs, 4, "factory_pool_node")
    if isinstance(pool, str):
        span.set_attribute(c.FACTORY_POOL, pool)
    _put_limits(span, arg(args, kwargs, 6, "limits_triggered"))


#: method -> what to set on the request span when it returns: (span, args, kwargs, result)
AFTER = {
    "compute_glidein_min_idle": _after_compute_glidein_min_idle,
    "compute_glidein_max_run": _after_compute_glidein_max_run,
    "decide_removal_type": _after_decide_removal_type,
    "build_resource_classad": _after_build_resource_classad,
}


# --- the group element's state, read by job.waiting ---------------------------------------
def stored(query) -> Mapping:
    """The data of a condorMonitor query object (``fetchStored()``), as every
    glideinFrontendLib helper reads it."""
    data = query.fetchStored() if callable(getattr(query, "fetchStored", None)) else query
    return data if isinstance(data, Mapping) else {}


def idle_job_queries(element):
    """schedd -> query of the cycle's idle jobs, or None when the cycle made no job query.
    ``populate_condorq_dict_types`` fills ``condorq_dict_types["Idle"]["dict"]`` from
    ``glideinFrontendLib.getIdleCondorQ``; countMatch counts its jobs per entry."""
    types = getattr(element, "condorq_dict_types", None)
    if not isinstance(types, Mapping) or not isinstance(types.get("Idle"), Mapping):
        return None
    return types["Idle"].get("dict") or {}


def idle_glidein_ads(element):
    """The group's idle glidein (startd) ads: ``status_dict_types["Idle"]["dict"]``, made by
    ``glideinFrontendLib.getIdleCondorStatus(status_dict, p_glidein_min_memory)``, which keeps a
    partitionable slot only with more than PartGlideinMinMemory MB free: the glideins the
    Frontend counts as idle capacity."""
    types = getattr(element, "status_dict_types", None) or {}
    for query in ((types.get("Idle") or {}).get("dict") or {}).values():
        yield from stored(query).values()


def glidein_request_name(ad) -> str:
    """The request name (``entry@glidein@factory``, the glidefactory ad's Name) a glidein
    belongs to: its GLIDEIN_Entry_Name, GLIDEIN_Name and GLIDEIN_Factory, the attributes
    ``getCondorStatus`` completes every format list with."""
    return "{}@{}@{}".format(ad.get("GLIDEIN_Entry_Name"), ad.get("GLIDEIN_Name"), ad.get("GLIDEIN_Factory"))


def entries(element):
    """(glideid, request name, glidein_el) of each entry of the cycle: ``glidein_dict``, keyed
    ``(factory_pool_node, request_name, my_identity)`` as ``query_entries`` builds it, each
    ``{"attrs": ..., "monitor": ...}`` as the match expression sees it as ``glidein``."""
    for glideid, glidein_el in (getattr(element, "glidein_dict", None) or {}).items():
        if isinstance(glideid, tuple) and len(glideid) == 3 and isinstance(glideid[1], str):
            yield glideid, glideid[1], glidein_el


def entry_attrs(glidein_el) -> Mapping:
    """An entry's glidefactory ad attributes: ``glidein_el["attrs"]``, as ``query_entries``
    stores them and the match expression reads them (``glidein["attrs"]``)."""
    attrs = glidein_el.get("attrs") if isinstance(glidein_el, Mapping) else None
    return attrs if isinstance(attrs, Mapping) else {}


def entry_site(glidein_el):
    """The site of an entry: its glidefactory ad's ``GLIDEIN_Site``, where
    ``refresh_entry_token`` reads it to name the site's token. None when the ad has none."""
    site = entry_attrs(glidein_el).get("GLIDEIN_Site")
    return site if isinstance(site, str) and site else None


def client_name(element):
    """The name the Factory knows this group by: ``published_frontend_name``, set by
    ``iterate`` to ``<frontend>.<group>`` (``<frontend>.XPVO_<group>`` with a VO proxy)."""
    name = getattr(element, "published_frontend_name", None)
    return name if isinstance(name, str) else None


def factory_monitor(element, glideid) -> tuple:
    """The Factory's monitoring of this group at an entry, (glideins in the site's queue,
    running there): ``StatusIdle`` and ``StatusRunning`` (0 when absent) of its per-client ad
    (``glidefactoryclient``). ``query_factoryclients`` keys those ads by ``(factory_pool_node,
    Name, my_identity)``, their Name being ``<entry>@<glidein>@<factory>@<client name>``, and
    ``build_resource_classad`` looks one up as ``(factory_pool_node, "<request name>@<client
    name>", my_identity)`` (the ResourceClassad's Name)."""
    clients = getattr(element, "factoryclients_dict", None)
    name = client_name(element)
    if not isinstance(clients, Mapping) or name is None:
        return 0, 0
    pool, request_name, identity = glideid
    client = clients.get((pool, f"{request_name}@{name}", identity))
    monitor = client.get("monitor") if isinstance(client, Mapping) else None
    monitor = monitor if isinstance(monitor, Mapping) else {}
    return tuple(max(0, int(number(monitor.get(key)) or 0)) for key in ("StatusIdle", "StatusRunning"))


def history(element):
    """The group's state between cycles: ``history_obj``, a glideinFrontendConfig.HistoryFile
    that ``iterate`` saves after ``iterate_one`` (in a ``finally``, exceptions included)."""
    return getattr(element, "history_obj", None)


def part_glidein_min_memory(element):
    """The group's PartGlideinMinMemory (MB): ``__init__`` reads it from group.descript into
    ``p_glidein_min_memory``."""
    return number(getattr(element, "p_glidein_min_memory", None))


def element_names(element) -> dict:
    """frontend_name (FrontendName), group_name, published_frontend_name and action, the
    element's own attributes (``__init__``, ``iterate``)."""
    return {name: getattr(element, name, None)
            for name in ("frontend_name", "group_name", "published_frontend_name", "action")}


class MatchSetup:
    """How the group matches a job against an entry, read from the element: the joined
    expression (``ElementMergedDescript._merge``: ``(frontend MatchExpr) and (group
    MatchExpr)``, compiled into ``MatchExprCompiledObj``), the match policies, ``attr_dict``,
    the job and entry attributes the group queries (``JobMatchAttrs``, ``FactoryMatchAttrs``,
    ``condorq_match_list``), and the namespace ``countMatch`` evaluates the expression in: the
    module globals of ``glideinFrontendLib`` (where the multicore policy's
    ``getGlideinCpusNum`` is defined), with ``job``, ``glidein`` and ``attr_dict``."""

    def __init__(self, element):
        merged = getattr(getattr(element, "elementDescript", None), "merged_data", None)
        merged = merged if isinstance(merged, Mapping) else {}
        self.expression = merged.get("MatchExpr") if isinstance(merged.get("MatchExpr"), str) else None
        self.compiled = merged.get("MatchExprCompiledObj")
        self.policies = merged.get("MatchPolicyModules") or []
        self.attr_dict = getattr(element, "attr_dict", None) or {}
        self.job_attributes = self._names(merged.get("JobMatchAttrs"))
        self.entry_attributes = self._names(merged.get("FactoryMatchAttrs"))
        match_list = getattr(element, "condorq_match_list", None)
        self.match_list = list(match_list) if isinstance(match_list, (list, tuple)) else None
        self.namespace = self._library_globals(element)

    @staticmethod
    def _names(attributes) -> list:
        return [item[0] for item in attributes or () if isinstance(item, (list, tuple)) and item]

    @staticmethod
    def _library_globals(element) -> dict:
        # glideinFrontendElement.py imports the library as ``glideinFrontendLib``; its module
        # globals are what countMatch's eval sees
        module = sys.modules.get(type(element).__module__)
        library = getattr(module, "glideinFrontendLib", None)
        return vars(library) if library is not None else {}

    def matches(self, job, glidein) -> bool:
        """``countMatch``'s test of one job on one entry: ``eval(match_obj)``, then each match
        policy's ``pyObject.match(job, glidein)`` while the result is True; a match is a
        result ``== True``. Exceptions propagate (countMatch counts such a job for no entry)."""
        match = eval(self.compiled, self.namespace,  # noqa: S307 - the group's own expression
                     {"job": job, "glidein": glidein, "attr_dict": self.attr_dict})
        for policy in self.policies:
            if match is not True:
                break
            match = policy.pyObject.match(job, glidein)
        return match == True  # noqa: E712 - countMatch's own test
