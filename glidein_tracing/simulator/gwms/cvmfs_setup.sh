#!/bin/bash
# cvmfs_setup.sh (glidein_tracing simulator stand-in): reports OK through error_gen.
glidein_config="$1"
error_gen=$(grep -m1 '^ERROR_GEN_PATH ' "$glidein_config" | cut -d ' ' -f 2-)
"$error_gen" -ok "cvmfs_setup.sh" "msg" "Not using cvmfsexec; skipping setup."
exit 0
