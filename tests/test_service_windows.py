"""Services' outage windows, failures by domain/service/label and the messages no rule decided,
as the analysis computes them from the glidein table's failure-rule columns: outages injected
into seeded traffic are found with their service, start and end; seeded traffic without one
shows none; a window whose failures fell in a declared downtime is planned."""

import numpy as np
import pytest

from glidein_tracing.analysis import services
from glidein_tracing.analysis.dataset import open_dataset
from glidein_tracing.cli.main import main
from tests.support.analysis_helpers import glidein_row, trace_id, write_rows

HOUR = 3600.0
T0 = 1_780_000_000.0 - 1_780_000_000.0 % HOUR
SERVICES = ("cvmfs", "xrootd", "frontier")
OUTAGES = (("cvmfs", 10, 3, 0.7), ("xrootd", 40, 2, 0.6))


def traffic(seed: int, hours: int = 72, per_hour: int = 40, outages=(), downtime=None):
    """Job rows started uniformly over ``hours``; each fails for a service at a low usual rate,
    and at ``rate`` for ``service`` inside each injected (service, first hour, hours, rate);
    ``downtime``: (service, first hour, last hour, name) declared for the failures inside it."""
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
    code_bug = ~failed & (rng.random(n) < 0.05)    # failures no rule blamed on a service
    rows = []
    for i in range(n):
        row = {"schema_version": 1, "trace_id": trace_id(i), "entry": "E1", "site": "S1", "request_cpus": 1,
               "started_at": float(times[i]),
               "wall_s": 600.0}
        if failed[i] or code_bug[i]:
            row["failure_domain"] = "service" if names[i] else "user_code"
            row["failure_service"] = names[i] or None
            row["failure_label"] = f"{names[i]} failed" if names[i] else None
            if downtime and names[i] == downtime[0] and T0 + downtime[1] * HOUR <= times[i] < T0 + downtime[2] * HOUR:
                row["failure_downtime"] = downtime[3]
        rows.append(row)
    return rows


def dataset(tmp_path, rows, glideins=()):
    write_rows(tmp_path, "jobs", rows)
    write_rows(tmp_path, "glideins", list(glideins) or [glidein_row(trace_id(10**6))[0]])
    return open_dataset(tmp_path)


def test_injected_service_outages_are_found_with_their_start_and_end(tmp_path):
    rows = traffic(seed=3, outages=OUTAGES)
    found = services.service_windows(dataset(tmp_path, rows))
    assert [w["service"] for w in found] == ["cvmfs", "xrootd"]
    for window, (service, first, length, _) in zip(found, OUTAGES):
        assert window["start"] == T0 + first * HOUR and window["end"] == T0 + (first + length) * HOUR
        assert window["hours"] == length and window["failure_rate"] > 0.5 > window["baseline_rate"]
        assert window["planned"] is False and window["downtime"] == ""
        inside = [r for r in rows if r.get("failure_service") == service
                  and window["start"] <= r["started_at"] < window["end"]]
        assert window["failures"] == len(inside) > 40
        assert set(window["examples"]) <= {r["trace_id"] for r in inside}


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_seeded_traffic_without_an_outage_shows_none(tmp_path, seed):
    assert services.service_windows(dataset(tmp_path, traffic(seed=seed))) == []


def test_one_bad_hour_is_not_an_outage(tmp_path):
    assert services.service_windows(dataset(tmp_path, traffic(seed=5, outages=(("frontier", 20, 1, 0.8),)))) == []


def test_a_declared_downtime_makes_its_window_planned(tmp_path):
    rows = traffic(seed=3, outages=OUTAGES, downtime=("cvmfs", 9, 14, "osg:77 (scheduled): Stratum-1 move"))
    found = services.service_windows(dataset(tmp_path, rows))
    assert [(w["service"], w["planned"]) for w in found] == [("cvmfs", True), ("xrootd", False)]
    assert found[0]["downtime"] == "osg:77 (scheduled): Stratum-1 move"


def test_failures_by_domain_service_and_label_with_core_hours_and_top_unclassified(tmp_path, capsys):
    jobs = [{"schema_version": 1, "trace_id": trace_id(i), "entry": "E1", "site": "S1", "request_cpus": cpus,
             "wall_s": wall, "failure_domain": d, "failure_service": s, "failure_label": lab}
            for i, (d, s, lab, cpus, wall) in enumerate((
                ("service", "cvmfs", "CVMFS file missing", 1, 7200.0), ("service", "cvmfs", "CVMFS file missing", 1, 10800.0),
                ("service", "xrootd", "XRootD read timed out", 4, 9000.0), ("user_code", None, None, 1, 3600.0),
                ("user_code", None, "OOM", 2, 7200.0)))]
    messages = (("job exited with code 3", None), ("job exited with code 4", None), ("job exited with code 3", None),
                ("Disk quota exceeded on /srv/123", None), ("CVMFS", "cvmfs-file-missing"))
    glideins = []
    for i, (message, rule) in enumerate(messages):
        row, _ = glidein_row(trace_id(100 + i), condor=(0.0, 3600.0 - 65), failure_domain="site",
                             failure_message=message, failure_rule=rule)
        glideins.append(row)
    data = dataset(tmp_path, jobs, glideins)
    rows = services.breakdown(data)
    assert rows[0] == {"domain": "service", "service": "xrootd", "label": "XRootD read timed out",
                       "glideins": 0, "jobs": 1, "core_hours": 10.0}
    assert {"domain": "service", "service": "cvmfs", "label": "CVMFS file missing", "glideins": 0, "jobs": 2,
            "core_hours": 5.0} in rows
    assert {"domain": "user_code", "service": "", "label": "OOM", "glideins": 0, "jobs": 1, "core_hours": 4.0} in rows
    (site,) = [r for r in rows if r["domain"] == "site"]
    assert site["glideins"] == 5 and site["core_hours"] == pytest.approx(5.0)
    top = services.top_unclassified(data)
    assert top[0]["message"] == "job exited with code <n>" and top[0]["count"] == 3
    assert {"message": "Disk quota exceeded on <path>", "count": 1} in [
        {k: t[k] for k in ("message", "count")} for t in top]
    assert all(t["message"] != "CVMFS" for t in top)        # a rule decided it
    # the report's summary and its page name them
    page = tmp_path / "report.html"
    assert main(["analyze", str(tmp_path), "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert "service / xrootd / XRootD read timed out" in out and "no rule yet" in out
    text = page.read_text()
    for needle in ("Failures by domain, service and label", "<td>XRootD read timed out</td>",
                   "Failure messages no rule decided", "<td>job exited with code &lt;n&gt;</td>"):
        assert needle in text, needle


def test_the_report_marks_service_outages_planned_or_unplanned(tmp_path, capsys):
    rows = traffic(seed=3, outages=OUTAGES, downtime=("cvmfs", 9, 14, "osg:77 (scheduled): Stratum-1 move"))
    dataset(tmp_path, rows)
    page = tmp_path / "report.html"
    assert main(["analyze", str(tmp_path), "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert "service outage cvmfs:" in out and "planned (osg:77 (scheduled): Stratum-1 move)" in out
    assert "service outage xrootd:" in out and "unplanned" in out
    text = page.read_text()
    assert "Services&#x27; outage windows" in text or "Services' outage windows" in text
    assert "<td>planned</td>" in text and "<td>unplanned</td>" in text
