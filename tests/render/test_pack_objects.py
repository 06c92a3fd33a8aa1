"""A reused app's objects (io.packed_app): the render pack keeps an app's files and its objects'
origins, not the objects; they are read back from the files only when something asks for them.

Every render here is the real pipeline in process, or the CLI in process; the pack is a real file
in a real cache directory, forged where a test says so with the key (stolen), as a thief would.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from btp_gitops.generator.io.packed_app import PackDamaged, PackedApp
from btp_gitops.generator.io.render_cache import RenderCache
from btp_gitops.generator.pipeline.cached_sources import ReusedApp
from tests.render.test_render_cache import records, tenant, write
from tests.render.test_render_pack import age, packs, render, reused, same_as_uncached, source
from tests.support.forged_cache import app_keys, forge_app, put_keys, replace_text, split_pack
from tests.support.fuzzing import run_in_process

__all__ = ["source"]  # the fixture, shared with test_render_pack


def _forged_and_rendered(source: Path, tmp_path: Path, change: Any) -> ReusedApp:
    """The first record's app after `change(app, blob)`, signed (the key stolen: its MAC holds)."""
    directory = tmp_path / "cache"
    same_as_uncached(source, directory)
    (pack,) = packs(directory)
    forge_app(pack, change, sign=True)
    _, index, _ = split_pack(pack)
    result = render(source, RenderCache(directory))
    (app,) = [app for app in reused(result) if app.app == index["records"][0][6][0]]
    return app


@pytest.mark.parametrize(
    ("change", "damage"),
    [
        (lambda app, blob: replace_text(app, blob, "not: [an object"), "does not hold an object"),
        (lambda app, blob: replace_text(app, blob, "- a list\n"), "does not hold an object"),
        (
            lambda app, blob: replace_text(
                app, blob, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n"
            ),
            "do not hold the objects its index names",
        ),
        (lambda app, blob: put_keys(app, app_keys(app)[1:]), "do not hold the objects its index names"),
        (lambda app, blob: app.__setitem__(6, "a\0b"), "are not as many as its objects"),
    ],
    ids=["not-yaml", "not-an-object", "another-object", "a-key-less", "origins"],
)
def test_objects_a_forged_pack_cannot_read_back_fail_with_an_error_naming_the_pack(
    source: Path, tmp_path: Path, change: Any, damage: str
) -> None:
    """The objects are not read on the way to the files: a pack forged with a correct MAC (the
    key stolen) whose files do not read back as the objects its keys and origins name renders
    (its files, keys and checks come from elsewhere in it), and fails with a clear error naming
    the app only when something asks for those objects."""
    damaged = _forged_and_rendered(source, tmp_path, change)
    with pytest.raises(PackDamaged, match=f"render pack holds .* of app {damaged.app} that {damage}"):
        _ = damaged.manifests


def test_the_origins_of_a_packed_app_name_each_object(source: Path, tmp_path: Path) -> None:
    """An app whose objects come from more than one place keeps each object's origin."""

    def per_object(app: list[Any], blob: bytearray) -> None:
        app[6] = "\0".join(f"elsewhere.yaml#{n}" for n in range(len(app_keys(app))))

    app = _forged_and_rendered(source, tmp_path, per_object)
    assert [m.origin for m in app.manifests] == [f"elsewhere.yaml#{n}" for n in range(app.object_count)]


@pytest.mark.parametrize("target", [[], ["--target", "flux"]], ids=["argocd", "flux"])
def test_no_warm_run_reads_a_reused_apps_objects_back(
    source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: list[str]
) -> None:
    """A tenant added, then a warm `diff`, `render --out` with its JSON report and, for Argo CD,
    `render --stdout` (the plugin): every other app is taken from the pack and none has its objects
    read back (for 20,000 apps, parsing their files' YAML would cost a warm run seconds)."""
    directory, repo = tmp_path / "cache", tmp_path / "repo"
    common = ["--cluster", "demo", "--cache-dir", str(directory), *target]
    plugin = ["render", ".", "--stdout", "--argocd-parameters", "-v"]  # in the app's directory; XDG's cache
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert run_in_process(["render", str(source), "--out", str(repo), *common]).code == 0
    if not target:
        with monkeypatch.context() as inside:
            inside.chdir(source)
            assert run_in_process(plugin).code == 0
    write(source, tenant(60))
    age(source)
    read_back: list[str] = []
    original = PackedApp.objects_payload

    def counted(app: PackedApp) -> list[tuple[dict[str, Any], str]]:
        read_back.append(app.app)
        return original(app)

    monkeypatch.setattr(PackedApp, "objects_payload", counted)
    runs = [
        ["diff", str(source), "--against", str(repo), "-o", "json", "-v", *common],
        ["render", str(source), "--out", str(repo), "-o", "json", "-v", *common],
    ]
    if not target:
        runs.append(plugin)
    for args in runs:
        with monkeypatch.context() as inside:
            if args is plugin:
                inside.chdir(source)  # the plugin's sources are "." (a pack is named by them)
            run = run_in_process(args)
        assert run.code == 0, run.stderr
        said = re.search(r"render cache: (\d+) of (\d+) tenant record", run.stderr)
        assert said is not None, run.stderr
        # The first run renders the new tenant and packs it; the next take it from the pack too.
        assert int(said[2]) == records(source) and int(said[1]) >= records(source) - 1
    assert read_back == []
