"""Which files of a cluster directory btp-gitops owns, and which renders would empty it.

A render replaces `clusters/<cluster>/` as a whole, so it must know what in there is its own.
The writer keeps an ownership manifest, `clusters/<cluster>/.btp-gitops-files`: the sorted paths
of every file the last render wrote, one per line. Anything else found in the directory was put
there by someone else, and the render refuses to run until it is moved away (it is never deleted
silently). The manifest has no YAML or JSON extension, so neither kubectl, kustomize, Argo CD's
directory apps nor Flux's generated kustomizations take it for a manifest; `diff` leaves it out.

The manifest is split along the tenants' shard directories (core.layout), so that a commit
changing one tenant rewrites small files, not one listing every file: a shard directory
`tenants/<group>/<shard>/` has a manifest of its own listing the files below it, its group's
`tenants/<group>/.btp-gitops-files` lists the group's shard manifests, and the cluster
directory's lists the other files and the groups' manifests. Every manifest lists paths relative
to its own directory; one is read only when the manifest above it lists it, so a manifest file
nobody listed is foreign like any other file. A directory written before the split (one manifest
listing every path) is read the same way and written split by the next render.

A cluster directory written before the manifest existed is migrated once: a file is ours when a
`kustomization.yaml` in its directory has exactly the shape btp-gitops writes (apiVersion, kind,
and a `resources` list of plain names, nothing else) and lists it, or when it is such a
kustomization itself, or a record the domains document (`.kyma-modules.json`). A file a person
added beside the rendered ones is listed by no such kustomization, so it is found and refused.

A manifest is read back from a repository others may push to, so it is input: it is parsed under
limits (`MAX_MANIFEST_ENTRIES` entries, each a plain relative path of at most `MAX_ENTRY_CHARS`
characters, no `.` or `..` component, no empty one, no control character), and one breaking them
stops the command naming the manifest and the line. Listed paths are matched against the regular
files the scan found, never opened by themselves: a manifest cannot make btp-gitops read or
remove anything but a regular file inside the cluster directory.

The removal guard: a render that would leave a populated cluster directory without most of its
objects is more likely a wrong path or an empty glob than an intent, and with `--commit` Argo CD
or Flux would prune everything. See `removal_refusal` for the exact rule.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import re
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from btp_gitops.generator.core import source_contents
from btp_gitops.generator.core.errors import Problem, UnsafeOutput
from btp_gitops.generator.core.layout import TENANTS_DIR, app_path

# Named where reading a source directory needs it too (a render's output is no source), without
# this module's imports.
MANIFEST_FILE = source_contents.MANIFEST_FILE

_MANIFEST_HEAD = (
    "# Written by `btp-gitops render`: the files of this cluster directory it owns, one per line.\n"
    "# The next render replaces exactly these; it refuses to run over any other file. Do not edit.\n"
)
# Written into the manifests of cluster directories whose CAP tenants sit in shard directories
# (core.layout.app_directory). A directory rendered before the sharding has no such line and keeps
# its flat layout until a render with --migrate-layout: moving every tenant at once is only safe
# once the GitOps controller knows the new directories (docs/gitops/index.md).
SHARDED_LAYOUT_LINE = "# Layout: tenant apps in shard directories (tenants/<group>/<shard>/<app>).\n"
_KUSTOMIZATION = "kustomization.yaml"
_KUSTOMIZATION_HEAD = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"


_PART_HEAD = (
    "# Written by `btp-gitops render`: the files below this directory it owns, one per line, relative to\n"
    "# it (a manifest listed here lists those below its own directory). Do not edit.\n"
)


def is_manifest(path: str) -> bool:
    """Whether `path` (relative to the cluster directory) is an ownership manifest or one of its parts."""
    return path.rpartition("/")[2] == MANIFEST_FILE


def manifest_files(paths: Iterable[str], *, sharded: bool = True) -> dict[str, str]:
    """The ownership manifests for a cluster directory holding `paths` (manifests left out):
    path -> text, the cluster directory's at `MANIFEST_FILE`, one per shard and group directory
    holding tenants' files (see the module docstring)."""
    # In order, the paths below one shard directory are one run, found by bisection and listed
    # with a few bulk operations instead of path by path (a cluster directory of 20,000 tenants
    # holds 80,000 files in 256 shards). A render's files come sorted: the sort only checks that.
    ordered = sorted(paths if isinstance(paths, (Mapping, AbstractSet)) else dict.fromkeys(paths))
    start = bisect.bisect_left(ordered, f"{TENANTS_DIR}/")
    end = bisect.bisect_left(ordered, f"{TENANTS_DIR}0", start)  # "0" follows "/": past "tenants/..."
    top = ordered[:start] + ordered[end:]
    shards: dict[str, list[str]] = {}  # group directory -> its shards' manifests, relative to it
    texts: dict[str, str] = {}
    at = start
    while at < end:
        where = app_path(ordered[at])
        if not where.grouped:  # in tenants/ but in no app of a group: the cluster directory's
            top.append(ordered[at])
            at += 1
            continue
        shard = where.directory.rpartition("/")[0]
        below = bisect.bisect_left(ordered, f"{shard}0", at, end)
        body, loose = _shard_listing(ordered[at:below], len(shard) + 1)
        top += loose
        if body:
            texts[f"{shard}/{MANIFEST_FILE}"] = f"{_PART_HEAD}{body}\n"
            group, _, name = shard.rpartition("/")
            shards.setdefault(group, []).append(f"{name}/{MANIFEST_FILE}")
        at = below
    for group, manifests in shards.items():
        texts[f"{group}/{MANIFEST_FILE}"] = _PART_HEAD + "".join(f"{name}\n" for name in sorted(manifests))
    if MANIFEST_FILE in "\n".join(top):
        top = [path for path in top if not is_manifest(path)]
    top += [f"{group}/{MANIFEST_FILE}" for group in shards]
    top.sort()
    head = _MANIFEST_HEAD + (SHARDED_LAYOUT_LINE if sharded else "")
    texts[MANIFEST_FILE] = head + "\n".join(top) + "\n" if top else head
    return dict(sorted(texts.items()))


