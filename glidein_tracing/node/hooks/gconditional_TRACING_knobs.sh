# shellcheck shell=bash
# Generated from glidein_tracing/core/knobs.py by `python dev/knobs.py`.
# Do not edit: change the table and regenerate (a test checks they agree).
# gt_knobs_load: read every knob from glidein_config into GT_* variables;
# a bad value gets a note in the journal and the glidein log, and the default.
gt_knobs_load() {
    gt_knob GT_ENDPOINT GLIDEIN_TRACING_ENDPOINT url '' '' '' ''
    gt_knob GT_EXPORT_MODE GLIDEIN_TRACING_EXPORT_MODE enum 'forward' '' '' 'live forward both'
    gt_knob GT_EXPORT_TIMEOUT GLIDEIN_TRACING_EXPORT_TIMEOUT int '5' '1' '30' ''
    gt_knob GT_SAMPLE_PERIOD GLIDEIN_TRACING_SAMPLE_PERIOD int '30' '0' '3600' ''
    gt_knob GT_SAMPLING_RATIO GLIDEIN_TRACING_SAMPLING_RATIO float '1.0' '0.0' '1.0' ''
    gt_knob GT_SERVICE_NAME GLIDEIN_TRACING_SERVICE_NAME string 'glidein' '' '' ''
    gt_knob GT_MAX_SPANS GLIDEIN_TRACING_MAX_SPANS int '2000' '10' '100000' ''
    gt_knob GT_REDACT GLIDEIN_TRACING_REDACT string '' '' '' ''
    gt_knob GT_PYTHON GLIDEIN_TRACING_PYTHON string '' '' '' ''
    gt_knob GT_LOG_TAIL_LINES GLIDEIN_TRACING_LOG_TAIL_LINES int '50' '0' '500' ''
    gt_knob GT_JOB_LOG_TAIL_LINES GLIDEIN_TRACING_JOB_LOG_TAIL_LINES int '0' '0' '500' ''
}
