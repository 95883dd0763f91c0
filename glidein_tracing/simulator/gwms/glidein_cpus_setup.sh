#!/bin/bash
# glidein_cpus_setup.sh (glidein_tracing simulator stand-in): GLIDEIN_CPUS, default 1.
glidein_config="$1"
# shellcheck disable=SC1090
. "$(grep -m1 '^ADD_CONFIG_LINE_SOURCE ' "$glidein_config" | cut -d ' ' -f 2-)"
error_gen=$(gconfig_get ERROR_GEN_PATH "$glidein_config")
cpus=$(gconfig_get GLIDEIN_CPUS "$glidein_config")
[ -n "$cpus" ] || { echo "$(date) GLIDEIN_CPUS not set in glidein_config. Setting to default of 1."; cpus=1; }
gconfig_add GLIDEIN_CPUS "$cpus"
"$error_gen" -ok "glidein_cpus_setup.sh" "GLIDEIN_CPUS" "$cpus"
exit 0
