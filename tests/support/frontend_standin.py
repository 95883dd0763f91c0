"""A minimal stand-in for a GlideinWMS Frontend group process, for the frontend_hooks tests.

It mirrors the names, signatures and call order that frontend_hooks relies on, read from
GlideinWMS master of early 2026 (commit efdc530a); the logic is reduced to what those calls
need and written here, not copied:

- frontend/glideinFrontendInterface.py: in tests/frontend_standin_interface.py, imported the
  way the real element imports it.
- frontend/glideinFrontendConfig.py: ``HistoryFile`` (a pickled dict per group, ``get`` /
  ``[]`` with a default factory, ``save``).
- frontend/glideinFrontendElement.py, class ``glideinFrontendElement``: ``__init__(parent_pid,
  work_dir, group_name, action)``, ``main() -> iterate() -> iterate_one()``, and the per-entry
  loop of ``iterate_one``: effective idle, ``compute_glidein_min_idle`` and
  ``compute_glidein_max_run`` unless in downtime, ``decide_removal_type(count_jobs,
  count_status, glideid)``, params = const params + ``GLIDECLIENT_ReqNode``, ``advertizer.add``
  only when a Factory key exists, then ``build_resource_classad(this_stats_arr, request_name,
  glidein_el, glidein_in_downtime, factory_pool_node, my_identity, limits_triggered)``;
  ``this_stats_arr`` has the 17 columns of ``log_factory_header``.

Instead of querying schedds and collectors, the element reads the entries of its cycle from
``WORK_DIR/world.json`` (or ``world=``): a list of entries, each
``{"glideid": [pool, "entry@glidein@factory", identity], "attrs": {...}, "idle": n,
"old_idle": n, "running": n, "real": n, "status": {"Total": n, "Idle": n, "Running": n},
"in_downtime": false, "has_key": true}``.

With ``world={"entries": [...], "schedds": {schedd: condor_q -l file}, "slots": [...],
"config": DIR}`` the element reads its configuration as GlideinWMS wrote it (DIR holds
frontend.descript and group_<GROUP>/group.descript, e.g. ../shared/fixtures/gwms-frontend) and
queries like the real one (tests/support/frontend_standin_lib.py
stands in for glideinFrontendLib): the schedds' jobs with the group's ``JobMatchAttrs`` as
format list, the group's glideins with ``get_condor_status``'s format list, ``countMatch`` for
each entry's idle jobs; it then holds ``condorq_dict``, ``condorq_dict_types``,
``glidein_dict``, ``factoryclients_dict`` (an entry's ``"factory_monitor"``),
``status_dict_types`` and ``condorq_match_list`` as the real one does (the Factory's monitoring
of an entry, its ``"factory_monitor"``, keyed by the client ad's name as
``query_factoryclients`` keys it); an entry without
``"status"`` counts its glideins from the slots.

Run as a script it behaves like the real one: ``python glideinFrontendElement.py PPID WORK_DIR
GROUP [ACTION]``.
"""

import ast
import copy
import json
import os
import pickle
import sys

# What GlideinWMS's element imports at its start, through glideinFrontendElement.py and the
# modules it imports (glideinFrontendConfig: urllib.request; glideinwms.lib's logSupport:
# logging.handlers; util, cleanupSupport, disk_cache, fork, pidSupport, condorExe,
# subprocessSupport, condorSecurity, xmlFormat, xmlParse; token_util: jwt and cryptography's
# HKDF), so that a group process started here pays the start-up a real one pays. Not imported
# because not installed here: M2Crypto (pubCrypto, symCrypto) and rrdtool (rrdSupport): a real
# group process pays those too.
import fcntl  # noqa: F401
import getpass  # noqa: F401
import logging.handlers  # noqa: F401
import re  # noqa: F401
import select  # noqa: F401
import shlex  # noqa: F401
import signal  # noqa: F401
import socket  # noqa: F401
import subprocess  # noqa: F401
import tempfile  # noqa: F401
import urllib.request  # noqa: F401
import uuid  # noqa: F401
import xml.dom.minidom  # noqa: F401
import xml.parsers.expat  # noqa: F401
import xml.sax.saxutils  # noqa: F401
from hashlib import md5  # noqa: F401
from importlib.util import module_from_spec  # noqa: F401
from pathlib import Path  # noqa: F401

