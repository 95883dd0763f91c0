# shellcheck shell=sh
# glidein_tracing: shell library sourced by every glidein_tracing hook.
# POSIX sh (the job wrapper may run under dash); faster paths when running under bash.
# Every name here starts with gt_ / GT_ so nothing collides with GlideinWMS or the job.
# Nothing here exits: functions return non-zero and the caller disables tracing.
# Format of the journal: docs/journal.md; ids: docs/ids.md.
# Forks are what recording costs (docs/hooks.md, Cost): `$(exec CMD ... 2>/dev/null)` makes
# bash fork once; `$(CMD ... 2>/dev/null)` forks a subshell that forks again for CMD.

GT_TAB='	'
GT_NL='
'
if [ -n "${BASH_VERSION:-}" ]; then
    eval "GT_CR=\$'\\r'"
else
    GT_CR=$(printf '\r')
fi
GT_MAX_VALUE=1024   # bytes per value (docs/journal.md)
GT_MAX_LINE=3999    # bytes per line, without the newline

# gt_redact(s): s with every secret replaced by REDACTED, by the rules of the Factory's
# glidein_tracing/core/redaction.py (tests/test_redaction_agree.py runs both on one corpus):
# control bytes dropped first (a key split by them is whole again), a PEM block to its end,
# URL passwords, query signatures (presigned URLs, SAS), webhook paths, known token formats
# anywhere (GitHub, GitLab, Slack, Google, Stripe, npm, PyPI... JWTs, AWS key ids: in a URL
# too), quoted and plain secret-looking keys' values, --key values, Bearer/Basic credentials.
# A line with no hint of any rule (GT_RX_HINT: one match) is returned after that one test;
# a line with hints takes only the passes of the rules they belong to. Matching is on a lower-case copy (the rules
# ignore case). No {n} intervals (old mawk has none): gt_at_least builds them. Every pattern
# begins with something fixed (a key's marker, "://", a token's prefix), never with a run of
# letters: awk tries a pattern at every position, so a leading run would cost the square of
# a long line of letters. So a key is matched from its marker (the letters before it stay as
# they are) and a URL from "://".
GT_AWK_REDACT='
function gt_at_least(gt_cls, gt_n,   gt_res) { gt_res = ""; while (gt_n-- > 0) gt_res = gt_res gt_cls; return gt_res gt_cls "*" }
function gt_redact_init(   gt_key, gt_an) {
    gt_key = "(token|passw|secret|proxy_key|private|credential|authorization|apikey|api_key|api-key|access_key|accountkey|sshpass)[a-z0-9_.-]*"
    gt_an = "[a-z0-9]"
    GT_RX_TOKEN = "(gh[pousr]_" gt_at_least(gt_an, 20) ")|(github_pat_" gt_at_least("[a-z0-9_]", 20) \
        ")|(xox[abposr]-" gt_at_least("[a-z0-9-]", 10) ")|(gl(pat|ptt|dt|rt)-" gt_at_least("[a-z0-9_-]", 20) \
        ")|(eyj" gt_at_least("[a-z0-9_-]", 8) "[.]" gt_at_least("[a-z0-9_-]", 8) "([.][a-z0-9_-]*)?)" \
        "|((akia|asia)" gt_at_least(gt_an, 16) ")|(aiza" gt_at_least("[a-z0-9_-]", 30) \
        ")|([sr]k_(live|test)_" gt_at_least(gt_an, 10) ")|(npm_" gt_at_least(gt_an, 30) \
        ")|(pypi-ageichlwas5vcmc" gt_at_least("[a-z0-9_-]", 20) ")|(sg[.]" gt_at_least("[a-z0-9_-]", 16) "[.]" \
        gt_at_least("[a-z0-9_-]", 16) ")|(hf_" gt_at_least(gt_an, 30) ")|(do[opr]_v1_" gt_at_least("[a-f0-9]", 40) \
        ")|(shp(at|ss|ca|pa)_" gt_at_least("[a-f0-9]", 32) ")|(hv[sb][.]" gt_at_least("[a-z0-9_-]", 24) \
        ")|(age-secret-key-1" gt_at_least(gt_an, 40) ")|(dapi" gt_at_least("[a-f0-9]", 32) \
        ")|(sk-(proj|ant|svcacct)-" gt_at_least("[a-z0-9_-]", 20) ")|(pmak-" gt_at_least("[a-z0-9-]", 40) \
        ")|(lin_api_" gt_at_least(gt_an, 30) ")|(nrak-" gt_at_least(gt_an, 20) ")"
    GT_RX_URL = "://[^:/@ \t]+:"
    GT_RX_QS = "[?&;, \t](sig|signature|x-amz-signature|x-goog-signature|x-goog-credential|x-amz-security-token)="
    GT_RX_HOOK = "(hooks[.]slack[.]com/(services|workflows|triggers)|discord(app)?[.]com/api/webhooks)/"
    GT_RX_QUOTED = gt_key "[\"\047][ \t]*[:=][ \t]*"
    GT_RX_QUOTED_SECRET = "(\"[^\"]*\"|\047[^\047]*\047|[^] \t,;&\"\047}]+)"
    GT_RX_KV = gt_key "[ \t]*(=|:[ \t]|\t)[ \t]*"
    GT_RX_KV_SECRET = "((bearer|basic)[ \t]+)?(\"[^\"]*\"|\047[^\047]*\047|[^ \t,;&\"\047]+)"
    GT_RX_OPT = "[ \t]--?[a-z0-9_.-]*" gt_key "[ \t]+"
    GT_RX_AUTH = "(bearer|basic)[ \t]+"
    # what each rule needs in a line (lower case): a pass runs only on a line holding its hint,
    # and a line holding none (GT_RX_HINT, all of them: one match) is returned after that test
    GT_H_KEY = "token|passw|secret|proxy_key|private|credential|authorization|api[_-]?key|access_key|accountkey|sshpass"
    GT_H_QS = "sig=|signature=|credential=|token="
    GT_H_HOOK = "hooks[.]slack[.]com/|/api/webhooks/"
    GT_H_TOKEN = "gh[pousr]_|github_pat_|xox[abposr]-|gl(pat|ptt|dt|rt)-|eyj|akia|asia|aiza|[sr]k_(live|test)_|npm_" \
        "|pypi-|sg[.]|hf_|_v1_|shp|hv[sb][.]|age-secret-key-|dapi|sk-|pmak-|lin_api_|nrak-"
    GT_H_AUTH = "bearer|basic"
    GT_RX_HINT = GT_H_KEY "|" GT_H_QS "|" GT_H_HOOK "|" GT_H_TOKEN "|" GT_H_AUTH "|://|-----begin "
    # the passes, by number: what is kept before the secret (K, anchored) and the whole match (F)
    GT_K1 = "^" GT_RX_URL;    GT_F1 = GT_RX_URL "[^@/ \t]+@"
    GT_K2 = "^" GT_RX_QS;     GT_F2 = GT_RX_QS "[^&# \t,;\"\047]+"
    GT_K3 = "^" GT_RX_HOOK;   GT_F3 = GT_RX_HOOK "[a-z0-9/_.-]+"
    GT_F4 = GT_RX_TOKEN
    GT_K5 = "^" GT_RX_QUOTED; GT_F5 = GT_RX_QUOTED GT_RX_QUOTED_SECRET
    GT_K6 = "^" GT_RX_KV;     GT_F6 = GT_RX_KV GT_RX_KV_SECRET
    GT_K7 = "^" GT_RX_OPT;    GT_F7 = GT_RX_OPT "[^ \t-][^ \t]*"
    GT_K8 = "^" GT_RX_AUTH;   GT_F8 = GT_RX_AUTH gt_at_least("[a-z0-9._~+/=-]", 8)
    GT_REDACT_READY = 1
}
# gt_find(k, low), gt_keep(k, m): match pass k (whole, or its kept part at the start of m). One
# call site a pattern: gawk compiles a dynamic pattern again whenever its call site is given
# another one, so a shared match() recompiled six patterns on every line (19 ms a 50-line tail)
function gt_find(k, low) {
    if (k == 1) return match(low, GT_F1); if (k == 2) return match(low, GT_F2)
    if (k == 3) return match(low, GT_F3); if (k == 4) return match(low, GT_F4)
    if (k == 5) return match(low, GT_F5); if (k == 6) return match(low, GT_F6)
    if (k == 7) return match(low, GT_F7); return match(low, GT_F8)
}
function gt_keep(k, m) {
    if (k == 1) return match(m, GT_K1) ? RLENGTH : 0; if (k == 2) return match(m, GT_K2) ? RLENGTH : 0
    if (k == 3) return match(m, GT_K3) ? RLENGTH : 0; if (k == 4) return 0
    if (k == 5) return match(m, GT_K5) ? RLENGTH : 0; if (k == 6) return match(m, GT_K6) ? RLENGTH : 0
    if (k == 7) return match(m, GT_K7) ? RLENGTH : 0; return match(m, GT_K8) ? RLENGTH : 0
}
# gt_redact_pass(s, k, after): each match of pass k in s (after: a literal the match ends with)
# becomes its kept part, REDACTED, after
function gt_redact_pass(gt_s, gt_k, gt_after,   gt_low, gt_res, gt_at, gt_len, gt_kept) {
    gt_res = ""; gt_low = tolower(gt_s)
    while (gt_find(gt_k, gt_low)) {
        gt_at = RSTART; gt_len = RLENGTH
        gt_kept = gt_keep(gt_k, substr(gt_low, gt_at, gt_len))
        gt_res = gt_res substr(gt_s, 1, gt_at - 1 + gt_kept) "REDACTED" gt_after
        gt_s = substr(gt_s, gt_at + gt_len); gt_low = substr(gt_low, gt_at + gt_len)
    }
    return gt_res gt_s
}
function gt_redact(s,   gt_at, gt_low) {
    if (!GT_REDACT_READY) gt_redact_init()
    gsub(/[\001-\010\013\014\016-\037\177]/, "", s)
    gt_low = tolower(s)
    if (gt_low !~ GT_RX_HINT) return s
    gt_at = index(gt_low, "-----begin ")
    if (gt_at) { s = substr(s, 1, gt_at - 1) "REDACTED"; gt_low = tolower(s) }
    if (index(gt_low, "://")) s = gt_redact_pass(s, 1, "@")
    if (gt_low ~ GT_H_QS) s = substr(gt_redact_pass(" " s, 2, ""), 2)
    if (gt_low ~ GT_H_HOOK) s = gt_redact_pass(s, 3, "")
    if (gt_low ~ GT_H_TOKEN) s = gt_redact_pass(s, 4, "")
    if (gt_low ~ GT_H_KEY) {
        s = gt_redact_pass(s, 5, "")
        s = gt_redact_pass(s, 6, "")
        s = substr(gt_redact_pass(" " s, 7, ""), 2)
    }
    if (gt_low ~ GT_H_AUTH) s = gt_redact_pass(s, 8, "")
    return s
}
'

