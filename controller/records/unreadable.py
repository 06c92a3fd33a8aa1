"""The one outcome of a source tree the controller cannot read: `UnreadableSource`.

Whoever meets it (the index walking the tree, the editor reading a file back, a reconciler asking
the index for a document), a file that is not YAML, a CAP document its schema refuses, a file
the walk cannot open, and a symbolic link, FIFO, device or oversized file where a YAML file is
expected (records.source_files: never followed, opened or read) are the same thing: the
repository needs a human's commit, so retrying without one cannot help (a PermanentError), and
nothing is written beside it (the broken document might be the very record an edit is about).
So is a record the writer would have to write through a link (`unwritable`). The generator's
problems with a file become its lines in records.source_files, and nowhere else.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePath

from btp_gitops.controller.clone_files import RefusedPath
from btp_gitops.controller.errors import UnreadableSource

MAX_PROBLEMS_SHOWN = 5
_HEADLINE = "the source tree has unreadable CAP documents"


def unreadable_tree(problems: Sequence[str]) -> UnreadableSource:
    """One error for every problem found in the tree, the first few shown."""
    shown = "; ".join(problems[:MAX_PROBLEMS_SHOWN])
    more = len(problems) - MAX_PROBLEMS_SHOWN
    return UnreadableSource(f"{_HEADLINE}: {shown}" + (f" (and {more} more)" if more > 0 else ""))


def unreadable_source(problem: str) -> UnreadableSource:
    return unreadable_tree([problem])


def unwritable(path: PurePath, refused: RefusedPath) -> UnreadableSource:
    """A record the writer will not write where its path leads: a symbolic link (or a file that is
    not regular) stands in its place or on its way. Only a commit replacing it can help."""
    return UnreadableSource(f"cannot write {path.as_posix()}: {refused}")
