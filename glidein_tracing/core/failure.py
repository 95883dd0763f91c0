"""Failure domain: who is to blame for a failed glidein or job, and what said so.

The operators' first question about a failure is "service or code?": the site, the VO's
configuration, credentials, the grid layer, the glidein itself, a preemption, or the user's
job. This module is the one place that answers it, from what a trace already holds
(GlideinWMS failure types, Condor-G hold reason codes, outcomes, job exit/hold cases). The
converter calls ``glidein_domain`` for the root and ``job_domain`` for each job; the table in
docs/failures.md is ``render_markdown()`` (a test checks they agree).

Every answer comes with its evidence, ``attribute=value``: the one attribute that decided it.
"""

from __future__ import annotations

from typing import NamedTuple

from . import conventions as c

SITE, VO_CONFIG, CREDENTIALS, GRID, GLIDEIN, PREEMPTED, USER_CODE, SERVICE = (
    "site", "vo_config", "credentials", "grid", "glidein", "preempted", "user_code", "service")

DOMAINS = {
    SITE: "the worker node or the site: resources, network, corrupted files",
    VO_CONFIG: "the VO's (Frontend's) own configuration or validation scripts",
    CREDENTIALS: "a proxy or token missing, invalid or expired",
    GRID: "held or removed by Condor-G or the CE; never ran",
    GLIDEIN: "HTCondor daemons or the glidein itself broke",
    PREEMPTED: "ended from outside: SIGTERM, eviction, walltime, hard kill by the batch system",
    USER_CODE: "the job failed on a healthy glidein",
    SERVICE: "a service the glidein or job used (CVMFS, storage, Frontier, a token issuer, ...): "
             "only failure rules say so, naming it in `*.failure.service`",
}

# GlideinWMS error_gen failure types (a failed validation script's or condor_startup.sh's
# record): error.type on the root
GLIDEINWMS_TYPES = {
    "WN_Resource": SITE,
    "Network": SITE,
    "Corruption": SITE,
    "Config": GLIDEIN,
    "VO_Config": VO_CONFIG,
    "VO_Proxy": CREDENTIALS,
}


class HoldCode(NamedTuple):
    name: str
    glidein: str   # a glidein (grid-universe job) held by Condor-G with this code
    job: str       # a user job held on a glidein with this code


# HTCondor's HoldReasonCode values (condor_holdcodes.h). A code not listed: GRID for a
# glidein, USER_CODE for a job.
HOLD_CODES = {
    0: HoldCode("Unspecified", GRID, USER_CODE),
    1: HoldCode("UserRequest", GRID, USER_CODE),
    2: HoldCode("GlobusGramError", GRID, GLIDEIN),
    3: HoldCode("JobPolicy", GRID, USER_CODE),
    4: HoldCode("CorruptedCredential", CREDENTIALS, CREDENTIALS),
    5: HoldCode("JobPolicyUndefined", GRID, USER_CODE),
    6: HoldCode("FailedToCreateProcess", GRID, USER_CODE),
    7: HoldCode("UnableToOpenOutput", GRID, USER_CODE),
    8: HoldCode("UnableToOpenInput", GRID, USER_CODE),
    12: HoldCode("DownloadFileError", GRID, SITE),
    13: HoldCode("UploadFileError", GRID, SITE),
    14: HoldCode("IwdError", GRID, SITE),
    19: HoldCode("HookPrepareJobFailure", GRID, GLIDEIN),
    21: HoldCode("StartdHeldJob", GRID, GLIDEIN),
    23: HoldCode("FailedToAccessUserAccount", GRID, SITE),
    26: HoldCode("SystemPolicy", GRID, USER_CODE),
    27: HoldCode("SystemPolicyUndefined", GRID, USER_CODE),
    32: HoldCode("MaxTransferInputSizeExceeded", GRID, USER_CODE),
    33: HoldCode("MaxTransferOutputSizeExceeded", GRID, USER_CODE),
    34: HoldCode("JobOutOfResources", PREEMPTED, USER_CODE),
    35: HoldCode("InvalidDockerImage", GRID, USER_CODE),
    45: HoldCode("SingularityTestFailed", GRID, SITE),
    46: HoldCode("JobDurationExceeded", PREEMPTED, USER_CODE),
    47: HoldCode("JobExecuteExceeded", PREEMPTED, USER_CODE),
}

