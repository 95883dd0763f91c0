"""Services' outage windows, as the site-window tests do it: outages injected into seeded
traffic are found with their service, start and end; seeded traffic without one shows none;
each failure says whether it fell inside one, and a declared downtime makes one planned."""

import numpy as np
import pytest

from glidein_tracing.analysis import services
from glidein_tracing.failure_rules.downtimes import Downtime, Downtimes

HOUR = 3600.0
T0 = 1_780_000_000.0 - 1_780_000_000.0 % HOUR
SERVICES = ("cvmfs", "xrootd", "frontier")


def traffic(seed: int, hours: int = 72, per_hour: int = 40, outages=()):
    """Jobs started uniformly over ``hours``; each fails for a service at a low usual rate,
    and at ``rate`` for ``service`` inside each injected (service, first hour, hours, rate)."""
    rng = np.random.default_rng(seed)
    n = hours * per_hour
    times = T0 + rng.uniform(0, hours * HOUR, n)
    failed = rng.random(n) < 0.03
    names = np.where(failed, rng.choice(SERVICES, n), "").astype(object)
    for service, first, length, rate in outages:
        inside = (times >= T0 + first * HOUR) & (times < T0 + (first + length) * HOUR)
        hit = inside & (rng.random(n) < rate)
        failed |= hit
        names[hit] = service
    # failures no rule blamed on a service (user code, say) count as attempts only
    code_bug = ~failed & (rng.random(n) < 0.05)
    return times, names, failed | code_bug


OUTAGES = (("cvmfs", 10, 3, 0.7), ("xrootd", 40, 2, 0.6))


def test_injected_service_outages_are_found_with_their_start_and_end():
    times, names, failed = traffic(seed=3, outages=OUTAGES)
    found = services.service_windows(times, names, failed)
    assert [w["service"] for w in found] == ["cvmfs", "xrootd"]
    for window, (service, first, length, _) in zip(found, OUTAGES):
        assert window["start"] == T0 + first * HOUR and window["end"] == T0 + (first + length) * HOUR
        assert window["hours"] == length and window["failure_rate"] > 0.5 > window["baseline_rate"]
        assert window["planned"] is False and window["downtime"] == ""


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_seeded_traffic_without_an_outage_shows_none(seed):
    assert services.service_windows(*traffic(seed=seed)) == []


def test_one_bad_hour_is_not_an_outage():
    assert services.service_windows(*traffic(seed=5, outages=(("frontier", 20, 1, 0.8),))) == []


def test_each_failure_says_whether_it_fell_in_its_services_window_and_a_downtime_makes_it_planned():
    times, names, failed = traffic(seed=3, outages=OUTAGES)
    declared = Downtimes([Downtime("osg:77", ("cvmfs",), T0 + 9 * HOUR, T0 + 14 * HOUR, "Stratum-1 move", True)])
    found = services.service_windows(times, names, failed, declared)
    assert [(w["service"], w["planned"]) for w in found] == [("cvmfs", True), ("xrootd", False)]
    assert found[0]["downtime"] == "osg:77 (scheduled): Stratum-1 move"
    where = services.window_of(times, names, failed, found)
    in_cvmfs = failed & (names == "cvmfs") & (times >= T0 + 10 * HOUR) & (times < T0 + 13 * HOUR)
    assert (where[in_cvmfs] == 0).all() and in_cvmfs.sum() > 40
    # a frontier failure in the same hours is not inside cvmfs's outage; successes never are
    assert (where[(names != "cvmfs") & (names != "xrootd")] == -1).all()
    assert (where[~failed] == -1).all()


def test_failures_by_domain_service_and_label_with_core_hours_and_top_unclassified():
    domains = ["service", "service", "service", "user_code", "user_code", "site"]
    names = ["cvmfs", "cvmfs", "xrootd", "", "", ""]
    labels = ["CVMFS file missing", "CVMFS file missing", "XRootD read timed out", "", "OOM", "disk full"]
    hours = [2.0, 3.0, 10.0, 1.0, 4.0, float("nan")]
    rows = services.breakdown(domains, names, labels, hours)
    assert rows[0] == {"domain": "service", "service": "xrootd", "label": "XRootD read timed out",
                       "failures": 1, "core_hours": 10.0}
    assert {"domain": "service", "service": "cvmfs", "label": "CVMFS file missing", "failures": 2,
            "core_hours": 5.0} in rows
    assert rows[-1]["label"] == "disk full" and rows[-1]["core_hours"] == 0.0
    messages = ["job exited with code 3", "job exited with code 4", "job exited with code 3",
                "Disk quota exceeded on /srv/123", "CVMFS", ""]
    rules = ["", "", "", "", "cvmfs-file-missing", ""]
    top = services.top_unclassified(messages, rules)
    assert top[0] == {"message": "job exited with code <n>", "count": 3}
    assert {"message": "Disk quota exceeded on <path>", "count": 1} in top
    assert all("CVMFS" != t["message"] for t in top)
