"""The in-place write of a tree: a journal, sealed, rolled forward.

io.repo changes an existing cluster directory in place, file by file. So that a killed run cannot
leave it half written, the change goes through a journal:

1. Every new or changed file is written in full into a staging directory beside the target
   (`.<name>.staging-*/new/<path>`), with a plan (`plan.json`: the paths to write with the
   SHA-256 of each, the paths to remove, the directories that end up empty) and a seal
   (io.journal_seal: an HMAC under this user's key). Nothing in the target has been touched yet;
   a run killed here leaves the old tree and a staging directory the next run removes.
2. The staging directory is renamed to `.<name>.journal-*`: the commit point. From here on the
   change is decided, and whoever finds the journal finishes it.
3. The plan is applied: removed files are unlinked (manifests last), emptied directories
   removed, and every new file renamed from the journal over its old one (one atomic `rename` per
   file: a path holds its complete old bytes or its complete new ones, never a part). The journal
   is removed last.

A run killed in step 3 leaves a tree mixing old and new files, with the journal beside it; the
next write (any render, under the lock, before it reads the tree) replays the plan, which is
idempotent, and so reaches the new tree exactly. A failure the system reports in step 3 (a
read-only directory, a full disk) is rolled back at once from the previous bytes the writer read,
and the error reported.

A journal found on disk is input like any other file of the repository (someone may have pushed
one): it is replayed only when its seal verifies under this user's key and Git does not track it;
every staged file is checked against the SHA-256 its plan records before it is moved in; every
file of the journal is opened relative to a directory descriptor with `O_NOFOLLOW` (a link, FIFO
or device in it is refused, never read or moved); and the replay removes or replaces only
regular files the ownership manifests own. A journal that cannot be proven is left untouched and
the command stops, naming it. A reader (`diff --against DIR`) applies the same proof before it
reads a journal's files on top of the tree.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import itertools
import json
import os
import re
import stat
import subprocess
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from btp_gitops.generator.core.errors import OutputNotWritable, Problem, UnsafeOutput
from btp_gitops.generator.core.ownership import MANIFEST_FILE, is_manifest, owned_files
from btp_gitops.generator.io.journal_seal import journal_key, seal_text, seal_verifies
from btp_gitops.generator.io.output_tree import (
    DIRECTORY_FLAGS,
    MAX_TREE_FILE_BYTES,
    READ_FLAGS,
    LocalFilesystem,
    ScannedTree,
    TreeChanges,
    leftovers,
    plain_path,
    read_open_file,
    read_tree,
    scan_tree,
    stage_directory,
)

PLAN_FILE = "plan.json"  # a journal's plan: what to write, remove and prune
NEW_FILES = "new"  # a journal's directory of the complete new files, by path
RESTORED_FILES = "old"  # where a roll-back writes a previous file before renaming it back
SEAL_FILE = "seal"  # the journal's HMAC (io.journal_seal)
_PLAN_FORMAT = 2  # 2: with the SHA-256 of each staged file
_MAX_SEAL_BYTES = 256
_DIGEST = re.compile(r"[0-9a-f]{64}")


def digest_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True, slots=True)
class WritePlan:
    """What an in-place write changes, as a journal records it (paths relative to the target)."""

    write: tuple[str, ...] = ()  # added and changed files, staged in the journal
    remove: tuple[str, ...] = ()  # files no longer written
    prune: tuple[str, ...] = ()  # directories no file is left in, deepest first
    digests: tuple[str, ...] = ()  # the SHA-256 of each file of `write`, in its order

    def to_json(self) -> str:
        body = {
            "format": _PLAN_FORMAT,
            "write": self.write,
            "digests": self.digests,
            "remove": self.remove,
            "prune": self.prune,
        }
        return json.dumps(body, indent=0, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> WritePlan:
        """The plan of a journal; ValueError when it is no plan this writer wrote."""
        try:
            body = json.loads(text)
        except RecursionError:
            raise ValueError("nested too deeply") from None
        if not isinstance(body, dict) or body.get("format") != _PLAN_FORMAT:
            raise ValueError("not a plan of this format")
        lists = []
        for key in ("write", "remove", "prune"):
            entries = body.get(key)
            if not isinstance(entries, list) or not all(
                isinstance(e, str) and plain_path(e) for e in entries
            ):
                raise ValueError(f"{key}: not a list of plain relative paths")
            lists.append(tuple(entries))
        digests = body.get("digests")
        if (
            not isinstance(digests, list)
            or len(digests) != len(lists[0])
            or not all(isinstance(d, str) and _DIGEST.fullmatch(d) for d in digests)
        ):
            raise ValueError("digests: not one SHA-256 per file written")
        return cls(lists[0], lists[1], lists[2], tuple(digests))


def _manifests_last(path: str) -> tuple[bool, str]:
    return (is_manifest(path), path)


def plan_changes(
    changes: TreeChanges,
    directories: tuple[str, ...],
    new: Mapping[str, bytes],
    kept: Collection[str] = (),
) -> WritePlan:
    """The plan making a tree of `directories` and `changes.previous`'s files hold `new`, and the
    files `kept` as they are (their directories are not pruned either).

    Manifests are removed after the files they list: a replay after a kill among the removals
    still finds every file it has left to remove owned."""
    needed: set[str] = set()  # every directory holding a new file, and their parents
    for parent in {path.rpartition("/")[0] for path in itertools.chain(new, kept)}:
        directory = parent
        while directory and directory not in needed:  # its parents are in when it is
            needed.add(directory)
            directory = directory.rpartition("/")[0]
    prune = sorted((d for d in directories if d not in needed), key=lambda d: (-d.count("/"), d))
    write = (*changes.added, *changes.changed)
    remove = tuple(sorted(changes.removed, key=_manifests_last))
    return WritePlan(write, remove, tuple(prune), tuple(digest_of(new[path]) for path in write))


def _refuse_unless_a_directory(error: OSError, refusal: str) -> None:
    """`UnsafeOutput(refusal)` when `error` is an `O_NOFOLLOW` open of a directory that met a symbolic
    link or a file there; any other error is left to the caller."""
    if error.errno in (errno.ELOOP, errno.ENOTDIR):
        raise UnsafeOutput(refusal) from error


class _Tree:
    """Directory descriptors of one target tree, each opened from its parent's with O_NOFOLLOW:
    a symbolic link (or a file) where a directory should be fails the open, nothing is followed."""

    def __init__(self, parent: Path, name: str, fs: LocalFilesystem) -> None:
        self.fs = fs
        self.root = parent / name
        self.created: list[str] = []  # directories this write made, in order
        try:
            parent_fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                self._fds = {"": self._open(parent_fd, name, self.root)}
            finally:
                os.close(parent_fd)
        except OSError as error:
            raise OutputNotWritable(f"cannot write {self.root}: {error.strerror or error}") from error

    def _open(self, parent: int, name: str, path: Path) -> int:
        try:
            return self.fs.open_directory_at(parent, name)
        except OSError as error:
            _refuse_unless_a_directory(
                error,
                f"refusing to write into {path}: not a real directory (btp-gitops never writes "
                "through a symbolic link)",
            )
            raise

    def directory(self, relative: str, *, create: bool) -> int | None:
        """The descriptor of `relative` ("" for the root); None when it is missing, or no real
        directory, and not to be created."""
        if relative in self._fds:
            return self._fds[relative]
        above, _, name = relative.rpartition("/")
        parent = self.directory(above, create=create)
        if parent is None:
            return None
        try:
            fd = self._open(parent, name, self.root / relative)
        except UnsafeOutput:
            if create:
                raise
            return None  # a file (or a link) there: nothing below it to remove, nothing followed
        except FileNotFoundError:
            if not create:
                return None
            self.fs.make_directory_at(parent, name)
            self.created.append(relative)
            fd = self._open(parent, name, self.root / relative)
        self._fds[relative] = fd
        return fd

    def forget(self, relative: str) -> None:
        for known in [k for k in self._fds if k == relative or k.startswith(f"{relative}/")]:
            os.close(self._fds.pop(known))

    def close(self) -> None:
        for fd in self._fds.values():
            os.close(fd)
        self._fds.clear()


class _Staged:
    """The `new/` directory of a journal, its subdirectories opened from the journal's descriptor
    with O_NOFOLLOW: a link where a directory should be is refused, nothing is followed."""

    def __init__(self, journal_fd: int, journal: Path) -> None:
        self.journal = journal
        self._fds: dict[str, int | None] = {}
        self._fds[""] = self._open(journal_fd, NEW_FILES, NEW_FILES)

    def _open(self, parent: int, name: str, shown: str) -> int | None:
        try:
            return os.open(name, DIRECTORY_FLAGS, dir_fd=parent)
        except FileNotFoundError:
            return None
        except OSError as error:
            _refuse_unless_a_directory(
                error,
                f"refusing to read {self.journal / shown}: not a real directory (a journal's "
                "files are never read through a symbolic link)",
            )
            raise

    def directory(self, relative: str) -> int | None:
        """The descriptor of `new/<relative>`; None when it is missing."""
        if relative in self._fds:
            return self._fds[relative]
        above, _, name = relative.rpartition("/")
        parent = self.directory(above)
        fd = None if parent is None else self._open(parent, name, f"{NEW_FILES}/{relative}")
        self._fds[relative] = fd
        return fd

    def locate(self, path: str) -> tuple[int, str] | None:
        """Where the staged file for `path` is (its directory's descriptor and its name); None when
        it is not there (moved into the tree before the run was cut)."""
        directory, _, name = path.rpartition("/")
        parent = self.directory(directory)
        if parent is None:
            return None
        try:
            os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return None
        return parent, name

    def read(self, path: str, digest: str) -> bytes | None:
        """The staged bytes of `path` when they are a regular file with the SHA-256 the sealed plan
        records; None when the file is not staged; UnsafeOutput for anything else."""
        found = self.locate(path)
        if found is None:
            return None
        parent, name = found
        shown = f"{self.journal / NEW_FILES / path}"
        try:
            fd = os.open(name, READ_FLAGS, dir_fd=parent)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise UnsafeOutput(f"refusing to read {shown}: a symbolic link") from error
            raise
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise UnsafeOutput(f"refusing to read {shown}: not a regular file (a FIFO, device or socket)")
            data = read_open_file(fd, info, shown)
        finally:
            os.close(fd)
        if digest_of(data) != digest:
            raise UnsafeOutput(
                f"refusing to use {shown}: its bytes are not the ones its journal's plan records"
            )
        return data

    def close(self) -> None:
        for fd in self._fds.values():
            if fd is not None:
                os.close(fd)
        self._fds.clear()


@contextlib.contextmanager
def _opened(journal: Path) -> Iterator[int]:
    try:
        fd = os.open(journal, DIRECTORY_FLAGS)
    except OSError as error:
        raise UnsafeOutput(
            f"refusing to read {journal}: not a real directory ({error.strerror or error})"
        ) from error
    try:
        yield fd
    finally:
        os.close(fd)


def _small_file_at(dir_fd: int, name: str, shown: Path, limit: int) -> bytes | None:
    """A regular file of the journal, bounded, without following a link; None when missing."""
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise UnsafeOutput(
            f"refusing to read {shown}: {error.strerror or error} (a link is never followed)"
        ) from error
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeOutput(f"refusing to read {shown}: not a regular file")
        return read_open_file(fd, info, str(shown), limit)
    finally:
        os.close(fd)


def _tracked_by_git(parent: Path, journal: Path) -> bool:
    """Whether Git tracks any file of `journal` in the work tree `parent` is in (False where there
    is no Git, or no work tree): a committed journal came with a clone or a pull, never a kill."""
    try:
        done = subprocess.run(
            ["git", "-C", os.fspath(parent), "ls-files", "-z", "--", journal.name],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=False,
            timeout=60,
            env={**os.environ, "GIT_LITERAL_PATHSPECS": "1"},
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and bool(done.stdout)


def _unprovable(journal: Path, reason: str) -> UnsafeOutput:
    return UnsafeOutput(
        f"refusing to replay {journal}: {reason}. A journal is what a killed `btp-gitops render` "
        "leaves to be finished by the next one, on the same machine; this one was not made there "
        "(it may have come with a clone or a push), so it is never followed. Remove it (it is no "
        "part of the rendered tree) and run again"
    )


def proven_plan(parent: Path, name: str, journal: Path, journal_fd: int) -> WritePlan:
    """The plan of `journal` (open at `journal_fd`) when its seal proves this user's btp-gitops
    wrote it for the tree `parent/name` and Git does not track it; UnsafeOutput otherwise."""
    plan_bytes = _small_file_at(journal_fd, PLAN_FILE, journal / PLAN_FILE, MAX_TREE_FILE_BYTES)
    seal = _small_file_at(journal_fd, SEAL_FILE, journal / SEAL_FILE, _MAX_SEAL_BYTES)
    if plan_bytes is None or seal is None:
        raise _unprovable(journal, f"it has no {PLAN_FILE} or no {SEAL_FILE}")
    if not seal_verifies(journal_key(create=False), parent / name, journal.name, plan_bytes, seal):
        raise _unprovable(journal, "its seal does not verify under this user's journal key")
    if _tracked_by_git(parent, journal):
        raise _unprovable(journal, "Git tracks it")
    try:
        return WritePlan.from_json(plan_bytes.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:  # sealed, so written by another version
        raise OutputNotWritable(
            f"cannot finish the write an interrupted run recorded in {journal}: its {PLAN_FILE} is "
            f"not one this version of btp-gitops reads ({error}); check the cluster directory and "
            "remove the journal"
        ) from error


Step = tuple[str, str]  # ("written" | "removed" | "pruned", path): what `_apply` did, for a roll-back


def _apply(tree: _Tree, staged: _Staged, plan: WritePlan, done: list[Step], *, verify: bool) -> None:
    """Carry out `plan` on `tree`. Idempotent: a step already done (a file moved in, a file or
    directory gone) is passed over, so a journal cut anywhere can be applied again. `verify`: check
    each staged file against its digest first (a journal found on disk, not one just written)."""
    fs = tree.fs
    for path in plan.remove:
        directory, _, name = path.rpartition("/")
        parent = tree.directory(directory, create=False)
        if parent is None:
            continue
        try:
            if not stat.S_ISREG(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
                continue  # a link, a directory or a device put there since: not ours, left
            fs.unlink_at(parent, name)
        except FileNotFoundError:
            continue
        done.append(("removed", path))
    for directory in plan.prune:
        above, _, name = directory.rpartition("/")
        parent = tree.directory(above, create=False)
        if parent is None:
            continue
        tree.forget(directory)
        try:
            fs.remove_directory_at(parent, name)
        except FileNotFoundError:
            continue
        except OSError as error:
            if error.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                continue  # holds a file someone put there since (or is no directory): left
            raise
        done.append(("pruned", directory))
    for path, digest in zip(plan.write, plan.digests, strict=True):
        if verify and staged.read(path, digest) is None:
            continue  # moved in before the run was cut
        source = staged.locate(path)
        if source is None:
            continue
        directory, _, name = path.rpartition("/")
        parent = tree.directory(directory, create=True)
        assert parent is not None  # created when missing
        fs.move_in_at(source[0], source[1], parent, name)
        done.append(("written", path))


def _roll_back(tree: _Tree, journal: Path, done: list[Step], previous: Mapping[str, bytes]) -> None:
    """Undo `done` in reverse order: each new file goes back into the journal (so a roll-back cut
    half-way still rolls forward to the new tree), each previous file is written aside in the
    journal and renamed into place, pruned directories are made again, created ones removed."""
    fs = tree.fs
    created = list(tree.created)  # by the write; directories made again below stay
    for kind, path in reversed(done):
        directory, _, name = path.rpartition("/")
        if kind == "pruned":
            tree.directory(path, create=True)
            continue
        parent = tree.directory(directory, create=True)
        assert parent is not None
        if kind == "written":
            fs.move_out_at(parent, name, journal / NEW_FILES / path)
        if path in previous:
            aside = journal / RESTORED_FILES / path
            fs.make_dirs(aside.parent)
            fs.write_bytes(aside, previous[path])
            aside_dir = os.open(aside.parent, DIRECTORY_FLAGS)  # this run's own journal
            try:
                fs.move_in_at(aside_dir, aside.name, parent, name)
            finally:
                os.close(aside_dir)
    for directory in reversed(created):
        above, _, name = directory.rpartition("/")
        parent = tree.directory(above, create=False)
        tree.forget(directory)
        if parent is not None:
            with contextlib.suppress(OSError):  # not empty (a file someone put there): left
                fs.remove_directory_at(parent, name)


def _journal_of(staging: Path, name: str) -> Path:
    return staging.with_name(f".{name}.journal-{staging.name.rsplit('-', 1)[-1]}")


def _discard(journal: Path, name: str, fs: LocalFilesystem) -> None:
    """Remove a finished journal: renamed back to a staging name first, so that a run killed
    while removing it leaves a staging directory (removed), never a journal without its plan."""
    finished = journal.with_name(f".{name}.staging-{journal.name.rsplit('-', 1)[-1]}")
    try:
        fs.rename(journal, finished)
    except OSError as error:
        raise OutputNotWritable(f"cannot remove {journal}: {error.strerror or error}") from error
    fs.remove_tree(finished)


def _write_journal(
    parent: Path, name: str, plan: WritePlan, new: Mapping[str, bytes], fs: LocalFilesystem
) -> Path:
    """Stage the new files, the plan and its seal, then commit: the journal's rename is the
    decision. Without a journal key (no private state directory) the journal is not sealed: the
    write is done and rolled back on an error all the same, but a kill leaves a journal the next
    run refuses to replay."""
    staging = stage_directory(parent, name)
    try:
        for path in plan.write:
            staged = staging / NEW_FILES / path
            fs.make_dirs(staged.parent)
            fs.write_bytes(staged, new[path])
        plan_bytes = plan.to_json().encode()
        fs.write_bytes(staging / PLAN_FILE, plan_bytes)
        journal = _journal_of(staging, name)
        key = journal_key(create=True)
        if key is not None:
            fs.write_bytes(
                staging / SEAL_FILE, seal_text(key, parent / name, journal.name, plan_bytes).encode()
            )
        fs.rename(staging, journal)
    except OSError as error:
        fs.remove_tree(staging)
        raise OutputNotWritable(f"cannot write {parent / name}: {error.strerror or error}") from error
    except BaseException:
        fs.remove_tree(staging)
        raise
    return journal


def write_in_place(
    *,
    parent: Path,
    name: str,
    scanned: ScannedTree,
    changes: TreeChanges,
    new: Mapping[str, bytes],
    fs: LocalFilesystem,
    kept: Collection[str] = (),
) -> None:
    """Change the tree `parent/name` (read as `scanned`) by `changes` through a journal, leaving
    the files `kept` as they are."""
    plan = plan_changes(changes, scanned.directories, new, kept)
    tree = _Tree(parent, name, fs)  # refuses a link before anything is staged
    try:
        journal = _write_journal(parent, name, plan, new, fs)
    except BaseException:
        tree.close()
        raise
    done: list[Step] = []
    try:
        with _opened(journal) as journal_fd:
            staged = _Staged(journal_fd, journal)
            try:
                _apply(tree, staged, plan, done, verify=False)
            finally:
                staged.close()
    except (OSError, UnsafeOutput) as error:
        try:
            _roll_back(tree, journal, done, changes.previous)  # every changed and removed file's bytes
        except OSError as undo:
            raise OutputNotWritable(
                f"cannot write {parent / name}: {getattr(error, 'strerror', None) or error}; putting "
                f"the previous files back failed too ({undo.strerror or undo}): the next render "
                f"finishes the write recorded in {journal}"
            ) from error
        _discard(journal, name, fs)
        if isinstance(error, UnsafeOutput):
            raise
        raise OutputNotWritable(f"cannot write {parent / name}: {error.strerror or error}") from error
    finally:
        tree.close()
    _discard(journal, name, fs)


def _owned_now(target: Path) -> tuple[ScannedTree, set[str]]:
    """The tree as it is, and the files in it btp-gitops owns: the manifests' (core.ownership), or
    every regular file of a tree written without manifests (CRDs, module resources)."""
    scanned = scan_tree(target)
    if MANIFEST_FILE in scanned.files:
        return scanned, owned_files(scanned.files, (), str(target))
    return scanned, set(scanned.files)


def _replay(parent: Path, name: str, journal: Path, fs: LocalFilesystem) -> None:
    """Finish the write a killed run committed to `journal` (roll forward), once it is proven
    ours, touching only files the ownership manifests own."""
    with _opened(journal) as journal_fd:
        plan = proven_plan(parent, name, journal, journal_fd)
        staged = _Staged(journal_fd, journal)
        try:
            scanned, owned = _owned_now(parent / name)
            pending = [path for path in plan.write if staged.locate(path) is not None]
            foreign = sorted(
                path
                for path in (*plan.remove, *pending)
                if path in scanned.others or (path in scanned.files and path not in owned)
            )
            if foreign:
                raise UnsafeOutput(
                    f"refusing to finish the write recorded in {journal}: {parent / name} holds "
                    f"{len(foreign)} file(s) it would replace or remove that btp-gitops does not own; "
                    "move them out of it and run again",
                    [
                        Problem(str(parent / name / path), f"not owned (not in {MANIFEST_FILE})")
                        for path in foreign
                    ],
                )
            tree = _Tree(parent, name, fs)
            try:
                _apply(tree, staged, plan, [], verify=True)
            except OSError as error:
                raise OutputNotWritable(
                    f"cannot finish the write an interrupted run recorded in {journal}: "
                    f"{error.strerror or error}"
                ) from error
            finally:
                tree.close()
        finally:
            staged.close()


def _journals(parent: Path, name: str) -> list[Path]:
    found = [p for p in leftovers(parent, name, "journal") if p.is_dir() and not p.is_symlink()]
    return sorted(found, key=lambda p: p.lstat().st_mtime_ns)


def recover_leftovers(parent: Path, name: str, fs: LocalFilesystem | None = None) -> None:
    """Finish or undo what a killed write left, then remove its leftovers; call it holding the lock.

    A journal (`.<name>.journal-*`) is a committed in-place write: once proven ours it is applied
    again, which completes it; one that cannot be proven stops the command, untouched. A staging
    directory is a write cut before its commit: removed, the tree was not touched.
    `.<name>.old-*` is what an older version's whole-tree swap left when cut between its two
    renames: put back when the tree is missing, else removed."""
    fs = fs or LocalFilesystem()
    target = parent / name
    journals = _journals(parent, name)
    for journal in journals:  # before anything is changed: an unprovable journal stops the run
        with _opened(journal) as journal_fd:
            proven_plan(parent, name, journal, journal_fd)
    old = [p for p in leftovers(parent, name, "old") if p.is_dir() and not p.is_symlink()]
    if old and not os.path.lexists(target):
        newest = max(old, key=lambda p: p.lstat().st_mtime_ns)
        try:
            fs.rename(newest, target)
        except OSError as error:
            raise OutputNotWritable(
                f"cannot restore {target} from {newest}: {error.strerror or error}"
            ) from error
    if target.is_dir() and not target.is_symlink():  # without the tree, a journal has nothing to finish
        for journal in journals:
            _replay(parent, name, journal, fs)
            _discard(journal, name, fs)
    for kind in ("staging", "old", "journal"):
        for path in leftovers(parent, name, kind):
            fs.remove_tree(path)


def read_finished_tree(parent: Path, name: str) -> dict[str, bytes]:
    """The files of `parent/name` as the write in progress or cut will leave them: a reader that
    takes the lock shared (`diff --against DIR`) may find a journal a killed run left, with a tree
    mixing old and new files; once the journal is proven ours it reads its plan and staged files
    on top (with the same checks a replay makes), and changes nothing (the next write replays the
    journal for real)."""
    target = parent / name
    files = read_tree(target)
    for journal in _journals(parent, name):
        with _opened(journal) as journal_fd:
            plan = proven_plan(parent, name, journal, journal_fd)
            staged = _Staged(journal_fd, journal)
            try:
                for path in plan.remove:
                    files.pop(path, None)
                for path, digest in zip(plan.write, plan.digests, strict=True):
                    data = staged.read(path, digest)
                    if data is None:
                        data = files.get(path)
                    if data is None:
                        raise OutputNotWritable(
                            f"cannot read {target}: an interrupted render left {journal}, and it cannot "
                            f"be read ({path}: neither staged nor in the tree); render again to finish "
                            "that write"
                        )
                    files[path] = data
            except OSError as error:
                raise OutputNotWritable(
                    f"cannot read {target}: an interrupted render left {journal}, and it cannot be read "
                    f"({error.strerror or error}); render again to finish that write"
                ) from error
            finally:
                staged.close()
    return dict(sorted(files.items()))
