"""HTCondor's hold reason codes (the job ad's ``HoldReasonCode``; the numbers and names of
HTCondor's ``CONDOR_HOLD_CODE``, its manual's job ClassAd appendix), each with what it means
and what a user can do, in our words, for ``glidein-tracing why``; and the vacate code rule
(``VacateReasonCode`` >= 1000: a system problem, not the job's)."""

from __future__ import annotations

from typing import NamedTuple

from ..core.waiting_reasons import ACTOR_NOBODY, ACTOR_OPERATORS, ACTOR_YOU, HELPS_NO, HELPS_YES


class HoldCode(NamedTuple):
    name: str
    meaning: str
    action: str
    helps: str = HELPS_NO    # does waiting help (a held job stays held until released)
    actor: str = ACTOR_YOU   # who can act


_RELEASE = "fix the cause, then condor_release the job"
_SITE = "a problem of the machine or site, not of the job: condor_release it to try again"
_FILES = ("check that the file exists, is readable and the path in the submit file is right; "
          "then condor_release (HoldReasonSubCode is the Unix errno)")

HOLD_CODES = {
    0: HoldCode("Unspecified", "held for a reason HTCondor gave no code for",
                "read HoldReason; ask the operators if it is unclear"),
    1: HoldCode("UserRequest", "someone put the job on hold with condor_hold",
                "condor_release it when it should run"),
    2: HoldCode("GlobusGramError", "the grid gatekeeper reported an error (subcode: the GRAM error)",
                _SITE),
    3: HoldCode("JobPolicy", "the job's own periodic_hold expression became true",
                "read HoldReason; change the job or its periodic_hold, then condor_release"),
    4: HoldCode("CorruptedCredential", "the job's credentials (proxy or token) are invalid",
                "renew your proxy or token (e.g. htgettoken / voms-proxy-init), then condor_release"),
    5: HoldCode("JobPolicyUndefined", "a job policy expression (e.g. periodic_hold) evaluated to UNDEFINED",
                "fix the expression in the submit file; condor_rm and resubmit"),
    6: HoldCode("FailedToCreateProcess", "the starter could not start the executable",
                "check the executable exists, is executable and fits the platform; then condor_release"),
    7: HoldCode("UnableToOpenOutput", "the job's output file could not be opened", _FILES),
    8: HoldCode("UnableToOpenInput", "the job's input file could not be opened", _FILES),
    9: HoldCode("UnableToOpenOutputStream", "the job's output stream could not be opened", _FILES),
    10: HoldCode("UnableToOpenInputStream", "the job's input stream could not be opened", _FILES),
    11: HoldCode("InvalidTransferAck", "an internal HTCondor error while transferring files", _SITE),
    12: HoldCode("DownloadFileError", "receiving or writing the job's files failed "
                 "(often an output file the job did not make)",
                 "check transfer_output_files names files the job really writes; then condor_release"),
    13: HoldCode("UploadFileError", "reading or sending the job's input files failed",
                 "check transfer_input_files (names, URLs, sizes); then condor_release"),
    14: HoldCode("IwdError", "the job's initial working directory cannot be accessed", _FILES),
    15: HoldCode("SubmittedOnHold", "the job was submitted on hold (hold = true)",
                 "condor_release it when it should run"),
    16: HoldCode("SpoolingInput", "its input files are being spooled", "wait: it is released when spooling ends",
                 HELPS_YES, ACTOR_NOBODY),
    17: HoldCode("JobShadowMismatch", "job and shadow versions do not fit", "ask the operators",
                 actor=ACTOR_OPERATORS),
    18: HoldCode("InvalidTransferGoAhead", "an internal HTCondor error while transferring files", _SITE),
    19: HoldCode("HookPrepareJobFailure", "the machine's prepare-job hook failed", _SITE),
    20: HoldCode("MissedDeferredExecutionTime", "the job's deferral time passed before it could start",
                 "change deferral_time (or its window), then condor_release"),
    21: HoldCode("StartdHeldJob", "the execute machine put the job on hold",
                 "read HoldReason; condor_release it to try again, elsewhere"),
    22: HoldCode("UnableToInitUserLog", "the job's log file could not be opened or written",
                 "check the log path is writable; then condor_release"),
    23: HoldCode("FailedToAccessUserAccount", "the user's account could not be used on the machine", _SITE),
    24: HoldCode("NoCompatibleShadow", "no shadow can run this job", "ask the operators",
                 actor=ACTOR_OPERATORS),
    25: HoldCode("InvalidCronSettings", "the job's cron_* settings are invalid",
                 "fix them; condor_rm and resubmit"),
    26: HoldCode("SystemPolicy", "the pool's SYSTEM_PERIODIC_HOLD policy held it (often: too much "
                 "memory or disk, or too long)",
                 "read HoldReason; request more (RequestMemory, RequestDisk) or use less, then "
                 "condor_qedit and condor_release"),
    27: HoldCode("SystemPolicyUndefined", "the pool's hold policy evaluated to UNDEFINED for the job",
                 "ask the operators"),
    28: HoldCode("GlexecChownSandboxToUser", "changing the sandbox's owner failed", _SITE),
    29: HoldCode("PrivsepChownSandboxToUser", "changing the sandbox's owner failed", _SITE),
    30: HoldCode("GlexecChownSandboxToCondor", "changing the sandbox's owner failed", _SITE),
    31: HoldCode("PrivsepChownSandboxToCondor", "changing the sandbox's owner failed", _SITE),
    32: HoldCode("MaxTransferInputSizeExceeded", "the input files exceed the pool's transfer limit",
                 "send less input (e.g. read large data from storage); condor_rm and resubmit"),
    33: HoldCode("MaxTransferOutputSizeExceeded", "the output files exceed the pool's transfer limit",
                 "write less output, or to storage; then condor_release"),
    34: HoldCode("JobOutOfResources", "the job used more than it requested (memory, disk)",
                 "raise RequestMemory / RequestDisk (condor_qedit), then condor_release"),
    35: HoldCode("InvalidDockerImage", "the container image could not be used",
                 "check the image name and that it can be pulled; then condor_release"),
    36: HoldCode("FailedToCheckpoint", "the job's checkpoint failed", "condor_release to try again"),
    37: HoldCode("EC2UserError", "the cloud (EC2) request was wrong", "check the EC2 settings"),
    38: HoldCode("EC2InternalError", "an internal error of the cloud (EC2) service", _SITE),
    39: HoldCode("EC2AdminError", "the cloud (EC2) set-up is wrong", "ask the operators"),
    40: HoldCode("EC2ConnectionProblem", "the cloud (EC2) service could not be reached", _SITE),
    41: HoldCode("EC2ServerError", "the cloud (EC2) service failed", _SITE),
    42: HoldCode("EC2InstancePotentiallyLostError", "a cloud (EC2) instance may have been lost", _SITE),
    43: HoldCode("PreScriptFailed", "the job's pre-script failed", "fix the pre-script; then condor_release"),
    44: HoldCode("PostScriptFailed", "the job's post-script failed", "fix the post-script; then condor_release"),
    45: HoldCode("SingularityTestFailed", "the container test before the job failed on the machine", _SITE),
    46: HoldCode("JobDurationExceeded", "the job ran longer than its allowed duration",
                 "raise the allowed duration or split the work; then condor_release"),
    47: HoldCode("JobExecuteExceeded", "the job's execution took longer than allowed",
                 "raise the limit or split the work; then condor_release"),
}
SYSTEM_VACATE_CODE = 1000   # VacateReasonCode at or above: the system's problem, not the job's


def hold_code(code) -> HoldCode:
    """The meaning and action of a HoldReasonCode (an unknown code says so)."""
    if isinstance(code, int) and not isinstance(code, bool) and code in HOLD_CODES:
        return HOLD_CODES[code]
    return HoldCode(f"code {code}", "a hold code this version does not know",
                    "read HoldReason; " + _RELEASE)


def vacate_is_system_problem(code) -> bool:
    return isinstance(code, int) and not isinstance(code, bool) and code >= SYSTEM_VACATE_CODE
