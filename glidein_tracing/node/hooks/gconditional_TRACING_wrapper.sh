# shellcheck shell=sh
# glidein_tracing job wrapper fragment (wrapper="True"): concatenated by condor_startup.sh
# into condor_job_wrapper.sh (#!/bin/sh, possibly dash, ends in `exec "$@"`).
# Starts the `job` span, gives the job a TRACEPARENT when it has none of its own, and
# copies the phase command into the job's scratch dir (GLIDEIN_TRACING_PHASE, in the job's
# container too: GlideinWMS binds the scratch dir into it).
# All the work runs in command substitutions (subshells): nothing they define, no
# exit, no error can reach the job. Only TRACEPARENT and GLIDEIN_TRACING_PHASE may be set
# here, and the names below are unset again. The job runs unchanged whatever happens.

# gt_wrapper_phase: copy the glidein's phase command (GLIDEIN_TRACING_PHASE in the environment
# the startd gives every job) to <scratch>/.glidein_tracing/<random>/phase, a directory of our
# own (not an existing file or link of the job) with a name no other process can predict
# (mktemp -d), check the copy's sha256 against GLIDEIN_TRACING_PHASE_SHA256 and print its path.
# What is checked is the file the job runs: a process left behind by an earlier job (running as
# the glidein's user) may replace the master at any time, even between a check and a copy.
# Both variables come from the startd's environment, which a job cannot change for the jobs
# after it. This runs before anything of the glidein's is sourced (the library is writable by
# every job: a `sha256sum` function added to it would pass any check), with the shell's own
# names unset. A copy that fails the check prints "-", one that cannot be made "-copy", no
# checksum "-nosum" (the job gets no phase command; the caller notes why).
gt_wrapper_phase() {
    unset -f sha256sum cp mkdir mktemp rm 2>/dev/null
    gt_w_src=${GLIDEIN_TRACING_PHASE:-}
    gt_w_sd=${_CONDOR_SCRATCH_DIR:-$PWD}/.glidein_tracing
    case $gt_w_src in /*) [ -f "$gt_w_src" ] || return 0 ;; *) return 0 ;; esac
    [ ! -e "$gt_w_sd" ] && [ ! -L "$gt_w_sd" ] || return 0
    case ${GLIDEIN_TRACING_PHASE_SHA256:-} in
        *[!0-9a-f]*|'') printf '%s' -nosum; return 0 ;;
    esac
    # a copy that fails (the master replaced while cp read it, a full disk) is said, as a
    # changed checksum is: either way the job gets no phase command
    if ! mkdir -m 0700 "$gt_w_sd" 2>/dev/null || ! gt_w_pd=$(mktemp -d "$gt_w_sd/XXXXXXXXXXXX" 2>/dev/null) \
            || ! cp "$gt_w_src" "$gt_w_pd/phase" 2>/dev/null; then
        printf '%s' -copy
        return 0
    fi
    gt_w_sum=$(sha256sum < "$gt_w_pd/phase" 2>/dev/null) || gt_w_sum=
    if [ "${gt_w_sum%% *}" != "$GLIDEIN_TRACING_PHASE_SHA256" ] || [ -L "$gt_w_pd/phase" ] \
            || [ ! -x "$gt_w_pd/phase" ]; then
        rm -f "$gt_w_pd/phase" 2>/dev/null
        printf '%s' -
        return 0
    fi
    printf '%s' "$gt_w_pd/phase"
}

# gt_wrapper_run WRAPPER_PATH PHASE: record the job start (with a note when PHASE, what
# gt_wrapper_phase printed, says the job gets no phase command); print the job's TRACEPARENT.
gt_wrapper_run() {
    # glidein_config is beside condor_job_wrapper.sh, in the glidein's work dir
    gt_w_cfg="${1%/*}/glidein_config"
    [ "$gt_w_cfg" != "$1/glidein_config" ] || gt_w_cfg=./glidein_config
    gt_w_lib=
    while IFS= read -r gt_w_line || [ -n "$gt_w_line" ]; do
        case $gt_w_line in "GLIDEIN_TRACING_LIB "*) gt_w_lib=${gt_w_line#* } ;; esac
    done < "$gt_w_cfg"
    [ -n "$gt_w_lib" ] && [ -r "$gt_w_lib" ] || return 0
    # shellcheck disable=SC1090  # the library's path is found at run time
    . "$gt_w_lib" || return 0
    gt_setup_env "$gt_w_cfg" || return 0
    gt_now
    gt_w_time=$GT_NOW
    gt_w_note=
    # the job ad, written by the starter before any wrapper runs; awk reads the few
    # attributes we need (names are case-insensitive) and makes the values safe
    gt_w_ad=
    if [ -n "${_CONDOR_JOB_AD:-}" ] && [ -r "$_CONDOR_JOB_AD" ]; then
        gt_w_ad=$(gt_ad_select globaljobid clusterid procid owner acctgroup accountinggroup \
            requestcpus requestmemory requestdisk traceparent qdate numjobstarts < "$_CONDOR_JOB_AD")
    else
        gt_w_note="no readable job ad (_CONDOR_JOB_AD=${_CONDOR_JOB_AD:-unset})"
    fi
    gt_w_gid= gt_w_cluster= gt_w_proc= gt_w_owner= gt_w_acct= gt_w_cpus= gt_w_mem= gt_w_disk= gt_w_utp=
    gt_w_qdate= gt_w_starts=
    while IFS="$GT_TAB" read -r gt_w_n gt_w_v; do
        case $gt_w_n in
            globaljobid) gt_w_gid=$gt_w_v ;;
            clusterid) gt_w_cluster=$gt_w_v ;;
            procid) gt_w_proc=$gt_w_v ;;
            owner) gt_w_owner=$gt_w_v ;;
            acctgroup) [ -n "$gt_w_acct" ] || gt_w_acct=$gt_w_v ;;
            accountinggroup) gt_w_acct=$gt_w_v ;;
            requestcpus) gt_w_cpus=$gt_w_v ;;
            requestmemory) gt_w_mem=$gt_w_v ;;
            requestdisk) gt_w_disk=$gt_w_v ;;
            traceparent) gt_w_utp=$gt_w_v ;;
            qdate) gt_w_qdate=$gt_w_v ;;
            numjobstarts) gt_w_starts=$gt_w_v ;;
        esac
    done <<EOF
$gt_w_ad
EOF
    # integers only for :i fields (an expression such as `ifThenElse(...)` is dropped)
    for gt_w_n in gt_w_cluster gt_w_proc gt_w_cpus gt_w_mem gt_w_disk gt_w_qdate gt_w_starts; do
        eval "gt_w_v=\$$gt_w_n"
        case $gt_w_v in ''|*[!0-9]*) eval "$gt_w_n=" ;; esac
    done
    # the user's own context: job attribute TraceParent, else TRACEPARENT in the env
    [ -n "$gt_w_utp" ] || gt_w_utp=${TRACEPARENT:-}
    gt_w_link=
    case $gt_w_utp in
        *[!0-9a-f-]*) ;;
        ??-????????????????????????????????-????????????????-??) gt_w_link=$gt_w_utp ;;
    esac
    if [ -n "$gt_w_gid" ]; then
        gt_w_key="job/$gt_w_gid"
    elif [ -n "$gt_w_cluster" ] && [ -n "$gt_w_proc" ]; then
        gt_w_key="job/$gt_w_cluster.$gt_w_proc"
    else
        gt_w_key="job/unknown.${_CONDOR_SLOT:-slot}.$$.${gt_w_time%.*}"
        gt_w_note="${gt_w_note:-job ad without GlobalJobId/ClusterId/ProcId}; the exit hook cannot close this span"
    fi
    gt_emit "$gt_w_time" start "$gt_w_key" "@name=job" "@stage=job" "@parent=condor" \
        "job.global_id=$gt_w_gid" "job.cluster_id:i=$gt_w_cluster" "job.proc_id:i=$gt_w_proc" \
        "job.owner=$gt_w_owner" "job.accounting_group=$gt_w_acct" "job.request_cpus:i=$gt_w_cpus" \
        "job.request_memory_mb:i=$gt_w_mem" "job.request_disk_kb:i=$gt_w_disk" \
        "job.slot=${_CONDOR_SLOT:-}" "job.user_traceparent=$gt_w_utp" "@link=$gt_w_link" \
        "job.qdate:i=$gt_w_qdate" "job.num_job_starts:i=$gt_w_starts" \
        || return 0
    [ -z "$gt_w_note" ] || gt_note "$gt_w_key" "$gt_w_note"
    case $2 in
        -) gt_note "$gt_w_key" "the phase command changed since setup (its sha256 differs): not given to this job" ;;
        -nosum) gt_note "$gt_w_key" "no checksum of the phase command in the job's environment: not given to this job" ;;
        -copy) gt_note "$gt_w_key" "the phase command could not be copied into the job's scratch dir: not given to this job" ;;
    esac
    gt_span_id "$GT_TRACE_ID" "$gt_w_key" || return 0
    printf '00-%s-%s-01\n' "$GT_TRACE_ID" "$GT_SPAN_ID"
}

gt_wrapper_ph=$(gt_wrapper_phase </dev/null 2>/dev/null) || gt_wrapper_ph=
gt_wrapper_tp=$(gt_wrapper_run "$0" "$gt_wrapper_ph" </dev/null 2>/dev/null) || gt_wrapper_tp=
case $gt_wrapper_tp in
    00-*) [ -n "${TRACEPARENT:-}" ] || { TRACEPARENT=$gt_wrapper_tp; export TRACEPARENT; } ;;
esac
case $gt_wrapper_ph in
    /*/.glidein_tracing/*/phase) GLIDEIN_TRACING_PHASE=$gt_wrapper_ph; export GLIDEIN_TRACING_PHASE ;;
    *) unset GLIDEIN_TRACING_PHASE ;;
esac
unset gt_wrapper_tp gt_wrapper_ph
unset -f gt_wrapper_run gt_wrapper_phase
