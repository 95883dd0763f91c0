#!/bin/bash
# glidein_tracing cleanup hook: the file named by GLIDEIN_CLEANUP_SCRIPT.
# glidein_startup.sh copies it to $GWMS_DIR/exec/cleanup at download time and runs it at
# exit (glidein_exit), before it removes the work dir: `./NAME /abs/glidein_config`, cwd
# that folder, exit code ignored. On a validation failure this runs right away, before
# the glidein's ~20 min sleep; on SIGTERM it runs after the condor phase was cut short.
# It closes the journal (records, job history, condor phase, teardown, root), exports
# live when configured, and always appends the journal to stderr as a named section.
# Every step is bounded in time; it exits 0 whatever happens.

GT_CONFIG=${1:-}
GT_MAX_HISTORY_BYTES=16000000
GT_MAX_LOG_BYTES=8000000

# gt_bounded SECONDS CMD...: run CMD (stdin, stdout and stderr as given), sent SIGTERM after
# SECONDS (a decimal, e.g. 2.5) and SIGKILL 1 s later; returns CMD's status, 124 when cut.
# With `timeout` on PATH it does the job; without, a shell watchdog (background `sleep`
# + `kill` of CMD's pid) does, and is itself killed and reaped as soon as CMD ends, so
# nothing of ours outlives the command.
gt_bounded() {
    local secs=$1 pid dog rc
    shift
    if command -v timeout >/dev/null 2>&1; then
        timeout -k 1 "$secs" "$@"
        return
    fi
    # an asynchronous command gets /dev/null as stdin unless it is redirected: pass ours on fd 9
    { "$@" <&9 9<&- & } 9<&0
    pid=$!
    # told to stop (TERM), the watchdog kills its own sleep, so no sleep is left behind; its
    # status says whether it had to cut the command
    (
        cut=0
        trap 'kill "$!" 2>/dev/null; exit "$cut"' TERM
        sleep "$secs" &
        wait "$!"
        kill -TERM "$pid" 2>/dev/null || exit 0
        cut=124
        sleep 1 &
        wait "$!"
        kill -KILL "$pid" 2>/dev/null
        exit 124
    ) </dev/null >/dev/null 2>&1 &
    dog=$!
    wait "$pid" 2>/dev/null
    rc=$?
    kill -TERM "$dog" 2>/dev/null
    wait "$dog" && return "$rc"
    [ $? -ne 124 ] || rc=124
    return "$rc"
}

