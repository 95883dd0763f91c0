# shellcheck shell=bash
# glidein_tracing: the stages GlideinWMS's own records date, and live export. Sourced (bash)
# by the cleanup hook at exit and by the sampler, the setup hook's background process, while
# the glidein runs. Setup ends when glidein_startup.sh starts its last script; no hook of ours
# runs then, so the per-script records (otr_outlist.list) date it. With live export the
# sampler closes setup as soon as glidein_startup.sh has marked glidein_config for the last
# script, sends it, then each finished job; cleanup closes whatever is left and sends the
# rest. Nothing here exits; every command is bounded.

GT_SETUP_MARK='# --- Last Script values ---'   # glidein_startup.sh, before its last script
GT_LIVE_GAP=5          # seconds at least between two exports of ended stages (bursts go as one)
GT_LIVE_MAX_FAILS=3    # failed exports in a row before the sampler stops exporting

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
    # a trap (the sampler's TERM or USR1) interrupts `wait`: wait again while CMD lives
    while :; do
        wait "$pid" 2>/dev/null
        rc=$?
        kill -0 "$pid" 2>/dev/null || break
    done
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

# Summary fields are separated by US (\037, not whitespace: `read` keeps empty fields).
GT_US=$'\037'

# The per-script records (otr_outlist.list: concatenated <OSGTestResult> elements).
# Appends one `record` line per element to the journal and prints a summary for the
# shell: `last` (last record that is not condor_startup.sh) and `condor` lines.
# LC_ALL=C and non-ASCII bytes as '?': every value stays valid UTF-8 when cut; every value
# redacted (gt_redact: a script's detail may print its command line).
# shellcheck disable=SC2016  # an awk program: its $ are awk's
GT_AWK_RECORDS='
function clean(v) { v = gt_redact(v); gsub(/[\t\r\n]/, " ", v); gsub(/[^ -~]/, "?", v)
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
    if (count < maxrec) { if (count >= skip) { print line >> journal; fflush(journal) }; count++ }
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

# gt_records [SKIP]: record lines (but for the first SKIP records: journaled already when
# setup closed early); sets GT_LAST, GT_CONDOR and GT_NREC (records journaled in all).
gt_records() {
    local otr="$GT_WORK_DIR/otr_outlist.list" out tag rest
    GT_LAST= GT_CONDOR= GT_NREC=0
    [ -r "$otr" ] || { gt_note - "no otr_outlist.list in the work dir"; return 0; }
    gt_now
    out=$(head -c 50000000 "$otr" | gt_bounded 20 env LC_ALL=C awk -v now="$GT_NOW" \
        -v journal="$GT_JOURNAL" -v maxrec="${GT_MAX_SPANS:-2000}" -v skip="${1:-0}" -v US="$GT_US" "$GT_AWK_REDACT$GT_AWK_RECORDS" 2>/dev/null)
    while IFS= read -r rest; do
        tag=${rest%%"$GT_US"*}
        # shellcheck disable=SC2034  # GT_CONDOR: read by the cleanup hook, which sources this file
        case $tag in
            last) GT_LAST=${rest#*"$GT_US"} ;;
            condor) GT_CONDOR=${rest#*"$GT_US"} ;;
            count) GT_NREC=${rest#*"$GT_US"} ;;
        esac
    done <<< "$out"
}

# gt_setup_values: GT_SITE, GT_CPUS, GT_GK as glidein_config held them when setup ended:
# the lines before the marker glidein_startup.sh writes when it starts the last script.
# (GLIDEIN_CPUS is set by glidein_cpus_setup.sh, one of GlideinWMS's after-list scripts,
# which run after every user file: only now are they all known.) GT_SETTINGS: the lifetime
# timeouts in force, as root fields glidein.setting.<column>:f (the glidein table's columns).
gt_setup_values() {
    local line value name
    GT_SITE= GT_CPUS= GT_GK= GT_SETTINGS=()
    while IFS= read -r line; do
        name=
        case $line in
            "$GT_SETUP_MARK"*) break ;;
            "GLIDEIN_Site "*) GT_SITE=${line#* } ;;
            "GLIDEIN_CPUS "*) GT_CPUS=${line#* } ;;
            "GLIDEIN_Gatekeeper "*) GT_GK=${line#* } ;;
            "GLIDEIN_Max_Idle "*) name=max_idle_s ;;
            "GLIDEIN_Max_Tail "*) name=max_tail_s ;;
            "GLIDEIN_Retire_Time "*) name=retire_time_s ;;
            "GLIDEIN_Retire_Time_Spread "*) name=retire_time_spread_s ;;
            "GLIDEIN_Max_Walltime "*) name=max_walltime_s ;;
            "GLIDEIN_Job_Max_Time "*) name=job_max_time_s ;;
            "GLIDEIN_Graceful_Shutdown "*) name=graceful_shutdown_s ;;
        esac
        if [ -n "$name" ]; then
            value=${line#* }
            case $value in
                ''|*[!0-9.]*|*.*.*) ;;
                *) GT_SETTINGS+=("glidein.setting.$name:f=$value") ;;
            esac
        fi
    done < "$GT_CONFIG"
    case $GT_CPUS in ''|*[!0-9]*) GT_CPUS= ;; esac
}