# gt_msg TEXT: one clear line on stderr, never on stdout (stdout may be captured).
gt_msg() {
    printf 'glidein_tracing: %s\n' "$*" >&2
}

# gt_clean VALUE: GT_V = VALUE with TAB/CR/LF as spaces, other control bytes dropped, cut at
# GT_MAX_VALUE bytes.
if [ -n "${BASH_VERSION:-}" ]; then
    # bash: one expansion, no fork
    eval 'gt_clean() {
        GT_V=${1//[$'"'"'\t\r\n'"'"']/ }
        GT_V=${GT_V//[[:cntrl:]]/}
        [ ${#GT_V} -le 256 ] || gt_cut "$GT_MAX_VALUE"
    }'
else
    gt_clean() {
        GT_V=$1
        gt_subst "$GT_TAB"
        gt_subst "$GT_CR"
        gt_subst "$GT_NL"
        case $GT_V in *[[:cntrl:]]*) GT_V=$(printf '%s' "$GT_V" | LC_ALL=C tr -d '\000-\037\177') ;; esac
        [ ${#GT_V} -le 256 ] || gt_cut "$GT_MAX_VALUE"
    }
fi

# gt_subst CHAR: replace every CHAR in GT_V by a space (POSIX, builtins only).
gt_subst() {
    while :; do
        case $GT_V in
            *"$1"*) GT_V="${GT_V%%"$1"*} ${GT_V#*"$1"}" ;;
            *) return 0 ;;
        esac
    done
}

# gt_bytelen: GT_LEN = length of GT_V in bytes (bash counts characters unless LC_ALL=C).
if [ -n "${BASH_VERSION:-}" ]; then
    eval 'gt_bytelen() { local LC_ALL=C; GT_LEN=${#GT_V}; }'
else
    gt_bytelen() { GT_LEN=${#GT_V}; }
fi

# gt_cut N: cut GT_V to at most N bytes without leaving half a UTF-8 character
# (the reader drops non-UTF-8 lines). Forks only when a cut is needed (huge values).
gt_cut() {
    gt_bytelen
    [ "$GT_LEN" -gt "$1" ] || return 0
    if command -v iconv >/dev/null 2>&1; then
        GT_V=$(printf '%s' "$GT_V" | head -c "$1" | iconv -f UTF-8 -t UTF-8 -c 2>/dev/null)
    else
        GT_V=$(printf '%s' "$GT_V" | head -c "$1" | LC_ALL=C tr -cd '\040-\176')
    fi
}

# gt_now: GT_NOW = epoch seconds with a fraction. bash >= 5: no fork.
gt_now() {
    # shellcheck disable=SC3028  # bash's clock when the shell is bash; empty under dash, then date(1)
    GT_NOW=${EPOCHREALTIME:-}
    if [ -n "$GT_NOW" ]; then
        case $GT_NOW in *,*) GT_NOW="${GT_NOW%,*}.${GT_NOW#*,}" ;; esac   # locale decimal comma
        return 0
    fi
    GT_NOW=$(exec date +%s.%N 2>/dev/null)
    case $GT_NOW in *N*|'') GT_NOW=$(exec date +%s) ;; esac
}

# gt_cfg_read FILE KEY...: one pass over a glidein_config; sets GT_C_<KEY> for the
# KEYs asked and for every GLIDEIN_TRACING_* key, and GT_CFG_KEYS to the keys it found. The
# last line for a key wins and the value is everything after the first space (as gconfig_get
# does).
gt_cfg_read() {
    gt_cr_file=$1
    shift
    gt_cr_want=" $* "
    GT_CFG_KEYS=
    [ -r "$gt_cr_file" ] || return 1
    while IFS= read -r gt_cr_line || [ -n "$gt_cr_line" ]; do
        gt_cr_key=${gt_cr_line%% *}
        case $gt_cr_key in ''|*[!A-Za-z0-9_]*) continue ;; esac
        case $gt_cr_want in
            *" $gt_cr_key "*) ;;
            *) case $gt_cr_key in GLIDEIN_TRACING_*) ;; *) continue ;; esac ;;
        esac
        GT_CFG_KEYS="$GT_CFG_KEYS $gt_cr_key"
        if [ "$gt_cr_key" = "$gt_cr_line" ]; then
            eval "GT_C_$gt_cr_key="
        else
            eval "GT_C_$gt_cr_key=\${gt_cr_line#* }"
        fi
    done < "$gt_cr_file"
    return 0
}

