"""What each GlideinWMS Frontend call the instrumentor wraps tells its ``frontend.request``
span: which entry it is about, and the attributes read from its arguments and result, by the
real signatures in ``frontend/glideinFrontendElement.py``. Kept apart from the instrumentor so
that following a GlideinWMS signature change touches this file only."""

from __future__ import annotations

from collections.abc import Mapping

from frontend_hooks import conventions as c


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
