"""What Git already knows about a rendered tree: the blob id of each file, so an unchanged file
costs a hash of bytes the render holds anyway, not a read.

A Git blob id is a hash of a file's bytes (`sha1("blob <size>\\0" + bytes)`, or SHA-256 in a
repository of that object format). When the render's bytes for a path hash to the id Git holds
for it, they are the bytes Git holds; the writer then leaves the file as it is, and `diff`
leaves it out of the comparison, without opening it. Anything else (no Git, an id that differs,
a file Git cannot vouch for) falls back to reading the file, as without Git. Only a match is
ever trusted, and only from these proofs:

- In a work tree (`work_tree_blobs`, for `render --out`): the id of a file Git *tracks*, whose
  index entry Git compares with the file as usual (`git diff-files` lists every tracked file
  whose stat data, i.e. size, inode, mtime and ctime, no longer matches the index, or whose
  timestamps are too close to the index's to tell: Git then compares the bytes). The index is
  Git's own state under `.git/`, written by Git from the bytes it hashed (a clone's checkout,
  `git add`); it is never committed, pushed or cloned, so no push can forge it. What would make it
  vouch for bytes the file does not hold is excluded: an entry marked assume-unchanged or
  skip-worktree (Git then skips the comparison), a file monitor (disabled for the query, as are
  weaker stat checks), a conflict, any mode but a regular file's, and every conversion between
  the blob and the file (`core.autocrlf`, and the attributes `text`, `eol`, `crlf`, `ident`,
  `filter` and `working-tree-encoding` wherever they are set: a `.gitattributes` is committed, so
  a push could set them). The query runs under the output's lock, right before the write.
- At a commit (`commit_blobs`, for `diff --against REF`, the tree found by `read_tree_at`
  without a checkout): the ids `git ls-tree` lists, which Git
  computed itself when the objects entered the repository (a fetch or clone hashes every object
  it receives). A blob read because it differs is bounded by the size its header gives before a
  byte of it is read, and its bytes are hashed again: they must be the id's.

The ownership manifests carry no digests: a manifest is committed like any file, so a digest in
it could be forged, and nothing is skipped on its word.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import itertools
import operator
import os
import re
import stat
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

# Settings that would let Git vouch for a file without comparing it with the index's stat data
# (a file monitor's word, assume-unchanged by default, a weaker stat check) are turned off for
# the query; no optional lock is taken, so the query never writes the index.
_TRUSTED_STAT = (
    "-c",
    "core.fsmonitor=false",
    "-c",
    "core.checkStat=default",
    "-c",
    "core.trustctime=true",
    "-c",
    "core.ignoreStat=false",
)
# Attributes that make the work tree's bytes differ from the blob's (checkout conversions).
_CONVERTING = frozenset({"text", "eol", "crlf", "ident", "filter", "working-tree-encoding"})
_REGULAR_MODES = frozenset({"100644", "100755"})
_GIT_TIMEOUT = 120.0


HASHES = {"sha1": hashlib.sha1, "sha256": hashlib.sha256}


def blob_id(data: bytes, object_format: str = "sha1") -> str:
    """The id Git gives a blob of `data` in a repository of `object_format` (sha1 or sha256)."""
    digest = HASHES[object_format](b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


_FILE_MODE = b"100644 "  # a regular file, not executable: what the writer leaves
_TREE_MODE = b"40000 "
_TreeNode = dict[str, "str | _TreeNode"]


def tree_id(files: Iterable[tuple[str, str]]) -> str | None:
    """The SHA-1 id Git gives a directory holding exactly these files (path inside it, SHA-1 blob
    id), each a regular file that is not executable; None when the paths cannot be one directory's
    (an empty or dot part, a file and a directory of one name, a path twice). Entries are ordered
    as Git orders them: by their bytes, a directory's name as if it ended in a slash."""
    listed = list(files)
    if any(len(oid) != 40 for _, oid in listed):
        return None
    if not any("/" in path for path, _ in listed):
        return flat_tree_id([path for path, _ in listed], "".join(oid for _, oid in listed))
    root: _TreeNode = {}
    for path, oid in listed:
        *directories, name = path.split("/")
        node = root
        for part in directories:
            child = node.setdefault(part, {})
            if not isinstance(child, dict) or part in ("", ".", ".."):
                return None
            node = child
        if name in ("", ".", "..") or name in node:
            return None
        node[name] = oid
    return _tree_of(root)


