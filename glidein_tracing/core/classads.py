"""ClassAd reading through HTCondor's own bindings (classad2), with hostile input contained.

Job ads come from users and StartdHistoryLog records from the glidein: either may be cut,
huge or malformed. Parsing returns a plain dict of Python values or None, never raises.
"""

from __future__ import annotations

import re

MAX_AD_BYTES = 256 * 1024
MAX_VALUE_CHARS = 1024


def _plain(value):
    if isinstance(value, (bool, int, float)):
        return value
    text = str(value)
    return text[:MAX_VALUE_CHARS]


def parse_old_ad(text: str, keep=None):
    """Parse one ClassAd in the old (``Name = value`` lines) syntax into a dict, or None;
    ``keep``: evaluate only those attributes (the others are left out of the dict)."""
    if not text or len(text) > MAX_AD_BYTES:
        return None
    try:
        import classad2
        ad = classad2.parseOne(text, classad2.ParserType.Old)
    except Exception:  # the bindings raise several types on bad input
        return None
    return _as_dict(ad, keep)


def parse_old_ads(text: str) -> list:
    """The ClassAds of a file in the old syntax, as ``condor_q -l`` writes them (blank lines
    between ads), each as a dict, or None for an ad that cannot be read."""
    # one ad at a time: the bindings' parseAds slows down with the text's length (each next
    # ad costs more), 10 s for 50,000 job ads against 1 s for 10,000
    return [parse_old_ad(chunk) for chunk in re.split(r"\n[ \t]*\n", text) if chunk.strip()]


def _as_dict(ad, keep=None) -> dict:
    out = {}
    for key in (ad.keys() if keep is None else keep):
        try:
            out[key] = _plain(ad.eval(key))
        except KeyError:     # a kept attribute the ad lacks (asking is cheaper than `in`)
            continue
        except Exception:
            try:
                out[key] = _plain(ad.lookup(key))
            except Exception:
                continue
    return out

