#!/bin/bash
# condor_platform_select.sh (glidein_tracing simulator stand-in): reports OK through error_gen.
glidein_config="$1"
error_gen=$(grep -m1 '^ERROR_GEN_PATH ' "$glidein_config" | cut -d ' ' -f 2-)
"$error_gen" -ok "condor_platform_select.sh" "Condor_platform" "default-default-default"
exit 0