# gt_ms: GT_MS = epoch milliseconds (integer arithmetic for time budgets).
gt_ms() {
    local s f
    gt_now
    s=${GT_NOW%%.*}
    case $GT_NOW in *.*) f=${GT_NOW#*.}000 ;; *) f=000 ;; esac
    GT_MS=$((s * 1000 + 10#${f:0:3}))
}

# gt_secs MS: GT_V = MS milliseconds as decimal seconds (for timeout, sleep and --timeout).
gt_secs() {
    local frac=$(($1 % 1000 + 1000))
    GT_V=$(($1 / 1000)).${frac:1}
}

# gt_epoch ISO8601: GT_V = epoch seconds (GNU date), empty when it cannot parse.
gt_epoch() {
    GT_V=
    [ -n "$1" ] || return 1
    GT_V=$(date -d "$1" +%s 2>/dev/null) || GT_V=
    [ -n "$GT_V" ]
}

# gt_stop_sampler: end our sampler (only if the pid still is our sampler) and wait, at most
# ~2 s, until it is gone: on TERM it ends its `sleep` child and exits, so no process of
# ours outlives the glidein and no sample lands after cleanup's lines.
gt_stop_sampler() {
    local pid ticks i=0
    [ -r "$GT_DIR/sampler.pid" ] || return 0
    read -r pid ticks < "$GT_DIR/sampler.pid" || return 0
    rm -f "$GT_DIR/sampler.pid"
    case $pid in ''|*[!0-9]*) return 0 ;; esac
    gt_snap_pid "$pid" && [ "$GT_R_START" = "$ticks" ] || return 0
    kill "$pid" 2>/dev/null || return 0
    while [ $i -lt 20 ] && gt_snap_pid "$pid" && [ "$GT_R_START" = "$ticks" ]; do
        sleep 0.1
        i=$((i + 1))
    done
}

# Summary fields are separated by US (\037, not whitespace: `read` keeps empty fields).
GT_US=$'\037'

# The per-script records (otr_outlist.list: concatenated <OSGTestResult> elements).
# Appends one `record` line per element to the journal and prints a summary for the
# shell: `last` (last record that is not condor_startup.sh) and `condor` lines.
# LC_ALL=C and non-ASCII bytes as '?': every value stays valid UTF-8 when cut.
GT_AWK_RECORDS='
function clean(v) { gsub(/[\t\r\n]/, " ", v); gsub(/[^ -~]/, "?", v)
                    if (length(v) > 1024) v = substr(v, 1, 1024); return v }
function field(n, v) { v = clean(v); if (v != "") line = line "\t" n "=" v }
function tag(s, t,   a, b) { a = index(s, "<" t ">"); b = index(s, "</" t ">")
                    if (a == 0 || b == 0) return ""; return substr(s, a + length(t) + 2, b - a - length(t) - 2) }
/<OSGTestResult / { inrec = 1; id = $0; sub(/.*<OSGTestResult id="/, "", id); sub(/".*/, "", id)
                    ts = te = st = fail = det = ""; nm = 0; indet = 0; next }
!inrec { next }
/<tStart>/ { ts = tag($0, "tStart") }
/<tEnd>/ { te = tag($0, "tEnd") }
/<status>/ { st = tag($0, "status") }
/<metric / { mn = $0; sub(/.*<metric name="/, "", mn); sub(/".*/, "", mn)
             mv = $0; sub(/^[^>]*>/, "", mv); sub(/<\/metric>.*/, "", mv)
             if (mn == "failure") fail = mv
             else { gsub(/[^A-Za-z0-9_.-]/, "_", mn); nm++; mname[nm] = mn; mval[nm] = mv } }
/<\/detail>/ && indet { s = $0; sub(/<\/detail>.*/, "", s); det = det " " s; indet = 0 }
indet { det = det " " $0 }
/<detail>/ { s = $0; sub(/.*<detail>/, "", s)
             if (index(s, "</detail>")) { sub(/<\/detail>.*/, "", s); det = det " " s } else { indet = 1; det = det " " s } }
/<\/OSGTestResult>/ {
    inrec = 0; gsub(/[ \t\r]+/, " ", det); sub(/^ /, "", det); sub(/ $/, "", det)
    line = "gtj1\t" now "\trecord\t" clean(id)
    field("@status", st); field("@tstart", ts); field("@tend", te); field("@failure", fail)
    for (i = 1; i <= nm; i++) line = line "\t" "m." mname[i] "=" clean(mval[i])   # empty kept
    field("@detail", det)
    if (length(line) > 3999) line = substr(line, 1, 3999)
    if (count < maxrec) { print line >> journal; fflush(journal); count++ }
    summary = clean(id) US st US ts US te US clean(fail) US clean(substr(det, 1, 300))
    if (id == "condor_startup.sh") {
        dur = auto = killed = ""
        for (i = 1; i <= nm; i++) { if (mname[i] == "CondorDuration") dur = mval[i]
            if (mname[i] == "AutoShutdown") auto = mval[i]; if (mname[i] == "CondorKilled") killed = mval[i] }
        condor = summary US clean(dur) US clean(auto) US clean(killed) US nm
    } else last = summary
}
END { if (last != "") print "last" US last; if (condor != "") print "condor" US condor; print "count" US count }
'

# StartdHistoryLog: one `history` line per finished job (split on `*** ` banners).
# @ad = base64 of the job ad reduced to the attributes tracing uses, so one line
# stays under the journal limits (value <= 1024 bytes).
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
    gsub(/[^ -~]/, "?", v); if (length(v) > 300) v = substr(v, 1, 300)
    have[lname] = name " = " v; nattr++
    if (v ~ /^".*"$/) v = substr(v, 2, length(v) - 2)
    gsub(/[\t]/, " ", v); val[lname] = v
}
END { print count }
'

# Shutdown evidence in the daemon logs: prints `max_idle N`, `sigterm`, `daemon_shutdown`.
GT_AWK_SHUTDOWN='
/No resources have been claimed for [0-9]+ seconds/ {
    s = $0; sub(/.*claimed for /, "", s); sub(/ .*/, "", s); idle = s }
/The DaemonShutdown expression .* evaluated to TRUE/ { ds = 1 }
/Got SIGTERM|Got SIGQUIT/ { term = 1 }
END { if (idle != "") print "max_idle " idle; else if (term) print "sigterm"; else if (ds) print "daemon_shutdown" }
'