def flat_tree_id(names: list[str], ids: str) -> str | None:
    """`tree_id` of files none of which is in a subdirectory, their SHA-1 blob ids one string of
    40 hexadecimal digits each, in the order of `names` (as the render pack keeps a tenant's app
    laid out for Argo CD: 20,000 of them per `diff`); None as for `tree_id`."""
    distinct = set(names)
    if len(ids) != 40 * len(names) or len(distinct) != len(names) or not distinct.isdisjoint(_NOT_NAMES):
        return None
    try:
        raw = bytes.fromhex(ids)
    except ValueError:
        return None
    joined = "".join(names)
    if len(raw) != 20 * len(names) or "/" in joined or "\0" in joined:
        return None  # fromhex passes over spaces; no name in a tree holds a slash or a NUL
    entries = [
        _FILE_MODE + name.encode("utf-8", "surrogateescape") + b"\0" + raw[20 * i : 20 * i + 20]
        for i, name in enumerate(names)
    ]
    entries.sort()  # by name: each entry is the same mode, then its name and a NUL (in no name)
    body = b"".join(entries)
    return _tree_object_id(body)


def _tree_object_id(body: bytes) -> str:
    """The SHA-1 id of a tree object whose entries, sorted and joined, are `body`."""
    return hashlib.sha1(b"tree %d\0" % len(body) + body).hexdigest()


_NOT_NAMES = frozenset({"", ".", ".."})
_NOT_NAMES_BYTES = frozenset({b"", b".", b".."})


def flat_tree_ids(listings: Sequence[tuple[str, str]]) -> list[str | None]:
    """`flat_tree_id` of each directory of `listings`, given as its file names joined by NULs and
    their blob ids joined (as the render pack keeps a tenant's app): the names and ids of all of
    them decoded, checked and (in Git's order already, as the pack lists them) made into tree
    entries in a few passes over the whole, then hashed directory by directory (a `diff` of
    20,000 tenants asks for 20,000 at once)."""
    counts = [names.count("\0") + 1 if names else 0 for names, _ in listings]
    id_texts = [ids for _, ids in listings]
    encoded = "\0".join([names for names, _ in listings if names]).encode("utf-8", "surrogateescape")
    names = encoded.split(b"\0") if encoded else []
    try:
        raw = bytes.fromhex("".join(id_texts))
    except ValueError:
        raw = b""
    if (
        len(names) != sum(counts)
        or [len(ids) for ids in id_texts] != [40 * count for count in counts]  # each as many as its names
        or len(raw) != 20 * len(names)  # fromhex passes over whitespace
        or b"/" in encoded
        or not _NOT_NAMES_BYTES.isdisjoint(names)
        or not _each_in_gits_order(names, counts)
    ):
        # Not every one a flat directory of well-formed ids in Git's order (not a pack btp-gitops
        # writes): each is sorted, or refused, on its own.
        return [flat_tree_id(text.split("\0") if text else [], ids) for text, ids in listings]
    ends = list(itertools.accumulate(counts))
    ids = [raw[at : at + 20] for at in range(0, len(raw), 20)]  # as many as the names: counted above
    fields = zip(itertools.repeat(_FILE_MODE), names, itertools.repeat(b"\0"), ids)
    entries = b"".join(itertools.chain.from_iterable(fields))
    # Where each entry ends in `entries`: its mode, name, NUL and 20 bytes of id.
    sizes = map(operator.add, map(len, names), itertools.repeat(_ENTRY_BYTES))
    offsets = list(itertools.accumulate(sizes, initial=0))
    found: list[str | None] = []
    start = 0
    for end in ends:
        found.append(_tree_object_id(entries[offsets[start] : offsets[end]]))
        start = end
    return found


_ENTRY_BYTES = len(_FILE_MODE) + 1 + 20  # an entry of a flat tree, its name aside


def _each_in_gits_order(names: list[bytes], counts: list[int]) -> bool:
    """Whether the names of each directory, `counts[i]` of them in turn, ascend strictly (Git's
    order, no name twice); a directory's last name is followed by the next one's first, which
    may come before it."""
    ascending = list(map(operator.lt, names, itertools.islice(names, 1, None)))
    for end in itertools.accumulate(counts):
        if 0 < end < len(names):
            ascending[end - 1] = True
    return all(ascending)