def _shard_listing(below: list[str], cut: int) -> tuple[str, list[str]]:
    """The lines of a shard directory's manifest, joined, for the sorted paths `below` it (each
    starting with the shard directory and a slash: `cut` characters), and those of them it does
    not list: a file directly in the shard directory (the cluster directory's manifest lists it);
    manifests are listed by none."""
    lines = [path[cut:] for path in below]
    body = "\n".join(lines)
    if MANIFEST_FILE not in body and all(map(operator.contains, lines, itertools.repeat("/"))):
        return body, []  # the usual case: every path in an app directory
    listed = [line for line in lines if "/" in line and not is_manifest(line)]
    loose = [
        path for path, line in zip(below, lines, strict=True) if "/" not in line and not is_manifest(line)
    ]
    return "\n".join(listed), loose


def shards_tenants(manifest: str | None, previous: Collection[str], migrate: bool) -> bool:
    """Whether a render puts tenant apps into shard directories: always in a new or empty cluster
    directory (`previous`: the paths it holds), in one already sharded (its manifest says so, or
    it holds a shard directory), or when asked to migrate (`--migrate-layout`); a populated
    directory rendered before the sharding keeps its flat layout."""
    if migrate or not previous or any(app_path(path).grouped for path in previous):
        return True
    if manifest is None:
        return False
    head = itertools.takewhile(lambda line: line.startswith("#"), manifest.splitlines())
    return SHARDED_LAYOUT_LINE.rstrip("\n") in head


MAX_MANIFEST_ENTRIES = 1_000_000  # a cluster directory of 20,000 tenants lists about 80,000 files
MAX_ENTRY_CHARS = 4096  # PATH_MAX
_NAME_CHARS = 255  # NAME_MAX


# What an entry that passes every rule of `_entry_problem` looks like, for one match per line: at
# most 4096 characters of names of 1 to 255 characters, no control character, none `.` or `..`.
_CONTROL = "\\x00-\\x1f\\x7f-\\x9f"
_NAME = f"(?!\\.\\.?(?:/|\\Z))[^/{_CONTROL}]{{1,{_NAME_CHARS}}}"
_PLAIN_ENTRY = re.compile(f"(?=.{{1,{MAX_ENTRY_CHARS}}}\\Z){_NAME}(?:/{_NAME})*", re.DOTALL)


def _entry_problem(entry: str) -> str | None:
    """Why `entry` is no path a manifest lists; None when it is one."""
    if len(entry) > MAX_ENTRY_CHARS:
        return f"longer than {MAX_ENTRY_CHARS} characters"
    if any(ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0 for char in entry):
        return "holds a control character"
    if entry.startswith("/"):
        return "an absolute path"
    parts = entry.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "not a plain relative path (an empty, . or .. component)"
    if any(len(part) > _NAME_CHARS for part in parts):
        return f"a name longer than {_NAME_CHARS} characters"
    return None