# glidein.outcome values that decide the domain when no failure type or hold code does
OUTCOMES = {
    c.OUTCOME_TERMINATED: PREEMPTED,         # SIGTERM from the site's batch system
    c.OUTCOME_KILLED: PREEMPTED,             # ended by a signal the Factory saw
    c.OUTCOME_REMOVED: GRID,                 # removed by the Factory or Condor-G
    c.OUTCOME_NEVER_RAN: GRID,               # left the Factory's queue without running
    c.OUTCOME_NO_GLIDEIN_OUTPUT: GLIDEIN,    # ran, but returned no output
    c.OUTCOME_INCOMPLETE: GLIDEIN,           # the glidein stopped with stages still open
}

# a job's error.type (exit hook or StartdHistoryLog) -> domain, on a healthy glidein
JOB_ERROR_TYPES = {
    "job.exit_code": USER_CODE,
    "job_failed": USER_CODE,
    "job.signal": USER_CODE,
    "job.remove": USER_CODE,
    "job.hold": USER_CODE,
    "job.evict": PREEMPTED,
}
# signals a glidein's end sends its jobs: with the glidein ended from outside, not the code
SHUTDOWN_SIGNALS = (9, 15)


class Verdict(NamedTuple):
    domain: str
    evidence: str   # "attribute=value": what decided it


