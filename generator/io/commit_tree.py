"""The files of a directory at a commit, read from Git's objects without a checkout (`diff
--against REF`): `read_tree_at` finds the directory, `CommitBlobs` holds its files by path.

Each file's blob id is what Git lists for it (io.git_blobs says why that id is trusted); its bytes
are read only when asked for, bounded by the size Git gives before a byte is read and hashed
again after: they must be the id's.

The directory is read in two steps. Its outline first: the tree object of every directory but
the app directories (core.layout.app_of_directory), whose tree ids their parents list. The files
of an app directory are listed when a file is first asked for, unless the directory was set
aside before (`CommitBlobs.set_aside`): a diff sets aside the apps it leaves out because the
commit holds them as the render pack gives them (their tree ids, pipeline.reused_output), and
their files are never listed. A cluster directory of 20,000 tenants is an outline of some 260
tree objects; listing it whole reads 20,000 more and lists 80,000 files.
"""

from __future__ import annotations

import os
from collections.abc import Container, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from btp_gitops.generator.core.errors import GitError, UsageError
from btp_gitops.generator.core.layout import TENANTS_DIR, app_of_directory
from btp_gitops.generator.io.git_blobs import HASHES, blob_id, git_output
from btp_gitops.generator.io.output_tree import MAX_TREE_FILE_BYTES, too_large

_OID_WIDTH = {"sha1": 40, "sha256": 64}
_TREE = b"40000"
_GITLINK = b"160000"  # a submodule's commit: no file of this repository (ls-tree's type `commit`)
# Past this many levels of directories an outline is read as one listing instead (a level is one
# `git cat-file` run: a rendered cluster directory has four).
_MAX_LEVELS = 16
# Past this many app directories to list, one `git ls-tree -r` of the whole tree costs less than
# reading their tree objects one by one.
_MANY_APPS = 512