# gt_records: record lines; sets GT_LAST_* and GT_CONDOR_* from the summary.
gt_records() {
    local otr="$GT_WORK_DIR/otr_outlist.list" out tag rest
    GT_LAST= GT_CONDOR= GT_NREC=0
    [ -r "$otr" ] || { gt_note - "no otr_outlist.list in the work dir"; return 0; }
    gt_now
    out=$(head -c 50000000 "$otr" | gt_bounded 20 env LC_ALL=C awk -v now="$GT_NOW" \
        -v journal="$GT_JOURNAL" -v maxrec="${GT_MAX_SPANS:-2000}" -v US="$GT_US" "$GT_AWK_RECORDS" 2>/dev/null)
    while IFS= read -r rest; do
        tag=${rest%%"$GT_US"*}
        case $tag in
            last) GT_LAST=${rest#*"$GT_US"} ;;
            condor) GT_CONDOR=${rest#*"$GT_US"} ;;
            count) GT_NREC=${rest#*"$GT_US"} ;;
        esac
    done <<< "$out"
}

# gt_history: history lines from log/StartdHistoryLog (the exit hook's fallback).
gt_history() {
    local hist="$GT_WORK_DIR/log/StartdHistoryLog" n
    [ -r "$hist" ] || return 0
    gt_now
    n=$(tail -c "$GT_MAX_HISTORY_BYTES" "$hist" | gt_bounded 20 env LC_ALL=C awk -v now="$GT_NOW" \
        -v journal="$GT_JOURNAL" -v maxrec="${GT_MAX_SPANS:-2000}" "$GT_AWK_HISTORY" 2>/dev/null)
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
    gt_emit "$GT_CONDOR_START" start condor "@name=condor" "@stage=condor.start" "@parent=glidein"
    local status=OK
    [ "$st" = OK ] || status=ERROR
    [ "$status" = ERROR ] || fail= det=
    gt_emit "$GT_CONDOR_END" end condor "@status=$status" "@error.type=$fail" \
        "@error.detail=$det" "condor.duration_s:i=$dur" "condor.auto_shutdown=$auto" \
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

# gt_setup_values: GT_SITE, GT_CPUS, GT_GK as glidein_config held them when setup ended:
# the lines before the marker glidein_startup.sh writes when it starts the last script.
# (GLIDEIN_CPUS is set by glidein_cpus_setup.sh, one of GlideinWMS's after-list scripts,
# which run after every user file: only now are they all known.)
gt_setup_values() {
    local line
    GT_SITE= GT_CPUS= GT_GK=
    while IFS= read -r line; do
        case $line in
            "# --- Last Script values ---"*) break ;;
            "GLIDEIN_Site "*) GT_SITE=${line#* } ;;
            "GLIDEIN_CPUS "*) GT_CPUS=${line#* } ;;
            "GLIDEIN_Gatekeeper "*) GT_GK=${line#* } ;;
        esac
    done < "$GT_CONFIG"
    case $GT_CPUS in ''|*[!0-9]*) GT_CPUS= ;; esac
}

# gt_close_setup: `setup` ends where GlideinWMS's setup ended: when the last script
# (condor_startup.sh) started, or, with no condor phase, at the end of the last per-script
# record (with its failure). No hook of ours runs at that moment (GlideinWMS runs its own
# after-list scripts after every user file), so the records date it.
gt_close_setup() {
    local t=${GT_CONDOR_START:-${GT_LAST_END:-$GT_NOW}}
    gt_setup_values
    gt_emit "$t" attr glidein "glidein.site=$GT_SITE" "glidein.cpus:i=$GT_CPUS" \
        "glidein.gatekeeper=$GT_GK"
    if [ "$GT_OUTCOME" = validation_failed ] && [ -z "$GT_CONDOR" ]; then
        gt_emit "$t" end setup "@status=ERROR" "@error.type=$GT_FAIL_TYPE" "@error.detail=$GT_FAIL_DETAIL"
    else
        gt_emit "$t" end setup "@status=OK"
    fi
}

