#!/bin/bash
# check_proxy.sh (glidein_tracing simulator stand-in): reports OK through error_gen.
glidein_config="$1"
error_gen=$(grep -m1 '^ERROR_GEN_PATH ' "$glidein_config" | cut -d ' ' -f 2-)
"$error_gen" -ok "check_proxy.sh" "proxy" "None"
exit 0
