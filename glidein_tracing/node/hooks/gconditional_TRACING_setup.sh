#!/bin/bash
# glidein_tracing setup hook: an executable in the Factory's main file list, early.
# Called by glidein_startup.sh as `SCRIPT glidein_config main`, cwd = the work dir.
# Opens the glidein's span journal: root `glidein` and `setup` starts, host facts,
# the resource sampler and the job-exit hook. Whatever fails, it exits 0 and leaves
# the glidein unchanged (it only prints a `glidein_tracing: ...` line on stderr).

GT_SELF=$0
GT_CONFIG=${1:-glidein_config}
GT_HERE=${0%/*}
[ "$GT_HERE" != "$0" ] || GT_HERE=.
GT_HERE=$(cd "$GT_HERE" 2>/dev/null && pwd -P) || GT_HERE=$PWD
GT_STATUS="disabled"

# gt_report: tell GlideinWMS we are fine (the glidein must never fail because of us).
gt_report() {
    local error_gen
    error_gen=$(grep -m1 '^ERROR_GEN_PATH ' "$GT_CONFIG" 2>/dev/null | cut -d ' ' -f 2-)
    [ -n "$error_gen" ] && [ -x "$error_gen" ] || return 0
    "$error_gen" -ok "gconditional_TRACING_setup.sh" "GlideinTracing" "$GT_STATUS" \
        >/dev/null 2>&1 </dev/null || true
}

# gt_disable REASON: tracing off for this glidein, said once on stderr.
gt_disable() {
    printf 'glidein_tracing: tracing disabled for this glidein: %s\n' "$*" >&2
    [ -n "${GT_JOURNAL:-}" ] && gt_note - "tracing disabled: $*"
    return 1
}

# gt_config_add KEY VALUE: the glidein's own gconfig_add, in a subshell because it
# calls `exit 1` on errors (which would fail the glidein's validation).
gt_config_add() {
    ( gconfig_add "$1" "$2" ) >/dev/null 2>&1 </dev/null
}

# gt_condor_var NAME TYPE DEFAULT CONDOR_NAME REQUIRED PUBLISH USER_ENV
gt_condor_var() {
    ( add_condor_vars_line "$@" ) >/dev/null 2>&1 </dev/null
}

# gt_load_glidein_helpers: source add_config_line.source the way GlideinWMS scripts do.
gt_load_glidein_helpers() {
    local src
    src=$(grep -m1 '^ADD_CONFIG_LINE_SOURCE ' "$GT_CONFIG" 2>/dev/null | cut -d ' ' -f 2-)
    [ -n "$src" ] && [ -r "$src" ] || return 1
    # shellcheck disable=SC2034  # read by GlideinWMS's add_config_line.source functions
    glidein_config=$GT_CONFIG   # the helpers work on $glidein_config, like real scripts
    # shellcheck disable=SC1090
    . "$src" >/dev/null 2>&1 </dev/null || return 1
    # shellcheck disable=SC2034  # read by GlideinWMS's add_config_line.source functions
    condor_vars_file=$(gconfig_get CONDOR_VARS_FILE "$GT_CONFIG" 2>/dev/null)
    command -v gconfig_add >/dev/null 2>&1
}

# gt_multi_index PID: GT_MULTI = N from `-multirestart N` on glidein_startup.sh's
# command line (0 for a single glidein).
gt_multi_index() {
    local arg prev=""
    GT_MULTI=0
    [ -r "/proc/$1/cmdline" ] || return 0
    while IFS= read -r -d '' arg; do
        if [ "$prev" = "-multirestart" ]; then
            case $arg in ''|*[!0-9]*) ;; *) GT_MULTI=$arg ;; esac
            return 0
        fi
        prev=$arg
    done < "/proc/$1/cmdline"
    return 0
}

# gt_start_time PID: GT_START = epoch when PID started, to the clock tick: its start in ticks
# after boot (/proc/PID/stat) plus the boot time, read to the hundredth as now minus
# /proc/uptime (btime in /proc/stat has whole seconds only: up to 1 s early). Without
# /proc/uptime, btime.
gt_start_time() {
    local key value btime="" up boot_cs ticks_cs start_cs
    GT_START=
    gt_snap_pid "$1" || return 1
    [ -n "$GT_R_START" ] || return 1
    ticks_cs=$(( GT_R_START * 100 / GT_HZ ))
    read -r up _ < /proc/uptime 2>/dev/null
    gt_now
    case $up.$GT_NOW in
        [0-9]*.[0-9][0-9].[0-9]*.[0-9][0-9]*)
            up=${up%%.*}${up#*.}
            boot_cs=$(( ${GT_NOW%%.*} * 100 + 10#$(printf '%.2s' "${GT_NOW#*.}") - 10#$up )) ;;
        *)
            while read -r key value; do
                [ "$key" = btime ] && { btime=$value; break; }
            done < /proc/stat
            [ -n "$btime" ] || return 1
            boot_cs=$(( btime * 100 )) ;;
    esac
    start_cs=$(( boot_cs + ticks_cs ))
    GT_START=$(( start_cs / 100 )).$(printf '%02d' $(( start_cs % 100 )))
}

# gt_host_facts: GT_H_* = host and OS facts (resource attributes of the trace).
gt_host_facts() {
    local key value line
    GT_H_NAME=${HOSTNAME:-}
    [ -n "$GT_H_NAME" ] || read -r GT_H_NAME < /proc/sys/kernel/hostname 2>/dev/null
    GT_H_ARCH=$(uname -m 2>/dev/null)
    GT_H_OSVER=
    read -r GT_H_OSVER < /proc/sys/kernel/osrelease 2>/dev/null
    GT_H_CPU= GT_H_NCPU=0 GT_H_MEM=
    while IFS= read -r line; do
        case $line in
            "model name"*) [ -n "$GT_H_CPU" ] || GT_H_CPU=${line#*: } ;;
            processor*) GT_H_NCPU=$((GT_H_NCPU + 1)) ;;
        esac
    done < /proc/cpuinfo 2>/dev/null
    [ "$GT_H_NCPU" -gt 0 ] || GT_H_NCPU=
    while read -r key value _; do
        [ "$key" = "MemTotal:" ] && { GT_H_MEM=$((value * 1024)); break; }
    done < /proc/meminfo 2>/dev/null
    GT_H_OSDESC=
    if [ -r /etc/os-release ]; then
        while IFS= read -r line; do
            case $line in PRETTY_NAME=*) line=${line#*=}; line=${line#\"}; GT_H_OSDESC=${line%\"} ;; esac
        done < /etc/os-release
    fi
}

# gt_sampler_start: the background sampler, when there is work for it: readings of the
# glidein process tree (knob SAMPLE_PERIOD > 0), folded per stage (gt_fold), and, with live
# export (EXPORT_MODE live or both, and an ENDPOINT), sending the stages that end while the
# glidein runs (gt_live_tick). Both need gconditional_TRACING_stages.sh.
gt_sampler_start() {
    GT_LIVE=
    case $GT_EXPORT_MODE in live|both) [ -z "$GT_ENDPOINT" ] || GT_LIVE=live ;; esac
    [ "${GT_SAMPLE_PERIOD:-0}" -gt 0 ] 2>/dev/null || [ -n "$GT_LIVE" ] || return 0
    if [ -z "$GT_STAGES" ]; then
        gt_note - "no gconditional_TRACING_stages.sh beside the setup hook: no sampler; stages go live at cleanup only"
        return 0
    fi
    [ -z "$GT_LIVE" ] || gt_python_usable || GT_LIVE=
    [ "${GT_SAMPLE_PERIOD:-0}" -gt 0 ] 2>/dev/null || [ -n "$GT_LIVE" ] || return 0
    case $GT_CONFIG in /*) ;; *) GT_CONFIG=$PWD/$GT_CONFIG ;; esac
    gt_sampler_loop </dev/null >/dev/null 2>&1 &
    local spid=$!
    # the pid file holds pid, start ticks (cleanup never kills a reused pid) and whether the
    # sampler exports live (the job-exit hook then wakes it)
    gt_snap_pid "$spid"
    printf '%s %s %s\n' "$spid" "$GT_R_START" "${GT_LIVE:--}" > "$GT_DIR/sampler.pid" 2>/dev/null
}

# gt_python_usable: whether GLIDEIN_TRACING_PYTHON, when set, can run here (gt_python_runnable);
# when it cannot, said once on the glidein's stderr the way GlideinWMS warns, and in a note, with
# the reason: the Factory forwarder then sends every span.
gt_python_usable() {
    [ -n "${GT_PYTHON:-}" ] || return 0
    gt_python_runnable "$GT_PYTHON" && return 0
    local msg="GLIDEIN_TRACING_PYTHON=$GT_PYTHON $GT_V: no live export, the Factory forwarder sends the spans"
    printf 'WARN %s glidein_tracing: %s\n' "$(date 2>/dev/null)" "$msg" >&2
    gt_note - "$msg"
    return 1
}

# gt_sampler_loop: runs detached until the glidein is gone or cleanup stops it: a reading every
# SAMPLE_PERIOD seconds, folded per stage (gt_fold; a run is written at each stage boundary, every
# GT_FOLD_SPAN seconds and when the loop ends), and with live export a gt_live_tick at least
# every 10 s. Between steps it waits a second at a time (gt_pause: no fork) and checks that
# glidein_startup.sh is still there after each: a glidein that died is noticed within a second
# (the sampler must not outlive it). Its only children are, with live export, the bounded
# export. TERM (cleanup) ends the loop after the step under way, so an export in progress
# finishes within its bound and is recorded, and nothing of ours outlives the glidein; USR1
# (the job-exit hook: a job ended) ends the wait.
gt_sampler_loop() {
    local root=$GT_STARTUP_PID root_start=$GT_ROOT_TICKS next=0 step
    GT_DF_MAX_AGE=0   # in the background, cost does not matter: always a fresh disk reading
    GT_STOP= GT_WAKE=
    trap '' HUP
    trap 'GT_STOP=1' TERM
    trap 'GT_WAKE=1' USR1
    gt_pause_open
    gt_fold_watch
    while [ -z "$GT_STOP" ]; do
        gt_alive "$root" "$root_start" || break
        # shellcheck disable=SC2015  # break unless both hold
        [ -d "$GT_DIR" ] && [ -f "$GT_JOURNAL" ] || break
        ! gt_fold_boundary || gt_fold_flush
        if [ "$GT_SAMPLE_PERIOD" -gt 0 ] && [ "$SECONDS" -ge "$next" ]; then
            gt_now
            gt_reading "$root"
            gt_fold "$GT_NOW"
            next=$((SECONDS + GT_SAMPLE_PERIOD))
        fi
        [ -z "$GT_LIVE" ] || gt_live_tick
        [ -z "$GT_STOP" ] || break
        # wait until the next step (at most 10 s), a second at a time
        step=10
        [ "$GT_SAMPLE_PERIOD" -le 0 ] || [ $((next - SECONDS)) -ge "$step" ] || step=$((next - SECONDS))
        [ -z "${GT_LIVE_DUE:-}" ] || [ $((GT_LIVE_NEXT - SECONDS)) -ge "$step" ] || step=$((GT_LIVE_NEXT - SECONDS))
        [ "$step" -gt 0 ] || step=1
        GT_WAKE=
        while [ "$step" -gt 0 ] && [ -z "$GT_STOP$GT_WAKE" ]; do
            gt_pause
            step=$((step - 1))
            gt_alive "$root" "$root_start" || break 2
        done
    done
    [ ! -f "$GT_JOURNAL" ] || gt_fold_flush
    exit 0
}

# gt_pause_open, gt_pause: wait a second without a fork: `read -t 1` from a pipe this shell
# holds both ends of (never ready; a trapped signal runs its trap at once, the read goes on to
# its second). Without one, `sleep 1`.
gt_pause_open() {
    GT_PAUSE_FD=
    { exec 8<> <(:); } 2>/dev/null && GT_PAUSE_FD=8
}
gt_pause() {
    if [ -n "$GT_PAUSE_FD" ]; then
        read -r -t 1 -u "$GT_PAUSE_FD" _ 2>/dev/null
        [ $? -gt 128 ] && return 0   # its second passed; anything else: never again (no busy loop)
        GT_PAUSE_FD=
    fi
    sleep 1
}

# gt_install_exit_hook: copy the job-exit hook, check it, only then configure HTCondor.
# A hook that is missing, not executable or world-writable would stop every job.
gt_install_exit_hook() {
    local src="$GT_HERE/gconditional_TRACING_job_exit.sh" dst="$GT_DIR/job_exit_hook" mode
    gt_get STARTER_JOB_HOOK_KEYWORD; local kw1=$GT_V
    gt_get STARTER_DEFAULT_JOB_HOOK_KEYWORD; local kw2=$GT_V
    if [ -n "$kw1$kw2" ]; then
        gt_note - "job hook keyword already set (${kw1:-$kw2}): job ends come from StartdHistoryLog"
        return 0
    fi
    [ -f "$src" ] || { gt_note - "no job exit hook file: job ends come from StartdHistoryLog"; return 0; }
    # shellcheck disable=SC2015  # the note when either step fails
    cp "$src" "$dst" 2>/dev/null && chmod 0755 "$dst" 2>/dev/null || {
        gt_note - "cannot install the job exit hook"; return 0; }
    mode=$(stat -c '%a' "$dst" 2>/dev/null)
    if [ ! -f "$dst" ] || [ ! -x "$dst" ] || [ "$mode" != 755 ]; then
        gt_note - "job exit hook failed its checks (mode ${mode:-?}): not configured"
        return 0
    fi
    # shellcheck disable=SC2015  # the note when any step fails
    gt_config_add GLIDEIN_TRACING_HOOK_JOB_EXIT "$dst" \
        && gt_condor_var GLIDEIN_TRACING_HOOK_JOB_EXIT C - + N N - \
        && gt_config_add STARTER_DEFAULT_JOB_HOOK_KEYWORD GLIDEIN_TRACING \
        && gt_condor_var STARTER_DEFAULT_JOB_HOOK_KEYWORD C - + N N - \
        || gt_note - "could not configure the job exit hook: job ends come from StartdHistoryLog"
}

# gt_install_phase: the phase command for user jobs (gconditional_TRACING_phase.sh), copied to
# <journal dir>/phase, mode 755, and published as GLIDEIN_TRACING_PHASE in the startd ad (a
# job may require it) and every job's environment with its sha256; the job wrapper checks
# it, copies it into each job's scratch dir and points the variable at that copy
# (docs/user-phases.md).
gt_install_phase() {
    local src="$GT_HERE/gconditional_TRACING_phase.sh" dst="$GT_DIR/phase"
    [ -f "$src" ] || { gt_note - "no phase command file: jobs get no GLIDEIN_TRACING_PHASE"; return 0; }
    # shellcheck disable=SC2015  # the note when either step fails
    cp "$src" "$dst" 2>/dev/null && chmod 0755 "$dst" 2>/dev/null || {
        gt_note - "cannot install the phase command"; return 0; }
    # shellcheck disable=SC2015  # the note when any step fails
    gt_config_add GLIDEIN_TRACING_PHASE "$dst" \
        && gt_condor_var GLIDEIN_TRACING_PHASE S - + N Y + \
        || gt_note - "could not publish GLIDEIN_TRACING_PHASE"
    # its checksum in every job's environment (the startd's, read when HTCondor starts: a job
    # cannot change it for the next one); the wrapper checks it before each copy
    local sum
    # shellcheck disable=SC2015  # the note when any step fails
    sum=$(sha256sum < "$dst" 2>/dev/null) && sum=${sum%% *} && [ ${#sum} -eq 64 ] \
        && gt_config_add GLIDEIN_TRACING_PHASE_SHA256 "$sum" \
        && gt_condor_var GLIDEIN_TRACING_PHASE_SHA256 S - + N N + \
        || gt_note - "no checksum of the phase command: jobs get no phase command"
}

# gt_publish_trace: the trace id and the root span's traceparent in the startd ad and in every
# job's environment (condor_vars: published Y, user env +), so `condor_status -af
# GLIDEIN_TraceId`, the Frontend and the user's job can name this glidein's trace.
gt_publish_trace() {
    gt_span_id "$GT_TRACE_ID" glidein || { gt_note - "cannot compute the root span id: trace id not published"; return 0; }
    # shellcheck disable=SC2015  # the note when any step fails
    gt_config_add GLIDEIN_TraceId "$GT_TRACE_ID" \
        && gt_condor_var GLIDEIN_TraceId S - + N Y + \
        && gt_config_add GLIDEIN_TraceParent "00-$GT_TRACE_ID-$GT_SPAN_ID-01" \
        && gt_condor_var GLIDEIN_TraceParent S - + N Y + \
        || gt_note - "could not publish the trace id in the startd ad"
}

# gt_main: everything; returns non-zero when tracing got disabled.
gt_main() {
    [ -r "$GT_CONFIG" ] || { gt_disable "cannot read $GT_CONFIG"; return 1; }
    # shellcheck disable=SC1091
    . "$GT_HERE/gconditional_TRACING_lib.sh" 2>/dev/null || {
        printf 'glidein_tracing: tracing disabled for this glidein: no library beside %s\n' "$GT_SELF" >&2
        return 1; }
    command -v sha256sum >/dev/null 2>&1 || { gt_disable "sha256sum not found"; return 1; }
    gt_cfg_read "$GT_CONFIG" GLIDEIN_Factory GLIDEIN_Name GLIDEIN_Entry_Name GLIDECLIENT_Name \
        GLIDECLIENT_Group GLIDEIN_ResourceName CONDORG_SCHEDD CONDORG_CLUSTER CONDORG_SUBCLUSTER GLIDEIN_UUID \
        GLIDEIN_STARTUP_PID GLIDEIN_WORKSPACE_ORIG STARTER_JOB_HOOK_KEYWORD \
        STARTER_DEFAULT_JOB_HOOK_KEYWORD || { gt_disable "cannot read $GT_CONFIG"; return 1; }

    # identity: every part of the trace id is required (docs/ids.md)
    local k missing=""
    for k in GLIDEIN_Factory GLIDEIN_Name GLIDEIN_Entry_Name CONDORG_SCHEDD CONDORG_CLUSTER \
             CONDORG_SUBCLUSTER GLIDEIN_STARTUP_PID GLIDEIN_WORKSPACE_ORIG; do
        gt_get "$k"; [ -n "$GT_V" ] || missing="$missing $k"
    done
    [ -z "$missing" ] || { gt_disable "missing in glidein_config:$missing"; return 1; }
    gt_get GLIDEIN_STARTUP_PID; GT_STARTUP_PID=$GT_V
    gt_get GLIDEIN_WORKSPACE_ORIG; GT_WORK_DIR=$GT_V

    # the journal directory must be writable, or nothing else matters
    GT_DIR="$GT_WORK_DIR/glidein_tracing"
    GT_JOURNAL="$GT_DIR/journal.gtj"
    { mkdir -p "$GT_DIR" && chmod 0755 "$GT_DIR" && : >> "$GT_JOURNAL"; } 2>/dev/null || {
        GT_JOURNAL=; gt_disable "cannot write $GT_DIR"; return 1; }

    GT_HZ=$(getconf CLK_TCK 2>/dev/null); GT_HZ=${GT_HZ:-100}
    GT_PAGE=$(getconf PAGESIZE 2>/dev/null); GT_PAGE=${GT_PAGE:-4096}
    # knobs (a bad value: default + note + stderr line, from gt_knob)
    # shellcheck disable=SC1091
    # shellcheck disable=SC2015  # the fallback when either step fails
    . "$GT_HERE/gconditional_TRACING_knobs.sh" 2>/dev/null && gt_knobs_load \
        || { gt_disable "cannot load the knobs"; return 1; }
    # readings folded per stage, setup's end and live export (the sampler), the cgroup check
    GT_STAGES=
    # shellcheck disable=SC1091
    . "$GT_HERE/gconditional_TRACING_stages.sh" 2>/dev/null && GT_STAGES=1

    gt_multi_index "$GT_STARTUP_PID"
    local f n e s c p
    gt_get GLIDEIN_Factory; f=$GT_V; gt_get GLIDEIN_Name; n=$GT_V; gt_get GLIDEIN_Entry_Name; e=$GT_V
    gt_get CONDORG_SCHEDD; s=$GT_V; gt_get CONDORG_CLUSTER; c=$GT_V; gt_get CONDORG_SUBCLUSTER; p=$GT_V
    gt_trace_id "$f" "$n" "$e" "$s" "$c" "$p" "$GT_MULTI" || { gt_disable "cannot compute the trace id"; return 1; }

    # publish our state for the other hooks, with the glidein's own helper
    gt_load_glidein_helpers || { gt_disable "cannot load ADD_CONFIG_LINE_SOURCE"; return 1; }
    # shellcheck disable=SC2015  # the fallback when any step fails
    gt_config_add GLIDEIN_TRACING_LIB "$GT_HERE/gconditional_TRACING_lib.sh" \
        && gt_config_add GLIDEIN_TRACING_KNOBS "$GT_HERE/gconditional_TRACING_knobs.sh" \
        && gt_config_add GLIDEIN_TRACING_TRACE_ID "$GT_TRACE_ID" \
        && gt_config_add GLIDEIN_TRACING_MULTI_INDEX "$GT_MULTI" \
        && gt_config_add GLIDEIN_TRACING_CLK_TCK "$GT_HZ" \
        && gt_config_add GLIDEIN_TRACING_PAGESIZE "$GT_PAGE" \
        && gt_config_add GLIDEIN_TRACING_JOURNAL "$GT_JOURNAL" \
        || { gt_disable "cannot update $GT_CONFIG"; return 1; }
    gt_publish_trace
    # the kernel's own memory peak of the glidein, when it has its cgroup to itself
    GT_MPEAK_FILE=
    if [ -n "$GT_STAGES" ] && gt_cgroup_peak "/proc/$GT_STARTUP_PID/cgroup" /sys/fs/cgroup "$GT_STARTUP_PID"; then
        gt_config_add GLIDEIN_TRACING_MEMORY_PEAK "$GT_V" && GT_MPEAK_FILE=$GT_V
    fi

    # root and setup spans start when glidein_startup.sh started
    gt_now
    gt_start_time "$GT_STARTUP_PID" || GT_START=$GT_NOW
    GT_ROOT_TICKS=$GT_R_START
    gt_host_facts
    local cg uuid cl req rn
    gt_get GLIDECLIENT_Group; cg=$GT_V; gt_get GLIDEIN_UUID; uuid=$GT_V; gt_get GLIDECLIENT_Name; cl=$GT_V
    gt_get GLIDEIN_ResourceName; rn=$GT_V
    # the Frontend request that caused this glidein (frontend_hooks), passed as a parameter
    gt_get GLIDEIN_TRACING_REQUEST_TRACEPARENT; req=$GT_V
    gt_emit "$GT_START" start glidein "@name=glidein" "@stage=glidein" "@trace_id=$GT_TRACE_ID" \
        "glidein.request_traceparent=$req" \
        "@max_spans=$GT_MAX_SPANS" "@redact=$GT_REDACT" "@sampling_ratio=$GT_SAMPLING_RATIO" \
        "@memory_peak=${GT_MPEAK_FILE##*/}" \
        "glidein.factory=$f" "glidein.name=$n" "glidein.entry=$e" "glidein.client=$cl" \
        "glidein.client_group=$cg" "glidein.schedd=$s" "glidein.cluster:i=$c" "glidein.proc:i=$p" \
        "glidein.multi_index:i=$GT_MULTI" "glidein.uuid=$uuid" "glidein.resource_name=$rn" \
        "res.host.name=$GT_H_NAME" "res.host.arch=$GT_H_ARCH" "res.host.cpu.model.name=$GT_H_CPU" \
        "res.host.cpu.logical_count:i=$GT_H_NCPU" "res.host.memory.total_bytes:i=$GT_H_MEM" \
        "res.os.type=linux" "res.os.description=$GT_H_OSDESC" "res.os.version=$GT_H_OSVER" \
        "res.service.name=$GT_SERVICE_NAME" || { gt_disable "cannot append to $GT_JOURNAL"; return 1; }
    # CPU counters of a process are 0 when it starts: exact at GT_START. The rest now.
    gt_load1
    gt_disk_free "$GT_WORK_DIR"
    gt_emit "$GT_START" start setup "@name=setup" "@stage=setup" "@parent=glidein" \
        "r.utime=0.00" "r.stime=0.00" "r.load1=$GT_R_L1" "r.disk_free=$GT_R_DF"
    gt_sample "$GT_STARTUP_PID"

    gt_sampler_start
    gt_install_exit_hook
    gt_install_phase
    GT_STATUS="enabled"
    return 0
}

gt_main
gt_report
exit 0
