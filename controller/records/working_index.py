"""The writer's index of its working tree (`WorkingIndex`, controller.gitstore's `TreeTracker`),
updated in place file by file as a batch writes, and what each change of the batch looked up and
wrote (`ChangeFootprint`), from which a rebase tells which changes to apply again."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from btp_gitops.controller.records.index import EVERYTHING, WORKING_INDEXES, ReadKey, SourceIndex, keys_of
from btp_gitops.controller.records.parsed_files import PARSED_FILES


@dataclass(frozen=True, slots=True)
class ChangeFootprint:
    """What one change looked up and which files it wrote (relative paths, as strings)."""

    reads: frozenset[ReadKey]
    writes: frozenset[str]


class WorkingIndex:
    """The writer's index of its working tree (controller.gitstore's `TreeTracker`).

    Opened for a batch, it is what `SourceIndex.of_tree` answers on the writer's thread while a
    change is applied: one walk of the tree per batch at most (none when the tree is where the
    last batch left it), then every
    file the editor writes (`note_written`) replaces that file's records in place, so a change
    costs the records it touches, not the tree. The writer tells it which files Git rewrote
    (`rewritten`), and asks per change what it looked up and wrote (`change_started` /
    `change_ended`): a rebase after a lost push race re-applies only the changes whose lookups or
    files the competitor touched."""

    def __init__(self) -> None:
        self._root: Path | None = None
        self._index: SourceIndex | None = None  # of the tree as it is, while it is known
        self._writes: set[str] | None = None

    def open(self, tree: Path) -> None:
        root = tree.resolve()
        if self._index is None or self._root != root:
            self._root, self._index = root, SourceIndex(PARSED_FILES.contents_of(root))

    @property
    def index(self) -> SourceIndex | None:
        """The index of the tree as it is now (None before `open`)."""
        return self._index

    def close(self) -> None:
        if self._root is not None:
            WORKING_INDEXES.detach(self._root)  # a change that raised past change_ended

    def forget(self) -> None:
        """The tree is not known any more (an unexpected failure): the next `open` walks it."""
        self.close()
        self._index = None

    def change_started(self) -> None:
        """A change is applied now, on this thread: `of_tree` answers with this index until it
        ends (only then: an index handed to anyone else must not change under them)."""
        if self._index is not None and self._root is not None:
            self._index.reads = set()
            WORKING_INDEXES.attach(self._root, self)
        self._writes = set()

    def change_ended(self) -> ChangeFootprint:
        if self._root is not None:
            WORKING_INDEXES.detach(self._root)
        reads = self._index.reads if self._index is not None else None
        writes = self._writes or set()
        if self._index is not None:
            self._index.reads = None
        self._writes = None
        return ChangeFootprint(frozenset(reads or {EVERYTHING}), frozenset(writes))

    def rewritten(self, paths: Iterable[str] | None) -> set[ReadKey]:
        """Git rewrote these files of the tree (None: possibly any): they are read again and the
        lookups their records answered before or answer now are returned."""
        root = self._root
        if root is None:
            return {EVERYTHING}
        if paths is None:
            PARSED_FILES.disown(root, None)
            self._index = SourceIndex(PARSED_FILES.contents_of(root))
            return {EVERYTHING}
        touched: set[ReadKey] = set()
        relatives = [Path(path) for path in paths]
        PARSED_FILES.disown(root, relatives)
        for relative in relatives:
            contents = PARSED_FILES.reread(root, relative)
            if self._index is not None:
                touched |= keys_of(self._index.file(relative)) | keys_of(contents)
                self._index.replace_file(relative, contents)
        return touched

    def keys(self, paths: Iterable[str]) -> set[ReadKey]:
        """The lookups the records of these files answer now."""
        if self._index is None:
            return {EVERYTHING}
        return {key for path in paths for key in keys_of(self._index.file(Path(path)))}

    def note_written(
        self, root: Path, relative: Path, data: bytes | None, checked: Sequence[dict[str, Any]] = ()
    ) -> None:
        contents = PARSED_FILES.wrote(root, relative, data, checked)
        if self._index is not None and root == self._root:
            self._index.replace_file(relative, contents)
        if self._writes is not None:
            self._writes.add(relative.as_posix())


def note_written(
    tree: Path, relative: Path, data: bytes | None, checked: Sequence[dict[str, Any]] = ()
) -> None:
    """records.editor wrote `data` to `relative` under `tree` (None: removed it), having checked
    the `checked` bodies against their schemas: the parsed state is kept as written, and the
    writer's index, when one is open on `tree`, follows."""
    root = tree.resolve()
    working = WORKING_INDEXES.current(root)
    if working is not None:
        working.note_written(root, relative, data, checked)
    else:
        PARSED_FILES.wrote(root, relative, data, checked)