class CommitBlobs(Mapping[str, bytes]):
    """The files of a directory at a commit, by path (see the module docstring). `trees`: the tree
    id of each directory below it, as listed (a directory that lost a file here is not among
    them); the app directories' are known before their files are listed."""

    def __init__(
        self,
        top: Path,
        blobs: dict[str, str],
        object_format: str,
        where: tuple[str, str],
        read: dict[str, bytes] | None = None,
        *,
        trees: dict[str, str] | None = None,
        deferred: dict[str, str] | None = None,
        left_out_name: str | None = None,
        root: str | None = None,
    ) -> None:
        self._top = top
        self._root = root  # the directory's own tree id
        self._blobs = blobs  # in path order
        self.object_format = object_format
        self._where = where  # (the directory's path in the repository, with a slash; the ref)
        self._read: dict[str, bytes] = read if read is not None else {}
        self.trees: dict[str, str] = trees if trees is not None else {}
        # App directories whose files are not listed yet: path -> tree id.
        self._deferred: dict[str, str] = deferred if deferred is not None else {}
        self._left_out_name = left_out_name  # files of this name are left out wherever listed

    @property
    def blobs(self) -> dict[str, str]:
        """Every file's blob id, by path, in path order (the app directories' listed now)."""
        if self._deferred:
            self._list_deferred()
        return self._blobs

    def set_aside(self, directories: Iterable[str]) -> None:
        """Leave out the files of these app directories, if they are not listed yet: they will
        never be (their trees stay known). A directory listed already is left as it is."""
        for directory in directories:
            self._deferred.pop(directory, None)

    def outline(self) -> list[str]:
        """The paths of the files listed, and of each app directory not listed yet with a slash
        after it: for the checks that ask only where files are (core.ownership.shards_tenants),
        without listing 80,000 files."""
        return [*self._blobs, *(f"{directory}/" for directory in self._deferred)]

    def without_named(self, name: str) -> CommitBlobs:
        """Every file but those named `name`, wherever they are and whenever they are listed (the
        ownership manifests); the directories holding one are no longer the trees listed."""
        kept, trees = dict(self._blobs), dict(self.trees)
        _leave_out_named(kept, trees, name)
        return self._derived(kept, trees, dict(self._deferred), name)

    def _derived(
        self, blobs: dict[str, str], trees: dict[str, str], deferred: dict[str, str], name: str | None
    ) -> CommitBlobs:
        """Another view of the same directory, sharing what was read."""
        return CommitBlobs(
            self._top,
            blobs,
            self.object_format,
            self._where,
            self._read,
            trees=trees,
            deferred=deferred,
            left_out_name=name,
            root=self._root,
        )

    def without(self, paths: Iterable[str]) -> CommitBlobs:
        """Every file but these (sharing what was read); the directories holding one of them are
        no longer the trees listed."""
        kept, trees = dict(self.blobs), dict(self.trees)
        for path in paths:
            if kept.pop(path, None) is not None:
                _drop_trees_from(trees, path.rpartition("/")[0])
        return self._derived(kept, trees, {}, self._left_out_name)

    def without_directories(self, directories: Iterable[str]) -> CommitBlobs:
        """Every file but those below these directories, and every tree but theirs, those below
        them and those above them (which no longer hold what Git listed). Those set aside are
        never listed; a file listed is looked at by its own directory first, one set lookup,
        and by the directories above that only when it is not one of them."""
        chosen = frozenset(directories)
        self.set_aside(chosen)
        kept = {path: oid for path, oid in self.blobs.items() if path.rpartition("/")[0] not in chosen}
        kept = {path: oid for path, oid in kept.items() if not _below_any(path, chosen)}
        trees = {path: oid for path, oid in self.trees.items() if path not in chosen}
        trees = {path: oid for path, oid in trees.items() if not _below_any(path, chosen)}
        for directory in chosen:
            _drop_trees_from(trees, directory.rpartition("/")[0])
        return self._derived(kept, trees, {}, self._left_out_name)

    def holds(self, path: str, data: bytes) -> bool:
        known = self.blobs.get(path)
        return known is not None and known == blob_id(data, self.object_format)

    def blob_of(self, path: str) -> str | None:
        """The SHA-1 blob id of the file at `path` (None: not here, or a SHA-256 repository)."""
        return self.known_blob_ids().get(path)

    def known_blob_ids(self) -> Mapping[str, str]:
        """`blob_of` for every file, by path."""
        return self.blobs if self.object_format == "sha1" else {}

    def known_tree_ids(self) -> Mapping[str, str]:
        """The SHA-1 tree id of every directory below this one, by path (none in a SHA-256
        repository): a directory whose id is the one `tree_id` gives some files holds exactly
        those files, with those blob ids. Known without listing the app directories' files."""
        return self.trees if self.object_format == "sha1" else {}

    def __getitem__(self, path: str) -> bytes:
        data = self._read.get(path)
        if data is None:
            if path not in self:
                raise KeyError(path)
            self.fetch([path])
            data = self._read[path]
        return data

    def __contains__(self, path: object) -> bool:
        if path in self._blobs:
            return True
        return isinstance(path, str) and self._deferred_holds(path) and path in self.blobs

    def __iter__(self) -> Iterator[str]:
        return iter(self.blobs)

    def __len__(self) -> int:
        return len(self.blobs)

    def __bool__(self) -> bool:
        # Git keeps no empty directory: an app directory not listed yet holds a file.
        return bool(self._blobs) or bool(self._deferred)

    def _deferred_holds(self, path: str) -> bool:
        """Whether `path` is below an app directory not listed yet."""
        return bool(self._deferred) and _below_any(path, self._deferred)

    def _shown(self, path: str) -> str:
        prefix, ref = self._where
        return f"{prefix}{path} at {ref}"

    def _list_deferred(self) -> None:
        """List the files of the app directories not listed yet (all that is below them)."""
        pending, self._deferred = self._deferred, {}
        found = _Listing()
        if len(pending) > _MANY_APPS:
            root = self._root
            listed = git_output(self._top, "ls-tree", "-r", "-t", "-z", root) if root else None
            if listed is None:
                raise GitError(f"git ls-tree cannot list {self._shown('')}")
            entries = os.fsdecode(listed).split("\0")
            for kind, into in (("blob", found.blobs), ("tree", found.trees)):
                into.update(
                    (path, oid)
                    for path, oid in _listed_of_type(entries, kind, self.object_format).items()
                    if _below_any(path, pending)
                )
        else:
            found.read(self._top, list(pending.items()), self.object_format, self._where, defer=False)
        self.trees.update(found.trees)
        if self._left_out_name is not None:  # the trees above such a file, listed before, go too
            _leave_out_named(found.blobs, self.trees, self._left_out_name)
        merged = {**self._blobs, **found.blobs}
        self._blobs = {path: merged[path] for path in sorted(merged)}

    def fetch(self, paths: Iterable[str]) -> None:
        """Read the blobs of `paths` not read yet, in two Git calls: sizes first (every one
        refused over the limit before any is read), then the bytes."""
        wanted = [path for path in dict.fromkeys(paths) if path not in self._read and path in self]
        blobs = self._blobs  # with the app directories' files `in` listed
        if not wanted:
            return
        oids = "".join(f"{blobs[path]}\n" for path in wanted).encode("ascii")
        headers = git_output(self._top, "cat-file", "--batch-check", stdin=oids)
        sizes = headers.decode("ascii", errors="replace").splitlines() if headers is not None else []
        if len(sizes) != len(wanted):
            raise GitError(f"git cat-file cannot read the files of {self._shown('')}")
        for path, header in zip(wanted, sizes, strict=True):
            fields = header.split(" ")
            if len(fields) != 3 or fields[1] != "blob" or not fields[2].isdigit():
                raise GitError(f"git cat-file cannot read {self._shown(path)}: {header[:80]!r}")
            if int(fields[2]) > MAX_TREE_FILE_BYTES:
                raise too_large(self._shown(path), int(fields[2]))
        stream = git_output(self._top, "cat-file", "--batch", stdin=oids)
        if stream is None:
            raise GitError(f"git cat-file cannot read the files of {self._shown('')}")
        offset = 0
        for path in wanted:
            end = stream.find(b"\n", offset)
            found = stream[offset:end].split(b" ")
            size = int(found[2]) if len(found) == 3 and found[2].isdigit() else -1
            if size < 0 or size > MAX_TREE_FILE_BYTES:
                raise too_large(self._shown(path), size if size >= 0 else None)
            data = stream[end + 1 : end + 1 + size]
            offset = end + 2 + size
            if blob_id(data, self.object_format) != blobs[path]:
                raise GitError(f"cannot read {self._shown(path)}: its bytes are not its blob id's")
            self._read[path] = data


