#!/bin/bash
# glidein_tracing cleanup hook: the file named by GLIDEIN_CLEANUP_SCRIPT.
# glidein_startup.sh copies it to $GWMS_DIR/exec/cleanup at download time and runs it at
# exit (glidein_exit), before it removes the work dir: `./NAME /abs/glidein_config`, cwd
# that folder, exit code ignored. On a validation failure this runs right away, before
# the glidein's ~20 min sleep; on SIGTERM it runs after the condor phase was cut short
# (glidein_startup.sh traps SIGTERM only once its last script started: an earlier SIGTERM
# kills it, and this never runs).
# It closes the journal (records, job history, condor phase, teardown, root), exports
# live when configured, and always appends the journal to stderr as a named section.
# Every step is bounded in time; it exits 0 whatever happens.

GT_CONFIG=${1:-}
GT_MAX_HISTORY_BYTES=16000000
GT_MAX_LOG_BYTES=8000000

# gt_stop_sampler: end our sampler (only if the pid still is our sampler) and wait until it is
# gone: on TERM it exits within a second, so no process of ours outlives the
# glidein and no sample lands after cleanup's lines. A sampler exporting live first finishes
# that export (bounded by GLIDEIN_TRACING_EXPORT_TIMEOUT) and records it: it gets that long
# and 2 s more, others ~2 s; one still there then is killed.
gt_stop_sampler() {
    local pid ticks mode i=0 tenths=20
    [ -r "$GT_DIR/sampler.pid" ] || return 0
    read -r pid ticks mode < "$GT_DIR/sampler.pid" || return 0
    rm -f "$GT_DIR/sampler.pid"
    case $pid in ''|*[!0-9]*) return 0 ;; esac
    gt_alive "$pid" "$ticks" || return 0
    [ "$mode" != live ] || tenths=$(( (${GT_EXPORT_TIMEOUT:-5} + 2) * 10 ))
    kill "$pid" 2>/dev/null || return 0
    while [ $i -lt "$tenths" ] && gt_alive "$pid" "$ticks"; do
        sleep 0.1
        i=$((i + 1))
    done
    if gt_alive "$pid" "$ticks"; then
        kill -KILL "$pid" 2>/dev/null
        gt_note - "the sampler did not stop in time: killed"
    fi
}


# StartdHistoryLog: one `history` line per finished job (split on `*** ` banners).
# @ad = base64 of the job ad reduced to the attributes tracing uses, so one line
# stays under the journal limits (value <= 1024 bytes); each value redacted (gt_redact).
# shellcheck disable=SC2016  # an awk program: its $ are awk's
GT_AWK_HISTORY='
BEGIN { b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
        for (i = 32; i < 127; i++) ord[sprintf("%c", i)] = i; ord["\n"] = 10
        n = split("globaljobid clusterid procid traceparent owner acctgroup accountinggroup " \
                  "exitcode exitbysignal exitsignal jobstatus remoteusercpu remotesyscpu " \
                  "residentsetsize requestcpus requestmemory requestdisk jobstartdate " \
                  "jobcurrentstartdate jobcurrentstartexecutingdate completiondate " \
                  "enteredcurrentstatus remotewallclocktime holdreasoncode lastremotehost " \
                  "remotehost holdreason", prio, " ")
        for (i = 1; i <= n; i++) rank[prio[i]] = i }
function enc(s,   out, i, c1, c2, c3, v, len) {
    out = ""; len = length(s)
    for (i = 1; i <= len; i += 3) {
        c1 = ord[substr(s, i, 1)]; c2 = (i + 1 <= len) ? ord[substr(s, i + 1, 1)] : 0
        c3 = (i + 2 <= len) ? ord[substr(s, i + 2, 1)] : 0
        v = c1 * 65536 + c2 * 256 + c3
        out = out substr(b64, int(v / 262144) % 64 + 1, 1) substr(b64, int(v / 4096) % 64 + 1, 1)
        out = out ((i + 1 <= len) ? substr(b64, int(v / 64) % 64 + 1, 1) : "=")
        out = out ((i + 2 <= len) ? substr(b64, v % 64 + 1, 1) : "=")
    }
    return out }
