"""The credential guard for the apps a render takes from the render pack, on what is written.

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

from collections.abc import Callable, Iterable, Mapping

from btp_gitops.generator.core.errors import CredentialInOutput, InvalidSpec, Problem, raise_if_problems
from btp_gitops.generator.core.keys import private_key_in
from btp_gitops.generator.core.objects import Manifest
from btp_gitops.generator.core.report import AppRender
from btp_gitops.generator.core.yamlio import SourceSyntaxProblem, load_source_documents
from btp_gitops.generator.io.git_blobs import blob_id
from btp_gitops.generator.io.packed_app import PackDamaged
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


def pack_claims(apps: Iterable[AppRender], files: Mapping[str, str]) -> dict[str, str]:
    """The blob ids the render pack gives for the files of the apps taken from it, by path in
    the cluster directory (those `files` holds as the pack's texts): the writer and `diff` take
    a file Git vouches for with the same id as unchanged, without hashing its text."""
    claims: dict[str, str] = {}
    for app in apps:
        if isinstance(app, ReusedApp):
            for path, text, oid in app.packed.paths_texts_ids():
                if files.get(path) is text:
                    claims[path] = oid
    return claims


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


def _written_files(
    reused: list[ReusedApp], unchanged: Unchanged | None, held_blobs: HeldBlobs
) -> list[tuple[str, str]]:
    """Each reused file by its path in the cluster directory, but those the directory already
    holds: the writer leaves those as they are, so no byte of them is written. Where Git vouches
    for the file, that is decided by the pack's blob id (as the writer decides it), and a file
    that differs is hashed: its bytes must be the id the pack gives (`PackedApp.verified_text`)."""
    files = []
    for app in reused:
        packed = app.packed
        for where, text, claim in packed.paths_texts_ids():
            if unchanged is not None:
                held = held_blobs.get(where)
                if held is not None:
                    if held == claim:
                        continue
                    files.append((where, packed.verified_text(where, text, claim)))
                    continue
                if unchanged(where, text):
                    continue
            files.append((where, text))
    return files


def check_reused_output(
    apps: Iterable[AppRender], unchanged: Unchanged | None = None, held_blobs: HeldBlobs | None = None
) -> None:
    """Refuse a Secret with data, or a private key, in the files of an app taken from the pack
    that the render writes or prints. `unchanged` tells the files that are neither: those the
    cluster directory already holds byte for byte (`render --out`, under the output lock: the
    writer leaves them as they are) or whose text is the compared tree's (`diff`: no change, not
    in the report); `render --stdout` passes None: every file is searched. `held_blobs` are the
    blob ids Git vouches paths hold: a file with the pack's id for it is one of those."""
    reused = [app for app in apps if isinstance(app, ReusedApp)]
    written = _written_files(reused, unchanged, held_blobs or {})
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