class _Listing:
    """Files and trees found by reading tree objects, level by level (one `git cat-file --batch`
    per level)."""

    def __init__(self) -> None:
        self.blobs: dict[str, str] = {}
        self.trees: dict[str, str] = {}
        self.deferred: dict[str, str] = {}

    def read(
        self,
        top: Path,
        level: list[tuple[str, str]],
        object_format: str,
        where: tuple[str, str],
        *,
        defer: bool,
    ) -> bool:
        """Read the directories of `level` (path, tree id) and all below them, an app directory's
        files left for later when `defer`; False when they go deeper than `_MAX_LEVELS`."""
        width = _OID_WIDTH[object_format] // 2
        for _ in range(_MAX_LEVELS):
            if not level:
                return True
            below: list[tuple[str, str]] = []
            for (directory, _), body in zip(level, _tree_objects(top, level, where), strict=True):
                prefix = f"{directory}/" if directory else ""
                for mode, name, oid in _tree_entries(body, width, where, directory):
                    path = prefix + name
                    if mode == _TREE:
                        self.trees[path] = oid
                        if defer and path != TENANTS_DIR and app_of_directory(path) is not None:
                            self.deferred[path] = oid
                        else:
                            below.append((path, oid))
                    elif mode != _GITLINK:
                        self.blobs[path] = oid
            level = below
        return not level