function flush_ad(   i, text, key) {
    if (count >= maxrec) { nattr = 0; return }
    text = ""
    for (i = 1; i <= n; i++) if (prio[i] in have) {
        if (length(text) + length(have[prio[i]]) + 1 > 750) continue
        text = text have[prio[i]] "\n" }
    key = ""
    if ("globaljobid" in val) key = val["globaljobid"]
    else if (("clusterid" in val) && ("procid" in val)) key = val["clusterid"] "." val["procid"]
    if (key != "") {
        line = "gtj1\t" now "\thistory\tjob/" key "\t@ad=" enc(text)
        if (length(line) <= 3999) { print line >> journal; fflush(journal); count++ } }
    split("", have); split("", val); nattr = 0 }
/^\*\*\* / { flush_ad(); next }
{
    eq = index($0, "="); if (eq < 2) next
    name = substr($0, 1, eq - 1); gsub(/[ \t]/, "", name); lname = tolower(name)
    if (!(lname in rank)) next
    v = substr($0, eq + 1); sub(/^[ \t]+/, "", v); sub(/[ \t\r]+$/, "", v)
    v = gt_redact(v); gsub(/[^ -~]/, "?", v); if (length(v) > 300) v = substr(v, 1, 300)
    have[lname] = name " = " v; nattr++
    if (v ~ /^".*"$/) v = substr(v, 2, length(v) - 2)
    gsub(/[\t]/, " ", v); val[lname] = v
}
END { print count }
'

# Shutdown evidence in the daemon logs: prints `max_idle N`, `sigterm`, `daemon_shutdown`.
# shellcheck disable=SC2016  # an awk program: its $ are awk's
GT_AWK_SHUTDOWN='
/No resources have been claimed for [0-9]+ seconds/ {
    s = $0; sub(/.*claimed for /, "", s); sub(/ .*/, "", s); idle = s }
/The DaemonShutdown expression .* evaluated to TRUE/ { ds = 1 }
/Got SIGTERM|Got SIGQUIT/ { term = 1 }
END { if (idle != "") print "max_idle " idle; else if (term) print "sigterm"; else if (ds) print "daemon_shutdown" }
'

# gt_history: history lines from log/StartdHistoryLog (the exit hook's fallback).
gt_history() {
    local hist="$GT_WORK_DIR/log/StartdHistoryLog" n
    [ -r "$hist" ] || return 0
    gt_now
    n=$(tail -c "$GT_MAX_HISTORY_BYTES" "$hist" | gt_bounded 20 env LC_ALL=C awk -v now="$GT_NOW" \
        -v journal="$GT_JOURNAL" -v maxrec="${GT_MAX_SPANS:-2000}" "$GT_AWK_REDACT$GT_AWK_HISTORY" 2>/dev/null)
    [ -n "$n" ] || gt_note - "could not read StartdHistoryLog"
}

# gt_shutdown_reason: GT_REASON / GT_IDLE_S from the StartdLog and MasterLog.
gt_shutdown_reason() {
    local f out
    GT_REASON=unknown GT_IDLE_S=
    out=$(for f in "$GT_WORK_DIR/log/StartdLog" "$GT_WORK_DIR/log/MasterLog"; do
              [ -r "$f" ] && tail -c "$GT_MAX_LOG_BYTES" "$f"
          done | gt_bounded 10 env LC_ALL=C awk "$GT_AWK_SHUTDOWN" 2>/dev/null)
    case $out in
        "max_idle "*) GT_REASON=max_idle GT_IDLE_S=${out#* } ;;
        sigterm|daemon_shutdown) GT_REASON=$out ;;
    esac
}

