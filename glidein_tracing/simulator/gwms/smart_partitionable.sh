#!/bin/bash
# smart_partitionable.sh (glidein_tracing simulator stand-in): one slot, fixed layout.
glidein_config="$1"
# shellcheck disable=SC1090
. "$(grep -m1 '^ADD_CONFIG_LINE_SOURCE ' "$glidein_config" | cut -d ' ' -f 2-)"
error_gen=$(gconfig_get ERROR_GEN_PATH "$glidein_config")
gconfig_add SLOTS_LAYOUT fixed
"$error_gen" -ok "smart_partitionable.sh" "Action" "SwitchSingleToFixed"
exit 0
