"""A stand-in for the Factory's Condor-G side: the activity log and the returned outputs.

HTCondor's schedd and gridmanager cannot run here, so this writes what they leave behind,
in their formats: user-log events (000 submit, 027 grid submit, 001 execute, 012 held,
013 released, 009 aborted, 005 terminated) into
``<logs>/user_<fename>/glidein_<instance>/entry_<entry>/condor_activity_<nr>_<client>.log``
and the glidein's stdout/stderr as ``job.<cluster>.<proc>.out|.err`` beside it. Tests read
the log back with ``htcondor2.JobEventLog`` to keep us honest about the format.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path


@dataclass
class FactoryLayout:
    logs: Path
    instance: str = "gwms_demo_instance"
    entry: str = "DEMO_ENTRY"
    fename: str = "frontend"
    client: str = "vofrontend_service.main"
    log_nr: str = "20261122"
    utc_iso: bool = False  # DEFAULT_USERLOG_FORMAT_OPTIONS = ISO_DATE UTC SUB_SECOND

    @property
    def entry_dir(self) -> Path:
        return self.logs / f"user_{self.fename}" / f"glidein_{self.instance}" / f"entry_{self.entry}"

    @property
    def activity_log(self) -> Path:
        return self.entry_dir / f"condor_activity_{self.log_nr}_{self.client}.log"

    def output(self, cluster: int, proc: int, kind: str) -> Path:
        return self.entry_dir / f"job.{cluster}.{proc}.{kind}"


class CondorGLog:
    """Appends user-log events the way the schedd writes them."""

    def __init__(self, layout: FactoryLayout, schedd_sock: str = "schedd_1234_abcd",
                 grid_resource: str = "condor ce.example.org ce.example.org:9619"):
        self.layout = layout
        self.schedd_sock = schedd_sock
        self.grid_resource = grid_resource
        layout.entry_dir.mkdir(parents=True, exist_ok=True)

    def _stamp(self, when: float) -> str:
        if self.layout.utc_iso:
            moment = datetime.fromtimestamp(when, tz=timezone.utc)
            return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
        return datetime.fromtimestamp(when).strftime("%Y-%m-%d %H:%M:%S")

    def _write(self, code: int, cluster: int, proc: int, when: float | None, text: str):
        when = time.time() if when is None else when
        record = f"{code:03d} ({cluster:03d}.{proc:03d}.000) {self._stamp(when)} {text}\n...\n"
        with open(self.layout.activity_log, "a", encoding="utf-8") as handle:
            handle.write(record)

    def submit(self, cluster, proc, when=None):
        self._write(0, cluster, proc, when, "Job submitted from host: "
                    f"<127.0.0.1:9618?addrs=127.0.0.1-9618&noUDP&sock={self.schedd_sock}>")

    def grid_submit(self, cluster, proc, when=None, site_job=None):
        site_job = site_job or f"{cluster * 10 + proc}.0"
        self._write(27, cluster, proc, when, "Job submitted to grid resource\n"
                    f"    GridResource: {self.grid_resource}\n"
                    f"    GridJobId: {self.grid_resource} {site_job}")

    def execute(self, cluster, proc, when=None):
        self._write(1, cluster, proc, when, f"Job executing on host: {self.grid_resource}")

    def job_ad_information(self, cluster, proc, attrs: dict, when=None, trigger: int = 0):
        """The 028 event the schedd writes after the event numbered ``trigger`` for the job ad
        attributes its submit file lists in job_ad_information_attrs (GlideinWMS lists
        GlideinOverloadEnabled): ``attrs`` name -> ClassAd literal."""
        when = time.time() if when is None else when
        lines = [f"Proc = {proc}", f'EventTime = "{datetime.fromtimestamp(when).strftime("%Y-%m-%dT%H:%M:%S")}"',
                 f"TriggerEventTypeNumber = {trigger}", *(f"{k} = {v}" for k, v in attrs.items()),
                 f"Cluster = {cluster}", "EventTypeNumber = 28"]
        self._write(28, cluster, proc, when, "Job ad information event triggered.\n" + "\n".join(lines))

    def held(self, cluster, proc, reason, code=0, subcode=0, when=None):
        self._write(12, cluster, proc, when, f"Job was held.\n\t{reason}\n\tCode {code} Subcode {subcode}")

    def released(self, cluster, proc, when=None, by="fefrontend"):
        self._write(13, cluster, proc, when, f"Job was released.\n\tvia condor_release (by user {by})")

    def aborted(self, cluster, proc, when=None, by="fefrontend"):
        self._write(9, cluster, proc, when, f"Job was aborted.\n\tvia condor_rm (by user {by})")

    def terminated(self, cluster, proc, return_value=0, when=None, signal=None):
        """Normal termination with ``return_value``, or abnormal by ``signal`` (a hard kill)."""
        usage = "Usr 0 00:00:00, Sys 0 00:00:00"
        how = (f"\t(1) Normal termination (return value {return_value})\n" if signal is None else
               f"\t(0) Abnormal termination (signal {signal})\n\t(0) No core file\n")
        self._write(5, cluster, proc, when, "Job terminated.\n" + how +
                    f"\t\t{usage}  -  Run Remote Usage\n\t\t{usage}  -  Run Local Usage\n"
                    f"\t\t{usage}  -  Total Remote Usage\n\t\t{usage}  -  Total Local Usage\n"
                    "\t0  -  Run Bytes Sent By Job\n\t0  -  Run Bytes Received By Job\n"
                    "\t0  -  Total Bytes Sent By Job\n\t0  -  Total Bytes Received By Job")

    def return_outputs(self, cluster, proc, stdout_path, stderr_path):
        """Condor-G brings the glidein's stdout/stderr back before it logs the termination."""
        shutil.copyfile(stdout_path, self.layout.output(cluster, proc, "out"))
        shutil.copyfile(stderr_path, self.layout.output(cluster, proc, "err"))
