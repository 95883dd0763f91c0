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

# The job's phases (docs/user-phases.md): the spool the phase command wrote in the job's
# scratch dir, checked line by line (one awk over at most GT_PHASE_READ bytes) and appended to
# the journal as `start`/`end`/`note` lines on keys phase/<span id>/<job key> (docs/journal.md).
# Names and marks are redacted (gt_redact, in the library) before they are written.
# At most GT_PHASE_MAX phases and GT_PHASE_MARKS marks a job, names cut at GT_PHASE_NAME bytes,
# all counted on the job span (job.phases.*). Whether the ids belong to this job is the
# converter's check (glidein_tracing/phases.py).
GT_PHASE_MAX=500
GT_PHASE_MARKS=500
GT_PHASE_NAME=128
GT_PHASE_READ=4000000
# shellcheck disable=SC2016  # an awk program: its $ are awk's
GT_AWK_PHASES='
function clean(v, max,   c) {
    if (length(v) > max) { v = substr(v, 1, max); cut_names++ }
    gsub(/\\t/, "\t", v)     # the phase command wrote a TAB as \t
    v = gt_redact(v)
    gsub(/\t/, " ", v)
    c = gsub(/[^ -~]/, "?", v)
    return v
}
function num(v) { return v ~ /^u?[0-9]+(\.[0-9]+)?$/ && length(v) < 24 }
# a time: epoch seconds, or u<seconds since boot> (the phase command under shells with no
# clock builtin), made epoch with the offset the hook read (boot = epoch now - uptime now)
function when(v) { return v ~ /^u/ ? sprintf("%.2f", substr(v, 2) + boot) : v }
function hex(v, n) { return length(v) == n && v !~ /[^0-9a-f]/ }
function digits(v, n) { return v != "" && length(v) <= n && v !~ /[^0-9]/ }
function int_or_empty(v) { return v == "" || digits(v, 15) }
BEGIN { job = ENVIRON["GT_P_JOB"]; boot = now - up }
function out(line) { print line >> journal; fflush(journal) }
{ bytes += length($0) + 1 }
$1 != "gtp1" { rejected++; next }
$2 == "start" && NF == 7 && num($3) && hex($4, 32) && hex($5, 16) && hex($6, 16) {
    if ($5 in started) { rejected++; next }
    if (kept >= maxphases) { cut++; next }
    started[$5] = 1; kept++
    out("gtj1\t" when($3) "\tstart\tphase/" $5 "/" job "\t@name=" clean($7, maxname) "\t@stage=job.phase\t@phase.trace=" $4 "\t@phase.parent=" $6)
    next
}
$2 == "end" && NF == 10 && num($3) && hex($4, 32) && ($5 in started) && !($5 in ended) && digits($6, 3) \
        && ($7 == "" || digits($7, 2)) && int_or_empty($8) && int_or_empty($9) && int_or_empty($10) {
    ended[$5] = 1
    st = "OK"; et = ""; ed = ""
    if ($7 != "") { st = "ERROR"; et = "job.phase.signal"; ed = "killed by signal " $7 }
    else if ($6 != 0) { st = "ERROR"; et = "job.phase.exit_code"; ed = "exited with code " $6 }
    line = "gtj1\t" when($3) "\tend\tphase/" $5 "/" job "\t@status=" st
    if (et != "") line = line "\t@error.type=" et "\t@error.detail=" ed
    if ($7 != "") line = line "\tjob.phase.signal:i=" $7; else line = line "\tjob.phase.exit_code:i=" $6
    if ($8 != "") line = line sprintf("\tr.utime=%.2f\tr.stime=%.2f", $8 / hz, $9 / hz)
    if ($10 != "") line = line "\tr.rss_peak=" $10
    out(line)
    next
}
$2 == "mark" && NF == 6 && num($3) && hex($4, 32) && hex($5, 16) {
    if (marks >= maxmarks) { cut_marks++; next }
    marks++
    out("gtj1\t" when($3) "\tnote\tphase/" $5 "/" job "\t@phase.trace=" $4 "\t@phase.mark=" clean($6, 512))
    next
}
{ rejected++ }
END {
    line = "gtj1\t" now "\tattr\t" job "\tjob.phases:i=" kept
    if (cut) line = line "\tjob.phases.cut:i=" cut
    if (cut_marks) line = line "\tjob.phases.marks_cut:i=" cut_marks
    if (rejected) line = line "\tjob.phases.rejected_lines:i=" rejected
    if (cut_names) line = line "\tjob.phases.names_cut:i=" cut_names
    if (bytes >= maxread) line = line "\tjob.phases.spool_cut_bytes:i=" maxread
    out(line)
}'

