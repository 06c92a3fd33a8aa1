"""The nearest known name for a likely typo, for messages that end in "did you mean ...?".

Every stage that refuses an unknown name (a kind, a field, a Kyma module, a version) asks here, so
users meet one rule: a candidate is suggested when it differs only in letter case, or when it is
close in spelling (difflib's ratio at least `CUTOFF`). Pure: no I/O.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["CUTOFF", "did_you_mean", "nearest"]

# 0.75 accepts one swapped, dropped or doubled letter in names of six letters or more
# ("rleay" -> "relay", "subdomain" -> "subDomain") and rejects unrelated short names.
CUTOFF = 0.75


def nearest(name: str, known: Iterable[str]) -> str | None:
    """The known name `name` most probably meant, or None when nothing is close enough."""
    candidates = sorted({k for k in known if k != name})
    folded = [k for k in candidates if k.casefold() == name.casefold()]
    if folded:
        return folded[0]
    by_fold = {k.casefold(): k for k in reversed(candidates)}
    close = difflib.get_close_matches(name.casefold(), list(by_fold), n=1, cutoff=CUTOFF)
    return by_fold[close[0]] if close else None


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """' (did you mean "X"?)' for a message, or '' when there is no likely candidate."""
    match = nearest(name, known)
    return f' (did you mean "{match}"?)' if match else ""
