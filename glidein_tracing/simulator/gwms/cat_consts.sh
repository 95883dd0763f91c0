#!/bin/bash
# cat_consts.sh (glidein_tracing simulator stand-in): merges the list's constants file
# into glidein_config (this is when entry constants such as GLIDEIN_Site arrive).
glidein_config="$1"
dir_id=$2
# shellcheck disable=SC1090
. "$(grep -m1 '^ADD_CONFIG_LINE_SOURCE ' "$glidein_config" | cut -d ' ' -f 2-)"
error_gen=$(gconfig_get ERROR_GEN_PATH "$glidein_config")
case $dir_id in main) prefix= ;; entry) prefix=ENTRY_ ;; *) prefix=$(echo "$dir_id" | tr '[:lower:]' '[:upper:]')_ ;; esac
consts_file=$(gconfig_get "${prefix}CONSTS_FILE" "$glidein_config")
if [ -z "$consts_file" ]; then
    "$error_gen" -error "cat_consts.sh" "Corruption" "Cannot find ${prefix}CONSTS_FILE in $glidein_config!" "attribute" "${prefix}CONSTS_FILE"
    exit 1
fi
nr_lines=0
echo "# --- Provided $dir_id constants  ---" >> "$glidein_config"
while IFS= read -r line; do
    var_name=$(echo "$line" | cut -f 1 | sed -e 's/[[:space:]]*$//')
    var_value=$(echo "$line" | cut -s -f 2- | sed -e 's/[[:space:]]*$//')
    [ -n "$var_name" ] || continue
    ( set -f; gconfig_add "$var_name" "$var_value" )
    nr_lines=$((nr_lines + 1))
done < "$consts_file" 2>/dev/null
echo "# --- End $dir_id constants       ---" >> "$glidein_config"
"$error_gen" -ok "cat_consts.sh" "NrAttributes" "$nr_lines"
exit 0