# gt_get KEY: GT_V = the value gt_cfg_read found for KEY (empty if none).
gt_get() {
    eval "GT_V=\${GT_C_$1:-}"
}

# GT_AWK_REDACT_FIELDS: a journal line with each field's value redacted (gt_redact)
# shellcheck disable=SC2016  # an awk program: its $ are awk's
GT_AWK_REDACT_FIELDS='
{
    out = $1 "\t" $2 "\t" $3 "\t" $4
    for (i = 5; i <= NF; i++) {
        eq = index($i, "=")
        out = out "\t" (eq ? substr($i, 1, eq) gt_redact(substr($i, eq + 1)) : $i)
    }
    print out
}'

# gt_emit TIME OP KEY [NAME=VALUE]...: append one journal line with one write.
# Empty values are left out. Returns non-zero when the line could not be written.
gt_emit() {
    [ -n "${GT_JOURNAL:-}" ] || return 1
    gt_clean "$3"
    gt_em_line="gtj1${GT_TAB}$1${GT_TAB}$2${GT_TAB}$GT_V" gt_em_data=
    shift 3
    for gt_em_f in "$@"; do
        gt_em_n=${gt_em_f%%=*}
        [ "$gt_em_n" != "$gt_em_f" ] || continue
        gt_clean "${gt_em_f#*=}"
        [ -n "$GT_V" ] || continue
        if [ "$gt_em_n" = @log.data ]; then
            gt_em_data="$gt_em_data${GT_TAB}$gt_em_n=$GT_V"   # redacted before it was encoded
        else
            gt_em_line="$gt_em_line${GT_TAB}$gt_em_n=$GT_V"
        fi
    done
    # a line that may hold a secret (a hint of one of gt_redact's rules in it: GT_RX_HINT's
    # words) has its values redacted (one awk): the line costs no fork when it holds none
    case $gt_em_line in
        *[Tt][Oo][Kk][Ee][Nn]*|*[Pp][Aa][Ss][Ss][Ww]*|*[Ss][Ee][Cc][Rr][Ee][Tt]*|*[Pp][Rr][Ii][Vv][Aa][Tt][Ee]*|\
        *[Cc][Rr][Ee][Dd][Ee][Nn][Tt][Ii][Aa][Ll]*|*[Aa][Uu][Tt][Hh][Oo][Rr][Ii][Zz][Aa][Tt][Ii][Oo][Nn]*|\
        *[Aa][Pp][Ii]_[Kk][Ee][Yy]*|*[Aa][Pp][Ii][Kk][Ee][Yy]*|*[Aa][Cc][Cc][Ee][Ss][Ss]_[Kk][Ee][Yy]*|\
        *[Pp][Rr][Oo][Xx][Yy]_[Kk][Ee][Yy]*|*://*|*[Bb][Ee][Aa][Rr][Ee][Rr]*|*[Bb][Aa][Ss][Ii][Cc]*|\
        *[Ee][Yy][Jj]*|*[Aa][Kk][Ii][Aa]*|*[Aa][Ss][Ii][Aa]*|*[Gg][Hh][PpOoUuSsRr]_*|*[Gg][Ii][Tt][Hh][Uu][Bb]_*|\
        *[Xx][Oo][Xx][AaBbPpOoSsRr]-*|*[Gg][Ll][Pp][Aa][Tt]-*|*-----[Bb][Ee][Gg][Ii][Nn]*|\
        *[Ss][Ss][Hh][Pp][Aa][Ss][Ss]*|*[Aa][Cc][Cc][Oo][Uu][Nn][Tt][Kk][Ee][Yy]*|\
        *[Aa][Pp][Ii]-[Kk][Ee][Yy]*|*[Ss][Ii][Gg]=*|*[Ss][Ii][Gg][Nn][Aa][Tt][Uu][Rr][Ee]=*|\
        *[Hh][Oo][Oo][Kk][Ss].[Ss][Ll][Aa][Cc][Kk].[Cc][Oo][Mm]/*|\
        */[Aa][Pp][Ii]/[Ww][Ee][Bb][Hh][Oo][Oo][Kk][Ss]/*|*[Aa][Ii][Zz][Aa]*|\
        *[Kk]_[Ll][Ii][Vv][Ee]_*|*[Kk]_[Tt][Ee][Ss][Tt]_*|*[Nn][Pp][Mm]_*|*[Pp][Yy][Pp][Ii]-*|\
        *[Ss][Gg].*|*[Hh][Ff]_*|*_[Vv]1_*|*[Ss][Hh][Pp]*|*[Hh][Vv][Ss].*|*[Hh][Vv][Bb].*|\
        *[Aa][Gg][Ee]-[Ss][Ee][Cc][Rr][Ee][Tt]-[Kk][Ee][Yy]-*|*[Dd][Aa][Pp][Ii]*|*[Ss][Kk]-*|\
        *[Pp][Mm][Aa][Kk]-*|*[Ll][Ii][Nn]_[Aa][Pp][Ii]_*|*[Nn][Rr][Aa][Kk]-*|\
        *[Gg][Ll][Pp][Tt][Tt]-*|*[Gg][Ll][Dd][Tt]-*|*[Gg][Ll][Rr][Tt]-*)
            gt_em_line=$(printf '%s\n' "$gt_em_line" | LC_ALL=C awk -F "$GT_TAB" "$GT_AWK_REDACT$GT_AWK_REDACT_FIELDS" \
                2>/dev/null) || return 1 ;;
    esac
    gt_em_line=$gt_em_line$gt_em_data
    if [ ${#gt_em_line} -gt 999 ]; then
        # may exceed the line limit in bytes: cut (rare: many long values)
        GT_V=$gt_em_line
        gt_cut "$GT_MAX_LINE"
        gt_em_line=$GT_V
    fi
    # printf of one short line to an O_APPEND descriptor: one write(2), atomic
    printf '%s\n' "$gt_em_line" >> "$GT_JOURNAL" 2>/dev/null
}

# gt_note KEY MESSAGE: a diagnostic line in the journal.
gt_note() {
    gt_now
    gt_emit "$GT_NOW" note "$1" "@msg=$2"
}

# gt_knob VAR NAME KIND DEFAULT MIN MAX CHOICES: called by the generated knobs file.
# Reads NAME (from gt_cfg_read), checks it like glidein_tracing.core.knobs.Knob.check, sets
# VAR. A bad value gives the default, a journal note and one stderr line (unless
# GT_KNOB_QUIET is set: later hooks re-read knobs already reported by the setup hook).
gt_knob() {
    gt_get "$2"
    gt_kn_val=$GT_V
    # strip surrounding blanks, like Python's str.strip()
    gt_kn_val=${gt_kn_val#"${gt_kn_val%%[! 	]*}"}
    gt_kn_val=${gt_kn_val%"${gt_kn_val##*[! 	]}"}
    gt_kn_problem=
    if [ -n "$gt_kn_val" ]; then
        case $3 in
            int) gt_knob_int "$gt_kn_val" "$5" "$6" ;;
            float) gt_knob_float "$gt_kn_val" "$5" "$6" ;;
            enum)
                # shellcheck disable=SC2086  # the allowed values are a word list, split on purpose
                case " $7 " in
                    *" $gt_kn_val "*) ;;
                    *) gt_kn_problem="is not one of $(gt_join_bar $7)" ;;
                esac ;;
            url)
                case $gt_kn_val in
                    http://*|https://*) ;;
                    *) gt_kn_problem="is not an http:// or https:// URL" ;;
                esac ;;
        esac
    fi
    if [ -z "$gt_kn_val" ] || [ -n "$gt_kn_problem" ]; then
        if [ -n "$gt_kn_problem" ] && [ -z "${GT_KNOB_QUIET:-}" ]; then
            [ "$3" != url ] || { gt_url_public "$gt_kn_val"; gt_kn_val=$GT_V; }
            gt_kn_msg="$2='$gt_kn_val' $gt_kn_problem; using the default '$4'"
            gt_msg "$gt_kn_msg"
            gt_note - "$gt_kn_msg"
        fi
        gt_kn_val=$4
    fi
    eval "$1=\$gt_kn_val"
}

# gt_url_public URL: GT_V = URL without what may authenticate (user:password@, query,
# fragment), for messages: where spans go, never how they authenticate.
gt_url_public() {
    case $1 in
        *://*) gt_up_scheme=${1%%://*}:// gt_up_rest=${1#*://} ;;
        *) gt_up_scheme= gt_up_rest=$1 ;;
    esac
    gt_up_rest=${gt_up_rest%%[?#]*}
    GT_V=$gt_up_scheme${gt_up_rest##*@}
}

# gt_join_bar WORD...: print the words joined with '|' (for messages).
gt_join_bar() {
    gt_jb=$1
    shift
    for gt_jb_w in "$@"; do gt_jb="$gt_jb|$gt_jb_w"; done
    printf '%s' "$gt_jb"
}

# gt_knob_int VALUE MIN MAX: sets gt_kn_problem when VALUE is not an int in range.
gt_knob_int() {
    gt_ki=${1#[+-]}
    case $gt_ki in
        ''|*[!0-9]*) gt_kn_problem="is not an integer"; return ;;
    esac
    case $1 in -*) gt_ki=-$gt_ki ;; esac
    # longer than 18 digits cannot be in any knob range (and would overflow $(( )))
    if [ ${#gt_ki} -gt 18 ] || [ "$gt_ki" -lt "$2" ] || [ "$gt_ki" -gt "$3" ]; then
        gt_kn_problem="is outside $2..$3"
    fi
}

# gt_knob_float VALUE MIN MAX: float check with awk (only float knobs need it).
gt_knob_float() {
    gt_kn_problem=$(awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN {
        if (v !~ /^[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?$/) { print "is not a number"; exit }
        if (v + 0 < lo + 0 || v + 0 > hi + 0) printf "is outside %g..%g\n", lo, hi
    }' 2>/dev/null) || gt_kn_problem="is not a number"
}

# gt_sha_prefix N: GT_V = first N hex digits of sha256 of stdin; all zeros -> ...1.
gt_sha_prefix() {
    gt_sp_hash=$(sha256sum 2>/dev/null) || return 1
    gt_sp_hash=${gt_sp_hash%% *}
    [ ${#gt_sp_hash} -eq 64 ] || return 1
    gt_sp_rest=$gt_sp_hash
    gt_sp_i=0
    gt_sp_pat=
    while [ $gt_sp_i -lt "$1" ]; do gt_sp_pat="$gt_sp_pat?"; gt_sp_i=$((gt_sp_i + 1)); done
    # shellcheck disable=SC2295  # a pattern of ? on purpose: the first N characters
    gt_sp_rest=${gt_sp_hash#$gt_sp_pat}
    GT_V=${gt_sp_hash%"$gt_sp_rest"}
    case $GT_V in *[!0]*) ;; *) GT_V="${GT_V%?}1" ;; esac
}

# gt_trace_id FACTORY NAME ENTRY SCHEDD CLUSTER PROC INDEX: GT_TRACE_ID (docs/ids.md).
gt_trace_id() {
    GT_TRACE_ID=
    command -v sha256sum >/dev/null 2>&1 || return 1
    GT_TRACE_ID=$(printf 'gt1\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n' "$1" "$2" "$3" "$4" "$5" "$6" "${7:-0}" \
        | { gt_sha_prefix 32 && printf '%s' "$GT_V"; }) || { GT_TRACE_ID=; return 1; }
    [ ${#GT_TRACE_ID} -eq 32 ] || { GT_TRACE_ID=; return 1; }
}

# gt_span_id TRACE_ID SPAN_KEY: GT_SPAN_ID (docs/ids.md).
gt_span_id() {
    GT_SPAN_ID=$(printf '%s\n%s\n' "$1" "$2" | { gt_sha_prefix 16 && printf '%s' "$GT_V"; }) \
        || { GT_SPAN_ID=; return 1; }
    [ ${#GT_SPAN_ID} -eq 16 ] || { GT_SPAN_ID=; return 1; }
}

# gt_ticks TICKS HZ: GT_V = TICKS/HZ as seconds with 2 decimals (integer arithmetic).
gt_ticks() {
    gt_tk_c=$(( ($1 % $2) * 100 / $2 ))
    [ $gt_tk_c -ge 10 ] || gt_tk_c=0$gt_tk_c
    GT_V="$(( $1 / $2 )).$gt_tk_c"
}

# gt_snap_pid PID: builtins-only reading of one process from /proc/PID/stat, for its identity
# (GT_R_START = start time in ticks after boot: a pid plus its start is never reused) and
# GT_R_UT/GT_R_ST/GT_R_RSS of that process alone (resources are read with gt_tree_snap),
# GT_R_STATE (R, S, Z...), GT_R_L1 = load1. Needs GT_HZ, GT_PAGE.
gt_snap_pid() {
    GT_R_UT= GT_R_ST= GT_R_RSS= GT_R_START= GT_R_STATE=
    gt_load1
    [ -r "/proc/$1/stat" ] || return 1
    read -r gt_sn_line < "/proc/$1/stat" || return 1
    # field 2 (comm) may hold spaces and parentheses: cut through the last ") "
    # shellcheck disable=SC2086  # the fields of /proc/PID/stat, split on purpose
    gt_snap_fields ${gt_sn_line##*) }
}

# gt_snap_fields STAT_FIELDS_3_ON...: helper of gt_snap_pid (fields of proc(5) stat).
gt_snap_fields() {
    [ $# -ge 22 ] || return 1
    GT_R_STATE=$1                 # field 3
    shift 11                      # now $1 = utime (field 14)
    gt_ticks $(( $1 + $3 )) "${GT_HZ:-100}"; GT_R_UT=$GT_V
    gt_ticks $(( $2 + $4 )) "${GT_HZ:-100}"; GT_R_ST=$GT_V
    shift 8                       # now $1 = starttime (22), $3 = rss pages (24)
    GT_R_START=$1
    GT_R_RSS=$(( $3 * ${GT_PAGE:-4096} ))
}

# gt_alive PID TICKS: whether PID is still the process that started at TICKS (gt_snap_pid) and
# has not exited: a zombie whose parent has not reaped it yet (an orphan waits for init,
# which may take seconds) is gone.
gt_alive() {
    gt_snap_pid "$1" && [ "$GT_R_START" = "$2" ] && [ "$GT_R_STATE" != Z ]
}

# gt_load1: GT_R_L1 = 1-minute load average.
gt_load1() {
    GT_R_L1=
    # shellcheck disable=SC2034  # the rest of /proc/loadavg, not needed
    [ -r /proc/loadavg ] && read -r GT_R_L1 gt_l1_rest < /proc/loadavg
    return 0
}

# gt_disk_free DIR: GT_R_DF = bytes free for us in DIR's file system (one fork: the
# only one in recording a stage; bash has no statfs builtin).
# The only fork of a stage record is stat(1) (no shell builtin can statfs), so a directory is
# measured at most once every GT_DF_MAX_AGE seconds (default 10) and the value reused: free
# disk does not move at stage resolution, and the sampler keeps the timeline fresh. The reuse
# is keyed by directory, and shared by the glidein's hook processes: each measure is also left
# in GT_DIR/disk_free ("EPOCH BYTES DIR", read with `read`), so a fresh hook process takes the
# sampler's or another hook's when it is recent enough.
gt_disk_free() {
    gt_df_now=${GT_NOW%.*}
    if gt_df_fresh "$1" || { [ -n "${GT_DIR:-}" ] && [ -r "$GT_DIR/disk_free" ] \
            && read -r GT_DF_AT GT_DF_VALUE GT_DF_DIR < "$GT_DIR/disk_free" && gt_df_fresh "$1"; }; then
        GT_R_DF=$GT_DF_VALUE
        return 0
    fi
    GT_R_DF=
    gt_df=$(exec stat -f -c '%a %S' "$1" 2>/dev/null) || gt_df=
    case $gt_df in
        *' '*) GT_R_DF=$(( ${gt_df% *} * ${gt_df#* } )) ;;
    esac
    GT_DF_DIR=$1 GT_DF_AT=$gt_df_now GT_DF_VALUE=$GT_R_DF
    [ -z "${GT_DIR:-}" ] || [ -z "$GT_R_DF" ] || [ -z "$gt_df_now" ] \
        || printf '%s %s %s\n' "$gt_df_now" "$GT_R_DF" "$1" 2>/dev/null > "$GT_DIR/disk_free" || :
}

# gt_df_fresh DIR: whether GT_DF_* (gt_disk_free) hold a measure of DIR at most
# GT_DF_MAX_AGE seconds old.
gt_df_fresh() {
    [ "${GT_DF_DIR:-}" = "$1" ] && [ -n "$gt_df_now" ] || return 1
    case ${GT_DF_AT:-}:${GT_DF_VALUE:-} in *[!0-9:]*|:*) return 1 ;; esac   # a failed measure: empty
    [ $(( gt_df_now - GT_DF_AT )) -lt "${GT_DF_MAX_AGE:-10}" ] && [ $(( gt_df_now - GT_DF_AT )) -ge 0 ]
}

# gt_tree_stats ROOT_PID: GT_V = the /proc/PID/stat files of ROOT_PID and its descendants,
# found by walking down the lists of children the kernel keeps for each thread
# (/proc/PID/task/TID/children, builtins only), so a reading opens the glidein's processes, not
# every process of the machine; 64 generations below ROOT_PID at most, as gt_tree_snap counts.
# Non-zero without those lists (a kernel built without them): read every /proc/PID/stat then.
gt_tree_stats() {
    [ -r "/proc/$1/task/$1/children" ] || return 1
    GT_V='' gt_tt_level=$1 gt_tt_depth=0
    while [ -n "$gt_tt_level" ] && [ $gt_tt_depth -le 64 ]; do
        gt_tt_next=
        for gt_tt_pid in $gt_tt_level; do
            GT_V="$GT_V /proc/$gt_tt_pid/stat"
            for gt_tt_file in /proc/"$gt_tt_pid"/task/*/children; do
                gt_tt_kids=
                [ -r "$gt_tt_file" ] && read -r gt_tt_kids < "$gt_tt_file"
                gt_tt_next="$gt_tt_next $gt_tt_kids"
            done
        done
        gt_tt_level=$gt_tt_next gt_tt_depth=$((gt_tt_depth + 1))
    done
}

