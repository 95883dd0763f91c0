"""Declared downtimes from the OSG Topology feed and from plain CSV/JSON: every bad entry is
named with its place, the rest is used, and a failure inside one finds it."""

import json
from datetime import datetime, timezone

import pytest

from glidein_tracing.failure_rules.downtimes import BadTime, parse_time, read_downtimes


def utc(*args) -> float:
    return datetime(*args, tzinfo=timezone.utc).timestamp()


# written after the feed's format (rgdowntime XML): three lists, its odd "13:00 PM UTC" times
OSG_FEED = """<?xml version="1.0" encoding="UTF-8"?>
<Downtimes xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
           xsi:schemaLocation="https://topology.example.org/schema/rgdowntime.xsd">
  <PastDowntimes>
    <Downtime>
      <ID>1893001</ID>
      <ResourceID>1201</ResourceID>
      <ResourceGroup><GroupName>Example_T2</GroupName><GroupID>301</GroupID></ResourceGroup>
      <ResourceName>Example_T2_CE1</ResourceName>
      <ResourceFQDN>ce1.example.edu</ResourceFQDN>
      <StartTime>Jul 21, 2026 13:00 PM UTC</StartTime>
      <EndTime>Jul 21, 2026 17:30 PM UTC</EndTime>
      <Class>SCHEDULED</Class>
      <Severity>Outage</Severity>
      <CreatedTime>Jul 14, 2026 09:12 AM UTC</CreatedTime>
      <UpdateTime>Not Available</UpdateTime>
      <Services>
        <Service><ID>1</ID><Name>CE</Name><Description>Compute Element</Description></Service>
        <Service><ID>130</ID><Name>Squid</Name><Description>Generic squid service</Description></Service>
      </Services>
      <Description>Kernel and CVMFS client upgrade</Description>
    </Downtime>
    <Downtime>
      <ID>1893002</ID>
      <ResourceGroup><GroupName>Example_T2</GroupName><GroupID>301</GroupID></ResourceGroup>
      <ResourceName>Example_T2_SE</ResourceName>
      <ResourceFQDN>xrootd.example.edu</ResourceFQDN>
      <StartTime>Jul 21, 2026 16:00 PM UTC</StartTime>
      <EndTime>Jul 21, 2026 19:00 PM UTC</EndTime>
      <Class>UNSCHEDULED</Class>
      <Severity>Severe</Severity>
      <Services><Service><ID>144</ID><Name>XRootD component</Name></Service></Services>
      <Description>Storage controller failure</Description>
    </Downtime>
  </PastDowntimes>
  <CurrentDowntimes>
    <Downtime>
      <ID>1893003</ID>
      <ResourceGroup><GroupName>Other_Site</GroupName><GroupID>302</GroupID></ResourceGroup>
      <ResourceName>Other_CE</ResourceName>
      <ResourceFQDN>ce.other.org</ResourceFQDN>
      <StartTime>Jul 22, 2026 08:00 AM -0500</StartTime>
      <EndTime>Jul 22, 2026 12:00 PM -0500</EndTime>
      <Class>SCHEDULED</Class>
      <Severity>Outage</Severity>
      <Description>Power work</Description>
    </Downtime>
    <Downtime>
      <ID>1893004</ID>
      <ResourceGroup><GroupName>Other_Site</GroupName><GroupID>302</GroupID></ResourceGroup>
      <ResourceName>Other_CE</ResourceName>
      <StartTime>Jul 23, 2026 08:00 AM CST</StartTime>
      <EndTime>Jul 23, 2026 12:00 PM CST</EndTime>
      <Class>SCHEDULED</Class>
      <Description>zone name: ambiguous</Description>
    </Downtime>
  </CurrentDowntimes>
  <FutureDowntimes>
    <Downtime>
      <ID>1893005</ID>
      <ResourceGroup><GroupName>Other_Site</GroupName><GroupID>302</GroupID></ResourceGroup>
      <ResourceName>Other_CE</ResourceName>
      <StartTime>Aug 32, 2026 08:00 AM UTC</StartTime>
      <EndTime>Sep 01, 2026 12:00 PM UTC</EndTime>
      <Class>SCHEDULED</Class>
      <Description>a day that does not exist</Description>
    </Downtime>
    <Downtime>
      <ID>1893006</ID>
      <ResourceGroup><GroupName>Other_Site</GroupName><GroupID>302</GroupID></ResourceGroup>
      <ResourceName>Other_CE</ResourceName>
      <StartTime>Sep 02, 2026 12:00 PM UTC</StartTime>
      <EndTime>Sep 02, 2026 08:00 AM UTC</EndTime>
      <Class>SCHEDULED</Class>
      <Description>ends before it starts</Description>
    </Downtime>
  </FutureDowntimes>
</Downtimes>
"""