# gt_end_setup TIME FIELD=VALUE...: `end setup` at TIME with the given fields (its status),
# after the values glidein_config held when setup ended, on the root (gt_setup_values).
gt_end_setup() {
    local t=$1
    shift
    gt_setup_values
    gt_emit "$t" attr glidein "glidein.site=$GT_SITE" "glidein.cpus:i=$GT_CPUS" \
        "glidein.gatekeeper=$GT_GK" "${GT_SETTINGS[@]}"
    gt_emit "$t" end setup "$@"
}

# gt_in_dir DIR CMD...: CMD run in DIR (a subshell). Python runs in the journal's directory:
# `python -m` looks in its working directory first, and the work dir holds a directory named
# glidein_tracing (this one) that would hide the installed package.
gt_in_dir() {
    (cd "$1" 2>/dev/null || exit 1; shift; "$@")
}

# gt_export WHAT: live export with our CLI, only when configured. WHAT is `ended` (in the
# background while the glidein runs: the stages that ended) or `rest` (at cleanup: all that
# was not sent). The CLI leaves out what earlier exports sent and records each export in the
# journal (op `export`: docs/journal.md), so no span goes twice. Everything here (the Python
# check, then the export) fits in GLIDEIN_TRACING_EXPORT_TIMEOUT from the start of the step:
# the check, made once per process (GT_PY_OK), may use half of it (at most 10 s), the export
# gets what remains. Returns 0 done, 3 cannot export here, 4 sampled out, 124 cut, else failed.
gt_export() {
    local what=$1 py=${GT_PYTHON:-python3} rc where start budget probe left reserve opt=
    case ${GT_EXPORT_MODE:-forward} in live|both) ;; *) return 3 ;; esac
    if [ -z "${GT_ENDPOINT:-}" ]; then
        gt_note - "live export asked but no GLIDEIN_TRACING_ENDPOINT"
        return 3
    fi
    gt_url_public "$GT_ENDPOINT"
    where=$GT_V
    if ! gt_python_runnable "$py"; then
        # a GLIDEIN_TRACING_PYTHON that cannot run was reported once by the setup hook
        [ -n "${GT_PYTHON:-}" ] || gt_note - "live export: $py $GT_V"
        return 3
    fi
    gt_ms
    start=$GT_MS
    budget=$((GT_EXPORT_TIMEOUT * 1000))
    if [ -z "${GT_PY_OK:-}" ]; then
        probe=$((budget / 2))
        [ "$probe" -le 10000 ] || probe=10000
        gt_secs "$probe"
        if ! gt_in_dir "$GT_DIR" gt_bounded "$GT_V" "$py" -c 'import sys; assert sys.version_info >= (3, 9); import opentelemetry.sdk; from glidein_tracing import __version__' \
                >/dev/null 2>&1 </dev/null; then
            gt_note - "live export: $py is not >= 3.9 with opentelemetry-sdk and glidein_tracing (or did not answer in time)"
            return 3
        fi
        GT_PY_OK=1
        gt_ms
    fi
    left=$((budget - (GT_MS - start)))
    [ "$left" -gt 0 ] || { gt_note - "live export: GLIDEIN_TRACING_EXPORT_TIMEOUT used up by the Python check"; return 124; }
    # the export's own deadline leaves time for Python to start and exit before the kill
    reserve=$((left / 4))
    [ "$reserve" -le 1000 ] || reserve=1000
    # the root is the Factory's in both modes: it starts at submission, which only the Factory
    # knows; the node's own root (from its start) under the same id would be a second content
    opt=--skip-root
    [ "$what" != ended ] || opt=--ended
    gt_secs $((left - reserve))
    local export_s=$GT_V
    gt_secs "$left"
    # the endpoint goes in the environment, not on the command line (which anyone on the node
    # can read); OTEL_EXPORTER_OTLP_HEADERS and the like pass through as the SDK reads them
    GLIDEIN_TRACING_ENDPOINT=$GT_ENDPOINT gt_in_dir "$GT_DIR" gt_bounded "$GT_V" "$py" -m glidein_tracing export \
        --journal "$GT_JOURNAL" --timeout "$export_s" \
        --service-name "${GT_SERVICE_NAME:-glidein}" \
        $opt >"$GT_DIR/export.log" 2>&1 </dev/null
    rc=$?
    case $rc in
        0) [ "$what" = ended ] || gt_note - "live export to $where done" ;;
        4) gt_note - "live export: sampled out (GLIDEIN_TRACING_SAMPLING_RATIO)" ;;
        124) gt_note - "live export to $where cut at GLIDEIN_TRACING_EXPORT_TIMEOUT=$GT_EXPORT_TIMEOUT s; the Factory forwarder will send" ;;
        *) gt_note - "live export to $where failed (exit $rc); the Factory forwarder will send" ;;
    esac
    return "$rc"
}