def _hold_code(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def untraced(attrs) -> bool:
    """An untraced glidein (``glidein.traced=false``: no journal came back from its entry): the
    Factory saw it, nobody traced it, so nothing in it is a failure."""
    return attrs.get(c.GLIDEIN_TRACED) is False


def glidein_failed(in_error: bool, attrs) -> bool:
    """The one rule for a failed glidein (sampling always keeps it; the table's ``failed``):
    its root in error (``in_error``) or its outcome not ``ok``; an untraced glidein never."""
    if untraced(attrs):
        return False
    return in_error or attrs.get(c.GLIDEIN_OUTCOME) not in (c.OUTCOME_OK, None)


def glidein_domain(attrs: dict, error_type: str = "", hold_code=None) -> Verdict | None:
    """The domain of a glidein that did not end ``ok``; None for one that did, or that was
    not traced.

    ``attrs``: the root's attributes (``glidein.outcome``, ``factory.*``); ``error_type``:
    the root's GlideinWMS failure type, if any; ``hold_code``: the HoldReasonCode of its last
    Condor-G hold, if any."""
    outcome = str(attrs.get(c.GLIDEIN_OUTCOME, "") or "")
    if outcome in ("", c.OUTCOME_OK) or untraced(attrs):
        return None
    if error_type in GLIDEINWMS_TYPES:
        return Verdict(GLIDEINWMS_TYPES[error_type], f"{c.ERROR_TYPE}={error_type}")
    code = _hold_code(hold_code)
    if code is not None and outcome in (c.OUTCOME_REMOVED, c.OUTCOME_NEVER_RAN):
        known = HOLD_CODES.get(code)
        return Verdict(known.glidein if known else GRID, f"{c.FACTORY_HOLD_REASON_CODE}={code}")
    if attrs.get(c.FACTORY_SIGNAL) not in (None, ""):
        return Verdict(PREEMPTED, f"{c.FACTORY_SIGNAL}={attrs[c.FACTORY_SIGNAL]}")
    if attrs.get(c.FACTORY_EVICTED) is True:
        return Verdict(PREEMPTED, f"{c.FACTORY_EVICTED}=true")
    if outcome in OUTCOMES:
        return Verdict(OUTCOMES[outcome], f"{c.GLIDEIN_OUTCOME}={outcome}")
    if error_type:
        return Verdict(GLIDEIN, f"{c.ERROR_TYPE}={error_type}")
    return Verdict(GLIDEIN, f"{c.GLIDEIN_OUTCOME}={outcome}")


def job_domain(attrs: dict, error_type: str, glidein: Verdict | None,
               closed_by_converter: bool = False) -> Verdict:
    """The domain of a failed job. A job cut short by its glidein's end takes the glidein's
    domain (never ``user_code``); otherwise its hold code, then its error type, decide."""
    if closed_by_converter:
        domain = glidein.domain if glidein and glidein.domain != USER_CODE else GLIDEIN
        return Verdict(domain, f"{c.GLIDEIN_CLOSED_BY}={c.CLOSED_BY_CONVERTER}")
    signal = attrs.get(c.JOB_EXIT_SIGNAL)
    if error_type == "job.signal" and glidein is not None and signal in SHUTDOWN_SIGNALS:
        return Verdict(glidein.domain, f"{c.JOB_EXIT_SIGNAL}={signal}")
    code = _hold_code(attrs.get(c.JOB_HOLD_REASON_CODE))
    if code is not None:
        known = HOLD_CODES.get(code)
        return Verdict(known.job if known else USER_CODE, f"{c.JOB_HOLD_REASON_CODE}={code}")
    domain = JOB_ERROR_TYPES.get(error_type, USER_CODE)
    return Verdict(domain, f"{c.ERROR_TYPE}={error_type}" if error_type else "status=ERROR")


def cases() -> list[tuple[str, str, str, str]]:
    """Every case the module decides, as (kind, case, domain, evidence attribute) rows."""
    rows = [("GlideinWMS failure type", name, domain, c.ERROR_TYPE)
            for name, domain in GLIDEINWMS_TYPES.items()]
    rows += [("Condor-G hold of a glidein", f"{code} {hold.name}", hold.glidein,
              c.FACTORY_HOLD_REASON_CODE) for code, hold in HOLD_CODES.items()]
    rows.append(("Condor-G hold of a glidein", "any other code", GRID, c.FACTORY_HOLD_REASON_CODE))
    rows.append(("glidein ended by a signal", f"{c.FACTORY_SIGNAL} set", PREEMPTED, c.FACTORY_SIGNAL))
    rows.append(("glidein evicted", f"{c.FACTORY_EVICTED} true", PREEMPTED, c.FACTORY_EVICTED))
    rows += [("glidein outcome", outcome, domain, c.GLIDEIN_OUTCOME)
             for outcome, domain in OUTCOMES.items()]
    rows.append(("glidein outcome", "any other failed outcome", GLIDEIN, c.GLIDEIN_OUTCOME))
    rows.append(("job cut short by its glidein's end", f"{c.GLIDEIN_CLOSED_BY}={c.CLOSED_BY_CONVERTER}",
                 "the glidein's domain (glidein when it has none)", c.GLIDEIN_CLOSED_BY))
    rows.append(("job killed by its failed glidein's shutdown",
                 "signal " + " or ".join(map(str, SHUTDOWN_SIGNALS)),
                 "the glidein's domain", c.JOB_EXIT_SIGNAL))
    rows += [("job hold", f"{code} {hold.name}", hold.job, c.JOB_HOLD_REASON_CODE)
             for code, hold in HOLD_CODES.items()]
    rows.append(("job hold", "any other code", USER_CODE, c.JOB_HOLD_REASON_CODE))
    rows += [("job error", error_type, domain, c.ERROR_TYPE)
             for error_type, domain in JOB_ERROR_TYPES.items()]
    return rows


def render_markdown() -> str:
    """The mapping table of docs/failures.md."""
    lines = ["| what was seen | case | domain | evidence attribute |", "|---|---|---|---|"]
    lines += [f"| {kind} | {case} | `{domain}` | `{evidence}` |" if domain in DOMAINS
              else f"| {kind} | {case} | {domain} | `{evidence}` |"
              for kind, case, domain, evidence in cases()]
    return "\n".join(lines) + "\n"


def render_domains_markdown() -> str:
    """The table of domains of docs/failures.md."""
    lines = ["| domain | meaning |", "|---|---|"]
    lines += [f"| `{name}` | {meaning} |" for name, meaning in DOMAINS.items()]
    return "\n".join(lines) + "\n"