def test_the_osg_topology_feed_is_read_and_each_bad_entry_named(tmp_path):
    feed = tmp_path / "osg-downtimes.xml"
    feed.write_text(OSG_FEED)
    downtimes, problems = read_downtimes([feed])
    assert sorted(d.ident for d in downtimes.entries) == ["osg:1893001", "osg:1893002", "osg:1893003"]
    text = "\n".join(problems)
    assert "osg:1893004: time zone 'CST'" in text and "ambiguous" in text
    assert "osg:1893005:" in text and "day is out of range" in text
    assert "osg:1893006: ends (Sep 02, 2026 08:00 AM UTC) before it starts" in text
    # the site (resource group), the resource and its host all name the downtime
    upgrade = downtimes.find(["Example_T2"], utc(2026, 7, 21, 14))
    assert upgrade.ident == "osg:1893001" and upgrade.planned is True
    assert upgrade.describe() == "osg:1893001 (scheduled): Kernel and CVMFS client upgrade [services: CE, Squid]"
    assert downtimes.find(["ce1.example.edu"], utc(2026, 7, 21, 17, 29)).ident == "osg:1893001"
    assert downtimes.find(["Example_T2"], utc(2026, 7, 21, 17, 30)).ident == "osg:1893002"   # end excluded
    assert downtimes.find(["Example_T2"], utc(2026, 7, 21, 19)) is None
    assert downtimes.find(["Example_T2"], utc(2026, 7, 21, 12, 59)) is None
    # an offset is a zone: 08:00 at -0500 is 13:00 UTC
    assert downtimes.find(["Other_Site"], utc(2026, 7, 22, 13, 0)).ident == "osg:1893003"
    assert downtimes.find(["Other_Site"], utc(2026, 7, 22, 12, 59)) is None
    # two windows of one site that overlap are named, and both kept
    assert "osg:1893002: overlaps osg:1893001 for example_t2 (both kept)" in text
    assert downtimes.find(["Example_T2_SE"], utc(2026, 7, 21, 16, 30)).planned is False


def test_a_csv_and_a_json_export_with_mixed_zones(tmp_path):
    table = tmp_path / "downtimes.csv"
    table.write_text(
        "target,start,end,reason,class\n"
        "cvmfs,2026-07-21T10:00:00Z,2026-07-21T12:00:00Z,Stratum-1 migration,scheduled\n"
        "frontier,2026-07-21T12:00:00+02:00,2026-07-21T13:00:00+02:00,launchpad reboot,\n"
        "xrootd,2026-07-21 10:00:00,2026-07-21 11:00:00,no zone given,unscheduled\n"
        ",2026-07-21T10:00:00Z,2026-07-21T11:00:00Z,nothing named,\n"
        "squid,yesterday,2026-07-21T11:00:00Z,not a date,\n")
    export = tmp_path / "downtimes.json"
    export.write_text(json.dumps({"downtimes": [
        {"service": "token-issuer", "start": int(utc(2026, 7, 21, 9)), "end": int(utc(2026, 7, 21, 9, 30)),
         "reason": "key rotation", "class": "UNSCHEDULED"},
        {"site": "Example_T2", "start": "2026-07-21T09:00:00-05:00", "end": "2026-07-21T08:00:00-05:00",
         "reason": "swapped"},
        "not an object"]}, indent=1))
    downtimes, problems = read_downtimes([table, export])
    assert sorted(d.names[0] for d in downtimes.entries) == ["cvmfs", "frontier", "token-issuer"]
    text = "\n".join(problems)
    assert f"{table}:4: no time zone in '2026-07-21 10:00:00'" in text
    assert f"{table}:5: names no service or site" in text
    assert f"{table}:6: not an ISO 8601 time: 'yesterday'" in text
    assert f"{export}:10: ends" in text and f"{export}:16: not an object" in text   # the lines they begin on
    assert downtimes.find(["CVMFS"], utc(2026, 7, 21, 11)).describe() == \
        f"{table}:2 (scheduled): Stratum-1 migration"
    assert downtimes.find(["frontier"], utc(2026, 7, 21, 10, 30)).planned is None     # 12:30 at +02:00
    assert downtimes.find(["token-issuer"], utc(2026, 7, 21, 9, 10)).planned is False


def test_a_file_that_cannot_be_read_is_named_and_the_others_used(tmp_path):
    good = tmp_path / "d.csv"
    good.write_text("target,start,end,reason\ncvmfs,2026-07-21T10:00:00Z,2026-07-21T12:00:00Z,x\n")
    broken = tmp_path / "feed.xml"
    broken.write_text("<Downtimes><PastDowntimes><Downtime>")
    downtimes, problems = read_downtimes([broken, tmp_path / "missing.json", good])
    assert len(downtimes) == 1
    assert any(p.startswith(f"{broken}: not readable as the OSG Topology downtime XML") for p in problems)
    assert any(p.startswith(f"{tmp_path / 'missing.json'}: not readable") for p in problems)


@pytest.mark.parametrize("text", ["Jul 21, 2026 13:00 PM EST", "2026-07-21T10:00:00", "Jul 21 2026", "", "1e9"])
def test_times_without_a_clear_zone_are_refused(text):
    with pytest.raises(BadTime):
        parse_time(text)
