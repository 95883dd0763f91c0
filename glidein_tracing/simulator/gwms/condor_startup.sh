#!/bin/bash
# condor_startup.sh (glidein_tracing simulator stand-in). Like GlideinWMS's: builds the
# condor config from condor_vars.lst + glidein_config (set_var), builds
# condor_job_wrapper.sh from WRAPPER_LIST, runs "condor_master -f" and prints the
# daemon logs as named sections on stderr. HTCondor cannot run here, so the master is
# a stand-in: it runs the jobs of the simulated schedd ($GLIDEIN_SIM_QUEUE) one after
# the other through the real wrapper with a real job ad, runs the configured
# <KW>_HOOK_JOB_EXIT like a starter, appends StartdHistoryLog records, and shuts down
# idle after GLIDEIN_Max_Idle (no job yet) or GLIDEIN_Max_Tail (after the last job),
# exit 99 (DAEMON_SHUTDOWN). SIGTERM: SIGQUIT to the master, fast shutdown.

config_file="$1"
# shellcheck disable=SC2034  # read by GlideinWMS's add_config_line.source functions
glidein_config="$PWD/$config_file"
error_gen=$(grep -m1 '^ERROR_GEN_PATH ' "$config_file" | cut -d ' ' -f 2-)
# shellcheck disable=SC1090
. "$(grep -m1 '^ADD_CONFIG_LINE_SOURCE ' "$config_file" | cut -d ' ' -f 2-)"
work_dir=$PWD
CONDOR_CONFIG="$work_dir/condor_config"
export CONDOR_CONFIG
pstr='"'

# condor config: the variables of condor_vars.lst, as set_var does
: > "$CONDOR_CONFIG"
# shellcheck disable=SC2129  # one configuration line per command, as written
echo "LOG = $work_dir/log" >> "$CONDOR_CONFIG"
echo "EXECUTE = $work_dir/execute" >> "$CONDOR_CONFIG"
echo "STARTD_HISTORY = $work_dir/log/StartdHistoryLog" >> "$CONDOR_CONFIG"
echo "JOB_INHERITS_STARTER_ENVIRONMENT=True" >> "$CONDOR_CONFIG"
job_env=""
glidein_variables=""   # what the startd publishes in its ad (the PUBLISH column, Y)
set_var() {
    local var_name=$1 var_type=$2 var_def=$3 var_condor=$4 var_req=$5 var_publish=$6 var_user=$7 var_val
    [ -n "$var_name" ] || return 0
    var_val=$(gconfig_get "$var_name" "$config_file")
    if [ -z "$var_val" ]; then
        if [ "$var_req" = Y ]; then
            "$error_gen" -error "condor_startup.sh" "Config" "Cannot extract $var_name from '$config_file'" "MissingAttribute" "$var_name"
            exit 1
        elif [ "$var_def" = "-" ]; then
            return 0
        else
            var_val=$var_def
        fi
    fi
    [ "$var_condor" != "+" ] || var_condor=$var_name
    if [ "$var_type" = S ]; then
        echo "$var_condor=${pstr}${var_val}${pstr}" >> "$CONDOR_CONFIG"
    else
        echo "$var_condor=$var_val" >> "$CONDOR_CONFIG"
    fi
    if [ "$var_publish" = Y ]; then
        glidein_variables="$glidein_variables,$var_condor"
    fi
    if [ "$var_user" != "-" ]; then
        [ "$var_user" != "+" ] || var_user=$var_name
        [ "$var_user" != "@" ] || var_user=$var_condor
        job_env="$job_env${job_env:+ }'$var_user=$var_val'"
    fi
}
rm -f condor_vars.lst.tmp
touch condor_vars.lst.tmp
for vid in GLIDECLIENT_GROUP_CONDOR_VARS_FILE GLIDECLIENT_CONDOR_VARS_FILE ENTRY_CONDOR_VARS_FILE CONDOR_VARS_FILE; do
    condor_vars=$(gconfig_get "$vid" "$config_file")
    [ -n "$condor_vars" ] && [ -r "$condor_vars" ] && grep -v "^#" "$condor_vars" >> condor_vars.lst.tmp
