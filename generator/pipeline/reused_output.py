"""The credential guard for the apps a render takes from the render pack, on what is written.

An app reused from the pack (`cached_sources.ReusedApp`) arrives as files, not objects: decoding
and checking its objects on every render would cost what the pack saves. The pack is untrusted
input all the same (whoever can write the cache directory can write it, checksum fixed up), so
the files it hands the layout pass the same guard as a fresh app's, checked on their text:

- its names and paths, and each kustomization.yaml (the one the layout writes for the files
  beside it), were checked when the pack was read (io.render_pack: a pack failing them is not
  used);
- private keys in the text of every file are found by the render's credential guard, which is
  given every file of the cluster directory, reused or not;
- every text that could spell the word `Secret` (the word itself, or a backslash escape) is
  parsed as a source is and its objects checked by the credential guard (a Secret with data, a
  private key anywhere, at any depth); a text that is not YAML is refused. Tenant apps hold no
  Secret, so on the warm path this parses nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from btp_gitops.generator.core.errors import InvalidSpec, Problem, raise_if_problems
from btp_gitops.generator.core.layout import app_directory
from btp_gitops.generator.core.objects import Manifest
from btp_gitops.generator.core.report import AppRender
from btp_gitops.generator.core.yamlio import SourceSyntaxProblem, load_source_documents
from btp_gitops.generator.pipeline.cached_sources import ReusedApp
from btp_gitops.generator.transforms.guards import assert_no_credentials


def could_spell_secret(text: str) -> bool:
    """Whether a YAML text could hold the string `Secret`: spelt out, or with escapes."""
    return "Secret" in text or "\\" in text


def check_reused_output(apps: Iterable[AppRender]) -> None:
    """Refuse a Secret with data, or a private key, in the files of an app taken from the pack."""
    problems: list[Problem] = []
    parsed: list[Manifest] = []
    for app in apps:
        if not isinstance(app, ReusedApp):
            continue
        for path, text in app.packed.files.items():
            if not could_spell_secret(text):
                continue
            where = f"{app_directory(app.app, app.group)}/{path}"
            try:
                parsed += [Manifest(body, where) for _, body in load_source_documents(text, where)]
            except SourceSyntaxProblem as error:
                problems.append(Problem(where, f"from the render pack, {error.problem.message}"))
    assert_no_credentials(parsed, {})  # no text: every object walked, at any depth
    raise_if_problems(InvalidSpec, "the render pack holds files btp-gitops would not write", problems)
