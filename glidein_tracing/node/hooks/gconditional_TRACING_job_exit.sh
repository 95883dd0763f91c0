#!/bin/bash
# glidein_tracing job-exit hook: HTCondor's <KW>_HOOK_JOB_EXIT for KW=GLIDEIN_TRACING.
# The setup hook copies this file to <work dir>/glidein_tracing/job_exit_hook and
# configures it only after checking it. The starter runs it with the final job ad on
# stdin and one argument (exit|remove|hold|evict), in the job's scratch dir, with the
# starter's environment, and waits at most 30 s: it reads one ad with one awk and
# appends one line; with live export it then wakes the sampler, which sends the job's span
# (nothing here waits on the network). Output is ignored; the exit code is always 0.
#
# Finding the journal: this file lives in the journal's own directory, so `$0` gives it
# (HTCondor runs hooks by their absolute configured path). Fallbacks, in order: the
# glidein_config beside $CONDOR_CONFIG (condor_startup.sh exports it, and the starter
# inherits it), then the glidein_config beside $_CONDOR_SCRATCH_DIR/../.. (EXECUTE is
# <work dir>/execute/dir_N in glideins).

GT_EXIT_BY=${1:-exit}

# gt_find_config: GT_CONFIG = the glidein's glidein_config.
gt_find_config() {
    local d
    GT_CONFIG=
    for d in "${0%/*}/.." "${CONDOR_CONFIG%/*}" "${_CONDOR_SCRATCH_DIR:-/nonexistent}/../.."; do
        [ -n "$d" ] && [ -r "$d/glidein_config" ] && { GT_CONFIG="$d/glidein_config"; return 0; }
    done
    return 1
}

# gt_live_nudge: when the sampler exports live (third field of its pid file), leave
# live.pending and wake it with USR1 (only if the pid still is our sampler). Builtins only.
gt_live_nudge() {
    local pid ticks mode
    [ -r "$GT_DIR/sampler.pid" ] && read -r pid ticks mode < "$GT_DIR/sampler.pid" || return 0
    [ "$mode" = live ] || return 0
    : > "$GT_DIR/live.pending"
    case $pid in ''|*[!0-9]*) return 0 ;; esac
    gt_alive "$pid" "$ticks" && kill -USR1 "$pid"
}

gt_main() {
    local lib ad
    gt_find_config || return 0
    lib=$(grep '^GLIDEIN_TRACING_LIB ' "$GT_CONFIG" 2>/dev/null | tail -n 1 | cut -d ' ' -f 2-)
    [ -n "$lib" ] && [ -r "$lib" ] || return 0
    # shellcheck disable=SC1090
    . "$lib" 2>/dev/null || return 0
    gt_setup_env "$GT_CONFIG" || return 0
    gt_now
    # the final ad (bounded read); numbers and the job id only
    ad=$(gt_ad_select globaljobid clusterid procid exitcode exitbysignal exitsignal \
        remoteusercpu remotesyscpu residentsetsize holdreason holdreasoncode holdreasonsubcode \
        remotewallclocktime remotehost lastremotehost)
    local n v gid="" cluster="" proc="" code="" bysig="" sig="" ucpu="" scpu="" rss=""
    local hold="" hcode="" hsub="" wall="" rhost=""
    while IFS="$GT_TAB" read -r n v; do
        case $n in
            globaljobid) gid=$v ;;
            clusterid) cluster=$v ;;
            procid) proc=$v ;;
            exitcode) code=$v ;;
            exitbysignal) bysig=$v ;;
            exitsignal) sig=$v ;;
            remoteusercpu) ucpu=$v ;;
            remotesyscpu) scpu=$v ;;
            residentsetsize) rss=$v ;;
            holdreason) hold=$v ;;
            holdreasoncode) hcode=$v ;;
            holdreasonsubcode) hsub=$v ;;
            remotewallclocktime) wall=$v ;;
            remotehost) rhost=$v ;;
            lastremotehost) rhost=${rhost:-$v} ;;
        esac
    done <<< "$ad"
    for n in cluster proc code sig rss hcode hsub; do
        case ${!n} in ''|*[!0-9-]*) printf -v "$n" '' ;; esac
    done
    for n in ucpu scpu wall; do
        case ${!n} in ''|*[!0-9.eE+-]*) printf -v "$n" '' ;; esac
    done
    [ -z "$rss" ] || rss=$((rss * 1024))
    local key
    if [ -n "$gid" ]; then
        key="job/$gid"
    elif [ -n "$cluster" ] && [ -n "$proc" ]; then
        key="job/$cluster.$proc"
    else
        gt_note - "job exit hook ($GT_EXIT_BY): no job id in the final ad"
        return 0
    fi
    # ERROR when the job did not exit by itself with code 0
    local status=OK etype="" edetail=""
    bysig=${bysig,,}
    if [ "$GT_EXIT_BY" != exit ]; then
        status=ERROR etype="job.$GT_EXIT_BY" edetail="job ended by $GT_EXIT_BY"
    elif [ "$bysig" = true ]; then
        status=ERROR etype="job.signal" edetail="job killed by signal ${sig:-?}"
    elif [ -n "$code" ] && [ "$code" != 0 ]; then
        status=ERROR etype="job.exit_code" edetail="job exited with code $code"
    fi
    [ "$bysig" = true ] || sig=
    gt_emit "$GT_NOW" end "$key" "@status=$status" "@error.type=$etype" "@error.detail=$edetail" \
        "job.exit_code:i=$code" "job.exit_signal:i=$sig" "job.exit_by=$GT_EXIT_BY" \
        "r.utime=$ucpu" "r.stime=$scpu" "job.rss_bytes:i=$rss" \
        "job.hold_reason=$hold" "job.hold_reason_code:i=$hcode" "job.hold_reason_subcode:i=$hsub" \
        "job.wall_s:f=$wall" "job.remote_host=$rhost" && gt_live_nudge
}

gt_main >/dev/null 2>&1
exit 0