done
while read -r line; do
    # shellcheck disable=SC2086
    set_var $line
done < condor_vars.lst.tmp
echo "STARTER_JOB_ENVIRONMENT = \"$job_env\"" >> "$CONDOR_CONFIG"
echo "STARTD_ATTRS = \$(STARTD_ATTRS) $glidein_variables" >> "$CONDOR_CONFIG"

# the job wrapper: every wrapper="True" file, concatenated under #!/bin/sh
wrapper_list=$(gconfig_get WRAPPER_LIST "$config_file")
condor_job_wrapper="$work_dir/condor_job_wrapper.sh"
cat > "$condor_job_wrapper" <<"EOF"
#!/bin/sh

# This script is started just before the user job
# It is referenced by the USER_JOB_WRAPPER
# /bin/sh is used for Busybox compatibility (small images)
if [ -n "$BASH_VERSION" ]; then
    # If in Bash, disable POSIX mode
    # shellcheck disable=SC3040
    set +o posix || echo "WARN: running in POSIX mode"
fi

EOF
# shellcheck disable=SC2013  # the wrapper list holds one file name (no blanks) per line
for fname in $(cat "$wrapper_list" 2>/dev/null); do
    cat "$fname" >> "$condor_job_wrapper"
done
cat >> "$condor_job_wrapper" <<"EOF"

# Condor job wrappers must replace its own image
exec "$@"
EOF
chmod 755 "$condor_job_wrapper"
echo "USER_JOB_WRAPPER = $condor_job_wrapper" >> "$CONDOR_CONFIG"

cfg() { awk -v k="$1" -F= '{n=$1; gsub(/[ \t]/, "", n)} n == k {v=substr($0, index($0, "=") + 1); sub(/^[ \t]+/, "", v)} END {print v}' "$CONDOR_CONFIG"; }
max_idle=$(gconfig_get GLIDEIN_Max_Idle "$config_file"); max_idle=${max_idle:-1200}
max_tail=$(gconfig_get GLIDEIN_Max_Tail "$config_file"); max_tail=${max_tail:-400}
site=$(gconfig_get GLIDEIN_Site "$config_file")

log() { echo "$(date '+%m/%d/%y %H:%M:%S') $2" >> "$work_dir/log/$1"; }

