#!/bin/bash
# glidein_startup_sim.sh: a stand-in for GlideinWMS's glidein_startup.sh, for tests and
# the demo (the real one needs a Factory web server and HTCondor). It follows the real
# conventions as recorded in ../shared/fixtures/glidein-run (docs/hooks.md):
# - work dir glide_XXXXXX in the start dir; glidein_config with the real keys (last
#   line for a key wins); -param_X values decoded into it;
# - file lists in the real order (main, entry, main precvmfs, main at, client,
#   client_group, main after); gconditional_AAA_* files only when GLIDEIN_USE_AAA is set;
# - executables run as `SCRIPT glidein_config ID`, cwd work dir, stdin /dev/null; a
#   record per executed script in otr_outlist.list in the exact XML shape (error_gen,
#   error_augment); the first failing script is a validation failure;
# - the file named by GLIDEIN_CLEANUP_SCRIPT (and cvmfs_umount.sh) is copied to
#   .gwms.d/exec/cleanup at download time instead of being run; wrapper files go to
#   WRAPPER_LIST; the last script (condor_startup.sh) runs in the background;
# - glidein_exit: cleanup scripts, the ~20 min failure sleep (compressed: SIM_FAIL_SLEEP),
#   the activity XML on stdout and encoded on stderr, removal of the work dir.
# Time is compressed (short sleeps) but every timestamp is real.
#
# Simulator-only inputs (environment): GLIDEIN_SIM_QUEUE (the "schedd": a directory of
# jobs for the condor stand-in), GLIDEIN_SIM_FAIL_SLEEP (seconds, default 1),
# GLIDEIN_SIM_KEEP_WORKDIR (non-empty: do not remove the work dir).

startup_time=$(date +%s)
start_dir=$PWD
params=""
multi_glidein_restart=""
while [ $# -gt 0 ]; do
    # shellcheck disable=SC2034  # -dir, -multirestart: parsed as glidein_startup.sh parses them; the stand-in needs no value
    case "$1" in
        -name) glidein_name="$2" ;;
        -entry) glidein_entry="$2" ;;
        -clientname) client_name="$2" ;;
        -clientgroup) client_group="$2" ;;
        -schedd) condorg_schedd="$2" ;;
        -factory) glidein_factory="$2" ;;
        -web) repository_url="$2" ;;
        -dir) work_dir_arg="$2" ;;
        -cluster) condorg_cluster="$2" ;;
        -subcluster) condorg_subcluster="$2" ;;
        -multirestart) multi_glidein_restart="$2" ;;
        -submitcredid) glidein_cred_id="$2" ;;
        -param_*) params="$params ${1#-param_} $2" ;;
        -v|-proxy|-sign|-signentry|-signtype|-descript|-descriptentry|-slotslayout) ;;
        *) echo "Unknown option $1" 1>&2 ;;
    esac
    shift 2
done

warn() { echo "WARN $(date)" "$@" 1>&2; }

params_decode() {
    echo "$1" | sed -e 's/\.nbsp,/ /g' -e 's/\.semicolon,/;/g' -e 's/\.colon,/:/g' \
        -e 's/\.tilde,/~/g' -e 's/\.not,/!/g' -e 's/\.question,/?/g' -e 's/\.star,/*/g' \
        -e 's/\.dollar,/$/g' -e 's/\.comment,/#/g' -e 's/\.sclose,/]/g' -e 's/\.sopen,/[/g' \
        -e 's/\.gclose,/}/g' -e 's/\.gopen,/{/g' -e 's/\.close,/)/g' -e 's/\.open,/(/g' \
        -e 's/\.gt,/>/g' -e 's/\.lt,/</g' -e 's/\.minus,/-/g' -e 's/\.plus,/+/g' \
        -e 's/\.eq,/=/g' -e "s/\.singquot,/'/g" -e 's/\.quot,/"/g' -e 's/\.fork,/`/g' \
        -e 's/\.pipe,/|/g' -e 's/\.backslash,/\\/g' -e 's/\.amp,/\&/g' -e 's/\.comma,/,/g' \
        -e 's/\.dot,/./g'
}

