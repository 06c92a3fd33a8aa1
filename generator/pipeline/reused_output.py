"""The cluster directory's files, and the credential guard for the apps a render takes from the
render pack, on what is written.

`lay_out_cluster` puts every app's files in its directory in one pass, noting for a reused app's
files the blob id the pack gives and whether the render writes or shows them: 80,000 files in a
warm render, each looked at once.

An app reused from the pack (`cached_sources.ReusedApp`) arrives as files, not objects: decoding
and checking its objects on every render would cost what the pack saves. The pack is untrusted
input all the same (whoever can write the cache directory can write it, checksum fixed up), so
the files it hands the layout pass the same guard as a fresh app's, checked on their text:

- its names and paths were checked when the pack was read (io.render_pack: a pack failing them
  is not used), and each kustomization.yaml (the one the layout writes for the files beside it)
  when its texts were first decoded, as the layout asked for them (io.packed_app: one failing is
  an error naming the pack and the app);
- every byte of their files that the render writes or prints is searched for private keys, in
  one pass over all of them (joined by a NUL, which no key's text crosses), and file by file only
  when that pass finds one; a file that is neither written nor shown is not searched again (with
  `render --out`, one the cluster directory already holds byte for byte, which the writer leaves
  as it is; with `diff`, one whose text is the compared tree's): a warm render searches what
  changed, not every tenant's files;
- every text that could spell the word `Secret` (the word standing alone, or a backslash
  escape) is parsed as a source is and its objects checked by the credential guard (a Secret
  with data, a private key anywhere, at any depth); a text that is not YAML is refused. Tenant
  apps hold no Secret (`imagePullSecrets` is not the word), so on the warm path this parses
  nothing.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from btp_gitops.generator.core.errors import CredentialInOutput, InvalidSpec, Problem, raise_if_problems
from btp_gitops.generator.core.keys import private_key_in
from btp_gitops.generator.core.layout import app_directory, app_of_directory
from btp_gitops.generator.core.objects import Manifest
from btp_gitops.generator.core.ownership import MANIFEST_FILE
from btp_gitops.generator.core.report import AppRender
from btp_gitops.generator.core.yamlio import SourceSyntaxProblem, load_source_documents
from btp_gitops.generator.io.git_blobs import blob_id
from btp_gitops.generator.io.packed_app import AppFiles, PackDamaged, PackedApp
from btp_gitops.generator.pipeline.cached_sources import ReusedApp
from btp_gitops.generator.transforms.guards import REFUSAL, assert_no_credentials
from btp_gitops.generator.transforms.secret_text import could_spell_secret


def _key_problems(written: list[tuple[str, str]], joined: str) -> list[Problem]:
    # One pass in C over every text (per file, 80,000 calls would cost a third of a second).
    if private_key_in(joined) is None:
        return []
    return [
        Problem(where, f"contains {_article(what)}")
        for where, text in written
        if (what := private_key_in(text))
    ]


def _article(what: str) -> str:
    return what if what.startswith(("a ", "an ", "base64", "hex")) else f"a {what}"


# Whether the cluster directory already holds a file with exactly these bytes (path, text).
Unchanged = Callable[[str, str], bool]
# The SHA-1 blob ids Git vouches the files at these paths hold, known without reading them.
HeldBlobs = Mapping[str, str]


@dataclass(slots=True)
class ClusterLayout:
    """The files of the cluster directory (each app's in its directory, in path order), made in
    one pass over 80,000 files with what the render pack says of the reused apps' files:
    `claims`, the blob id the pack gives each of them (the writer and `diff` take a file Git
    vouches for with the same id as unchanged, without hashing its text); `searched`, those the
    render writes or prints, which the guard searches (`check_reused_output`)."""

    files: dict[str, str]
    claims: dict[str, str] = field(default_factory=dict)
    searched: list[tuple[str, str]] = field(default_factory=list)
    # Files that differ from the ones Git holds, whose text is the pack's: hashed by the guard,
    # which decides their fate (`PackedApp.verified_text`): (path, text, claimed id, app).
    unverified: list[tuple[str, str, str, PackedApp]] = field(default_factory=list)

    def add_rendered(self, apps: Iterable[PackedApp], held_blobs: HeldBlobs | None) -> None:
        """The blob ids of apps rendered now, which packing them just made from their texts (the
        layout's own: `_pack_layout`), as claims too, made here rather than read, of the files Git
        vouches the previous tree holds (`held_blobs`): the writer and `diff` tell those by id,
        and a render that fills the cache does not hash 80,000 texts a second time. Only those:
        a claimed file that is written is hashed again (`_checked_claims`), which would cost a
        render into an empty directory as much. No path is another app's: an app whose name two
        apps share is not packed (`_pack_layout`)."""
        if not held_blobs:
            return
        made: dict[str, str] = {}
        for packed in apps:
            made.update(zip(packed.paths(), packed.content.ids(), strict=True))
        for path in made.keys() - held_blobs.keys():  # the new files: a few, in one pass in C
            del made[path]
        self.claims.update(made)

    def claims_in(self, files: Mapping[str, str], replaced: Iterable[str] | None = None) -> dict[str, str]:
        """The claims of the paths whose text in `files` is still the pack's. `replaced`: the
        only paths that may hold another text there (the wiring's), when that is known; else
        (Kyma apps kept as the previous render wrote them) every path is looked at."""
        texts, claims = self.files, self.claims
        if replaced is None:
            return {path: oid for path, oid in claims.items() if files.get(path) is texts[path]}
        kept = dict(claims)
        for path in replaced:
            if path in kept and files.get(path) is not texts[path]:
                del kept[path]
        return kept


def lay_out_cluster(
    apps: Sequence[AppRender],
    per_app: Sequence[Mapping[str, str]],
    unchanged: Unchanged | None = None,
    held_blobs: HeldBlobs | None = None,
) -> ClusterLayout:
    """`ClusterLayout` of the apps and their files (`per_app`, named inside each app's
    directory). `unchanged` tells the files that are neither written nor shown: those the cluster
    directory already holds byte for byte (`render --out`, under the output lock: the writer
    leaves them as they are) or whose text is the compared tree's (`diff`); `render --stdout`
    passes None: every file is searched. `held_blobs` are the blob ids Git vouches paths hold: a
    reused file with the pack's id for it is one of those, and one with another id is hashed."""
    files: dict[str, str] = {}
    layout = ClusterLayout(files)
    claims, searched, unverified = layout.claims, layout.searched, layout.unverified
    held = held_blobs or {}
    # Apps in the order of their directories (with a slash: `a-b/` sorts before `a/`, as their
    # paths do), so that the files arrive in path order; a dict sorted again only if they did not.
    directories = [app_directory(app.app, app.group) for app in apps]
    for index in sorted(range(len(apps)), key=lambda index: directories[index] + "/"):
        app, named, directory = apps[index], per_app[index], directories[index]
        if not named:
            continue
        if not isinstance(app, ReusedApp) or named is not app.packed.files:
            for name, text in named.items():
                files[f"{directory}/{name}"] = text
            continue
        packed = app.packed
        for path, text, oid in packed.paths_texts_ids():  # inline: 80,000 files in a warm render
            files[path] = text
            claims[path] = oid
            found = held.get(path)
            if found is not None:
                if found != oid:
                    unverified.append((path, text, oid, packed))
            elif unchanged is None or not unchanged(path, text):
                searched.append((path, text))
    paths = list(files)
    if paths != sorted(paths):  # in order as a rule: sorting a sorted list is one pass
        layout.files = {path: files[path] for path in sorted(paths)}
    return layout


def held_directories(apps: Sequence[AppRender], trees: Mapping[str, str]) -> frozenset[str]:
    """The directories of apps reused from the render pack that the compared tree already holds
    as the pack gives them: the tree id Git lists for the directory (`trees`, a commit's) is the
    one the pack's file names and blob ids make (io.packed_app), so every file there is the one
    the render would show, and `diff` neither lays the app out nor compares it. Only an app that
    is the one of its name on both sides: an app with another directory in the compared tree
    (flat and sharded, or in two groups) or a namesake in this render is compared file by file,
    as objects may move between its directories. Nor an app with a file named like an ownership
    manifest: the compared tree's are left out (pipeline.diff), so its directory is no longer the
    tree listed."""
    if not trees:
        return frozenset()
    compared = Counter(map(app_of_directory, trees))
    rendered = Counter([app.app for app in apps])
    candidates = []  # (directory, the compared tree's id for it, the pack's files)
    for app in apps:
        if isinstance(app, ReusedApp) and rendered[app.app] == 1 and compared[app.app] == 1:
            directory = app_directory(app.app, app.group)
            claimed = trees.get(directory)
            content = app.packed.content
            if claimed is not None and MANIFEST_FILE not in content.names_text:
                candidates.append((directory, claimed, content))
    AppFiles.find_tree_ids([content for _, _, content in candidates])
    return frozenset([directory for directory, tree, content in candidates if content.tree_id() == tree])


@dataclass(frozen=True, slots=True)
class HeldFiles:
    """The files of the app directories `render --out` leaves as the work tree holds them
    (`held_in_work_tree`): their paths (for the ownership manifests, the removal guard and the
    writer, which neither compares nor removes them) and, for one that changes under the writer
    after the scan (a person's edit), its text as the pack gives it, which is then written."""

    paths: frozenset[str] = frozenset()
    apps: Mapping[str, PackedApp] = field(default_factory=dict)  # by their directory

    def text(self, path: str) -> str:
        """The pack's text of the held file at `path`, its bytes checked against the blob id the
        pack gives it (they are about to be written). Found by the directories above it, not by
        going over the apps: when Git cannot be asked again, every held file is asked for."""
        directory = path.rpartition("/")[0]
        while directory:
            packed = self.apps.get(directory)
            if packed is not None:
                name = path[len(directory) + 1 :]
                oid = dict(zip(packed.files, packed.content.ids(), strict=True))[name]
                return packed.verified_text(path, packed.files[name], oid)
            directory = directory.rpartition("/")[0]
        raise KeyError(path)


def held_in_work_tree(apps: Sequence[AppRender], blobs: HeldBlobs) -> HeldFiles:
    """The files of the apps reused from the render pack whose directory the work tree already
    holds as the pack gives them: Git vouches (`blobs`, its index and a clean `diff-files`) that
    each file the pack names there is on disk with the blob id the pack gives it, so `render
    --out` has nothing to write there and neither decodes nor lays out their texts. A file beside
    them is no concern of this: it is in the scanned tree, not in the render, and the writer
    removes it as ever. Nor an app with a file named like an ownership manifest (the writer makes
    those from the paths)."""
    if not blobs:
        return HeldFiles()
    get, nothing = blobs.get, itertools.repeat("")
    held: dict[str, PackedApp] = {}
    paths: list[str] = []
    for app in apps:
        if not isinstance(app, ReusedApp):
            continue
        content = app.packed.content
        names = content.names_text
        if not names or MANIFEST_FILE in names:
            continue
        directory = app_directory(app.app, app.group)
        if directory in held:  # two apps in one directory (not as btp-gitops renders): laid out
            continue
        app_paths = [f"{directory}/{name}" for name in names.split("\0")]
        # Each id Git gives is 40 digits, as each of the pack's is (io.render_pack checks them
        # with its index): the two joined are equal exactly when every file's are.
        if "".join(map(get, app_paths, nothing)) == content.ids_text:
            held[directory] = app.packed
            paths += app_paths
    return HeldFiles(frozenset(paths), held)


def held_paths(apps: Sequence[AppRender], held: frozenset[str]) -> list[str]:
    """A path in each directory the `held` apps' files are in (an app with stage directories has
    several): where they are, for what reads only that (wiring.layout), without their 80,000
    file paths."""
    paths = []
    for app in apps:
        if isinstance(app, ReusedApp) and (directory := app_directory(app.app, app.group)) in held:
            text = app.packed.content.names_text
            names = text.split("\0") if "/" in text else [text.partition("\0")[0]]
            one_each = {name.rpartition("/")[0]: name for name in names if name}
            paths += [f"{directory}/{name}" for name in one_each.values()]
    return paths


def check_claims(texts: Mapping[str, str], claims: Mapping[str, str], paths: Iterable[str]) -> None:
    """The texts of `paths` that the pack gave a blob id for are that blob (hashed now): they are
    about to be shown, and the id decided what else was left out."""
    for path in paths:
        claim = claims.get(path)
        if claim is not None and blob_id(texts[path].encode("utf-8", "surrogatepass")) != claim:
            raise PackDamaged(
                f"the render pack holds a file, {path}, whose bytes are not the blob its index names: "
                "it was not written by btp-gitops; remove the cache directory's packs/ or render with "
                "--no-cache"
            )


def check_reused_output(layout: ClusterLayout) -> None:
    """Refuse a Secret with data, or a private key, in the files of the apps taken from the pack
    that the render writes or prints (`ClusterLayout.searched`, and the files whose id is not
    the one Git holds, hashed first: their bytes must be the id the pack gives)."""
    hashed = [(path, packed.verified_text(path, text, oid)) for path, text, oid, packed in layout.unverified]
    written = [*layout.searched, *hashed]
    # Every text at once, joined by a NUL: no key's text and no word crosses one, so the joined
    # text holds a key, or could spell `Secret`, exactly when one of the texts does; file by file
    # only then (a warm render's 80,000 files: one search in C instead of 80,000 calls).
    joined = "\0".join(text for _, text in written)
    keys = _key_problems(written, joined)
    if keys:
        raise CredentialInOutput(REFUSAL, keys)
    problems: list[Problem] = []
    parsed: list[Manifest] = []
    for where, text in written if could_spell_secret(joined) else ():
        if not could_spell_secret(text):
            continue
        try:
            parsed += [Manifest(body, where) for _, body in load_source_documents(text, where)]
        except SourceSyntaxProblem as error:
            problems.append(Problem(where, f"from the render pack, {error.problem.message}"))
    assert_no_credentials(parsed, {})  # no text: every object walked, at any depth
    raise_if_problems(InvalidSpec, "the render pack holds files btp-gitops would not write", problems)