def parse_manifest(text: str, where: str = MANIFEST_FILE) -> set[str]:
    """The paths a manifest lists; UnsafeOutput naming `where` and the line when it lists one that
    is no plain relative path inside its directory, or more than `MAX_MANIFEST_ENTRIES`."""
    common = _common_form_lines(text)
    if common is None:
        return _parse_lines(text, where)
    lines, unlisted = common
    entries = set(lines)
    entries -= unlisted
    return entries


# The checks of `_common_form_lines`, on the text framed by line feeds ("\n" + text + "\n"): a
# line that is absolute, ".", "..", or starts with "./" or "../"; a component after a slash that
# is empty, "." or "..". The bytes: printable ASCII and the line feed.
_BAD_LINE_START = re.compile(r"\n(?:/|\.\.?[/\n])")
_BAD_AFTER_SLASH = re.compile(r"/(?:\.\.?)?[/\n]")
_COMMENT_LINE = re.compile(r"\n#[^\n]*")
_COMMON_BYTES = bytes([0x0A, *range(0x20, 0x7F)])


def _common_form_lines(text: str, prefix: str = "") -> tuple[list[str], set[str]] | None:
    """The lines of a manifest whose lines are all of the common form, shown by a few checks over
    the whole text, each with `prefix` before it, and those of them that list nothing (blank lines
    and comments); None when the checks cannot show it, and `_parse_lines` decides line by line.

    The common form: printable ASCII and line feeds only (no control character, and no other line
    break `str.splitlines` knows), lines of at most `_NAME_CHARS` characters (so no name or entry is
    too long), no line starting or component being what `_entry_problem` refuses, and at most
    `MAX_MANIFEST_ENTRIES` lines. Such a text holds no line `_parse_lines` refuses, and its lines
    are the ones `str.splitlines` finds (it only adds an empty last one): the same entries. The
    checks cost a few passes at C speed over the text instead of one regular expression per line
    (a manifest of a flat cluster directory of 20,000 tenants lists 80,000 paths). A comment may
    fail them (a URL's "//"): that manifest is read line by line, with the same result."""
    if not text.isascii() or text.encode("ascii").translate(None, _COMMON_BYTES):
        return None
    framed = f"\n{text}\n"
    if _BAD_LINE_START.search(framed) or _BAD_AFTER_SLASH.search(framed):
        return None
    # The prefix goes in before the split: one new string per line, not two.
    lines = (prefix + text.replace("\n", "\n" + prefix) if prefix else text).split("\n")
    if len(lines) > MAX_MANIFEST_ENTRIES or max(map(len, lines)) > len(prefix) + _NAME_CHARS:
        return None
    return lines, {prefix, *(prefix + comment[1:] for comment in _COMMENT_LINE.findall(framed))}


def _parse_lines(text: str, where: str) -> set[str]:
    """`parse_manifest` line by line: each line checked by one match, and the rule it breaks
    spelled out (`_entry_problem`) for the first line refused."""
    entries: set[str] = set()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line or line.startswith("#"):
            continue
        problem = None if _PLAIN_ENTRY.fullmatch(line) else _entry_problem(line)
        if problem is None and len(entries) >= MAX_MANIFEST_ENTRIES:
            problem = f"more than {MAX_MANIFEST_ENTRIES:,} entries"
        if problem is not None:
            shown = line if len(line) <= 80 else line[:77] + "..."
            raise UnsafeOutput(
                f"refusing to read the ownership manifest {where}: it is not one btp-gitops wrote "
                "(it decides which files a render removes); render into a cluster directory whose "
                f"manifests are as btp-gitops wrote them, or remove {where} (see docs/commands/render.md)",
                [Problem(f"{where}:{number}", f"{problem}: {shown!r}")],
            )
        entries.add(line)
    return entries


def _listed_resources(text: str) -> list[str] | None:
    """The resources of a kustomization.yaml as btp-gitops writes it; None for any other file."""
    if not text.startswith(_KUSTOMIZATION_HEAD):
        return None
    names = []
    for line in text[len(_KUSTOMIZATION_HEAD) :].splitlines():
        if not line.startswith("- "):
            return None
        name = line[2:]
        if len(name) >= 2 and name[0] == name[-1] == "'":
            name = name[1:-1].replace("''", "'")
        if not name or "/" in name or name in (".", ".."):
            return None
        names.append(name)
    return names


