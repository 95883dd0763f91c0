#!/bin/sh
# glidein_tracing phase command, for user jobs (docs/user-phases.md). POSIX sh: dash, bash,
# busybox sh. The job wrapper copies this file into the job's scratch dir
# (.glidein_tracing/phase, bound into the job's container with the scratch dir) and points
# GLIDEIN_TRACING_PHASE at the copy.
#
#   "$GLIDEIN_TRACING_PHASE" NAME -- COMMAND [ARG...]   run COMMAND as the phase NAME
#   "$GLIDEIN_TRACING_PHASE" mark TEXT                  an event on the current phase
#
# COMMAND runs unchanged: its stdin, stdout, stderr and exit status are the caller's, and
# the signals this command receives are passed on to it (a command killed by a signal kills
# this one with the same signal). It gets TRACEPARENT=00-<trace>-<phase span id>-01, so a
# phase inside it, or the user's own OpenTelemetry program, is a child of the phase.
# Recording appends one short line at the start and one at the end to the spool beside this
# file (phases.gtp, format in docs/journal.md); the job-exit hook takes it into the glidein's
# journal. No interpreter, no network; nothing of the recording can fail the command.

gtp_dir=${0%/*}
[ "$gtp_dir" != "$0" ] || gtp_dir=.
gtp_spool=$gtp_dir/phases.gtp
GTP_TAB='	'
GTP_NL='
'

# gtp_now: GTP_NOW = the time, without a fork where the shell allows: epoch seconds with
# microseconds (bash 5's EPOCHREALTIME), else `u` and the seconds since boot (/proc/uptime,
# 10 ms; the exit hook turns it into epoch time), else epoch seconds from date(1).
gtp_now() {
    # shellcheck disable=SC3028  # bash's clock when a job's sh is bash; empty elsewhere, then /proc/uptime
    GTP_NOW=${EPOCHREALTIME:-}
    # shellcheck disable=SC2034  # the rest of /proc/uptime, not needed
    case $GTP_NOW in
        *,*) GTP_NOW="${GTP_NOW%,*}.${GTP_NOW#*,}" ;;
        '') read -r GTP_NOW gtp_rest < /proc/uptime 2>/dev/null && GTP_NOW=u$GTP_NOW ;;
    esac
    case $GTP_NOW in
        u*.??|*.*) ;;
        *) GTP_FORKED=1
           GTP_NOW=$(exec date +%s.%N 2>/dev/null); GTP_NOW=${GTP_NOW%???}
           case $GTP_NOW in *N*|'') GTP_NOW=$(exec date +%s) ;; esac ;;
    esac
}

# gtp_clean TEXT MAX: GTP_V = TEXT with LF as a space and TAB as `\t` (what would break a spool
# line; the exit hook redacts with the TAB back, so `password<TAB>value` is seen, then makes it
# a space and every other control byte a '?'), at most MAX characters.
gtp_clean() {
    GTP_V=$1
    while :; do
        case $GTP_V in
            *"$GTP_TAB"*) GTP_V="${GTP_V%%"$GTP_TAB"*}\\t${GTP_V#*"$GTP_TAB"}" ;;
            *"$GTP_NL"*) GTP_V="${GTP_V%%"$GTP_NL"*} ${GTP_V#*"$GTP_NL"}" ;;
            *) break ;;
        esac
    done
    [ ${#GTP_V} -le "$2" ] || { GTP_V=$(printf '%s' "$GTP_V" | cut -c "1-$2"); GTP_FORKED=1; }
}

# gtp_hex8 N: GTP_V = the low 32 bits of N as 8 hex digits (builtins only).
gtp_hex8() {
    GTP_V= gtp_h=$(( $1 % 4294967296 )) gtp_i=0
    while [ $gtp_i -lt 8 ]; do
        gtp_d=$(( gtp_h % 16 ))
        case $gtp_d in 10) gtp_d=a ;; 11) gtp_d=b ;; 12) gtp_d=c ;; 13) gtp_d=d ;; 14) gtp_d=e ;; 15) gtp_d=f ;; esac
        GTP_V=$gtp_d$GTP_V gtp_h=$(( gtp_h / 16 )) gtp_i=$((gtp_i + 1))
    done
}

# gtp_context: GTP_TRACE, GTP_SPAN and GTP_FLAGS from TRACEPARENT (the current phase, or the job's
# context); non-zero when there is none usable.
gtp_context() {
    case ${TRACEPARENT:-} in
        *[!0-9a-f-]*) return 1 ;;
        00-????????????????????????????????-????????????????-??) ;;
        *) return 1 ;;
    esac
    GTP_TRACE=${TRACEPARENT#00-}
    GTP_SPAN=${GTP_TRACE#*-}
    GTP_TRACE=${GTP_TRACE%%-*}
    GTP_FLAGS=${GTP_SPAN#*-}
    GTP_SPAN=${GTP_SPAN%%-*}
}

# gtp_write LINE: append one line with one write (O_APPEND: atomic for short lines).
gtp_write() {
    [ ! -L "$gtp_spool" ] || return 1
    printf 'gtp1\t%s\n' "$1" >> "$gtp_spool" 2>/dev/null
}

# gtp_children_cpu: GTP_CU/GTP_CS = CPU ticks of this shell's reaped children (proc(5) stat
# fields 16/17, cutime/cstime): a child's figure includes every descendant it waited for.
gtp_children_cpu() {
    GTP_CU= GTP_CS=
    read -r gtp_l < "/proc/$$/stat" 2>/dev/null || return 0
    # shellcheck disable=SC2086  # the fields of /proc/PID/stat, split on purpose
    set -- ${gtp_l##*) }
    [ $# -ge 15 ] || return 0
    GTP_CU=${14} GTP_CS=${15}
}

# gtp_watch PID FILE: the peak resident memory of PID's process tree, in bytes, into FILE:
# the largest of the tree's summed VmRSS and of each process's own VmHWM, read after 0.02 s,
# 0.1 s, 0.5 s and then every second (builtins only, but the sleeps), until PID is gone.
gtp_watch() {
    gtp_peak=0
    for gtp_wait in 0.02 0.08 0.4 1; do
        sleep "$gtp_wait" 2>/dev/null || sleep 1
        gtp_tree_peak "$1" || return 0
        printf '%s\n' "$gtp_peak" > "$2"
    done
    while sleep 1; do
        gtp_tree_peak "$1" || return 0
        printf '%s\n' "$gtp_peak" > "$2"
    done
}

# gtp_tree_peak PID: raise gtp_peak with a reading of PID's tree; non-zero when PID is gone.
gtp_tree_peak() {
    [ -r "/proc/$1/status" ] || return 1
    gtp_todo=$1 gtp_sum=0 gtp_n=0
    while [ -n "$gtp_todo" ] && [ "$gtp_n" -lt 256 ]; do
        gtp_p=${gtp_todo%% *}
        case $gtp_todo in *' '*) gtp_todo=${gtp_todo#* } ;; *) gtp_todo= ;; esac
        gtp_n=$((gtp_n + 1))
        # shellcheck disable=SC2034  # the unit of a /proc/PID/status line, not needed
        while read -r gtp_k gtp_v gtp_u; do
            case $gtp_k in
                VmHWM:) [ "$((gtp_v * 1024))" -le "$gtp_peak" ] || gtp_peak=$((gtp_v * 1024)) ;;
                VmRSS:) gtp_sum=$((gtp_sum + gtp_v * 1024)); break ;;
            esac
        done < "/proc/$gtp_p/status" 2>/dev/null
        gtp_kids=
        read -r gtp_kids < "/proc/$gtp_p/task/$gtp_p/children" 2>/dev/null
        [ -z "$gtp_kids" ] || gtp_todo="${gtp_todo:+$gtp_todo }$gtp_kids"
    done
    [ "$gtp_sum" -le "$gtp_peak" ] || gtp_peak=$gtp_sum
    return 0
}

# gtp_mark TEXT: an event on the current phase (or on the job when outside any phase).
gtp_mark() {
    gtp_context || return 0
    gtp_clean "$1" 512
    gtp_now
    gtp_write "mark$GTP_TAB$GTP_NOW$GTP_TAB$GTP_TRACE$GTP_TAB$GTP_SPAN$GTP_TAB$GTP_V"
}

# gtp_forward SIGNAL: pass SIGNAL on to the command.
gtp_forward() {
    [ -z "${gtp_child:-}" ] || kill -s "$1" "$gtp_child" 2>/dev/null
}

# gtp_new_id: GTP_ID = the phase's span id: this process's pid and the start time GTP_NOW in
# microseconds (unique within a trace), 8 hex digits each, with builtins; non-zero if none.
gtp_new_id() {
    gtp_us=${GTP_NOW#*.} gtp_s=${GTP_NOW%.*}
    gtp_s=${gtp_s#u}
    while :; do case $gtp_us in 0?*) gtp_us=${gtp_us#0} ;; *) break ;; esac; done
    case $gtp_s$gtp_us in ''|*[!0-9]*) return 1 ;; esac
    gtp_hex8 "$$"
    GTP_ID=$GTP_V
    gtp_hex8 "$(( (gtp_s * 1000000 + gtp_us) % 4294967296 ))"
    GTP_ID=$GTP_ID$GTP_V
}

# gtp_launch CMD...: start the command; gtp_rc = its exit status. Asynchronous, so that the
# signals this shell gets can be passed on (gtp_child), with the caller's stdin (an
# asynchronous command would get /dev/null): through fd 9, unless the caller uses fd 9 (the
# command must get it unchanged): then in the foreground, without passing signals on.
gtp_launch() {
    if [ ! -e "/proc/$$/fd/0" ]; then
        "$@" <&- &
    elif [ ! -e "/proc/$$/fd/9" ] && { command exec 9<&0; } 2>/dev/null; then
        "$@" 0<&9 9<&- &
        { command exec 9<&-; } 2>/dev/null
    else
        "$@"
        gtp_rc=$?
        return 0
    fi
    gtp_child=$!
    gtp_peakfile=$gtp_dir/.peak.$$
    gtp_watch "$gtp_child" "$gtp_peakfile" </dev/null >/dev/null 2>&1 &
    gtp_watcher=$!
    # wait returns early (> 128) when a trapped signal arrives: wait again until it is gone
    while :; do
        wait "$gtp_child"
        gtp_rc=$?
        # shellcheck disable=SC2015  # break unless both hold
        [ "$gtp_rc" -gt 128 ] && kill -0 "$gtp_child" 2>/dev/null || break
    done
    gtp_child=
    kill "$gtp_watcher" 2>/dev/null
}

# gtp_run NAME CMD...: the phase. Its exit status is the command's.
gtp_run() {
    gtp_name=$1
    shift
    if [ -e "$gtp_dir/journal.gtj" ] || ! gtp_context; then
        exec "$@"      # not a job's copy, or no context to record under: just the command
    fi
    gtp_clean "$gtp_name" 128
    gtp_name=$GTP_V
    gtp_now
    gtp_t0=$GTP_NOW
    gtp_new_id || exec "$@"
    gtp_write "start$GTP_TAB$gtp_t0$GTP_TAB$GTP_TRACE$GTP_TAB$GTP_ID$GTP_TAB$GTP_SPAN$GTP_TAB$gtp_name" \
        || exec "$@"
    gtp_child= gtp_watcher= gtp_peakfile=
    for gtp_s in TERM HUP INT QUIT USR1 USR2 ALRM; do
        # shellcheck disable=SC2064  # the signal's name is meant to expand now
        trap "gtp_forward $gtp_s" "$gtp_s"
    done
    # this shell has reaped no child yet (its clock and ids are builtins): CPU 0 without
    # reading it, unless cutting a long name forked
    GTP_CU=0 GTP_CS=0
    [ -z "${GTP_FORKED:-}" ] || gtp_children_cpu
    gtp_cu0=$GTP_CU gtp_cs0=$GTP_CS
    TRACEPARENT="00-$GTP_TRACE-$GTP_ID-$GTP_FLAGS" gtp_launch "$@"
    gtp_now
    gtp_t1=$GTP_NOW
    gtp_children_cpu
    gtp_peak=
    [ -z "$gtp_peakfile" ] || [ ! -f "$gtp_peakfile" ] \
        || { read -r gtp_peak < "$gtp_peakfile"; rm -f "$gtp_peakfile"; } 2>/dev/null
    gtp_ut= gtp_st=
    [ -z "$GTP_CU" ] || [ -z "$gtp_cu0" ] || { gtp_ut=$((GTP_CU - gtp_cu0)); gtp_st=$((GTP_CS - gtp_cs0)); }
    gtp_sig=
    [ "$gtp_rc" -le 128 ] || gtp_sig=$((gtp_rc - 128))
    gtp_write "end$GTP_TAB$gtp_t1$GTP_TAB$GTP_TRACE$GTP_TAB$GTP_ID$GTP_TAB$gtp_rc$GTP_TAB$gtp_sig$GTP_TAB$gtp_ut$GTP_TAB$gtp_st$GTP_TAB$gtp_peak"
    for gtp_s in TERM HUP INT QUIT USR1 USR2 ALRM; do trap - "$gtp_s"; done
    if [ -n "$gtp_sig" ] && [ "$gtp_sig" -lt 64 ]; then
        # killed by a signal: die of the same signal, so the caller sees what happened
        kill -s "$gtp_sig" $$ 2>/dev/null
    fi
    return "$gtp_rc"
}

case ${1:-} in
    mark)
        [ $# -ge 2 ] || { printf 'usage: %s mark TEXT\n' "${0##*/}" >&2; exit 2; }
        shift
        gtp_mark "$*"
        exit 0 ;;
    ''|--|-h|--help)
        printf 'usage: %s NAME -- COMMAND [ARG...]\n       %s mark TEXT\n' "${0##*/}" "${0##*/}" >&2
        exit 2 ;;
esac
if [ "${2:-}" != -- ] || [ $# -lt 3 ]; then
    printf 'usage: %s NAME -- COMMAND [ARG...]\n' "${0##*/}" >&2
    exit 2
fi
gtp_n=$1
shift 2
gtp_run "$gtp_n" "$@"
exit $?
