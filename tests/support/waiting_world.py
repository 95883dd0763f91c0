"""A Frontend group's world in which every job.waiting reason happens once, for the
frontend_hooks and ``why`` tests: job ads in the format ``condor_q -l`` writes, entries,
glidein slots and the Factory's per-client monitoring (tests/support/frontend_standin.py),
for the group ``main`` of the Frontend configuration GlideinWMS wrote in
../shared/fixtures/gwms-frontend (its match expression: the multicore policy's clause and the
group's DESIRED_Sites one; tests skip when it is absent)."""

import time

from glidein_tracing.core.ids import format_traceparent
from tests.support.fixtures import fixture_path

POOL = "gfactory.example.org"
SCHEDD = "schedd.example.org"
IDENTITY = "vofe@gfactory.example.org"

# site -> (the reason its submission gets, entry extras)
SITES = {
    "QUEUE": ("site_queue", {"factory_monitor": {"StatusIdle": 5, "StatusRunning": 0}}),
    "DOWN": ("downtime", {"in_downtime": True}),
    "LIMIT": ("limit", {"status": {"Total": 150, "Idle": 120, "Running": 30}}),
    "SMALL": ("unusable_idle_glideins", {}),
    "BROKEN": ("validation", {"factory_monitor": {"StatusIdle": 0, "StatusRunning": 4}}),
    "FREE": ("glidein_idle", {}),
    "NEW": ("requested", {}),
}


def request_name(site):
    return f"{site}_CE@gfactory_instance@OSG"


def trace_of(site):
    return f"{(sum(map(ord, site)) * 7919):032x}"


def traceparent(site):
    return format_traceparent(trace_of(site), f"{(sum(map(ord, site)) * 104729):016x}")


def entry(site, **extra):
    name = request_name(site)
    entry_name, glidein_name, factory = name.split("@")
    out = {"glideid": [POOL, name, IDENTITY],
           "attrs": {"EntryName": entry_name, "GlideinName": glidein_name, "FactoryName": factory,
                     "GLIDEIN_Site": site},
           "old_idle": 0, "running": 0, "real": 0}
    out.update(extra)
    return out


def slot(name, site, memory, cpus=1, disk=10_000_000, state="Unclaimed", to_retire=None, to_die=None):
    now = int(time.time())
    entry_name, glidein_name, factory = request_name(site).split("@")
    return {"Name": name, "State": state, "Activity": "Idle" if state == "Unclaimed" else "Busy",
            "Memory": memory, "Cpus": cpus, "Disk": disk, "GLIDEIN_Entry_Name": entry_name,
            "GLIDEIN_Name": glidein_name, "GLIDEIN_Factory": factory,
            "GLIDECLIENT_Name": "FE_H6.main", "GLIDEIN_CredentialIdentifier": "cred1",
            "GLIDEIN_ToRetire": now + 3600 if to_retire is None else to_retire,
            "GLIDEIN_ToDie": now + 86400 if to_die is None else to_die}


def job_ad(cluster, proc, sites, trace=None, status=1, memory=2000, owner="alice", **extra):
    attrs = {"ClusterId": cluster, "ProcId": proc, "JobStatus": status, "Owner": f'"{owner}"',
             "DESIRED_Sites": f'"{sites}"', "RequestCpus": 1, "RequestMemory": memory,
             "RequestDisk": 1_000_000, "QDate": int(time.time()) - 600,
             "EnteredCurrentStatus": int(time.time()) - 600,
             "GlobalJobId": f'"{SCHEDD}#{cluster}.{proc}#1700000000"'}
    if trace:
        attrs["TraceParent"] = f'"{trace}"'
    attrs.update(extra)
    return "\n".join(f"{k} = {v}" for k, v in attrs.items()) + "\n"


def write_jobs(path, ads):
    path.write_text("\n".join(ads))
    return str(path)


def world_jobs(sites=SITES):
    """One submission of 2 idle jobs per site, a submission no entry matches and a job without
    a TraceParent."""
    jobs = []
    for number, site in enumerate(sites, start=100):
        memory = 4000 if site == "SMALL" else 2000
        jobs += [job_ad(number, proc, site, traceparent(site), memory=memory) for proc in (0, 1)]
    jobs.append(job_ad(90, 0, "NOWHERE", traceparent("NOWHERE")))
    jobs.append(job_ad(91, 0, "QUEUE"))                        # no TraceParent
    return jobs


def world(tmp_path, jobs=None, sites=SITES, slots=None):
    """The world dict of the element stand-in; one submission of 2 idle jobs per site, plus a
    submission no entry matches and a job without a TraceParent."""
    if jobs is None:
        jobs = world_jobs(sites)
    if slots is None:
        slots = [slot("slot1@small1", "SMALL", 1000), slot("slot1@small2", "SMALL", 1500),
                 slot("slot1@small3", "SMALL", 8000, to_retire=int(time.time()) - 60),
                 slot("slot1@free1", "FREE", 8000)]
    return {"entries": [entry(site, **extra) for site, (_reason, extra) in sites.items()],
            "schedds": {SCHEDD: write_jobs(tmp_path / "jobs.ads", jobs)},
            "slots": slots, "config": str(fixture_path("gwms-frontend"))}
