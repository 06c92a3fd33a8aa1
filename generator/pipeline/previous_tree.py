"""The cluster directory as the last render left it, as a render reads it back.

A render needs the previous tree's paths (which files are its own, the layout, the removal
guard), a few texts (the Kyma record, the apps a domain keeps) and, for the apps reused from the
render pack, whether a file already holds the bytes about to be written (reused_output: such a
file is neither written nor shown, so it is not searched again). None of that needs every
file's bytes: in a Git work tree the files Git vouches for are not even read (io.git_blobs,
`TreeFiles`), and the texts are decoded when first asked for.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Protocol

from btp_gitops.generator.core.errors import Problem, UnsafeOutput
from btp_gitops.generator.core.ownership import MANIFEST_FILE, is_manifest, owned_files
from btp_gitops.generator.domains.kyma import RECORD_FILE
from btp_gitops.generator.io.output_tree import TreeFiles
from btp_gitops.generator.io.repo import ScannedTree


class KnownBytes(Protocol):
    """Files whose bytes may be known without reading them (io.output_tree.TreeFiles,
    io.commit_tree.CommitBlobs)."""

    def holds(self, path: str, data: bytes) -> bool: ...


class KnownBlobs(Protocol):
    """Files whose Git blob ids may be known without reading them (the same two)."""

    def known_blob_ids(self) -> Mapping[str, str]: ...


class KnownTrees(Protocol):
    """Directories whose Git tree ids are known without reading them (io.commit_tree.CommitBlobs)."""

    def known_tree_ids(self) -> Mapping[str, str]: ...


class SetAside(Protocol):
    """Files of which some directories may be left out before they are listed (the same)."""

    def set_aside(self, directories: Iterable[str]) -> None: ...


class DecodedFiles(Mapping[str, str]):
    """Files by path (those of `data` in `paths`, or all), each decoded (UTF-8, undecodable bytes
    replaced) when it is first read: of the 80,000 files a cluster directory of 20,000 tenants
    holds, a render reads the paths and a few texts (the Kyma record, the apps it keeps)."""

    __slots__ = ("_data", "_order", "_paths", "_texts")

    def __init__(self, data: Mapping[str, bytes], paths: Collection[str] | None = None) -> None:
        self._data = data
        self._paths = paths
        self._order: tuple[str, ...] | None = None  # `paths` in order, once asked for
        self._texts: dict[str, str] = {}

    def __getitem__(self, path: str) -> str:
        text = self._texts.get(path)
        if text is None:
            if path not in self:
                raise KeyError(path)
            text = self._texts[path] = self._data[path].decode("utf-8", errors="replace")
        return text

    def __contains__(self, path: object) -> bool:
        return path in self._data if self._paths is None else path in self._paths

    def holds(self, path: str, text: str) -> bool:
        """Whether the file at `path` holds exactly the UTF-8 bytes of `text` (compared as bytes:
        a decoded text with replaced bytes is not the file); by blob id where Git vouches for it."""
        if path not in self:
            return False
        data = self._data
        if hasattr(data, "holds"):
            known: KnownBytes = data
            return known.holds(path, text.encode("utf-8"))
        found = data.get(path)
        return found is not None and len(found) >= len(text) and found == text.encode("utf-8")

    def blob_of(self, path: str) -> str | None:
        """The SHA-1 blob id Git vouches the file at `path` holds, without reading it; None when
        Git does not (or the files are no Git tree's)."""
        return self.known_blob_ids().get(path) if path in self else None

    def known_blob_ids(self) -> Mapping[str, str]:
        """`blob_of` of every file Git vouches for, by path (files of the tree that are not
        among these, the manifests, are not named by a render: no path asks for them)."""
        data = self._data
        if hasattr(data, "known_blob_ids"):
            blobs: KnownBlobs = data
            return blobs.known_blob_ids()
        return {}

    def known_tree_ids(self) -> Mapping[str, str]:
        """The Git tree id of each directory of the files, by path, where Git lists them without
        reading a file (a commit's tree: `diff --against REF`); empty otherwise. Only for all the
        files (`paths` not given): a tree id names every file of its directory."""
        data = self._data
        if self._paths is None and hasattr(data, "known_tree_ids"):
            trees: KnownTrees = data
            return trees.known_tree_ids()
        return {}

    def set_aside(self, directories: frozenset[str]) -> None:
        """Directories whose files no path will ask for: where the files are a commit's not
        listed yet, they never are (io.commit_tree.CommitBlobs.set_aside)."""
        data = self._data
        if self._paths is None and hasattr(data, "set_aside"):
            aside: SetAside = data
            aside.set_aside(directories)

    def __bool__(self) -> bool:
        return bool(self._data) if self._paths is None else bool(self._paths)

    def __iter__(self) -> Iterator[str]:
        if self._paths is None:
            return iter(self._data)
        if self._order is None:
            self._order = tuple(sorted(self._paths))
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._data if self._paths is None else self._paths)


def owned_previous(where: Path, tree: ScannedTree) -> DecodedFiles:
    """The files of the cluster directory btp-gitops wrote; refuse if it holds anything else.

    A render replaces the directory as a whole: a file someone added there would be deleted, so
    the render stops and names it instead (see core.ownership for how files are recognised; the
    manifests are read, the files they list are not). The texts are decoded when read.
    """
    owned = owned_files(tree.files, {RECORD_FILE}, str(where))
    foreign = [
        *(
            Problem(str(where / path), f"not written by btp-gitops (not in {MANIFEST_FILE})")
            for path in sorted(_paths(tree.files) - owned)
        ),
        *(Problem(str(where / path), "a symbolic link or special file") for path in tree.others),
    ]
    if foreign:
        raise UnsafeOutput(
            f"{where} holds {len(foreign)} file(s) btp-gitops did not write; a render replaces the whole "
            "directory and never deletes what is not its own: move them out of it and render again",
            foreign,
        )
    manifests = {path for path in owned if path.endswith(MANIFEST_FILE) and is_manifest(path)}
    return DecodedFiles(tree.files, frozenset(owned - manifests))


def _paths(files: Mapping[str, bytes]) -> set[str]:
    """The paths of a scanned tree, unordered (io.output_tree.TreeFiles keeps them as a set)."""
    return files.path_set() if isinstance(files, TreeFiles) else set(files)