try:
    import jwt  # noqa: F401
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF  # noqa: F401
except ImportError:   # token_util's; a stand-in runs without them
    pass

try:  # laid out as the real package (tests/test_frontend_process.py does that)
    from glideinwms.frontend import glideinFrontendInterface
except ImportError:
    from . import frontend_standin_interface as glideinFrontendInterface
try:
    from glideinwms.frontend import glideinFrontendLib
except ImportError:
    from . import frontend_standin_lib as glideinFrontendLib


# ---- glideinFrontendConfig -------------------------------------------------------------
def _descript(path):
    """ConfigFile.load: NAME VALUE lines, '#' comment lines; the value is the rest of the line."""
    data = {}
    with open(path) as handle:
        for line in handle.read().splitlines():
            if not line.strip() or line[0] == "#":
                continue
            parts = line.split(None, 1)
            data[parts[0]] = parts[1] if len(parts) > 1 else ""
    return data


class ElementMergedDescript:
    """The group's configuration as GlideinWMS's reconfig wrote it: frontend.descript and
    group_<name>/group.descript under the configuration directory, merged as
    ``ElementMergedDescript._merge`` merges them (the match expressions joined by ``and`` and
    compiled, the match attribute lists concatenated without repeats)."""

    def __init__(self, config_dir, group_name):
        self.frontend_data = _descript(os.path.join(config_dir, "frontend.descript"))
        self.element_data = _descript(os.path.join(config_dir, "group_" + group_name, "group.descript"))
        merged = self.merged_data = {}
        for key in ("JobQueryExpr",):
            merged[key] = f"({self.frontend_data[key]}) && ({self.element_data[key]})"
        for key in ("JobMatchAttrs", "FactoryMatchAttrs"):
            names, attributes = set(), []
            for item in ast.literal_eval(self.frontend_data[key]) + ast.literal_eval(self.element_data[key]):
                if item[0] not in names:
                    names.add(item[0])
                    attributes.append(item)
            merged[key] = attributes
        merged["MatchExpr"] = f"({self.frontend_data['MatchExpr']}) and ({self.element_data['MatchExpr']})"
        merged["MatchExprCompiledObj"] = compile(merged["MatchExpr"], "<string>", "eval")
        merged["MatchPolicyModules"] = []


class HistoryFile:
    def __init__(self, base_dir, group_name, load_on_init=True, default_factory=None):
        self.fname = os.path.join(base_dir, "group_" + group_name, "history.pk")
        self.default_factory = default_factory
        self.data = {}
        if load_on_init:
            try:
                with open(self.fname, "rb") as handle:
                    self.data = pickle.load(handle)
            except Exception:
                self.data = {}

    def __contains__(self, key):
        return key in self.data

    def __getitem__(self, key):
        if key not in self.data and self.default_factory is not None:
            self.data[key] = self.default_factory()
        return self.data[key]

    def __setitem__(self, key, value):
        self.data[key] = value

    def get(self, key, default=None):
        return self.data.get(key, default)

    def save(self):
        os.makedirs(os.path.dirname(self.fname), exist_ok=True)
        with open(self.fname, "wb") as handle:
            pickle.dump(self.data, handle)


# ---- glideinwms.lib.fork ----------------------------------------------------------------
def fork_and_collect(calls):
    """ForkManager.fork_and_collect (lib/fork.py): each ``key: (function, *args)`` runs in a
    forked child (``fork_in_bg``), its result pickled back through a pipe and read by the
    parent (``fetch_fork_result``); returns ``{key: result}``."""
    started = {}
    for key, (function, *args) in calls.items():
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                os.write(w, pickle.dumps(function(*args)))
            finally:
                os.close(w)
                os._exit(0)
        os.close(w)
        started[key] = (r, pid)
    results = {}
    for key, (r, pid) in started.items():
        data = b""
        chunk = os.read(r, 1024 * 1024)
        while chunk:
            data += chunk
            chunk = os.read(r, 1024 * 1024)
        os.close(r)
        os.waitpid(pid, 0)
        results[key] = pickle.loads(data)
    return results


def call_in_process(calls):
    """The same calls run here, for tests that look at the process's state after the cycle."""
    return {key: function(*args) for key, (function, *args) in calls.items()}