def owned_without_manifest(files: Mapping[str, bytes], records: Collection[str]) -> set[str]:
    """The files an older btp-gitops (no manifest yet) wrote, recognised by their kustomizations."""
    owned = {path for path in files if path in records}
    for path, data in files.items():
        directory, _, name = path.rpartition("/")
        if name != _KUSTOMIZATION:
            continue
        try:
            listed = _listed_resources(data.decode("utf-8"))
        except UnicodeDecodeError:
            listed = None
        if listed is None:
            continue
        owned.add(path)
        owned.update(f"{directory}/{entry}" if directory else entry for entry in listed)
    return owned & set(files)


def owned_files(files: Mapping[str, bytes], records: Collection[str], where: str = "") -> set[str]:
    """The files of a cluster directory btp-gitops wrote: the manifests', or the migration rule's.

    The cluster directory's manifest is read, then every manifest it lists in a subdirectory, and
    so on down; a manifest file no manifest above it lists is read by none and so not owned.
    `where`: the cluster directory, as errors name it (parse_manifest)."""
    if MANIFEST_FILE not in files:
        return owned_without_manifest(files, records)
    owned: set[str] = set()
    pending = [MANIFEST_FILE]
    ordered: list[str] | None = None  # every file's path, sorted, once a shard's manifest is read
    while pending:
        manifest = pending.pop()
        owned.add(manifest)
        directory = manifest.rpartition("/")[0]
        shown = f"{where.rstrip('/')}/{manifest}" if where else manifest
        text = files[manifest].decode("utf-8", errors="replace")
        prefix = f"{directory}/" if directory else ""
        if directory and MANIFEST_FILE not in text:
            ordered = sorted(files) if ordered is None else ordered
            run = _listed_run(text, prefix, ordered)
            if run is not None:
                owned.update(run)
                continue
        common = _common_form_lines(text, prefix)
        listed: Iterable[str]
        if common is None:
            listed = [prefix + entry for entry in _parse_lines(text, shown)]
        else:  # in the manifest's order: the files are looked up in about the order they were found
            lines, unlisted = common
            listed = itertools.filterfalse(unlisted.__contains__, lines)
        found = filter(files.__contains__, listed)  # listed paths are matched against real ones only
        if MANIFEST_FILE not in text:  # lists no manifest (a shard's): every file found is owned
            owned.update(found)
            continue
        # A manifest of a directory below this one's is read next; this one itself (listed by a
        # plain name) is owned already.
        files_found = set(found)
        manifests = {path for path in files_found if is_manifest(path)}
        owned.update(files_found - manifests)
        pending.extend(manifests - owned)
    return owned


def _listed_run(text: str, prefix: str, ordered: list[str]) -> list[str] | None:
    """The files below `prefix` but its manifest (`ordered`: every file's path, sorted) when that
    manifest, `text`, is as a render writes it and lists exactly them, in order; None otherwise.

    The manifest's text is then compared with the files' joined paths at once, instead of each
    listed path being looked up (a shard directory of 20,000 tenants' holds 300 files), and
    checked as `_common_form_lines` checks a manifest: its lines are those paths."""
    if not text.startswith(_PART_HEAD) or not text.endswith("\n") or not text.isascii():
        return None
    body = text[len(_PART_HEAD) : -1]
    start = bisect.bisect_left(ordered, prefix)
    end = bisect.bisect_left(ordered, f"{prefix[:-1]}0", start)  # "0" follows "/": past the directory
    itself = bisect.bisect_left(ordered, prefix + MANIFEST_FILE, start, end)
    run = ordered[start:itself] + ordered[itself + 1 : end]  # (the manifest is there: it is being read)
    joined = "\n".join(run)
    framed = f"\n{body}\n"
    if (
        not run
        or joined.count("\n") != len(run) - 1  # a line feed in a file's name: read line by line
        or joined != prefix + body.replace("\n", "\n" + prefix)
        or "\n#" in framed  # a comment among the paths, or
        or "\n\n" in framed  # a blank line: lists nothing
        or len(run) > MAX_MANIFEST_ENTRIES
        or max(map(len, run)) > len(prefix) + _NAME_CHARS
        or text.encode("ascii").translate(None, _COMMON_BYTES)
        or _BAD_LINE_START.search(framed)
        or _BAD_AFTER_SLASH.search(framed)
    ):
        return None
    return run