# gt_tree_snap ROOT_PID: resources of ROOT_PID and all its live descendants, with builtins
# only (no fork): GT_R_UT/GT_R_ST (utime+cutime, stime+cstime summed, seconds), GT_R_RSS (sum),
# GT_R_N (count), GT_R_HWM (sum of the processes' own peaks, VmHWM of /proc/PID/status: the
# kernel keeps each process's largest RSS, so a spike between two readings still shows), and
# GT_R_MPEAK, the cgroup v2 memory.peak of the glidein's own cgroup when the setup hook found
# the glidein alone in it (GT_MPEAK_FILE). A process counts when walking up its parents, as
# read, reaches ROOT_PID in at most 64 steps. Needs GT_HZ, GT_PAGE.
gt_tree_snap() {
    GT_R_UT= GT_R_ST= GT_R_RSS= GT_R_N= GT_R_HWM= GT_R_MPEAK=
    [ -z "${GT_MPEAK_FILE:-}" ] || read -r GT_R_MPEAK < "$GT_MPEAK_FILE" 2>/dev/null || GT_R_MPEAK=
    case $GT_R_MPEAK in *[!0-9]*) GT_R_MPEAK= ;; esac
    gt_ts_root=$1 gt_ts_pids='' gt_ts_vars=''
    if gt_tree_stats "$1"; then
        # shellcheck disable=SC2086   # GT_V: /proc paths, split on purpose
        set -- $GT_V
    else
        set -- /proc/[0-9]*/stat
    fi
    { for gt_ts_file; do         # a process gone meanwhile: no line, nothing on stderr
        gt_ts_line=
        read -r gt_ts_line < "$gt_ts_file"
        # comm (field 2) may hold spaces and parentheses: cut through the last ") "
        # shellcheck disable=SC2086   # the fields of proc(5) stat, split on purpose
        gt_tree_proc "${gt_ts_line%% *}" ${gt_ts_line##*) }
    done; } 2>/dev/null
    gt_ts_u=0 gt_ts_s=0 gt_ts_r=0 gt_ts_k=0 gt_ts_h=0
    { for gt_ts_pid in $gt_ts_pids; do
        gt_ts_up=$gt_ts_pid gt_ts_hops=0
        while [ "$gt_ts_up" != "$gt_ts_root" ] && [ $gt_ts_hops -lt 64 ]; do
            eval "gt_ts_up=\${gt_pp_$gt_ts_up:-}"
            [ -n "$gt_ts_up" ] || break
            gt_ts_hops=$((gt_ts_hops + 1))
        done
        [ "$gt_ts_up" = "$gt_ts_root" ] || continue
        eval "set -- \$gt_pv_$gt_ts_pid"
        gt_ts_u=$((gt_ts_u + $1)) gt_ts_s=$((gt_ts_s + $2)) gt_ts_r=$((gt_ts_r + $3)) gt_ts_k=$((gt_ts_k + 1))
        gt_ts_peak=$3
        gt_ts_kb=
        # shellcheck disable=SC3045,SC3060   # read -d, ${//}: bash only
        if [ -n "${BASH_VERSION:-}" ]; then     # the whole file in one read
            gt_ts_text=
            read -r -d '' gt_ts_text < "/proc/$gt_ts_pid/status"
            case $gt_ts_text in *VmHWM:*)
                gt_ts_kb=${gt_ts_text#*VmHWM:}; gt_ts_kb=${gt_ts_kb%%kB*}; gt_ts_kb=${gt_ts_kb//[	 ]/} ;;
            esac
        else
            while read -r gt_ts_key gt_ts_kb _; do
                [ "$gt_ts_key" != VmHWM: ] || break
                gt_ts_kb=
            done < "/proc/$gt_ts_pid/status"
        fi
        case $gt_ts_kb in ''|*[!0-9]*) ;; *)
            [ $((gt_ts_kb * 1024)) -le "$gt_ts_peak" ] || gt_ts_peak=$((gt_ts_kb * 1024)) ;;
        esac
        gt_ts_h=$((gt_ts_h + gt_ts_peak))
    done; } 2>/dev/null
    # shellcheck disable=SC2086  # a list of variable names, split on purpose
    [ -z "$gt_ts_vars" ] || unset $gt_ts_vars
    [ $gt_ts_k -gt 0 ] || return 1
    gt_ticks $gt_ts_u "${GT_HZ:-100}"; GT_R_UT=$GT_V
    gt_ticks $gt_ts_s "${GT_HZ:-100}"; GT_R_ST=$GT_V
    GT_R_RSS=$gt_ts_r GT_R_N=$gt_ts_k GT_R_HWM=$gt_ts_h
}