################################
# Work dir and the helper sources GlideinWMS puts in it
if ! work_dir=$(mktemp -d "${start_dir}/glide_XXXXXX"); then
    warn "Cannot create work_dir"; exit 1
fi
cd "$work_dir" || exit 1
echo "Running in ${work_dir}"
glidein_uuid=$(cat /proc/sys/kernel/random/uuid 2>/dev/null || echo "00000000-0000-0000-0000-$$")
export GLIDEIN_Name="$glidein_name" GLIDEIN_UUID="$glidein_uuid"
# glog_init: the glidein's stdout and stderr also go to logs/<uuid>/<uuid>.out|.err under the
# work dir (GLIDEIN_LOGDIR), where a cleanup script still finds them
glog_dir="logs/${glidein_uuid}"
glog_out_pid= glog_err_pid=
if mkdir -p "$work_dir/$glog_dir"; then
    exec 7>&1 8>&2
    exec 1> >(exec tee -a "$work_dir/$glog_dir/${glidein_uuid}.out")
    glog_out_pid=$!
    exec 2> >(exec tee -a "$work_dir/$glog_dir/${glidein_uuid}.err" >&8)
    glog_err_pid=$!
    warn "glog_init: Started logging stderr on file too"
fi
# glog_close: back to the plain stdout/stderr, the copies complete
glog_close() {
    [ -n "$glog_out_pid" ] || return 0
    exec 1>&7 2>&8 7>&- 8>&-
    wait "$glog_out_pid" "$glog_err_pid" 2>/dev/null
    glog_out_pid=
}
main_dir="$work_dir/main"
entry_dir="$work_dir/entry_${glidein_entry}"
GWMS_DIR="$work_dir/.gwms.d"
glide_tmp_dir="$work_dir/tmp"
glide_local_tmp_dir=$(mktemp -d "/tmp/glide_$(id -un 2>/dev/null || echo user)_XXXXXX")
mkdir -p "$main_dir" "$entry_dir" "$glide_tmp_dir" "$work_dir/log" "$work_dir/execute" \
    "$work_dir/condor_config.d" "$GWMS_DIR/bin" "$GWMS_DIR/lib"
for i in setup prejob postjob cleanup setup_singularity; do mkdir -p "$GWMS_DIR/exec/$i"; done
[ -n "$client_name" ] && client_dir="$work_dir/client" && mkdir -p "$client_dir"
[ -n "$client_group" ] && client_group_dir="$work_dir/client_group_${client_group}" && mkdir -p "$client_group_dir"



# the helpers GlideinWMS downloads first: glidein_config helpers, error_gen, error_augment
cp "$repository_url/main/add_config_line.source" "$work_dir/add_config_line.source"
cp "$repository_url/main/error_gen.sh" "$repository_url/main/error_augment.sh" "$main_dir/"
chmod 755 "$main_dir/error_gen.sh" "$main_dir/error_augment.sh"