def _tree_of(node: _TreeNode) -> str | None:
    entries: list[tuple[bytes, bytes]] = []
    for name, value in node.items():
        encoded = name.encode("utf-8", "surrogateescape")
        if isinstance(value, dict):
            inner = _tree_of(value)
            if inner is None:
                return None
            entries.append((encoded + b"/", _TREE_MODE + encoded + b"\0" + bytes.fromhex(inner)))
        else:
            try:
                raw = bytes.fromhex(value)
            except ValueError:
                return None
            if len(raw) != 20:
                return None
            entries.append((encoded, _FILE_MODE + encoded + b"\0" + raw))
    entries.sort()
    body = b"".join(entry for _, entry in entries)
    return _tree_object_id(body)


def _git_env() -> dict[str, str]:
    return {**os.environ, "GIT_LITERAL_PATHSPECS": "1", "GIT_OPTIONAL_LOCKS": "0"}


def git_output(directory: Path, *args: str, stdin: bytes | None = None) -> bytes | None:
    """The output of one Git command run in `directory`; None when Git is missing or fails.

    The output goes to an unnamed temporary file, read in one go when Git is done: through a
    pipe, a listing of 80,000 files arrives in thousands of small reads, each after a poll. Git
    never reads this process's standard input (behind `helm --post-renderer`, Helm's stream)."""
    try:
        with tempfile.TemporaryFile() as output:
            process = subprocess.Popen(
                ["git", *_TRUSTED_STAT, "-C", os.fspath(directory), *args],
                stdin=subprocess.DEVNULL if stdin is None else subprocess.PIPE,
                stdout=output,
                stderr=subprocess.DEVNULL,
                env=_git_env(),
            )
            # A timer kills it at the deadline: a wait with a timeout would poll, sleeping up to
            # 50 ms past the command's end.
            timer = threading.Timer(_GIT_TIMEOUT, process.kill)
            timer.daemon = True
            timer.start()
            try:
                process.communicate(stdin)
            finally:
                timer.cancel()
            if process.returncode != 0:
                return None
            output.seek(0)
            return output.read()
    except (OSError, subprocess.SubprocessError):
        return None


class _Running:
    """Git commands started at once, their outputs collected when asked for: the queries of a
    scan run while the tree is walked. A pipe `(a, b)` feeds a's output to b (`ls-files |
    check-attr`); each output goes to an unnamed temporary file, so no pipe can fill and stall."""

    def __init__(self, directory: Path, commands: list[tuple[tuple[str, ...], ...]]) -> None:
        self._runs: list[tuple[list[subprocess.Popen[bytes]], IO[bytes]]] = []
        try:
            for pipe in commands:
                output = tempfile.TemporaryFile()  # noqa: SIM115 (closed in outputs())
                processes: list[subprocess.Popen[bytes]] = []
                self._runs.append((processes, output))
                for index, args in enumerate(pipe):
                    feed = processes[-1].stdout if processes else subprocess.DEVNULL
                    last = index == len(pipe) - 1
                    processes.append(
                        subprocess.Popen(
                            ["git", *_TRUSTED_STAT, "-C", os.fspath(directory), *args],
                            stdin=feed,
                            stdout=output if last else subprocess.PIPE,
                            stderr=subprocess.DEVNULL,
                            env=_git_env(),
                        )
                    )
                    if processes[:-1] and processes[-2].stdout is not None:
                        processes[-2].stdout.close()  # the next command holds the pipe now
        except OSError:
            self._stop()
            self._runs = []

    def _stop(self) -> None:
        for processes, _ in self._runs:
            for process in processes:
                with contextlib.suppress(OSError):
                    process.kill()

    def outputs(self, count: int) -> list[bytes | None]:
        """Each pipe's output; None for one a command of which failed (every one when Git could
        not be started, or ran over the timeout)."""
        if not self._runs:
            return [None] * count
        # A timer kills what still runs at the deadline: waiting with a timeout instead would poll,
        # sleeping up to 50 ms past each command's end.
        timer = threading.Timer(_GIT_TIMEOUT, self._stop)
        timer.daemon = True
        timer.start()
        found: list[bytes | None] = []
        try:
            for processes, output in self._runs:
                codes = [process.wait() for process in processes]
                output.seek(0)
                found.append(output.read() if all(code == 0 for code in codes) else None)
        finally:
            timer.cancel()
            for _, output in self._runs:
                output.close()
        return found