# gt_python_runnable PY: whether this user can run PY (a path, or a name looked up on PATH);
# GT_V = why not.
gt_python_runnable() {
    local path
    GT_V=
    case $1 in
        */*) path=$1 ;;
        *) path=$(command -v "$1" 2>/dev/null) || { GT_V="is not on PATH"; return 1; } ;;
    esac
    if [ ! -e "$path" ]; then GT_V="does not exist"
    elif [ -d "$path" ]; then GT_V="is a directory"
    elif [ ! -x "$path" ]; then GT_V="is not executable by $(id -un 2>/dev/null || echo this user)"
    fi
    [ -z "$GT_V" ]
}

# gt_setup_ended: whether glidein_startup.sh has started its last script (condor_startup.sh):
# it appends the marker line to glidein_config just before.
gt_setup_ended() {
    grep -qxF "$GT_SETUP_MARK" "$GT_CONFIG" 2>/dev/null
}

# gt_close_setup_early: setup has ended while the glidein runs. Journals the per-script records
# so far, `end setup` at the end of the last one (gt_end_setup) and `start condor` there
# (condor_startup.sh starts right after it; the job spans' parent), then writes the record
# count to setup_closed, so cleanup neither repeats the records nor moves setup's end.
gt_close_setup_early() {
    local st te t
    gt_fold_flush      # the sampler's readings so far belong to setup
    gt_records 0
    IFS="$GT_US" read -r _ st _ te _ <<< "$GT_LAST"
    [ "$st" = OK ] && gt_epoch "$te" || return 1
    t=$GT_V
    gt_end_setup "$t" "@status=OK" \
        && gt_emit "$t" start condor "@name=condor" "@stage=condor.start" "@parent=glidein" \
        && printf '%s\n' "$GT_NREC" > "$GT_DIR/setup_closed"
}

# gt_live_tick: one step of the sampler while the glidein runs. Closes setup once it has ended;
# with live export (GT_LIVE set), sends what ended: setup and its validation spans, then
# finished jobs (the job-exit hook leaves live.pending and wakes the sampler with USR1), at
# most one export every GT_LIVE_GAP seconds (GT_LIVE_NEXT). Live export stops in this process
# (GT_LIVE emptied) when it cannot work here, when the glidein is sampled out, or after
# GT_LIVE_MAX_FAILS failures in a row; cleanup still sends the rest once.
gt_live_tick() {
    if [ ! -e "$GT_DIR/setup_closed" ]; then
        gt_setup_ended || return 0
        if ! gt_close_setup_early; then
            GT_LIVE=
            gt_note - "live export: setup could not be closed early; all goes at cleanup"
            return 0
        fi
        GT_LIVE_DUE=1
    fi
    if [ -e "$GT_DIR/live.pending" ]; then
        rm -f "$GT_DIR/live.pending"
        GT_LIVE_DUE=1
    fi
    [ -n "${GT_LIVE_DUE:-}" ] && [ "$SECONDS" -ge "${GT_LIVE_NEXT:-0}" ] && [ -z "${GT_STOP:-}" ] || return 0
    GT_LIVE_DUE= GT_LIVE_NEXT=$((SECONDS + GT_LIVE_GAP))
    gt_fold_flush      # the readings of the stages that ended go with them
    gt_export ended
    case $? in
        0) GT_LIVE_FAILS=0 ;;
        3|4) GT_LIVE= ;;
        *)
            GT_LIVE_FAILS=$((${GT_LIVE_FAILS:-0} + 1))
            if [ "$GT_LIVE_FAILS" -ge "$GT_LIVE_MAX_FAILS" ]; then
                # shellcheck disable=SC2034  # read by the sampler (gconditional_TRACING_setup.sh)
                GT_LIVE=
                gt_note - "live export of ended stages stopped after $GT_LIVE_FAILS failures in a row; cleanup tries once more"
            fi ;;
    esac
}

# --- The sampler's readings, folded per stage -------------------------------------------
# A `sample` line per reading would make the journal grow with the hours (a 48 h glidein at
# the default 30 s: ~5800 lines). The sampler folds its readings instead and writes one line
# per run of readings (docs/journal.md, Folded samples): the last reading as a plain `sample`,
# with the first reading's time and CPU (`a.t0`, `a.utime0`, `a.stime0`), the count (`a.n:i`)
# and the extremes in between (`a.rss_max`, `a.hwm_max`, `a.disk_free_min`, `a.load1_max`,
# each only when it differs from the last reading). A run ends at every stage boundary (a
# `start` or `end` line in the journal, the end of setup) and after GT_FOLD_SPAN seconds, so
# the journal grows with stages and jobs, plus one line per GT_FOLD_SPAN: the coarse series.
GT_FOLD_SPAN=600

# gt_fold_keep VAR VALUE CMP: VAR = VALUE when VAR is empty or VALUE compares CMP (-gt, -lt)
# to it; VALUE an integer, or a load with two decimals (compared without its dot).
gt_fold_keep() {
    local cur new=$2
    eval "cur=\${$1:-}"
    [ -n "$new" ] || return 0
    if [ -n "$cur" ] && ! test "$((10#${new/./}))" "$3" "$((10#${cur/./}))"; then
        return 0
    fi
    eval "$1=\$new"
}

# gt_fold TIME: fold the reading in GT_R_* (gt_tree_snap, gt_load1, gt_disk_free) taken at
# TIME into the open run; the run is written when it spans GT_FOLD_SPAN seconds.
# shellcheck disable=SC2153  # GT_R_*: the reading gt_reading (gconditional_TRACING_lib.sh) made
gt_fold() {
    if [ "${GT_A_N:-0}" -eq 0 ]; then
        GT_A_T0=$1 GT_A_U0=$GT_R_UT GT_A_S0=$GT_R_ST
        GT_A_RSS= GT_A_HWM= GT_A_DF= GT_A_L1=
    fi
    gt_fold_keep GT_A_RSS "$GT_R_RSS" -gt
    gt_fold_keep GT_A_HWM "$GT_R_HWM" -gt
    gt_fold_keep GT_A_DF "$GT_R_DF" -lt
    gt_fold_keep GT_A_L1 "$GT_R_L1" -gt
    GT_A_N=$((${GT_A_N:-0} + 1))
    GT_A_LAST=("$1" "r.utime=$GT_R_UT" "r.stime=$GT_R_ST" "r.rss=$GT_R_RSS" "r.procs:i=$GT_R_N"
               "r.load1=$GT_R_L1" "r.disk_free=$GT_R_DF" "r.hwm=$GT_R_HWM" "r.mpeak=$GT_R_MPEAK")
    GT_A_LAST_RSS=$GT_R_RSS GT_A_LAST_HWM=$GT_R_HWM GT_A_LAST_DF=$GT_R_DF GT_A_LAST_L1=$GT_R_L1
    [ $(( ${1%.*} - ${GT_A_T0%.*} )) -lt "$GT_FOLD_SPAN" ] || gt_fold_flush
}

# gt_fold_flush: write the open run, if any: one plain `sample` for a single reading.
gt_fold_flush() {
    [ "${GT_A_N:-0}" -gt 0 ] || return 0
    local n=$GT_A_N
    GT_A_N=0
    if [ "$n" -eq 1 ]; then
        gt_emit "${GT_A_LAST[0]}" sample - "${GT_A_LAST[@]:1}"
        return
    fi
    [ "$GT_A_RSS" != "$GT_A_LAST_RSS" ] || GT_A_RSS=
    [ "$GT_A_HWM" != "$GT_A_LAST_HWM" ] || GT_A_HWM=
    [ "$GT_A_DF" != "$GT_A_LAST_DF" ] || GT_A_DF=
    [ "$GT_A_L1" != "$GT_A_LAST_L1" ] || GT_A_L1=
    gt_emit "${GT_A_LAST[0]}" sample - "${GT_A_LAST[@]:1}" "a.n:i=$n" "a.t0=$GT_A_T0" \
        "a.utime0=$GT_A_U0" "a.stime0=$GT_A_S0" "a.rss_max=$GT_A_RSS" "a.hwm_max=$GT_A_HWM" \
        "a.disk_free_min=$GT_A_DF" "a.load1_max=$GT_A_L1"
}

# gt_fold_watch: open the journal for reading on fd 6 at its current end (the sampler reads
# what other hooks append, builtins only).
gt_fold_watch() {
    local line
    GT_JR_PART=
    exec 6< "$GT_JOURNAL" || return 1
    while IFS= read -r line <&6; do :; done
}

# gt_fold_boundary: whether a stage began or ended since the last call: a `start` or `end`
# line appended to the journal (the job wrapper, the job-exit hook, ...), or glidein_startup.sh
# marking glidein_config for its last script (the end of setup). A line still being written
# is kept and completed next time.
gt_fold_boundary() {
    local line found=1
    if [ -z "${GT_SETUP_SEEN:-}" ] && gt_setup_ended; then
        GT_SETUP_SEEN=1 found=0
    fi
    while :; do
        IFS= read -r line <&6 || { GT_JR_PART=$GT_JR_PART$line; break; }
        line=$GT_JR_PART$line GT_JR_PART=
        case $line in *"${GT_TAB}start${GT_TAB}"*|*"${GT_TAB}end${GT_TAB}"*) found=0 ;; esac
    done
    [ ${#GT_JR_PART} -le 8000 ] || GT_JR_PART=
    return $found
}

# gt_cgroup_peak CGROUP_FILE CGROUP_ROOT PID: GT_V = the file where the kernel keeps the memory
# peak of PID's cgroup: cgroup v2 memory.peak (Linux >= 5.19), or on a host whose memory
# controller is cgroup v1, memory.max_usage_in_bytes; only when the glidein is alone in that
# cgroup and in the cgroups below it (three levels): every process there is PID
# (glidein_startup.sh), one of its descendants, or one of its ancestors (the batch job that
# started it). A root cgroup (the whole machine), a cgroup shared with other work, or a kernel
# that keeps no peak gives nothing (non-zero): peaks then come from each process's VmHWM.
gt_cgroup_peak() {
    local line path= v1= n=0 file me=$3
    GT_V=
    [ -r "$1" ] || return 1
    while IFS= read -r line; do
        n=$((n + 1))
        case $line in
            0::/*) path=${line#0::} ;;
            [0-9]*:memory:/*|[0-9]*:memory,*:/*|[0-9]*:*,memory:/*|[0-9]*:*,memory,*:/*)
                v1=${line#*:}; v1=/${v1#*:/} ;;
        esac
    done < "$1"
    if [ -n "$v1" ]; then
        path=$v1 file=memory.max_usage_in_bytes
        [ "${path%/}" != "" ] || return 1
        path=${2%/}/memory${path%/}
    elif [ "$n" -eq 1 ] && [ -n "$path" ] && [ "${path%/}" != "" ]; then
        path=${2%/}${path%/} file=memory.peak
    else
        return 1
    fi
    [ -r "$path/$file" ] && [ -r "$path/cgroup.procs" ] || return 1
    read -r line < "$path/$file" 2>/dev/null || return 1
    case $line in ''|*[!0-9]*) return 1 ;; esac
    set -- "$path"/cgroup.procs "$path"/*/cgroup.procs "$path"/*/*/cgroup.procs \
        "$path"/*/*/*/cgroup.procs
    gt_bounded 5 awk -v root="$me" 'BEGIN {
        for (i = 1; i < ARGC && ARGV[i] ~ /cgroup\.procs$/; i++)
            while ((getline p < ARGV[i]) > 0) procs[p]
        for (; i < ARGC; i++) {
            if ((getline line < ARGV[i]) <= 0) continue
            close(ARGV[i])
            pid = line; sub(/ .*/, "", pid); sub(/^.*\) /, "", line)
            split(line, f, " "); ppid[pid] = f[2]
        }
        q = root; hops = 0
        while (q in ppid && hops < 64) { mine[q]; q = ppid[q]; hops++ }
        for (p in procs) {
            if (!(p in ppid) || p in mine) continue      # gone, or the glidein or an ancestor
            q = p; hops = 0
            while (q != root && q in ppid && hops < 64) { q = ppid[q]; hops++ }
            if (q != root) exit 1                        # someone else s process
        }
        exit 0
    }' "$@" /proc/[0-9]*/stat </dev/null >/dev/null 2>&1 || return 1
    GT_V=$path/$file
}