# gt_tree_proc PID STAT_FIELDS_3_ON...: helper of gt_tree_snap: keeps PID's parent (gt_pp_PID)
# and its own figures (gt_pv_PID: CPU ticks own + reaped, user and system; RSS bytes).
gt_tree_proc() {
    [ $# -ge 23 ] || return 1
    case $1 in ''|*[!0-9]*) return 1 ;; esac
    case $3${13}${14}${15}${16}${23} in *[!0-9]*) return 1 ;; esac
    eval "gt_pp_$1=$3 gt_pv_$1='$((${13} + ${15})) $((${14} + ${16})) $((${23} * ${GT_PAGE:-4096}))'"
    gt_ts_pids="$gt_ts_pids $1" gt_ts_vars="$gt_ts_vars gt_pp_$1 gt_pv_$1"
}

# The glidein's resources are those of its process tree: glidein_startup.sh (GLIDEIN_STARTUP_PID)
# and all its live descendants, CPU including what they reaped. Every reading (stage
# boundaries and the sampler's `sample` lines) is taken with gt_tree_snap, so all of them
# measure the same thing (docs/span-conventions.md, Per-stage resources).

# gt_reading ROOT_PID: GT_R_* = a reading: the tree under ROOT_PID (gt_tree_snap), load1 and
# the work dir's free disk.
gt_reading() {
    gt_tree_snap "$1"
    gt_load1
    gt_disk_free "${GT_WORK_DIR:-.}"
}