# Log tails on failure: the lines that explain it, as `note` lines on the failed span with
# @log.source (path under the work dir), @log.part/@log.parts and @log.data (base64 chunks
# of the tail: any bytes survive, one value stays under the journal's limits).
GT_LOG_TAIL_BYTES=8192     # per tail, whatever GLIDEIN_TRACING_LOG_TAIL_LINES says
GT_LOG_TAIL_READ=65536     # bytes read from a log's end before picking lines (huge logs)
GT_LOG_TAIL_CHUNK=1000
GT_LOG_MARK_OK='=== validation OK in '   # glidein_startup.sh, after each script that passed
GT_AWK_AFTER_MARK='
index($0, mark) == 1 && mark != "" { n = 0; next }
{ line[++n] = $0 }
END { for (i = 1; i <= n; i++) print line[i] }
'

# gt_log_tail KEY SOURCE FILE [MARK]: the tail of FILE (after the last line starting with
# MARK, when given): at most GT_LOG_TAIL_LINES lines and GT_LOG_TAIL_BYTES bytes. A file that
# cannot be read gets a note saying why instead (@log.note).
gt_log_tail() {
    local key=$1 source=$2 file=$3 mark=${4:-} why= data part=0 parts
    if [ ! -e "$file" ]; then why="absent"
    elif [ ! -f "$file" ]; then why="not a regular file"
    elif [ ! -r "$file" ]; then why="not readable"
    elif ! command -v base64 >/dev/null 2>&1; then why="no base64 on this node"
    fi
    if [ -z "$why" ]; then
        data=$(tail -c "$GT_LOG_TAIL_READ" "$file" 2>/dev/null \
            | gt_bounded 5 env LC_ALL=C awk -v mark="$mark" "$GT_AWK_AFTER_MARK" 2>/dev/null \
            | tail -n "$GT_LOG_TAIL_LINES" | tail -c "$GT_LOG_TAIL_BYTES" | base64 -w 0 2>/dev/null)
        [ -n "$data" ] || why="empty"
    fi
    gt_now
    if [ -n "$why" ]; then
        gt_emit "$GT_NOW" note "$key" "@log.source=$source" "@log.note=$why"
        return 0
    fi
    parts=$(( (${#data} + GT_LOG_TAIL_CHUNK - 1) / GT_LOG_TAIL_CHUNK ))
    while [ "$part" -lt "$parts" ]; do
        gt_emit "$GT_NOW" note "$key" "@log.source=$source" "@log.part=$part" "@log.parts=$parts" \
            "@log.data=${data:$((part * GT_LOG_TAIL_CHUNK)):$GT_LOG_TAIL_CHUNK}"
        part=$((part + 1))
    done
}

# gt_log_tails: only for a glidein that did not end ok, the log that explains it: a failed
# validation script's own output (GlideinWMS's copies logs/<uuid>/<uuid>.err|.out, from the
# last script that passed), the HTCondor daemon logs of a failed condor phase, else (an
# abnormal end) the glidein's stderr.
gt_log_tails() {
    case ${GT_LOG_TAIL_LINES:-50} in ''|0|*[!0-9]*) return 0 ;; esac
    case $GT_OUTCOME in ok) return 0 ;; esac
    local id st cst uuid logdir rel f starter
    gt_cfg_read "$GT_CONFIG" GLIDEIN_UUID GLIDEIN_LOGDIR
    gt_get GLIDEIN_UUID; uuid=$GT_V
    gt_get GLIDEIN_LOGDIR; logdir=${GT_V:-logs/$uuid}
    rel=${logdir%/}/$uuid
    case $rel in /*) ;; *) rel=$GT_WORK_DIR/$rel ;; esac
    IFS="$GT_US" read -r id st _ <<< "$GT_LAST"
    IFS="$GT_US" read -r _ cst _ <<< "$GT_CONDOR"
    if [ "$GT_OUTCOME" = validation_failed ] && [ "$st" = ERROR ]; then
        gt_log_tail "validation/$id" "${rel#"$GT_WORK_DIR"/}.err" "$rel.err" "$GT_LOG_MARK_OK"
        gt_log_tail "validation/$id" "${rel#"$GT_WORK_DIR"/}.out" "$rel.out" "$GT_LOG_MARK_OK"
    elif [ -n "$GT_CONDOR" ] && [ "$cst" = ERROR ]; then
        starter=$(ls -t "$GT_WORK_DIR"/log/StarterLog* 2>/dev/null | head -n 1)
        for f in "$GT_WORK_DIR/log/MasterLog" "$GT_WORK_DIR/log/StartdLog" "${starter:-$GT_WORK_DIR/log/StarterLog}"; do
            gt_log_tail condor "${f#"$GT_WORK_DIR"/}" "$f"
        done
    else
        gt_log_tail glidein "${rel#"$GT_WORK_DIR"/}.err" "$rel.err"
    fi
}

# gt_export: live export with our CLI, only when configured. Everything here (the Python
# probe, then the export) fits in GLIDEIN_TRACING_EXPORT_TIMEOUT from the start of the step:
# the probe may use half of it (at most 10 s), the export gets what remains.
gt_export() {
    case ${GT_EXPORT_MODE:-forward} in live|both) ;; *) return 0 ;; esac
    [ -n "${GT_ENDPOINT:-}" ] || { gt_note - "live export asked but no GLIDEIN_TRACING_ENDPOINT"; return 0; }
    local py=${GT_PYTHON:-python3} rc where start budget probe left reserve
    gt_url_public "$GT_ENDPOINT"
    where=$GT_V
    command -v "$py" >/dev/null 2>&1 || { gt_note - "live export: no $py"; return 0; }
    gt_ms
    start=$GT_MS
    budget=$((GT_EXPORT_TIMEOUT * 1000))
    probe=$((budget / 2))
    [ "$probe" -le 10000 ] || probe=10000
    gt_secs "$probe"
    if ! gt_bounded "$GT_V" "$py" -c 'import sys; assert sys.version_info >= (3, 10); import opentelemetry.sdk, glidein_tracing' \
            >/dev/null 2>&1 </dev/null; then
        gt_note - "live export: $py is not >= 3.10 with opentelemetry-sdk and glidein_tracing (or did not answer in time)"
        return 0
    fi
    gt_ms
    left=$((budget - (GT_MS - start)))
    [ "$left" -gt 0 ] || { gt_note - "live export: GLIDEIN_TRACING_EXPORT_TIMEOUT used up by the Python check"; return 0; }
    # the export's own deadline leaves time for Python to start and exit before the kill
    reserve=$((left / 4))
    [ "$reserve" -le 1000 ] || reserve=1000
    # mode both: the Factory sends the root (it knows the submission time); live: we do
    local skip= mark=all
    [ "$GT_EXPORT_MODE" = both ] && { skip=--skip-root; mark=all-but-root; }
    gt_secs $((left - reserve))
    local export_s=$GT_V
    gt_secs "$left"
    # the endpoint goes in the environment, not on the command line (which anyone on the node
    # can read); OTEL_EXPORTER_OTLP_HEADERS and the like pass through as the SDK reads them
    GLIDEIN_TRACING_ENDPOINT=$GT_ENDPOINT gt_bounded "$GT_V" "$py" -m glidein_tracing export \
        --journal "$GT_JOURNAL" --timeout "$export_s" \
        --service-name "${GT_SERVICE_NAME:-glidein}" \
        $skip >"$GT_DIR/export.log" 2>&1 </dev/null
    rc=$?
    case $rc in
        # tell the Factory forwarder what went out already: it sends only the rest
        0) gt_now; gt_emit "$GT_NOW" note - "@msg=live export to $where done" "@exported=$mark" ;;
        4) gt_note - "live export: sampled out (GLIDEIN_TRACING_SAMPLING_RATIO)" ;;
        124) gt_note - "live export to $where cut at GLIDEIN_TRACING_EXPORT_TIMEOUT=$GT_EXPORT_TIMEOUT s; the Factory forwarder will send" ;;
        *) gt_note - "live export to $where failed (exit $rc); the Factory forwarder will send" ;;
    esac
}

# gt_section: the journal on stderr as a named section, the glidein's own format
# (condor_startup.sh cond_print_log: NAME, the gzip|uuencode line, base64 of gzip).
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
    . "$lib" 2>/dev/null || return 0
    if ! gt_setup_env "$GT_CONFIG"; then
        gt_msg "no writable journal: nothing recorded at cleanup"
        return 0
    fi
    GT_KNOB_QUIET=1
    local knobs
    gt_get GLIDEIN_TRACING_KNOBS; knobs=$GT_V
    # shellcheck disable=SC1090
    [ -r "$knobs" ] && . "$knobs" 2>/dev/null && gt_knobs_load
    gt_stop_sampler
    gt_sample "$GT_STARTUP_PID"      # a reading inside teardown: its CPU is cleanup's
    gt_records
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
    gt_export
    gt_section
}

gt_main </dev/null >/dev/null
exit 0
