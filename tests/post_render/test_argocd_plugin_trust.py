"""The Argo CD plugin's env cannot choose what btp-gitops trusts (issue 31, item 4).

`ARGOCD_ENV_BTP_GITOPS_ARGS` comes from whoever may edit an Application, and the repository it
renders from whoever may push to it: neither may replace the schemas sources are checked with,
nor choose the render cache (a directory the repository holds would decide what its records
render into). The generate command runs as plugin.yaml declares it, with the variables Argo CD
sets (tests/post_render/test_argocd_plugin.py).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT
from tests.post_render.test_argocd_plugin import plugin_spec, run_like_argocd


def bookshop(tmp_path: Path) -> Path:
    """The CAP example as `apps/bookshop` of a checked-out repository that also keeps a copy of
    the schemas and a `.cache` directory."""
    app = tmp_path / "repo" / "apps" / "bookshop"
    shutil.copytree(EXAMPLES / "cap-app", app)
    shutil.copytree(ROOT / "schemas", tmp_path / "repo" / "schemas")
    (app / ".cache").mkdir()
    return app


@pytest.mark.parametrize(
    ("plugin_args", "message"),
    [
        ("--schemas ../../schemas", "--schemas cannot be used in Argo CD's plugin"),
        ("--cache-dir .cache", "--cache-dir cannot be used in Argo CD's plugin"),
        ("--cache-dir /tmp", "--cache-dir cannot be used in Argo CD's plugin"),
    ],
)
def test_the_plugin_env_cannot_choose_the_schemas_or_the_cache(
    tmp_path: Path, plugin_args: str, message: str
) -> None:
    app = bookshop(tmp_path)
    result = run_like_argocd(
        plugin_spec()["generate"]["command"],
        app,
        source_path="apps/bookshop",
        HOME=str(tmp_path / "home"),
        ARGOCD_ENV_BTP_GITOPS_ARGS=plugin_args,
    )
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert list((app / ".cache").iterdir()) == []


def test_the_cache_is_the_sidecars_and_never_in_the_checkout(tmp_path: Path) -> None:
    """With the sidecar's home outside the checkout, the render cache is there; with a home inside
    it (a sidecar so deployed), the render goes without a cache rather than keep one in the
    repository, and prints the same objects."""
    app = bookshop(tmp_path)
    generate = plugin_spec()["generate"]["command"]
    home = tmp_path / "home"
    outside = run_like_argocd(generate, app, source_path="apps/bookshop", HOME=str(home))
    assert outside.returncode == 0, outside.stderr
    assert list((home / ".cache" / "btp-gitops" / "render" / "packs").glob("*.pack"))

    inside = run_like_argocd(generate, app, source_path="apps/bookshop", HOME=str(app))
    assert inside.returncode == 0, inside.stderr
    assert inside.stdout == outside.stdout
    assert not (app / ".cache" / "btp-gitops").exists()
    assert not (app / ".local").exists()  # nor its cache key