@dataclass(frozen=True, slots=True)
class VouchedBlobs:
    """Files of a directory whose bytes Git vouches for: relative path -> blob id."""

    blobs: dict[str, str]
    object_format: str = "sha1"
    # Git's index file and its identity (inode, size, mtime, ctime) while it was listed, when it
    # did not change meanwhile: Git replaces the index by a rename, so the same identity later is
    # the same index, and a second query needs only the work tree compared again.
    index: tuple[str, tuple[int, int, int, int]] | None = None

    def holds(self, path: str, data: bytes) -> bool:
        """Whether the file at `path` holds exactly `data`, on Git's word (see the module
        docstring); False when Git does not vouch for it (read it to know)."""
        known = self.blobs.get(path)
        return known is not None and known == blob_id(data, self.object_format)


def work_tree_blobs(directory: Path, earlier: VouchedBlobs | None = None) -> VouchedBlobs | None:
    """The files under `directory` that Git tracks and vouches for, with their blob ids; None when
    `directory` is in no Git work tree (or Git is missing): every file is then read.

    `earlier`: what this asked Git before, under the same lock (a render asks before rendering
    and again before writing): the index and the work tree are compared again, and a file is
    vouched for when it still is, with the same blob id (the attributes and the configuration
    read then hold for the files they let through)."""
    return start_work_tree_blobs(directory, earlier)()


_LISTED = ("ls-files", "-z", "-s", "-v", "--", ".")
_DIRTY = ("diff-files", "-z", "--name-only", "--relative", "--", ".")


def start_work_tree_blobs(
    directory: Path, earlier: VouchedBlobs | None = None
) -> Callable[[], VouchedBlobs | None]:
    """`work_tree_blobs`, its Git queries started now and run side by side (a scan walks the
    tree meanwhile); the call returned waits for them and gives the answer."""
    if not directory.is_dir() or directory.is_symlink():
        return lambda: None
    if earlier is not None:
        if earlier.index is not None and _index_identity(earlier.index[0]) == earlier.index[1]:
            dirty_only = _Running(directory, [(_DIRTY,)])
            return lambda: _still_clean(earlier, *dirty_only.outputs(1))
        queries = _Running(directory, [(_LISTED,), (_DIRTY,)])
        return lambda: _still_vouched(earlier, *queries.outputs(2))
    where = git_output(
        directory, "rev-parse", "--is-inside-work-tree", "--show-object-format", "--git-path", "index"
    )
    lines = where.decode("utf-8", errors="replace").split("\n") if where is not None else []
    if len(lines) < 3 or lines[0] != "true" or lines[1] not in ("sha1", "sha256") or not lines[2]:
        return lambda: None
    index_file = os.path.join(directory, lines[2])  # relative to `directory`, or absolute
    before = _index_identity(index_file)
    running = _Running(
        directory,
        [
            (("config", "--get", "core.autocrlf"),),
            (_LISTED,),
            (_DIRTY,),
            (("ls-files", "-z", "--", "."), ("check-attr", "-a", "-z", "--stdin")),
        ],
    )

    def answer() -> VouchedBlobs | None:
        vouched = _vouched(lines[1], *running.outputs(4))
        if vouched is None or before is None or _index_identity(index_file) != before:
            return vouched
        return dataclasses.replace(vouched, index=(index_file, before))

    return answer


def _index_identity(path: str) -> tuple[int, int, int, int] | None:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _vouched(
    object_format: str,
    autocrlf: bytes | None,
    listed: bytes | None,
    dirty: bytes | None,
    attributes: bytes | None,
) -> VouchedBlobs | None:
    # `git config --get` fails when the setting is not there: no conversion then.
    if autocrlf is not None and autocrlf.strip().lower() not in (b"false", b"no", b"off", b"0", b"input"):
        return None  # Git converts line ends on checkout: no file holds its blob's bytes for sure
    if listed is None or dirty is None:
        return None
    blobs = _clean_entries(os.fsdecode(listed), object_format)
    if blobs is None:
        return None
    for path in os.fsdecode(dirty).split("\0"):
        blobs.pop(path, None)
    if blobs:
        for path in _converted(attributes, blobs):
            blobs.pop(path, None)
    return VouchedBlobs(blobs, object_format)