# gt_emit_snap TIME OP KEY ROOT_PID [NAME=VALUE]...: a line with a reading of the tree under
# ROOT_PID (no r.* fields when the tree cannot be read).
gt_emit_snap() {
    gt_es_t=$1 gt_es_op=$2 gt_es_key=$3
    gt_reading "$4"
    shift 4
    gt_emit "$gt_es_t" "$gt_es_op" "$gt_es_key" "r.utime=$GT_R_UT" "r.stime=$GT_R_ST" \
        "r.rss=$GT_R_RSS" "r.procs:i=$GT_R_N" "r.load1=$GT_R_L1" "r.disk_free=$GT_R_DF" \
        "r.hwm=$GT_R_HWM" "r.mpeak=$GT_R_MPEAK" "$@"
}

# gt_sample ROOT_PID: one `sample` line, now, for the tree under ROOT_PID.
gt_sample() {
    gt_now
    gt_emit_snap "$GT_NOW" sample - "$1"
}

# gt_ad_select NAME...: the named attributes of the ClassAd (old syntax) on stdin, one
# "name<TAB>value" line each, name in lower case (ClassAd names are case-insensitive); a
# quoted value loses its quotes, control and non-ASCII bytes become '?', values are cut at
# 1024 bytes and at most 4 MB of the ad is read: a hostile ad cannot break a journal line.
gt_ad_select() {
    head -c 4000000 | LC_ALL=C awk -v names="$*" '
        BEGIN { n = split(tolower(names), w, " "); for (i = 1; i <= n; i++) want[w[i]] }
        {
            eq = index($0, "="); if (eq < 2) next
            name = substr($0, 1, eq - 1); gsub(/[ \t]/, "", name); name = tolower(name)
            if (!(name in want)) next
            v = substr($0, eq + 1); sub(/^[ \t]+/, "", v); sub(/[ \t\r]+$/, "", v)
            if (v ~ /^".*"$/) { v = substr(v, 2, length(v) - 2); gsub(/\\"/, "\"", v) }
            gsub(/[^ -~]/, "?", v)             # control and non-ASCII bytes
            if (length(v) > 1024) v = substr(v, 1, 1024)
            print name "\t" v
        }' 2>/dev/null
}

