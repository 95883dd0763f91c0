#!/bin/bash
# glidein_tracing end-of-setup hook: an executable listed after_entry, last.
# Called as `SCRIPT glidein_config main`, cwd = the work dir. Adds what is known only
# now (GLIDEIN_Site arrives with the entry constants) and closes the `setup` span.
# Exits 0 whatever happens.

GT_CONFIG=${1:-glidein_config}

# gt_report: tell GlideinWMS we are fine, as real setup scripts do.
gt_report() {
    local error_gen
    error_gen=$(grep -m1 '^ERROR_GEN_PATH ' "$GT_CONFIG" 2>/dev/null | cut -d ' ' -f 2-)
    [ -n "$error_gen" ] && [ -x "$error_gen" ] || return 0
    "$error_gen" -ok "gconditional_TRACING_setup_end.sh" >/dev/null 2>&1 </dev/null || true
}

gt_main() {
    local lib
    lib=$(grep '^GLIDEIN_TRACING_LIB ' "$GT_CONFIG" 2>/dev/null | tail -n 1 | cut -d ' ' -f 2-)
    # no library recorded: the setup hook disabled tracing (and said why)
    [ -n "$lib" ] && [ -r "$lib" ] || return 0
    # shellcheck disable=SC1090
    . "$lib" 2>/dev/null || return 0
    gt_setup_env "$GT_CONFIG" GLIDEIN_Site GLIDEIN_CPUS GLIDEIN_Gatekeeper || return 0
    gt_now
    local site cpus gk
    gt_get GLIDEIN_Site; site=$GT_V
    gt_get GLIDEIN_CPUS; cpus=$GT_V
    case $cpus in ''|*[!0-9]*) cpus= ;; esac
    gt_get GLIDEIN_Gatekeeper; gk=$GT_V
    gt_emit "$GT_NOW" attr glidein "glidein.site=$site" "glidein.cpus:i=$cpus" \
        "glidein.gatekeeper=$gk" \
        || { gt_msg "cannot append to $GT_JOURNAL: setup end not recorded"; return 0; }
    gt_emit_snap "$GT_NOW" end setup "$GT_STARTUP_PID" "@status=OK"
}

gt_main
gt_report
exit 0