################################
# glidein_config, as glidein_startup.sh writes it before the file lists
glidein_config="$work_dir/glidein_config"
wrapper_list="$work_dir/wrapper_list.lst"
touch "$wrapper_list" "$main_dir/condor_vars.lst" "$entry_dir/condor_vars.lst"
{
    echo
    echo "GLIDEIN_UUID ${glidein_uuid}"
    echo "GLIDEIN_Factory ${glidein_factory}"
    echo "GLIDEIN_Name ${glidein_name}"
    echo "GLIDEIN_Entry_Name ${glidein_entry}"
    [ -n "$client_name" ] && echo "GLIDECLIENT_Name ${client_name}"
    [ -n "$client_group" ] && echo "GLIDECLIENT_Group ${client_group}"
    [ -n "$glidein_cred_id" ] && echo "GLIDEIN_CredentialIdentifier ${glidein_cred_id}"
    echo "CONDORG_CLUSTER ${condorg_cluster}"
    echo "CONDORG_SUBCLUSTER ${condorg_subcluster}"
    echo "CONDORG_SCHEDD ${condorg_schedd}"
    echo "DEBUG_MODE 1"
    echo "GLIDEIN_STARTUP_PID $$"
    echo "GLIDEIN_START_DIR_ORIG ${start_dir}"
    echo "GLIDEIN_WORKSPACE_ORIG ${work_dir}"
    echo "GLIDEIN_WORK_DIR ${main_dir}"
    echo "GLIDEIN_LOGDIR ${glog_dir}"
    echo "GLIDEIN_ENTRY_WORK_DIR ${entry_dir}"
    echo "TMP_DIR ${glide_tmp_dir}"
    echo "GLIDEIN_LOCAL_TMP_DIR ${glide_local_tmp_dir}"
    echo "PROXY_URL None"
    echo "ADD_CONFIG_LINE_SOURCE ${work_dir}/add_config_line.source"
    echo "WRAPPER_LIST ${wrapper_list}"
    echo "SLOTS_LAYOUT partitionable"
    echo "GLIDEIN_INITIALIZED 0"
    echo "GLIDEIN_ADVERTISE_ONLY 0"
    set -f
    # shellcheck disable=SC2086  # the parameter list, split on purpose
    set -- $params
    set +f
    while [ $# -gt 1 ]; do
        echo "$1 $(params_decode "$2")"
        shift 2
    done
    echo "ERROR_GEN_PATH ${main_dir}/error_gen.sh"
    echo "CONSTS_FILE ${main_dir}/constants.cfg"
    echo "CONDOR_VARS_FILE ${main_dir}/condor_vars.lst"
    echo "ENTRY_CONSTS_FILE ${entry_dir}/constants.cfg"
    echo "ENTRY_CONDOR_VARS_FILE ${entry_dir}/condor_vars.lst"
} > "$glidein_config"
# params2file prints the names of the -param_ parameters it wrote (the Factory's guess of
# whether tracing was asked reads this line)
param_list=
set -f
# shellcheck disable=SC2086  # the parameter list, split on purpose
set -- $params
set +f
while [ $# -gt 1 ]; do param_list="${param_list:+$param_list,}$1"; shift 2; done
echo "PARAM_LIST ${param_list}"
# the description files' constants and condor vars (downloaded before the lists)
for f in constants.cfg condor_vars.lst; do
    [ -r "$repository_url/main/$f" ] && cp "$repository_url/main/$f" "$main_dir/$f"
    [ -r "$repository_url/entry_${glidein_entry}/$f" ] && cp "$repository_url/entry_${glidein_entry}/$f" "$entry_dir/$f"
done
# shellcheck disable=SC1091
. "$work_dir/add_config_line.source"
cleanup_script=$(grep "^GLIDEIN_CLEANUP_SCRIPT " "${glidein_config}" | cut -d ' ' -f 2-)
last_script="condor_startup.sh"

################################
# glidein_exit: cleanup scripts, failure sleep, XML, remove the work dir
print_tail() {
    local code=$1 status=OK end_time
    end_time=$(date +%s)
    [ "$code" -eq 0 ] || status=ERROR
    echo "=== Glidein ending $(date) (${end_time}) with code ${code} after $((end_time - startup_time)) ==="
    echo ""
    echo "=== XML description of glidein activity ==="
    glidein_xml "$status" "$end_time" | grep -v "<cmd>"
    echo "=== End XML description of glidein activity ==="
    echo "" 1>&2
    echo "=== Encoded XML description of glidein activity ===" 1>&2
    { glidein_xml "$status" "$end_time"; [ -f "$work_dir/otr_outlist.list" ] && cat "$work_dir/otr_outlist.list"; } \
        | gzip --stdout - | { echo "begin-base64 644 -"; base64 -; echo "===="; } 1>&2
    echo "=== End encoded XML description of glidein activity ===" 1>&2
}

glidein_xml() {
    echo '<?xml version="1.0"?>'
    echo '<OSGTestResult id="glidein_startup.sh" version="4.3.1">'
    echo '  <operatingenvironment>'
    echo "    <env name=\"client_name\">${client_name}</env>"
    echo "    <env name=\"client_group\">${client_group}</env>"
    echo "    <env name=\"user\">$(id -un 2>/dev/null)</env>"
    echo "    <env name=\"arch\">$(uname -m)</env>"
    echo "    <env name=\"hostname\">$(uname -n)</env>"
    echo "    <env name=\"cwd\">${start_dir}</env>"
    echo '  </operatingenvironment>'
    echo '  <test>'
    echo "    <tStart>$(date --date=@"${startup_time}" +%Y-%m-%dT%H:%M:%S%:z)</tStart>"
    echo "    <tEnd>$(date --date=@"$2" +%Y-%m-%dT%H:%M:%S%:z)</tEnd>"
    echo '  </test>'
    echo '  <result>'
    echo "    <status>$1</status>"
    if [ "$1" = ERROR ] && [ -n "$failed_script" ]; then
        echo "    <metric name=\"TestID\" ts=\"$(date +%Y-%m-%dT%H:%M:%S%:z)\" uri=\"local\">${failed_script}</metric>"
    fi
    echo '  </result>'
    echo '</OSGTestResult>'
}

glidein_exit() {
    local old_pwd=$PWD i
    # cleanup scripts: executables in exec/cleanup, lexical order, `./NAME /abs/glidein_config`
    if cd "$GWMS_DIR/exec/cleanup"; then
        for i in *; do
            [ -e "$i" ] || continue
            [[ "$i" != *.ignore ]] || continue
            [ -x "$i" ] && "./$i" "$glidein_config"
            cd "$GWMS_DIR/exec/cleanup" || break
        done
        cd "$old_pwd" || true
    fi
    if [ "$1" -ne 0 ]; then
        gconfig_add "GLIDEIN_ADVERTISE_ONLY" "1"
        gconfig_add "GLIDEIN_Failed" "True"
        gconfig_add "GLIDEIN_EXIT_CODE" "$1"
        gconfig_add "GLIDEIN_LAST_SCRIPT" "${failed_script##*/}"
        # the real glidein keeps the slot ~20 min after a failure; compressed here
        warn "Sleeping ${GLIDEIN_SIM_FAIL_SLEEP:-1}"
        sleep "${GLIDEIN_SIM_FAIL_SLEEP:-1}"
    fi
    glog_close
    cd "$start_dir" || true
    if [ -z "${GLIDEIN_SIM_KEEP_WORKDIR:-}" ]; then
        find "$work_dir" -type d -exec chmod u+w {} \; 2>/dev/null
        rm -fR "$work_dir" "$glide_local_tmp_dir"
    fi
    print_tail "$1"
    exit "$1"
}

################################
# Running one executable of a file list, with its record
run_script() {
    # 1: id (main, entry, client, client_group) 2: target name 3: path
    local id=$1 target=$2 path=$3 ret START END
    echo "Executing (flags:) ${path}"
    "${main_dir}"/error_augment.sh -init
    START=$(date +%s)
    "$path" glidein_config "$id" < /dev/null
    ret=$?
    END=$(date +%s)
    "${main_dir}"/error_augment.sh -process ${ret} "${id}/${target}" "${PWD}" "${path} glidein_config" "${START}" "${END}"
    "${main_dir}"/error_augment.sh -concat
    if [ ${ret} -ne 0 ]; then
        echo "=== Validation error in ${path} ===" 1>&2
        warn "Error running '${path}'"
        < otrx_output.xml awk 'BEGIN{fr=0;}/<[/]detail>/{fr=0;}{if (fr==1) print $0}/<detail>/{fr=1;}' 1>&2
        failed_script="${id}/${target}"
        return 1
    fi
    echo "=== validation OK in ${path} (0) ===" 1>&2
}

# One file of a list: fetch (copy from the staging area), then act by type.
fetch_file() {
    # 1: id 2: target 3: real name 4: type 5: period 6: prefix 7: cond_download 8: config_out
    local id=$1 target=$2 real=$3 type=$4 cond=$7 dir val attr
    if [ "$cond" != "TRUE" ]; then
        [ "$(gconfig_get "$cond" "$glidein_config" -i)" = "1" ] || return 0
    fi
    if [[ "$target" = gconditional_* ]]; then
        attr="${target#gconditional_}"
        attr="GLIDEIN_USE_${attr%%_*}"
        val=$(gconfig_get "$attr" "$glidein_config" -i)
        [ -n "$val" ] || return 0
    fi
    case $id in
        main) dir=$main_dir ;;
        entry) dir=$entry_dir ;;
        client) dir=$client_dir ;;
        client_group) dir=$client_group_dir ;;
    esac
    local src
    src="$repository_url/$(stage_subdir "$id")/$real"
    if ! cp "$src" "$dir/$target" 2>/dev/null; then
        warn "Failed to load file '$real' from '$repository_url'."
        failed_script="${id}/${target}"
        return 1
    fi
    case $type in
        exec|exec:*)
            chmod u+x "$dir/$target"
            if [ "$id" = main ] && [ "$target" = "$last_script" ]; then
                echo "Skipping last script ${last_script}" 1>&2
            elif [ "$target" = cvmfs_umount.sh ] || { [ -n "$cleanup_script" ] && [ "$target" = "$cleanup_script" ]; }; then
                echo "Skipping cleanup script $dir/$target (${cleanup_script})" 1>&2
                cp "$dir/$target" "$GWMS_DIR/exec/cleanup/$target"
                chmod a+x "$GWMS_DIR/exec/cleanup/$target"
            else
                run_script "$id" "$target" "$dir/$target" || return 1
            fi ;;
        wrapper) echo "$dir/$target" >> "$wrapper_list" ;;
        *) ;;
    esac
    return 0
}