def _tree_objects(top: Path, level: list[tuple[str, str]], where: tuple[str, str]) -> list[bytes]:
    """The bodies of the tree objects of `level` (path, id), in one `git cat-file --batch`."""
    shown = f"{where[0]} at {where[1]}"
    stream = git_output(
        top, "cat-file", "--batch", stdin="".join(f"{oid}\n" for _, oid in level).encode("ascii")
    )
    if stream is None:
        raise GitError(f"git cat-file cannot read the directories of {shown}")
    bodies = []
    offset = 0
    for directory, oid in level:
        end = stream.find(b"\n", offset)
        header = stream[offset:end].split(b" ") if end >= 0 else []
        if (
            len(header) != 3
            or header[0] != oid.encode("ascii")
            or header[1] != b"tree"
            or not header[2].isdigit()
        ):
            raise GitError(f"git cat-file cannot read the directory {directory or '.'} of {shown}")
        size = int(header[2])
        bodies.append(stream[end + 1 : end + 1 + size])
        offset = end + 2 + size
        if offset > len(stream):
            raise GitError(f"git cat-file cut the directory {directory or '.'} of {shown} short")
    return bodies


def _tree_entries(
    body: bytes, width: int, where: tuple[str, str], directory: str
) -> Iterator[tuple[bytes, str, str]]:
    """(mode, name, id) of each entry of a tree object: `<mode> <name>NUL<id, binary>` one after
    the other. A name that is no single part of a path is refused, as an entry cut short."""
    position, end = 0, len(body)
    while position < end:
        space = body.find(b" ", position, position + 8)
        nul = body.find(b"\0", space + 1) if space > position else -1
        if nul < 0 or nul + 1 + width > end:
            raise GitError(
                f"the directory {directory or '.'} of {where[0]} at {where[1]} is no tree Git writes"
            )
        name = os.fsdecode(body[space + 1 : nul])
        if name in ("", ".", "..") or "/" in name:
            raise GitError(
                f"the directory {directory or '.'} of {where[0]} at {where[1]} names a file {name!r}"
            )
        yield body[position:space], name, body[nul + 1 : nul + 1 + width].hex()
        position = nul + 1 + width


def _leave_out_named(blobs: dict[str, str], trees: dict[str, str], name: str) -> None:
    for path in [path for path in blobs if path.rpartition("/")[2] == name]:
        del blobs[path]
        _drop_trees_from(trees, path.rpartition("/")[0])


def _drop_trees_from(trees: dict[str, str], directory: str) -> None:
    """Drop the tree of `directory` and of each directory above it, which no longer hold what
    Git listed (up to the first one dropped before: those above it went with it)."""
    while directory and trees.pop(directory, None) is not None:
        directory = directory.rpartition("/")[0]


def _below_any(path: str, directories: Container[str]) -> bool:
    """Whether `path` lies below one of `directories`, at any depth."""
    directory = path.rpartition("/")[0]
    while directory:
        if directory in directories:
            return True
        directory = directory.rpartition("/")[0]
    return False


def commit_outline(top: Path, tree: str, object_format: str, where: tuple[str, str]) -> CommitBlobs:
    """The files of the tree object `tree` of the repository at `top`, by path relative to it
    (`where`: that tree's path in the repository, with a slash, and the ref, for messages), the
    app directories' listed when first asked for (see the module docstring)."""
    found = _Listing()
    if not found.read(top, [("", tree)], object_format, where, defer=True):
        return commit_blobs(top, tree, object_format, where)  # deeper than a render writes
    blobs = {path: found.blobs[path] for path in sorted(found.blobs)}
    return CommitBlobs(
        top, blobs, object_format, where, trees=found.trees, deferred=found.deferred, root=tree
    )


