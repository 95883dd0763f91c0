"""The critical path as the Jaeger UI that Jaeger v2.13 serves (jaeger-ui v1.76) computes it, on a
trace as Jaeger's v1 API returns it (``/api/traces/ID``), so tests can check that a glidein's
trace gets one and what it runs through.

The rules, each from the jaeger-ui function named (packages/jaeger-ui/src/...):
- ``model/transform-trace-data.tsx`` with ``selectors/trace.tsx`` ``getTraceSpanIdsAsTree``:
  a span's parent is its FIRST reference, whatever its type; a span whose first reference is
  not in the trace hangs under the tree's root; siblings sort by start; the trace's first
  span (where the path begins) is the earliest top-level one; each span's children are listed
  by end time, the last to end first (``childSpanIds``).
- ``TracePage/CriticalPath/utils/getChildOfSpans.tsx``: a span whose first reference is
  FOLLOWS_FROM is dropped with its descendants, after removing it from its parent's
  children; when that parent is not in the trace (a link into another trace) the UI throws,
  ``criticalPathForTrace`` (``TracePage/CriticalPath/index.tsx``) catches it and draws no path.
- ``utils/sanitizeOverFlowingChildren.tsx``: a span whose first reference is not in the map is
  dropped; a child is cut to its parent's time range, dropped when it lies outside it.
- ``index.tsx`` ``computeCriticalPath`` with ``utils/findLastFinishingChildSpan.tsx``: from a
  span, go into its last-finishing child; when a span has no (further) child, go back to its
  parent with the span's start, and take the parent's child that ended STRICTLY before that
  start (``end < returningChildStartTime``), the latest such. A stage that ends exactly when
  the next begins, or after, is never stepped back to.
"""

from __future__ import annotations


class NoCriticalPath(Exception):
    """What the UI's ``criticalPathForTrace`` catches: it then draws no critical path."""


def critical_path(trace: dict) -> list[tuple[str, int, int]]:
    """(span id, section start, section end) of each section on the critical path, in the order
    the UI computes them (latest first); raises NoCriticalPath where the UI gives up."""
    spans = {s["spanID"]: dict(s, references=list(s.get("references") or [])) for s in trace["spans"]}
    children = {sid: [] for sid in spans}
    top = []
    for sid, span in spans.items():
        refs = span["references"]
        if refs and refs[0]["spanID"] in spans:
            children[refs[0]["spanID"]].append(sid)
        else:
            top.append(sid)
    if not top:
        raise NoCriticalPath("no top-level span")
    first = min(top, key=lambda sid: spans[sid]["startTime"])

    def end(sid):
        return spans[sid]["startTime"] + spans[sid]["duration"]

    for sid in spans:
        spans[sid]["children"] = sorted(children[sid], key=end, reverse=True)
    _drop_follows_from(spans)
    _sanitize_overflowing(spans)
    if first not in spans:
        raise NoCriticalPath("the first span was dropped")
    path: list = []
    _compute(spans, first, path, None)
    return path


def _drop_follows_from(spans: dict) -> None:
    """getChildOfSpans: FOLLOWS_FROM-first spans and their descendants go."""
    dropped = []
    for sid, span in spans.items():
        refs = span["references"]
        if refs and refs[0]["refType"] == "FOLLOWS_FROM":
            parent = spans.get(refs[0]["spanID"])
            if parent is None:   # the UI reads a property of undefined here
                raise NoCriticalPath(f"span {sid} has its first reference into another trace")
            parent["children"] = [c for c in parent["children"] if c != sid]
            dropped.append(sid)
    stack = list(dropped)
    while stack:
        sid = stack.pop()
        kids = spans[sid]["children"] if sid in spans else []
        dropped.extend(kids)
        stack.extend(kids)
    for sid in dropped:
        spans.pop(sid, None)


def _sanitize_overflowing(spans: dict) -> None:
    """sanitizeOverFlowingChildren: children cut to (or dropped outside) their parent's range."""
    for sid in list(spans):
        span = spans.get(sid)
        if span is None or not span["references"]:
            continue
        parent = spans.get(span["references"][0]["spanID"])
        if parent is None:
            del spans[sid]
            continue
        start, stop = span["startTime"], span["startTime"] + span["duration"]
        p_start, p_stop = parent["startTime"], parent["startTime"] + parent["duration"]
        if start >= p_stop or stop <= p_start:
            del spans[sid]
            parent["children"] = [c for c in parent["children"] if c != sid]
            continue
        start, stop = max(start, p_start), min(stop, p_stop)
        span["startTime"], span["duration"] = start, stop - start


def _compute(spans: dict, sid: str, path: list, returning_start) -> None:
    """computeCriticalPath, iterative over the UI's recursion."""
    while True:
        span = spans[sid]
        stop = returning_start or span["startTime"] + span["duration"]
        child = _last_finishing_child(spans, span, returning_start)
        if child is not None:
            section_start = child["startTime"] + child["duration"]
            if section_start != stop:
                path.append((sid, section_start, stop))
            sid, returning_start = child["spanID"], None
            continue
        if span["startTime"] != stop:
            path.append((sid, span["startTime"], stop))
        if not span["references"]:
            return
        parents = [r["spanID"] for r in span["references"] if r["refType"] == "CHILD_OF"]
        if not parents or parents[0] not in spans:   # the UI reads a property of undefined
            raise NoCriticalPath(f"span {sid} has no CHILD_OF parent in the trace")
        sid, returning_start = parents[0], span["startTime"]


def _last_finishing_child(spans: dict, span: dict, returning_start):
    """findLastFinishingChildSpan: the child ending last, or (going back) the latest child that
    ended strictly before ``returning_start``."""
    if not returning_start:
        return spans.get(span["children"][0]) if span["children"] else None
    for child in span["children"]:
        if child in spans and spans[child]["startTime"] + spans[child]["duration"] < returning_start:
            return spans[child]
    return None
