"""The one outcome of a source tree the controller cannot read: `UnreadableSource`.

Whoever meets it (the index walking the tree, the editor reading a file back, a reconciler asking
the index for a document), a file that is not YAML, a CAP document its schema refuses or a file
the walk cannot open is the same thing: the repository needs a human's commit, so retrying
without one cannot help (a PermanentError), and nothing is written beside it (the broken document
might be the very record an edit is about). Generator errors (`SourceSyntaxError`, and any other
`BtpGitopsError` a load raises) become its lines here (`problems_of`) and nowhere else.
"""

from __future__ import annotations

from collections.abc import Sequence

from btp_gitops.controller.errors import UnreadableSource
from btp_gitops.generator.core import BtpGitopsError

MAX_PROBLEMS_SHOWN = 5
_HEADLINE = "the source tree has unreadable CAP documents"


def unreadable_tree(problems: Sequence[str]) -> UnreadableSource:
    """One error for every problem found in the tree, the first few shown."""
    shown = "; ".join(problems[:MAX_PROBLEMS_SHOWN])
    more = len(problems) - MAX_PROBLEMS_SHOWN
    return UnreadableSource(f"{_HEADLINE}: {shown}" + (f" (and {more} more)" if more > 0 else ""))


def unreadable_source(problem: str) -> UnreadableSource:
    return unreadable_tree([problem])


def problems_of(error: BtpGitopsError) -> list[str]:
    """A generator's load error as lines: its problems (file, document, what is wrong), else its
    message."""
    return [p.render() for p in error.problems] or [error.message]