def commit_blobs(top: Path, tree: str, object_format: str, where: tuple[str, str]) -> CommitBlobs:
    """`commit_outline`, every file listed at once (`git ls-tree -r`)."""
    listed = git_output(top, "ls-tree", "-r", "-t", "-z", tree)  # -t: the directories' trees too
    if listed is None:
        raise GitError(f"git ls-tree cannot list {where[0]} at {where[1]}")
    entries = os.fsdecode(listed).split("\0")
    blobs = _listed_of_type(entries, "blob", object_format)
    paths = list(blobs)
    if paths != sorted(paths):  # Git lists them in path order as a rule: checked in one pass
        blobs = {path: blobs[path] for path in sorted(paths)}
    trees = _listed_of_type(entries, "tree", object_format)
    return CommitBlobs(top, blobs, object_format, where, trees=trees, root=tree)


def _listed_of_type(listed: bytes | list[str], kind: str, object_format: str) -> dict[str, str]:
    """The entries of a `git ls-tree -z` listing whose type is `kind` (blob or tree): path ->
    object id. Git writes an entry as `<mode> <type> <id>TAB<path>`, the mode six octal digits,
    so each part is at a fixed offset: read by slicing in one comprehension (a cluster of 20,000
    tenants lists 80,000 entries); an entry of another shape is not taken. `listed` may be split
    at its NULs already (a listing read for both types)."""
    typed = f" {kind} "
    start = 6 + len(typed)
    end = start + _OID_WIDTH[object_format]
    return {
        entry[end + 1 :]: entry[start:end]
        for entry in (os.fsdecode(listed).split("\0") if isinstance(listed, bytes) else listed)
        if entry[6:start] == typed and entry[end : end + 1] == "\t"
    }


@dataclass(frozen=True, slots=True)
class TreeAtRef:
    commit: str
    files: Mapping[str, bytes]  # paths relative to the subtree; empty when the ref has no such subtree
    found: bool = True  # the ref has the subtree (a directory)
    # Directories beside the subtree (its parent's), None when the ref has no such parent.
    siblings: tuple[str, ...] | None = None


def read_tree_at(repo_dir: Path | None, ref: str, subtree: str) -> TreeAtRef:
    """The files under `subtree` as committed at `ref`, read from Git's objects: no checkout, the
    work tree is not touched. `subtree` is relative to `repo_dir`, which may be a folder inside a
    larger work tree (or a bare repository); without one, to the current directory's work tree.

    Three `git` commands and `commit_blobs`'s listing, not GitPython: its import alone costs a
    `diff --against HEAD` in a pull request more than these do."""
    where = repo_dir or Path.cwd()
    kind = git_output(where, "rev-parse", "--is-bare-repository", "--show-object-format")
    lines = os.fsdecode(kind).split("\n") if kind is not None else []
    located = None
    if len(lines) >= 2 and lines[1] in HASHES:
        located = git_output(
            where, "rev-parse", "--absolute-git-dir" if lines[0] == "true" else "--show-toplevel"
        )
    if located is None:
        raise UsageError(f"--against {ref}: not a directory, and {where} is not in a Git repository")
    object_format = lines[1]
    top = Path(os.fsdecode(located).removesuffix("\n")).resolve()
    # The ref as a revision only (never an option), peeled to its commit.
    commit = git_output(top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    if commit is None or not ref:
        raise UsageError(f"--against {ref}: not a directory, and not a commit of the Git repository at {top}")
    sha = commit.decode("ascii", errors="replace").strip()
    base = repo_dir.resolve() if repo_dir else top
    prefix = Path(os.path.relpath(base / subtree, top)).as_posix()
    if prefix == ".." or prefix.startswith("../"):  # outside the repository: it holds no such tree
        return TreeAtRef(sha, {}, found=False)
    parent, _, name = prefix.rpartition("/")
    listed = git_output(top, "ls-tree", "-z", f"{sha}:{parent}")
    if listed is None:  # no such directory at the ref
        return TreeAtRef(sha, {}, found=False)
    trees = _listed_of_type(listed, "tree", object_format)
    siblings = tuple(sorted(trees))
    if name not in trees:
        return TreeAtRef(sha, {}, found=False, siblings=siblings)
    # The blob ids only: a blob is read when the diff needs its bytes.
    files = commit_outline(top, trees[name], object_format, (f"{prefix}/", ref))
    return TreeAtRef(sha, files, siblings=siblings)