def object_counts(paths: Iterable[str]) -> dict[str, int]:
    """App -> how many object files it has: files in an app directory, kustomizations left out.
    Apps are read from the paths of either layout (core.layout.app_path), so moving a tenant into
    its shard directory keeps its objects."""
    # A path's app depends on its directory only (core.layout.app_path: a tenant's app is the
    # fourth part of a path of five or more): the files are counted per directory, and each
    # directory read once (a cluster directory of 20,000 tenants holds 80,000 files).
    in_directory = Counter(path.rpartition("/")[0] for path in paths if not path.endswith(_IN_KUSTOMIZATION))
    counts: dict[str, int] = {}
    for directory, files in in_directory.items():
        app = _directory_app(directory)
        if app:
            counts[app] = counts.get(app, 0) + files
    return counts


_IN_KUSTOMIZATION = f"/{_KUSTOMIZATION}"  # (one at the top is in no app)


def _directory_app(directory: str) -> str:
    """The app whose objects the files of `directory` hold; "" for the top and dot directories."""
    app = app_path(f"{directory}/-").app if directory else ""
    return "" if app.startswith(".") else app


def _object_apps(paths: Iterable[str]) -> Iterator[str]:
    """The app of each object file among `paths`, in their order, as `object_counts` counts them."""
    app_of: dict[str, str] = {}
    for path in paths:
        if path.endswith(_IN_KUSTOMIZATION):
            continue
        directory = path.rpartition("/")[0]
        app = app_of.get(directory)
        if app is None:
            app = app_of[directory] = _directory_app(directory)
        if app:
            yield app


@dataclass(frozen=True, slots=True)
class Removal:
    """What a render removes from a populated cluster directory: objects, and where from."""

    previous_objects: int
    removed_objects: int
    removed_apps: tuple[str, ...]  # apps that go as a whole
    shrunk_apps: tuple[tuple[str, int, int], ...]  # (app, objects it loses, objects it held) of kept apps

    def describe(self) -> str:
        where = []
        if self.removed_apps:
            where.append(f"{len(self.removed_apps)} app(s) as a whole: {_shown(self.removed_apps)}")
        if self.shrunk_apps:
            shrunk = [f"{app} {lost} of {held}" for app, lost, held in self.shrunk_apps]
            where.append(f"from {len(self.shrunk_apps)} app(s) that stay: {_shown(shrunk)}")
        return (
            f"it would remove {self.removed_objects} of the {self.previous_objects} objects there "
            f"({'; '.join(where)})"
        )


def _shown(names: tuple[str, ...] | list[str]) -> str:
    return ", ".join(names[:5]) + (" ..." if len(names) > 5 else "")


def removal_refusal(previous: Collection[str], new: Collection[str]) -> Removal | None:
    """The removal a render must not do without `--allow-empty`, or None.

    Refused when the cluster directory holds at least one object and the new render would remove
    more than half of them, counted in every app: an app that goes loses all its objects, an app
    that stays loses as many as it holds fewer than before, so most objects removed from every
    app while each keeps one is refused like removing the apps. Counting per app (not files)
    keeps layout changes such as `--target flux` out of it: an app keeps its objects wherever its
    files move; an object replaced by another in the same app is not a removal.

    Most renders remove no object file, or a few: counting every app of a cluster directory of
    80,000 files is then spared by a bound. An app holds fewer objects than before by at most
    the number of its object files that are gone (`previous` less `new`: a file of one app is
    in no other), so the objects removed are at most the object files gone, and a directory
    holding at least twice as many objects cannot be refused. Otherwise, or when `previous`
    names a path twice, every app is counted (`counted_removal`).
    """
    previous_paths = set(previous)
    if len(previous_paths) == len(previous):
        gone = previous_paths.difference(new)
        if 2 * len(gone) <= len(previous_paths):  # else the bound is of no use: count
            needed = 2 * sum(1 for _ in _object_apps(gone))
            # At least `needed` objects there: read until as many are found, not every path.
            if needed == 0 or next(itertools.islice(_object_apps(previous_paths), needed - 1, None), None):
                return None
    return counted_removal(previous, new)


def counted_removal(previous: Iterable[str], new: Iterable[str]) -> Removal | None:
    """`removal_refusal` counted in every app, as its rule says: what the bound there stands in for."""
    before = object_counts(previous)
    after = object_counts(new)
    total = sum(before.values())
    if total == 0:
        return None
    removed = tuple(sorted(app for app in before if app not in after))
    shrunk = tuple(
        (app, held - after[app], held) for app, held in sorted(before.items()) if after.get(app, held) < held
    )
    removed_objects = sum(before[app] for app in removed) + sum(lost for _, lost, _ in shrunk)
    if 2 * removed_objects > total:
        return Removal(total, removed_objects, removed, shrunk)
    return None