# ---- glideinFrontendElement ------------------------------------------------------------
class glideinFrontendElement:
    def __init__(self, parent_pid, work_dir, group_name, action, world=None, frontend_name="vofe",
                 forks=False):
        """``forks``: query and match in child processes, as the real ``iterate_one`` and
        ``do_match`` do (a group process run as a script); else in this process."""
        self.parent_pid = parent_pid
        self.run_calls = fork_and_collect if forks else call_in_process
        self.work_dir = work_dir
        self.group_name = group_name
        self.action = action
        self.history_obj = HistoryFile(work_dir, group_name, True, dict)
        self.frontend_name = frontend_name
        if world is None:
            with open(os.path.join(work_dir, "world.json")) as handle:
                world = json.load(handle)
        self.queries = world if isinstance(world, dict) else None
        self.world = world["entries"] if isinstance(world, dict) else world
        if self.queries is not None:
            self.elementDescript = ElementMergedDescript(world["config"], group_name)
            self.frontend_name = self.elementDescript.frontend_data["FrontendName"]
            self.p_glidein_min_memory = int(self.elementDescript.element_data["PartGlideinMinMemory"])
            self.attr_dict = {}
            self.ignore_down_entries = False
        self.const_params = {"USE_MATCH_AUTH": "True"}
        self.security_name = "vofe_sec"
        self.idle_lifetime = 0
        self.ramp_up_attenuation = 3.0
        self.max_running = 10000
        self.max_vms_idle = 100
        self.max_idle = 100
        self.reserve_idle = 5
        self.fraction_running = 1.15
        self.min_running = 0
        self.request_removal_wtype = None
        self.request_removal_excess_only = False
        self.in_frontend_downtime = False

    def main(self):
        rc = 0
        try:
            rc = self.iterate()
        except Exception:
            rc = 2
        return rc

    def iterate(self):
        self.published_frontend_name = f"{self.frontend_name}.{self.group_name}"
        if self.action == "run":
            self.iterate_one()
            self.history_obj.save()
        elif self.action.startswith("remove"):
            self.request_removal_wtype = self.action[6:].upper()
            self.iterate_one()
        else:
            return 1
        return 0

    def query(self):
        """The schedd and collector queries, the match, as the real iterate_one does them."""
        glideinFrontendLib.JOB_AD_FILES.update(self.queries["schedds"])
        glideinFrontendLib.SLOTS[:] = self.queries.get("slots", [])
        # iterate_one: one child per schedd (get_condor_q) and one for the collector
        # (get_condor_status)
        calls = {("schedd", schedd): (self.get_condor_q, schedd) for schedd in self.queries["schedds"]}
        calls[("collector", 0)] = (self.get_condor_status,)
        results = self.run_calls(calls)
        self.condorq_dict = {}
        for schedd in self.queries["schedds"]:
            self.condorq_dict.update(results[("schedd", schedd)])
        # populate_condorq_dict_types: the job types do_match counts, each with countMatch
        idle = glideinFrontendLib.getIdleCondorQ(self.condorq_dict)
        self.condorq_dict_types = {
            "IdleAll": {"dict": idle}, "Idle": {"dict": idle},
            "OldIdle": {"dict": glideinFrontendLib.getOldCondorQ(idle, 600)},
            "Idle_3600": {"dict": glideinFrontendLib.getOldCondorQ(idle, 3600)},
            "VomsIdle": {"dict": glideinFrontendLib.getIdleVomsCondorQ(idle)},
            "Running": {"dict": glideinFrontendLib.getRunningCondorQ(self.condorq_dict)}}
        self.status_dict = results[("collector", 0)]
        self.status_dict_types = {"Idle": {"dict": glideinFrontendLib.getIdleCondorStatus(
            self.status_dict, self.p_glidein_min_memory)}}
        self.glidein_dict = {tuple(e["glideid"]): {"attrs": dict(e.get("attrs", {})), "monitor": {}}
                             for e in self.world}
        # query_factoryclients: the Factory's per-client ads, named
        # "<entry>@<glidein>@<factory>@<client name>", keyed (pool, Name, my identity)
        self.factoryclients_dict = {
            (e["glideid"][0], f"{e['glideid'][1]}@{self.published_frontend_name}", e["glideid"][2]):
            {"attrs": {}, "monitor": dict(e["factory_monitor"])}
            for e in self.world if "factory_monitor" in e}
        self.condorq_match_list = [f[0] for f in self.elementDescript.merged_data["JobMatchAttrs"]]
        # do_match: one child per job type (subprocess_count_dt)
        counted = self.run_calls({dt: (self.subprocess_count_dt, dt) for dt in self.condorq_dict_types})
        for dt, el in self.condorq_dict_types.items():
            el["count"], el["prop"], el["hereonly"], el["prop_mc"] = counted[dt]
        counts = self.condorq_dict_types["Idle"]["count"]
        slots = list(self.status_dict[None].fetchStored().values())
        for e in self.world:
            e["idle"] = counts[tuple(e["glideid"])]
            if "status" not in e:
                here = [s for s in slots if "{}@{}@{}".format(
                    s.get("GLIDEIN_Entry_Name"), s.get("GLIDEIN_Name"), s.get("GLIDEIN_Factory")) == e["glideid"][1]]
                idle_here = sum(1 for s in here if s.get("State") == "Unclaimed" and s.get("Activity") == "Idle")
                e["status"] = {"Total": len(here), "Idle": idle_here, "Running": len(here) - idle_here}

    def get_condor_q(self, schedd):
        return glideinFrontendLib.getCondorQ(
            [schedd], self.elementDescript.merged_data["JobQueryExpr"],
            list(self.elementDescript.merged_data["JobMatchAttrs"]) + [("x509userproxy", "s")])

    def get_condor_status(self):
        return glideinFrontendLib.getCondorStatus(
            [None], constraint='(GLIDECLIENT_Name=?="x")',
            format_list=[("GLIDEIN_CredentialIdentifier", "s"), ("TotalSlots", "i"), ("Cpus", "i"),
                         ("Memory", "i"), ("PartitionableSlot", "s"), ("SlotType", "s"),
                         ("TotalSlotCpus", "i")])

    def subprocess_count_dt(self, dt):
        return glideinFrontendLib.countMatch(
            self.elementDescript.merged_data["MatchExprCompiledObj"], self.condorq_dict_types[dt]["dict"],
            self.glidein_dict, self.attr_dict, self.ignore_down_entries, self.condorq_match_list,
            match_policies=self.elementDescript.merged_data["MatchPolicyModules"])

    def iterate_one(self):
        if self.queries is not None:
            self.query()
        entries = {tuple(e["glideid"]): e for e in self.world}
        total_glideins = sum(e["status"]["Total"] for e in self.world)
        total_idle_glideins = sum(e["status"]["Idle"] for e in self.world)
        # do_match fills count_status_multi: glidein counts per request name
        self.count_status_multi = {
            glideid[1]: dict({"Total": 0, "Idle": 0, "Running": 0, "Failed": 0, "TotalCores": 0,
                              "IdleCores": 0, "RunningCores": 0}, **entry["status"])
            for glideid, entry in entries.items()}
        self.advertizer = advertizer = glideinFrontendInterface.MultiAdvertizeWork(descript_obj=None)
        self.resource_classads = []
        for glideid in sorted(entries):
            factory_pool_node, request_name, my_identity = glideid
            entry = entries[glideid]
            glidein_el = {"attrs": dict(entry.get("attrs", {})), "monitor": {}}
            glidein_in_downtime = bool(entry.get("in_downtime", False))
            count_jobs = {"Idle": entry["idle"], "OldIdle": entry.get("old_idle", 0),
                          "Running": entry.get("running", 0)}
            prop_jobs = dict(count_jobs)
            prop_mc_jobs = dict(count_jobs)  # single-core jobs: the multicore scaling is 1
            count_status = self.count_status_multi[request_name]
            real = entry.get("real", 0)

            effective_idle = max(prop_jobs["Idle"] - count_status["Idle"], 0)
            if prop_mc_jobs["Idle"] < self.min_running:
                prop_mc_jobs["Idle"] = self.min_running
            effective_idle_mc = max(prop_mc_jobs["Idle"] - count_status["Idle"], 0)
            effective_oldidle_mc = max(prop_mc_jobs["OldIdle"] - count_status["Idle"], 0)
            limits_triggered = {}
            if self.in_frontend_downtime or glidein_in_downtime:
                glidein_min_idle = 0
                glidein_max_run = 0
            else:
                glidein_min_idle = self.compute_glidein_min_idle(
                    count_status, total_glideins, total_idle_glideins, total_glideins,
                    total_idle_glideins, total_glideins, total_idle_glideins, effective_idle_mc,
                    effective_oldidle_mc, limits_triggered)
                glidein_max_run = self.compute_glidein_max_run(prop_mc_jobs, real, count_status["Idle"])
            remove_excess_str, remove_excess_margin = self.decide_removal_type(count_jobs, count_status, glideid)
            this_stats_arr = (
                prop_jobs["Idle"], count_jobs["Idle"], effective_idle, prop_jobs["OldIdle"],
                prop_jobs["Idle"], count_jobs["Running"], real, self.max_running,
                count_status["Total"], count_status["Idle"], count_status["Running"],
                count_status["Failed"], count_status["TotalCores"], count_status["IdleCores"],
                count_status["RunningCores"], glidein_min_idle, glidein_max_run,
            )
            glidein_params = copy.deepcopy(self.const_params)
            glidein_params["GLIDECLIENT_ReqNode"] = factory_pool_node
            glidein_monitors = dict(count_jobs, **{"Glideins" + k: v for k, v in count_status.items()})
            if entry.get("has_key", True):
                advertizer.add(
                    factory_pool_node, request_name, request_name, glidein_min_idle, glidein_max_run,
                    self.idle_lifetime, glidein_params=glidein_params, glidein_monitors=glidein_monitors,
                    glidein_monitors_per_cred={}, remove_excess_str=remove_excess_str,
                    remove_excess_margin=remove_excess_margin, key_obj=("key", my_identity),
                    glidein_params_to_encrypt={}, security_name=self.security_name,
                    trust_domain="Grid", auth_method="grid_proxy", ha_mode="master")
            resource_classad = self.build_resource_classad(
                this_stats_arr, request_name, glidein_el, glidein_in_downtime, factory_pool_node,
                my_identity, limits_triggered)
            self.resource_classads.append(resource_classad)
        return

    def build_resource_classad(self, this_stats_arr, request_name, glidein_el, glidein_in_downtime,
                               factory_pool_node, my_identity, limits_triggered):
        return {"Name": request_name, "GlideClientName": self.published_frontend_name,
                "GlideClientMonitorGlideinsRequestedIdle": this_stats_arr[15],
                "GlideClientMonitorGlideinsRequestedMaxRun": this_stats_arr[16],
                "GlideFactoryInDownTime": glidein_in_downtime, "limits": dict(limits_triggered)}

    def compute_glidein_min_idle(self, count_status, total_glideins, total_idle_glideins,
                                 fe_total_glideins, fe_total_idle_glideins, global_total_glideins,
                                 global_total_idle_glideins, effective_idle, effective_oldidle,
                                 limits_triggered):
        # Reduced: the per-entry limits only (the group/frontend/global ones work alike).
        if self.request_removal_wtype is not None:
            return 0
        if count_status["Total"] >= self.max_running or count_status["Idle"] >= self.max_vms_idle:
            if count_status["Idle"] >= self.max_vms_idle:
                limits_triggered["IdleGlideinsPerEntry"] = "count=%i, limit=%i" % (
                    count_status["Idle"], self.max_vms_idle)
            if count_status["Total"] >= self.max_running:
                limits_triggered["TotalGlideinsPerEntry"] = "count=%i, limit=%i" % (
                    count_status["Total"], self.max_running)
            return 0
        if effective_idle <= 0:
            return 0
        wanted = min(effective_idle, self.max_running - count_status["Total"])
        wanted = int(wanted / self.ramp_up_attenuation)  # ask for a part each cycle
        wanted = min(wanted + min(effective_oldidle // 3, self.reserve_idle), self.max_idle)
        return int(max(wanted, 1))

    def compute_glidein_max_run(self, prop_jobs, real, idle_glideins):
        if self.request_removal_wtype is not None and not self.request_removal_excess_only:
            return 0
        if prop_jobs["Idle"] + real <= 0:
            return 0
        if prop_jobs["Idle"] <= 0:
            return int(real)
        return int((max(prop_jobs["Idle"] - idle_glideins, 0) + real) * self.fraction_running + 1)

    def decide_removal_type(self, count_jobs, count_status, glideid):
        if self.request_removal_wtype is not None:
            return self.request_removal_wtype, 0
        return "NO", 0


if __name__ == "__main__":
    ACTION = sys.argv[4] if len(sys.argv) > 4 else "run"
    gfe = glideinFrontendElement(int(sys.argv[1]), sys.argv[2], sys.argv[3], ACTION, forks=True)
    sys.exit(gfe.main())