# starter: one job in its scratch dir through USER_JOB_WRAPPER, then the exit hook
starter() {
    local jobdir=$1 n=$2
    local scratch="$work_dir/execute/dir_$$_$n" start rc pid maxrss=0
    mkdir -p "$scratch/tmp"
    start=$(date +%s)
    { cat "$jobdir/job.ad"; echo "JobStartDate = $start"; echo "JobCurrentStartDate = $start"
      echo "RemoteHost = \"slot1_1@glidein_$$@$(uname -n)\""; } > "$scratch/.job.ad"
    { echo "Name = \"slot1_1@glidein_$$@$(uname -n)\""; echo "GLIDEIN_Site = \"$site\"";
      echo "Cpus = 1"; echo "IS_GLIDEIN = true"
      # the startd publishes STARTD_ATTRS in its ad
      for var in $(echo "$glidein_variables" | tr ',' ' '); do echo "$var = $(cfg "$var")"; done
    } > "$scratch/.machine.ad"
    local kw hook
    kw=$(cfg STARTER_JOB_HOOK_KEYWORD); [ -n "$kw" ] || kw=$(cfg STARTER_DEFAULT_JOB_HOOK_KEYWORD)
    hook=""; [ -z "$kw" ] || hook=$(cfg "${kw}_HOOK_JOB_EXIT")
    if [ -n "$hook" ] && { [ ! -f "$hook" ] || [ ! -x "$hook" ] || [ -n "$(find "$hook" -perm -002 2>/dev/null)" ]; }; then
        # a bad hook stops the job from running (HTCondor refuses it)
        log StartdLog "Starter failed: invalid ${kw}_HOOK_JOB_EXIT $hook; job $(job_id "$jobdir") not run"
        return 0
    fi
    log StartdLog "Got activate_claim request from shadow (sim), starting job $(job_id "$jobdir") via USER_JOB_WRAPPER=$condor_job_wrapper"
    child_cpu; cpu0u=$GT_CU cpu0s=$GT_CS
    # the job environment: starter env (inherited), STARTER_JOB_ENVIRONMENT, then the job's own
    (
        cd "$scratch" || exit 1
        eval "export $job_env"
        export _CONDOR_JOB_AD="$scratch/.job.ad" _CONDOR_MACHINE_AD="$scratch/.machine.ad" \
            _CONDOR_SLOT=slot1_1 _CONDOR_SCRATCH_DIR="$scratch" _CONDOR_JOB_IWD="$scratch" \
            TMPDIR="$scratch/tmp" TMP="$scratch/tmp" TEMP="$scratch/tmp" \
            _CONDOR_WRAPPER_ERROR_FILE="$scratch/.job_wrapper_failure"
        # shellcheck disable=SC2163  # each line is NAME=VALUE: exported as an assignment
        while IFS= read -r kv; do [ -n "$kv" ] && export "$kv"; done < "$jobdir/job.env"
        shell=/bin/sh; read -r shell < "$jobdir/job.shell" 2>/dev/null
        exec "$condor_job_wrapper" "$shell" "$jobdir/job.sh" > _condor_stdout 2> _condor_stderr
    ) &
    pid=$!
    echo "$pid" > "$work_dir/log/.sim_job_pid"
    # like the procd: poll the job's memory (builtins only, so no CPU is added to it)
    local k v u
    while kill -0 "$pid" 2>/dev/null; do
        # shellcheck disable=SC2034  # the unit of a /proc/PID/status line, not needed
        while read -r k v u; do
            [ "$k" = "VmRSS:" ] && { [ "$v" -le "$maxrss" ] || maxrss=$v; break; }
        done 2>/dev/null < "/proc/$pid/status"
        sleep 0.1
    done
    wait "$pid"; rc=$?
    child_cpu; cpu1u=$GT_CU cpu1s=$GT_CS
    local hz end bysig=false sig=0 code=$rc
    hz=$(getconf CLK_TCK); end=$(date +%s)
    if [ "$rc" -gt 128 ]; then bysig=true; sig=$((rc - 128)); code=""; fi
    { cat "$scratch/.job.ad"
      [ -n "$code" ] && echo "ExitCode = $code"
      echo "ExitBySignal = $bysig"; [ "$bysig" = true ] && echo "ExitSignal = $sig"
      echo "RemoteUserCpu = $(awk -v t=$((cpu1u - cpu0u)) -v h="$hz" 'BEGIN {printf "%.2f", t / h}')"
      echo "RemoteSysCpu = $(awk -v t=$((cpu1s - cpu0s)) -v h="$hz" 'BEGIN {printf "%.2f", t / h}')"
      echo "ResidentSetSize = $maxrss"
      echo "CompletionDate = $end"; echo "JobStatus = 4"; echo "EnteredCurrentStatus = $end"
      echo "RemoteWallClockTime = $((end - start))"; } > "$scratch/.final.ad"
    log StartdLog "Job $(job_id "$jobdir") exited with status $rc"
    echo "$start $end $code $sig" >> "$work_dir/log/.sim_starter_stats"   # the StarterLog's facts
    if [ -n "$hook" ]; then
        ( cd "$scratch" && timeout 30 "$hook" exit < "$scratch/.final.ad" >/dev/null 2>&1 )
    fi
    # StartdHistoryLog: the ad, then the banner
    local cl pr ow
    cl=$(ad_val ClusterId "$scratch/.final.ad"); pr=$(ad_val ProcId "$scratch/.final.ad"); ow=$(ad_val Owner "$scratch/.final.ad")
    # shellcheck disable=SC2094  # the offset is the log's size before this record is appended
    { cat "$scratch/.final.ad"
      echo "*** Offset = $(stat -c %s "$work_dir/log/StartdHistoryLog" 2>/dev/null || echo 0) ClusterId = $cl ProcId = $pr Owner = $ow CompletionDate = $end"
    } >> "$work_dir/log/StartdHistoryLog"
}
# child_cpu: GT_CU/GT_CS = CPU ticks of this process's reaped children (the job)
# shellcheck disable=SC2086  # the fields of /proc/PID/stat, split on purpose
child_cpu() { local l; read -r l < "/proc/$BASHPID/stat"; set -- ${l##*) }; GT_CU=${14} GT_CS=${15}; }
ad_val() { awk -v k="$1" 'tolower($1) == tolower(k) {sub(/^[^=]*= */, ""); v=$0} END {print v}' "$2"; }
job_id() { echo "$(ad_val ClusterId "$1/job.ad").$(ad_val ProcId "$1/job.ad")"; }

master_quit() {
    local jp
    log MasterLog "Got SIGQUIT.  Performing fast shutdown."
    read -r jp < "$work_dir/log/.sim_job_pid" 2>/dev/null && kill -9 "$jp" 2>/dev/null
    [ -z "$job_pid" ] || kill -9 "$job_pid" 2>/dev/null
    log MasterLog "All daemons are gone.  Exiting."
    exit 0
}

# the master stand-in: run the queue, shut down idle, exit 99
master() {
    local n=0 jobdir idle_since last_job=0 q=${GLIDEIN_SIM_QUEUE:-}
    log MasterLog "** condor_master (glidein_tracing simulator stand-in, not HTCondor) pid $BASHPID CONDOR_CONFIG=$CONDOR_CONFIG"
    trap 'master_quit' QUIT TERM
    idle_since=$(date +%s.%N)
    # shellcheck disable=SC2012  # the queue's job_N directories, made here
    for jobdir in $( [ -n "$q" ] && ls -d "$q"/job_* 2>/dev/null | sort -V ); do
        local delay
        delay=$(cat "$jobdir/idle_before" 2>/dev/null || echo 0)
        local limit=$max_idle; [ "$last_job" = 0 ] || limit=$max_tail
        if awk -v d="$delay" -v l="$limit" 'BEGIN {exit !(d >= l)}'; then
            sleep "$limit"; break
        fi
        sleep "$delay"
        n=$((n + 1))
        starter "$jobdir" "$n" &
        job_pid=$!
        wait "$job_pid"
        job_pid=""
        last_job=1
        idle_since=$(date +%s.%N)
    done
    local limit=$max_idle; [ "$last_job" = 0 ] || limit=$max_tail
    local left
    left=$(awk -v l="$limit" -v a="$idle_since" -v n="$(date +%s.%N)" 'BEGIN {d = l - (n - a); print (d > 0) ? d : 0}')
    sleep "$left"
    if [ "$last_job" = 0 ]; then
        # never claimed: STARTD_NOCLAIM_SHUTDOWN (= GLIDEIN_Max_Idle); HTCondor logs whole seconds
        log StartdLog "No resources have been claimed for $(awk -v l="$limit" 'BEGIN {printf "%d", (l == int(l)) ? l : int(l) + 1}') seconds"
        log StartdLog "Shutting down Condor on this machine."
    else
        # idle after jobs: the glidein's STARTD.DAEMON_SHUTDOWN expression (DS1_IDLE_TAIL)
        log StartdLog 'The DaemonShutdown expression "(DynamicSlot =!= True) && ((GLIDEIN_ToDie =!= UNDEFINED) && (CurrentTime > GLIDEIN_ToDie)) || ((Slot1_Activity == \"Idle\") && (Slot1_State =!= \"Claimed\") && ((GLIDEIN_Max_Tail =!= UNDEFINED) && ((CurrentTime - Slot1_ExpectedMachineGracefulDrainingCompletion) > GLIDEIN_Max_Tail))))" evaluated to TRUE: starting graceful shutdown'
    fi
    log MasterLog "All daemons are gone.  Exiting."
    exit 99
}

cond_print_log() {
    local logname=$1 fpath=$2
    [ -f "$fpath" ] || return 0
    echo "$logname" 1>&2
    echo "======== gzip | uuencode =============" 1>&2
    { echo "begin-base64 644 -"; gzip --stdout "$fpath" | base64 -; echo "===="; } 1>&2
    echo
}

killed=0
on_die() {
    echo "Condor startup received $1 signal ... shutting down condor processes (forwarding SIGQUIT to $condor_pid)"
    killed=1
    kill -s QUIT "$condor_pid" 2>/dev/null
}
trap 'on_die SIGTERM' TERM
trap 'on_die SIGINT' INT
trap 'on_die SIGQUIT' QUIT

start_time=$(date +%s)
echo "=== Condor starting $(date) (${start_time}) ==="
master &
condor_pid=$!
echo "=== Condor started in background, now waiting on process ${condor_pid} ==="
wait "$condor_pid"
ret=$?
[ "$killed" -eq 0 ] || wait "$condor_pid" 2>/dev/null
end_time=$(date +%s)
echo "=== Condor ended $(date) (${end_time}) after $((end_time - start_time)) ==="
echo
# condor_startup.sh's StarterLog summary (the lines GlideinWMS's Factory reads): the real
# total, then the totals normalised to one core (divided by GLIDEIN_CPUS)
cpus=$(gconfig_get GLIDEIN_CPUS "$config_file"); case $cpus in ''|*[!0-9]*|0) cpus=1 ;; esac
echo "Total jobs/goodZ jobs/goodNZ jobs/badSignal jobs/badOther jobs below are normalized to 1 Core"
echo "=== Stats of main ==="
if [ -f "$work_dir/log/.sim_starter_stats" ]; then
    awk -v p="$cpus" '{ d = $2 - $1; n++; t += d
        if ($4 != 0) { bs += d; nbs++ } else if ($3 == "0") { gz += d; ngz++ } else if ($3 != "") { gnz += d; ngnz++ } else { bo += d; nbo++ } }
        END { print "================="
              print "(Real) Total jobs", n + 0, "utilization", t + 0
              print "(Normalized) Total jobs", int((n + p - 1) / p), "utilization", int(t / p)
              print "(Normalized) Total goodZ jobs", int((ngz + p - 1) / p), " (-%)", "utilization", int(gz / p), " (-%)"
              print "(Normalized) Total goodNZ jobs", int((ngnz + p - 1) / p), " (-%)", "utilization", int(gnz / p), " (-%)"
              print "(Normalized) Total badSignal jobs", int((nbs + p - 1) / p), " (-%)", "utilization", int(bs / p), " (-%)"
              print "(Normalized) Total badOther jobs", int((nbo + p - 1) / p), " (-%)", "utilization", int(bo / p), " (-%)" }' \
        "$work_dir/log/.sim_starter_stats"
fi
echo "=== End Stats of main ==="

cond_print_log MasterLog "$work_dir/log/MasterLog"
cond_print_log StartdLog "$work_dir/log/StartdLog"
cond_print_log StartdHistoryLog "$work_dir/log/StartdHistoryLog"

if [ "$killed" -ne 0 ]; then
    echo "Explicitly killed, exiting with return code 0 instead of $ret"
    exit 0
fi
if [ "$ret" -eq 99 ]; then
    "$error_gen" -ok "condor_startup.sh" "AutoShutdown" "True" "CondorDuration" "$((end_time - start_time))" "CondorKilled" "False"
    exit 0
fi
"$error_gen" -error "condor_startup.sh" "WN_Resource" "Condor exited with code $ret" "CondorDuration" "$((end_time - start_time))"
exit 1