# gt_phases KEY: the job's phases into the journal, or a note saying why they were ignored.
# The spool is beside the job's copy of the phase command, in the one directory the wrapper
# made under .glidein_tracing (a random name). A job that never ran the phase command has no
# spool: nothing is done.
gt_phases() {
    local dir="${_CONDOR_SCRATCH_DIR:-$PWD}/.glidein_tracing" why="" spool spools
    [ -e "$dir" ] || [ -L "$dir" ] || return 0
    spools=("$dir"/*/phases.gtp)
    spool=${spools[0]}
    [ -e "$spool" ] || [ -L "$spool" ] || [ -L "$dir" ] || return 0
    if [ -L "$dir" ] || [ ! -d "$dir" ]; then why="its directory is not a directory"
    elif [ ${#spools[@]} -gt 1 ]; then why="more than one spool (the wrapper makes one)"
    elif [ -L "$spool" ]; then why="the spool is a symbolic link"
    elif [ -L "${spool%/*}" ]; then why="the spool's directory is a symbolic link"
    elif [ ! -f "$spool" ]; then why="the spool is not a regular file"
    elif [ ! -O "$spool" ] || [ ! -O "$dir" ] || [ ! -O "${spool%/*}" ]; then why="the spool belongs to another user"
    elif [ ! -r "$spool" ]; then why="the spool is not readable"
    fi
    if [ -n "$why" ]; then
        gt_note "$1" "job phases ignored: $why"
        return 0
    fi
    local up rest
    gt_now
    read -r up rest < /proc/uptime 2>/dev/null || up=0
    head -c "$GT_PHASE_READ" < "$spool" 2>/dev/null | GT_P_JOB=$1 LC_ALL=C awk -F '\t' \
        -v journal="$GT_JOURNAL" -v now="$GT_NOW" -v up="$up" -v hz="${GT_HZ:-100}" -v maxphases="$GT_PHASE_MAX" \
        -v maxmarks="$GT_PHASE_MARKS" -v maxname="$GT_PHASE_NAME" -v maxread="$GT_PHASE_READ" \
        "$GT_AWK_REDACT$GT_AWK_PHASES" 2>/dev/null
}

# gt_job_log_tail KEY FAILED OUT ERR: when the job failed and GLIDEIN_TRACING_JOB_LOG_TAIL_LINES
# is not 0, the last lines of its stdout and stderr (the ad's Out/Err when they name a file
# directly in the scratch dir, else _condor_stdout/_condor_stderr) as log-tail notes on the
# job span.
gt_job_log_tail() {
    [ "$2" = ERROR ] || return 0
    local lines=0 scratch="${_CONDOR_SCRATCH_DIR:-$PWD}" name file which
    gt_get GLIDEIN_TRACING_KNOBS
    # shellcheck disable=SC1090  # the knob reader's path is found at run time
    if [ -n "$GT_V" ] && [ -r "$GT_V" ] && . "$GT_V" 2>/dev/null; then
        GT_KNOB_QUIET=1 gt_knobs_load
        lines=${GT_JOB_LOG_TAIL_LINES:-0}
    fi
    case $lines in ''|0|*[!0-9]*) return 0 ;; esac
    for which in "stdout:$3" "stderr:$4"; do
        name=${which#*:}
        case $name in "$scratch"/*) name=${name#"$scratch"/} ;; esac
        # a plain file name in the scratch dir only: a path could lead through a directory
        # the job linked elsewhere (gt_log_tail refuses a file that is itself a link)
        case $name in ""|*/*|.|..) name="_condor_${which%%:*}" ;; esac
        file="$scratch/$name"
        gt_log_tail "$1" "$name" "$file" "$lines"
    done
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
        remotewallclocktime remotehost lastremotehost out err)
    local n v gid="" cluster="" proc="" code="" bysig="" sig="" ucpu="" scpu="" rss=""
    local hold="" hcode="" hsub="" wall="" rhost="" out="" err=""
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
            out) out=$v ;;
            err) err=$v ;;
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
    # the job's own phases and, when it failed, its log tail: before the end line, so that
    # live export (woken by the end) finds them; the job ended when this hook started
    local ended=$GT_NOW
    gt_phases "$key"
    gt_job_log_tail "$key" "$status" "$out" "$err"
    gt_emit "$ended" end "$key" "@status=$status" "@error.type=$etype" "@error.detail=$edetail" \
        "job.exit_code:i=$code" "job.exit_signal:i=$sig" "job.exit_by=$GT_EXIT_BY" \
        "r.utime=$ucpu" "r.stime=$scpu" "job.rss_bytes:i=$rss" \
        "job.hold_reason=$hold" "job.hold_reason_code:i=$hcode" "job.hold_reason_subcode:i=$hsub" \
        "job.wall_s:f=$wall" "job.remote_host=$rhost" && gt_live_nudge
}

gt_main >/dev/null 2>&1
exit 0