stage_subdir() {
    case $1 in
        main) echo main ;;
        entry) echo "entry_${glidein_entry}" ;;
        client) echo client ;;
        client_group) echo "client_group_${client_group}" ;;
    esac
}

################################
# The file lists, in the real order
for gs_file_id in "main file_list" "entry file_list" "main precvmfs_file_list" "main at_file_list" \
                  "client file_list" "client_group file_list" "main after_file_list"; do
    gs_id=${gs_file_id%% *}
    gs_list="$repository_url/$(stage_subdir "$gs_id")/${gs_file_id#* }.lst"
    [ -r "$gs_list" ] || continue
    while read -r file_line; do
        # shellcheck disable=SC2015  # skip unless both hold
        [ -n "$file_line" ] && [ "${file_line:0:1}" != "#" ] || continue
        # shellcheck disable=SC2086
        fetch_file "$gs_id" $file_line || glidein_exit 1
    done < "$gs_list"
done

################################
# The last script: condor_startup.sh in the background, SIGTERM forwarded to it
gconfig_add "GLIDEIN_INITIALIZED" "1"
echo "# --- Last Script values ---" >> "${glidein_config}"
last_startup_time=$(date +%s)
echo "=== Last script starting $(date) (${last_startup_time}) after validating for $((last_startup_time - startup_time)) ==="
echo
ON_DIE=0
on_die() {
    echo "Received kill signal... shutting down child processes (forwarding $1 signal)" 1>&2
    ON_DIE=1
    kill -s "$1" %1
}
trap 'echo "Ignoring SIGHUP signal... Use SIGTERM or SIGQUIT to kill processes" 1>&2' SIGHUP
trap 'on_die TERM' SIGTERM
trap 'on_die INT' SIGINT
trap 'on_die QUIT' SIGQUIT
"${main_dir}"/error_augment.sh -init
"${main_dir}/${last_script}" glidein_config &
wait $!
ret=$?
if [ ${ON_DIE} -eq 1 ]; then
    ret=0
fi
last_startup_end_time=$(date +%s)
"${main_dir}"/error_augment.sh -process ${ret} "${last_script}" "${PWD}" "${main_dir}/${last_script} glidein_config" "${last_startup_time}" "${last_startup_end_time}"
"${main_dir}"/error_augment.sh -concat
echo "=== Last script ended $(date) (${last_startup_end_time}) with code ${ret} after $((last_startup_end_time - last_startup_time)) ==="
echo
[ ${ret} -eq 0 ] || { warn "Error running '${last_script}'"; failed_script=$last_script; }
echo "=== Exit messages left by periodic scripts ===" 1>&2
echo "No message left" 1>&2
echo 1>&2
glidein_exit ${ret}