# gt_glog_base: GT_V = the path, without .out/.err, of glidein_startup.sh's copies of its
# stdout and stderr (glog_init: GLIDEIN_LOGDIR/<uuid>.out|.err, in the work dir).
gt_glog_base() {
    local uuid logdir
    gt_cfg_read "$GT_CONFIG" GLIDEIN_UUID GLIDEIN_LOGDIR
    gt_get GLIDEIN_UUID; uuid=$GT_V
    gt_get GLIDEIN_LOGDIR; logdir=${GT_V:-logs/$uuid}
    GT_V=${logdir%/}/$uuid
    case $GT_V in /*) ;; *) GT_V=$GT_WORK_DIR/$GT_V ;; esac
}

# gt_condor_started: GT_STARTED = true when condor_startup.sh printed `=== Condor starting`
# (the copy of the glidein's stdout), false when that copy holds no such line, empty when
# there is no copy. A SIGTERM before that banner kills condor_startup.sh (its traps come
# after it): the record exists, HTCondor never started (GlideinWMS: condor_started 0).
gt_condor_started() {
    GT_STARTED=
    gt_glog_base
    [ -r "$GT_V.out" ] || return 0
    if tail -c 16000000 "$GT_V.out" 2>/dev/null | gt_bounded 10 grep -q -F '=== Condor starting'; then
        GT_STARTED=true
    else
        GT_STARTED=false
    fi
}

# gt_condor_phase: start/end of `condor` from the condor_startup.sh record.
# The record of a condor phase cut by SIGTERM has no metrics (condor_startup.sh never
# reached its error_gen): that, or the daemons logging the signal, means `sigterm`.
gt_condor_phase() {
    local id st ts te fail det dur auto killed nm
    [ -n "$GT_CONDOR" ] || return 0
    IFS="$GT_US" read -r id st ts te fail det dur auto killed nm <<< "$GT_CONDOR"
    gt_shutdown_reason
    if [ "$GT_REASON" != max_idle ] && [ "${nm:-0}" = 0 ] && [ "$st" = OK ]; then
        GT_REASON=sigterm
    fi
    GT_TERMINATED=
    [ "$GT_REASON" != sigterm ] || GT_TERMINATED=1
    gt_epoch "$ts" && GT_CONDOR_START=$GT_V || GT_CONDOR_START=
    gt_epoch "$te" && GT_CONDOR_END=$GT_V || GT_CONDOR_END=
    [ -n "$GT_CONDOR_START" ] && [ -n "$GT_CONDOR_END" ] || return 0
    case $dur in ''|*[!0-9]*) dur=$((GT_CONDOR_END - GT_CONDOR_START)) ;; esac
    # the sampler wrote `start condor` when it closed setup early (live export): once is enough
    [ -n "$GT_SETUP_CLOSED" ] \
        || gt_emit "$GT_CONDOR_START" start condor "@name=condor" "@stage=condor.start" "@parent=glidein"
    local status=OK
    [ "$st" = OK ] || status=ERROR
    [ "$status" = ERROR ] || fail= det=
    gt_condor_started
    gt_emit "$GT_CONDOR_END" end condor "@status=$status" "@error.type=$fail" \
        "@error.detail=$det" "condor.duration_s:i=$dur" "condor.started:b=$GT_STARTED" "condor.auto_shutdown=$auto" \
        "condor.killed=$killed" "glidein.shutdown.reason=$GT_REASON" \
        "glidein.shutdown.idle_s:i=$GT_IDLE_S"
}

# gt_outcome: GT_OUTCOME and GT_EXIT (the glidein's exit code is not in glidein_config
# yet when cleanup runs: infer it from the last per-script record).
gt_outcome() {
    local id st ts te fail det cst
    GT_OUTCOME=incomplete GT_EXIT= GT_FAIL_TYPE= GT_FAIL_DETAIL= GT_LAST_END=
    IFS="$GT_US" read -r id st ts te fail det _ <<< "$GT_LAST"
    gt_epoch "$te" && GT_LAST_END=$GT_V
    IFS="$GT_US" read -r _ cst _ <<< "$GT_CONDOR"
    if [ "$st" = ERROR ]; then
        GT_OUTCOME=validation_failed GT_EXIT=1 GT_FAIL_TYPE=$fail GT_FAIL_DETAIL="$id: $det"
    elif [ -n "$GT_CONDOR" ] && [ "$cst" = ERROR ]; then
        IFS="$GT_US" read -r id st ts te fail det _ <<< "$GT_CONDOR"
        GT_OUTCOME=validation_failed GT_EXIT=1 GT_FAIL_TYPE=$fail GT_FAIL_DETAIL="$id: $det"
    elif [ -n "${GT_TERMINATED:-}" ]; then
        GT_OUTCOME=terminated GT_EXIT=0
    elif [ -n "$GT_CONDOR" ]; then
        GT_OUTCOME=ok GT_EXIT=0
    fi
}

# gt_close_setup: `setup` ends where GlideinWMS's setup ended: when the last script
# (condor_startup.sh) started, or, with no condor phase, at the end of the last per-script
# record (with its failure). No hook of ours runs at that moment (GlideinWMS runs its own
# after-list scripts after every user file), so the records date it. When the sampler closed
# setup while the glidein ran (setup_closed), that stands.
gt_close_setup() {
    local t=${GT_CONDOR_START:-${GT_LAST_END:-$GT_NOW}}
    [ -z "$GT_SETUP_CLOSED" ] || return 0
    if [ "$GT_OUTCOME" = validation_failed ] && [ -z "$GT_CONDOR" ]; then
        gt_end_setup "$t" "@status=ERROR" "@error.type=$GT_FAIL_TYPE" "@error.detail=$GT_FAIL_DETAIL"
    else
        gt_end_setup "$t" "@status=OK"
    fi
}

# Log tails on failure (gt_log_tail, in the library): the lines that explain it, as `note`
# lines on the failed span.
GT_LOG_MARK_OK='=== validation OK in '   # glidein_startup.sh, on stderr after each script that passed
GT_LOG_MARK_RUN='Executing (flags:'       # glidein_startup.sh, on stdout before each script

# gt_log_tails: only for a glidein that did not end ok, the log that explains it: a failed
# validation script's own output (GlideinWMS's copies logs/<uuid>/<uuid>.err|.out, from the
# last script that passed), the HTCondor daemon logs of a failed condor phase, else (an
# abnormal end) the glidein's stderr.
gt_log_tails() {
    case ${GT_LOG_TAIL_LINES:-50} in ''|0|*[!0-9]*) return 0 ;; esac
    case $GT_OUTCOME in ok) return 0 ;; esac
    local id st cst rel f starter
    gt_glog_base; rel=$GT_V
    IFS="$GT_US" read -r id st _ <<< "$GT_LAST"
    IFS="$GT_US" read -r _ cst _ <<< "$GT_CONDOR"
    if [ "$GT_OUTCOME" = validation_failed ] && [ "$st" = ERROR ]; then
        gt_log_tail "validation/$id" "${rel#"$GT_WORK_DIR"/}.err" "$rel.err" "$GT_LOG_TAIL_LINES" "$GT_LOG_MARK_OK"
        gt_log_tail "validation/$id" "${rel#"$GT_WORK_DIR"/}.out" "$rel.out" "$GT_LOG_TAIL_LINES" "" "$GT_LOG_MARK_RUN" "/${id##*/}"
    elif [ -n "$GT_CONDOR" ] && [ "$cst" = ERROR ]; then
        # shellcheck disable=SC2012  # HTCondor names its logs; ls -t gives the newest
        starter=$(ls -t "$GT_WORK_DIR"/log/StarterLog* 2>/dev/null | head -n 1)
        for f in "$GT_WORK_DIR/log/MasterLog" "$GT_WORK_DIR/log/StartdLog" "${starter:-$GT_WORK_DIR/log/StarterLog}"; do
            gt_log_tail condor "${f#"$GT_WORK_DIR"/}" "$f" "$GT_LOG_TAIL_LINES"
        done
    else
        gt_log_tail glidein "${rel#"$GT_WORK_DIR"/}.err" "$rel.err" "$GT_LOG_TAIL_LINES"
    fi
}

