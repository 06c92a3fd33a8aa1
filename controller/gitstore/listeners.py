"""Who hears of the writer's commits: readers that index the tree at each new commit, so they can
answer without waiting for the clone's lock. A listener's failure is logged and never fails the
writer's push."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from btp_gitops.controller.gitstore.clone import Clone

log = logging.getLogger(__name__)


class Listeners:
    """The listeners of `clone`'s commits; every call runs under the clone's lock."""

    def __init__(self, clone: Clone, remote: str) -> None:
        self._clone = clone
        self._remote = remote
        self._head: list[Callable[[Path, str], None]] = []
        self._commit: list[Callable[[Path, str], None]] = []
        self._pushed: list[Callable[[str], None]] = []
        self._announced_head = ""

    def add_head(self, listener: Callable[[Path, str], None]) -> None:
        """`listener(tree, head)` at each new commit of the remote the tree is at (now, if it is)."""
        self._head.append(listener)
        if self._clone.pristine and self._clone.head:
            listener(self._clone.tree, self._clone.head)

    def add_commit(self, listener: Callable[[Path, str], None]) -> None:
        """`listener(tree, commit)` when the tree is at our commit whose push is in flight."""
        self._commit.append(listener)

    def add_pushed(self, listener: Callable[[str], None]) -> None:
        """`listener(head)` when our push made `head` the remote's while the tree moved on."""
        self._pushed.append(listener)

    def commit(self, commit: str) -> None:
        for listener in self._commit:
            try:
                listener(self._clone.tree, commit)
            except Exception:  # a reader's failure must not fail the writer's push
                log.exception("a listener of %s failed on %s", self._remote, commit[:12])

    def pushed(self) -> None:
        """Our push landed: `head` listeners when the tree is at it, `pushed` ones when it moved on."""
        clone = self._clone
        if clone.pristine:
            self.head()
            return
        self._announced_head = clone.head
        for listener in self._pushed:
            try:
                listener(clone.head)
            except Exception:
                log.exception("a listener of %s failed on %s", self._remote, clone.head[:12])

    def head(self) -> None:
        """The tree is at the remote's commit: its listeners hear of it, once per commit."""
        clone = self._clone
        if not clone.pristine or clone.head == self._announced_head:
            return
        self._announced_head = clone.head
        for listener in self._head:
            try:
                listener(clone.tree, clone.head)
            except Exception:  # a reader's failure must not fail the writer's push
                log.exception("a listener of %s failed on %s", self._remote, clone.head[:12])