# gt_setup_env CONFIG [KEY...]: load what every hook needs from glidein_config; sets GT_JOURNAL,
# GT_DIR, GT_WORK_DIR, GT_TRACE_ID, GT_HZ, GT_PAGE, GT_STARTUP_PID. Non-zero when
# tracing is not set up for this glidein (the setup hook disabled it, or never ran).
# glidein_config is read once after it last changed: the keys read (no KEY asked) are kept in
# glidein_tracing/config beside it (glidein_config's format), and a later hook reads those few
# lines instead while that file is newer than glidein_config (an equal time, a change in the
# same clock tick, is a change).
gt_setup_env() {
    gt_se_cfg=$1
    shift
    case $gt_se_cfg in */*) gt_se_kept=${gt_se_cfg%/*}/glidein_tracing/config ;; *) gt_se_kept=glidein_tracing/config ;; esac
    GT_C_GLIDEIN_TRACING_KEPT=
    # shellcheck disable=SC3013   # -nt: dash, bash and busybox sh all have it
    if [ $# -gt 0 ] || [ ! -r "$gt_se_cfg" ] || [ ! "$gt_se_kept" -nt "$gt_se_cfg" ] \
            || ! gt_cfg_read "$gt_se_kept" GLIDEIN_WORKSPACE_ORIG GLIDEIN_STARTUP_PID GLIDEIN_WORK_DIR \
            || [ -z "$GT_C_GLIDEIN_TRACING_KEPT" ]; then
        gt_cfg_read "$gt_se_cfg" GLIDEIN_WORKSPACE_ORIG GLIDEIN_STARTUP_PID GLIDEIN_WORK_DIR "$@" || return 1
        [ $# -gt 0 ] || gt_cfg_keep "$gt_se_kept"
    fi
    gt_get GLIDEIN_TRACING_JOURNAL; GT_JOURNAL=$GT_V
    gt_get GLIDEIN_TRACING_TRACE_ID; GT_TRACE_ID=$GT_V
    gt_get GLIDEIN_TRACING_CLK_TCK; GT_HZ=${GT_V:-100}
    gt_get GLIDEIN_TRACING_PAGESIZE; GT_PAGE=${GT_V:-4096}
    gt_get GLIDEIN_STARTUP_PID
    # shellcheck disable=SC2034  # read by the hooks that source this file (the sampler)
    GT_STARTUP_PID=$GT_V
    gt_get GLIDEIN_WORKSPACE_ORIG; GT_WORK_DIR=$GT_V
    gt_get GLIDEIN_TRACING_MEMORY_PEAK; GT_MPEAK_FILE=$GT_V
    [ -n "$GT_JOURNAL" ] && [ -n "$GT_TRACE_ID" ] || return 1
    GT_DIR=${GT_JOURNAL%/*}
    [ -d "$GT_DIR" ] && [ -w "$GT_JOURNAL" ]
}

# gt_cfg_keep FILE: write the keys gt_cfg_read found (GT_CFG_KEYS) to FILE, in one write, ending
# with GLIDEIN_TRACING_KEPT (a file cut short is not taken); only where tracing is set up.
gt_cfg_keep() {
    [ -d "${1%/*}" ] && [ -n "${GT_C_GLIDEIN_TRACING_JOURNAL:-}" ] || return 0
    gt_ck_text='' gt_ck_seen=' '
    for gt_ck_key in $GT_CFG_KEYS; do
        case $gt_ck_seen in *" $gt_ck_key "*) continue ;; esac
        gt_ck_seen="$gt_ck_seen$gt_ck_key "
        eval "gt_ck_text=\"\$gt_ck_text\$gt_ck_key \${GT_C_$gt_ck_key}\$GT_NL\""
    done
    printf '%sGLIDEIN_TRACING_KEPT 1\n' "$gt_ck_text" 2>/dev/null > "$1" || :
}

# Log tails (hooks.md, Log tails on failure; the job-exit hook's job.log_tail): the last lines
# of a log as `note` lines on a span with @log.source, @log.part/@log.parts and @log.data
# (base64 chunks of GT_LOG_TAIL_CHUNK characters: any byte survives, every value stays under
# the journal's limits). Only the last GT_LOG_TAIL_READ bytes are read (`tail -c` seeks: a
# huge log costs the same) and at most GT_LOG_TAIL_BYTES are kept.
GT_LOG_TAIL_BYTES=8192
GT_LOG_TAIL_READ=65536
GT_LOG_TAIL_CHUNK=1000
# GT_AWK_TAIL: the part of the log that explains the failure, then at most `lines` of it and
# their last `bytes` bytes (as `tail -n | tail -c`, in the same process). The part: the lines
# after the last one starting with mark, or from the last line that starts with start and
# ends with name (a failed validation script's own part of glidein_startup.sh's stdout); all
# without either. Encoded blocks (`begin-base64` ... `====`, GlideinWMS's sections of logs and
# XML, or a run of base64 lines whose start was cut off) become one line saying how many lines
# were left out. The lines kept are redacted (gt_redact) before the cut to `bytes`: no secret
# is cut into a piece its rule no longer sees.
# shellcheck disable=SC2016  # an awk program: its $ are awk's
GT_AWK_TAIL='
function keep(s) { if (enc) line[++n] = "[glidein_tracing: " enc " lines of encoded data left out]"; enc = 0
                   if (s != "") line[++n] = s }
function restart() { n = 0; enc = 0; inblock = 0 }
mark != "" && index($0, mark) == 1 { restart(); next }
start != "" && index($0, start) == 1 && length($0) >= length(name) && substr($0, length($0) - length(name) + 1) == name {
    restart(); line[++n] = $0; next }
inblock { enc++; if ($0 == "====") { inblock = 0; keep("") } ; next }
/^begin-base64 [0-7]+ / || /^begin [0-7]+ / { inblock = 1; enc++; next }
/^[A-Za-z0-9+\/]+=*$/ && (length($0) >= 60 || enc) { enc++; next }
$0 == "====" && enc { enc++; keep(""); next }
{ keep($0) }
END {
    keep("")
    first = n - lines + 1; if (first < 1) first = 1
    for (i = first; i <= n; i++) line[i] = gt_redact(line[i])
    size = 0
    for (i = n; i >= first; i--) {
        size += length(line[i]) + 1
        if (size > bytes) { line[i] = substr(line[i], size - bytes + 1); first = i; break }
    }
    for (i = first; i <= n; i++) print line[i]
}
'

# gt_log_tail KEY SOURCE FILE LINES [MARK [START NAME]]: the tail of FILE's part that explains
# the failure (GT_AWK_TAIL): at most LINES lines. A file that cannot or must not be read (a
# symbolic link, not ours: a job may have planted it) gets a note saying why (@log.note).
gt_log_tail() {
    gt_lt_why=
    if [ -L "$3" ]; then gt_lt_why="a symbolic link: not read"
    elif [ ! -e "$3" ]; then gt_lt_why="absent"
    elif [ ! -f "$3" ]; then gt_lt_why="not a regular file"
    elif [ ! -O "$3" ]; then gt_lt_why="owned by another user: not read"
    elif [ ! -r "$3" ]; then gt_lt_why="not readable"
    elif [ ! -s "$3" ]; then gt_lt_why="empty"
    elif ! command -v base64 >/dev/null 2>&1; then gt_lt_why="no base64 on this node"
    fi
    gt_lt_data=
    if [ -z "$gt_lt_why" ]; then
        gt_lt_data=$(tail -c "$GT_LOG_TAIL_READ" "$3" 2>/dev/null | LC_ALL=C awk -v mark="${5:-}" \
            -v start="${6:-}" -v name="${7:-}" -v lines="$4" -v bytes="$GT_LOG_TAIL_BYTES" "$GT_AWK_REDACT$GT_AWK_TAIL" 2>/dev/null \
            | base64 -w "$GT_LOG_TAIL_CHUNK" 2>/dev/null)
        [ -n "$gt_lt_data" ] || gt_lt_why="empty"
    fi
    gt_now
    if [ -n "$gt_lt_why" ]; then
        gt_emit "$GT_NOW" note "$1" "@log.source=$2" "@log.note=$gt_lt_why"
        return 0
    fi
    # lines of GT_LOG_TAIL_CHUNK characters and a last one of 1..GT_LOG_TAIL_CHUNK: the count
    # follows from the length; split on newlines with the words of a loop (no here-document:
    # bash writes those to a temporary file)
    gt_lt_parts=$(( (${#gt_lt_data} + GT_LOG_TAIL_CHUNK) / (GT_LOG_TAIL_CHUNK + 1) ))
    gt_lt_part=0 gt_lt_ifs=$IFS gt_lt_glob=
    case $- in *f*) gt_lt_glob=1 ;; esac
    IFS=$GT_NL
    set -f
    for gt_lt_chunk in $gt_lt_data; do
        gt_emit "$GT_NOW" note "$1" "@log.source=$2" "@log.part=$gt_lt_part" "@log.parts=$gt_lt_parts" \
            "@log.data=$gt_lt_chunk"
        gt_lt_part=$((gt_lt_part + 1))
    done
    IFS=$gt_lt_ifs
    [ -n "$gt_lt_glob" ] || set +f
}