# gt_section: the journal on stderr as a named section, the glidein's own format
# (condor_startup.sh cond_print_log: NAME, the gzip|uuencode line, base64 of gzip). NAME is
# core/sections.py's JOURNAL_SECTION (tests/test_hooks_cleanup.py reads it back by that name).
gt_section() {
    [ -r "$GT_JOURNAL" ] || return 0
    {
        printf 'GlideinTracingJournal\n======== gzip | uuencode =============\n'
        if command -v base64 >/dev/null 2>&1; then
            printf 'begin-base64 644 -\n'
            gzip -c "$GT_JOURNAL" | base64
            printf '====\n'
        elif command -v uuencode >/dev/null 2>&1; then
            gzip -c "$GT_JOURNAL" | uuencode -m -
        else
            printf 'begin-base64 644 -\nERROR_FAILED_ENCODING\n====\n'
        fi
    } >&2
}

gt_main() {
    [ -n "$GT_CONFIG" ] && [ -r "$GT_CONFIG" ] || return 0
    local lib
    lib=$(grep '^GLIDEIN_TRACING_LIB ' "$GT_CONFIG" 2>/dev/null | tail -n 1 | cut -d ' ' -f 2-)
    # no library recorded: the setup hook disabled tracing (or never ran): nothing to close
    [ -n "$lib" ] && [ -r "$lib" ] || return 0
    # shellcheck disable=SC1090
    . "$lib" 2>/dev/null && . "${lib%/*}/gconditional_TRACING_stages.sh" 2>/dev/null || return 0
    if ! gt_setup_env "$GT_CONFIG"; then
        gt_msg "no writable journal: nothing recorded at cleanup"
        return 0
    fi
    # shellcheck disable=SC2034  # read by gt_knobs_load (gconditional_TRACING_lib.sh)
    GT_KNOB_QUIET=1
    local knobs
    gt_get GLIDEIN_TRACING_KNOBS; knobs=$GT_V
    # shellcheck disable=SC1090
    [ -r "$knobs" ] && . "$knobs" 2>/dev/null && gt_knobs_load
    gt_stop_sampler
    gt_sample "$GT_STARTUP_PID"      # a reading inside teardown: its CPU is cleanup's
    # records the sampler journaled when it closed setup early are not repeated
    GT_SETUP_CLOSED=
    [ -r "$GT_DIR/setup_closed" ] && read -r GT_SETUP_CLOSED < "$GT_DIR/setup_closed"
    case $GT_SETUP_CLOSED in *[!0-9]*) GT_SETUP_CLOSED= ;; esac
    gt_records "${GT_SETUP_CLOSED:-0}"
    gt_history
    GT_TERMINATED=
    gt_condor_phase
    gt_outcome
    gt_now
    gt_close_setup
    gt_log_tails
    local status=OK
    [ "$GT_OUTCOME" != validation_failed ] || status=ERROR
    gt_emit "${GT_CONDOR_END:-${GT_LAST_END:-$GT_NOW}}" start teardown "@name=teardown" \
        "@stage=teardown" "@parent=glidein"
    gt_now
    gt_emit_snap "$GT_NOW" end teardown "$GT_STARTUP_PID" "@status=OK" \
        "glidein.exit_code:i=$GT_EXIT" "glidein.outcome=$GT_OUTCOME"
    gt_emit "$GT_NOW" end glidein "@status=$status" \
        "@error.type=$GT_FAIL_TYPE" "@error.detail=$GT_FAIL_DETAIL" \
        "glidein.outcome=$GT_OUTCOME" "glidein.exit_code:i=$GT_EXIT" "glidein.records:i=$GT_NREC"
    gt_export rest
    gt_section
}

gt_main </dev/null >/dev/null
exit 0