def _still_clean(earlier: VouchedBlobs, dirty: bytes | None) -> VouchedBlobs | None:
    """What `earlier` vouched for and the work tree still matches: the index is the same one."""
    if dirty is None:
        return None
    blobs = dict(earlier.blobs)
    for path in os.fsdecode(dirty).split("\0"):
        blobs.pop(path, None)
    return VouchedBlobs(blobs, earlier.object_format, earlier.index)


# One entry of `git ls-files -z -s -v`: `<tag> <mode> <id> <stage>\t<path>\0`.
_ENTRIES = {
    width: re.compile(f"(?:[A-Za-z] [0-7]{{6}} [0-9a-f]{{{width}}} [0-3]\t[^\0]+\0)*") for width in (40, 64)
}
# Those Git can vouch for: tag H (neither assume-unchanged, h, nor skip-worktree, S), a regular
# file's mode, stage 0; and those of a path with a conflict (stages 1 to 3). Each match starts
# where an entry starts (at the start or after a NUL, which no path holds): a path may hold the
# text of an entry, and must never be read as one.
_CLEAN = {
    width: re.compile(f"(?<![^\\0])H 100(?:644|755) ([0-9a-f]{{{width}}}) 0\t([^\0]+)\0")
    for width in (40, 64)
}
_CONFLICTED = {
    width: re.compile(f"(?<![^\\0])[A-Za-z] [0-7]{{6}} [0-9a-f]{{{width}}} [1-3]\t([^\0]+)\0")
    for width in (40, 64)
}


def _clean_entries(listed: str, object_format: str) -> dict[str, str] | None:
    """Path -> blob id of the entries of `git ls-files -z -s -v` Git can vouch for: tag H (neither
    assume-unchanged, h, nor skip-worktree, S), a regular file's mode, stage 0 (a path with a
    conflict has entries of stages 1 to 3, and none is taken). None when `listed` is not such a
    listing."""
    width = 40 if object_format == "sha1" else 64
    found = _CLEAN[width].findall(listed)
    # Each match is one whole entry (it starts where one starts and ends at its NUL): as many as
    # there are NULs, ending the listing, and every entry is one Git can vouch for (the usual
    # case, with no second pass). Else every entry of the listing's form, checked in one match;
    # entries are then picked by patterns that match nothing across an entry's end.
    if len(found) == listed.count("\0") and listed.endswith("\0"):
        return {path: oid for oid, path in found}
    if _ENTRIES[width].fullmatch(listed) is None:
        return None  # not the output this reads: trust none of it
    blobs = {path: oid for oid, path in found}
    # A stage other than 0 is spelt " 1\t" to " 3\t": with none of those anywhere, there is none.
    if any(f" {stage}\t" in listed for stage in "123"):
        for path in _CONFLICTED[width].findall(listed):
            blobs.pop(path, None)
    return blobs


def _still_vouched(earlier: VouchedBlobs, listed: bytes | None, dirty: bytes | None) -> VouchedBlobs | None:
    blobs = _clean_entries(os.fsdecode(listed), earlier.object_format) if listed is not None else None
    if blobs is None or dirty is None:
        return None
    for path in os.fsdecode(dirty).split("\0"):
        blobs.pop(path, None)
    known = earlier.blobs
    return VouchedBlobs(
        {path: oid for path, oid in blobs.items() if known.get(path) == oid}, earlier.object_format
    )


def _converted(attributes: bytes | None, paths: Mapping[str, str]) -> set[str]:
    """The paths a checkout converts (or may: an attribute set to anything), from `git
    check-attr -a -z` of the tracked files; every path when the attributes could not be read."""
    if attributes is None:
        return set(paths)
    fields = os.fsdecode(attributes).split("\0")
    converted = set()
    for index in range(0, len(fields) - 2, 3):
        path, attribute, value = fields[index : index + 3]
        if attribute in _CONVERTING and value != "unset":
            converted.add(path)
    return converted
