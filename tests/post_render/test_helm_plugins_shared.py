"""Helm 3 and Helm 4 on one machine, one plugin directory, as docs/gitops/helm.md sets them up.

Both read `$HELM_DATA_HOME/plugins` (or HELM_PLUGINS). Helm 3 parses every plugin.yaml there
strictly and knows no `apiVersion`: one Helm 4 plugin in it makes every Helm 3 command print
"failed to load plugins" and load none. Helm 4 runs only a `postrenderer/v1` plugin as a
post-renderer. So the docs install our plugin for Helm 4 into a directory of its own, listed
before the shared one in Helm 4's HELM_PLUGINS; Helm 3 runs the btp-gitops executable. Real
helm v3 and v4, a plugin both share (a Helm 3 style command plugin), and no warning on stderr.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import CLI
from tests.post_render.conftest import HELM_PLUGIN, HelmHome, _template_args, run_helm

pytestmark = pytest.mark.tools


def shared_plugin(directory: Path) -> Path:
    """A plugin in the format both Helm versions read (what users already have, e.g. helm-diff)."""
    plugin = directory / "hello-plugin"
    plugin.mkdir()
    (plugin / "hello.sh").write_text('#!/bin/sh\necho "hello from a shared plugin"\n')
    (plugin / "hello.sh").chmod(0o755)
    (plugin / "plugin.yaml").write_text(
        'name: hello\nversion: 1.0.0\nusage: "say hello"\ndescription: "a plugin both Helm versions load"\n'
        "platformCommand:\n  - command: ${HELM_PLUGIN_DIR}/hello.sh\n"
    )
    return plugin


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> tuple[HelmHome, dict[str, str]]:
    """One Helm home for both versions, set up as the docs say; the environment Helm 4 gets."""
    home = HelmHome(tmp_path_factory.mktemp("shared-helm-home"))
    shared = home.root / "data" / "plugins"  # the default of both: $HELM_DATA_HOME/plugins
    # `helm plugin install` of Helm 4.3 installs under HELM_DATA_HOME, whatever HELM_PLUGINS says
    helm4_data = home.root / "data-helm4"
    helm4_only = helm4_data / "plugins"
    installed = run_helm("helm3", home, "plugin", "install", shared_plugin(home.root))
    assert installed.returncode == 0, installed.stderr
    installed = run_helm("helm4", home, "plugin", "install", HELM_PLUGIN, HELM_DATA_HOME=str(helm4_data))
    assert installed.returncode == 0, installed.stderr
    assert (helm4_only / HELM_PLUGIN.name / "plugin.yaml").is_file()
    assert not (shared / HELM_PLUGIN.name).exists() and not (shared / "btp-gitops").exists()
    return home, {"HELM_PLUGINS": f"{helm4_only}:{shared}"}


def test_helm3_loads_the_shared_plugins_and_post_renders_without_a_warning(
    homes: tuple[HelmHome, dict[str, str]],
) -> None:
    home, _ = homes

    listed = run_helm("helm3", home, "plugin", "list")
    hello = run_helm("helm3", home, "hello")
    rendered = run_helm("helm3", home, *_template_args(str(CLI), "--post-renderer-args", "post-render"))

    assert (listed.returncode, listed.stderr) == (0, "")
    assert [line.split()[0] for line in listed.stdout.splitlines()[1:]] == ["hello"]
    assert (hello.returncode, hello.stdout, hello.stderr) == (0, "hello from a shared plugin\n", "")
    assert (rendered.returncode, rendered.stderr) == (0, "")
    assert "kind: Deployment" in rendered.stdout


def test_helm4_finds_its_post_renderer_and_the_shared_plugins_without_a_warning(
    homes: tuple[HelmHome, dict[str, str]],
) -> None:
    home, helm4_env = homes

    listed = run_helm("helm4", home, "plugin", "list", **helm4_env)
    hello = run_helm("helm4", home, "hello", **helm4_env)
    rendered = run_helm("helm4", home, *_template_args("btp-gitops"), **helm4_env)

    assert (listed.returncode, listed.stderr) == (0, "")
    assert sorted(line.split()[0] for line in listed.stdout.splitlines()[1:]) == ["btp-gitops", "hello"]
    assert (hello.returncode, hello.stdout, hello.stderr) == (0, "hello from a shared plugin\n", "")
    assert (rendered.returncode, rendered.stderr) == (0, "")
    assert "kind: Deployment" in rendered.stdout


def test_why_not_one_directory_helm3_refuses_a_helm4_plugin_and_then_loads_none(tmp_path: Path) -> None:
    """The reason for the separate directory, kept true against the Helm 3 the tests build."""
    home = HelmHome(tmp_path)
    assert run_helm("helm3", home, "plugin", "install", shared_plugin(tmp_path)).returncode == 0
    assert run_helm("helm4", home, "plugin", "install", HELM_PLUGIN).returncode == 0

    hello = run_helm("helm3", home, "hello")

    assert "failed to load plugins" in hello.stderr
    assert 'unknown field "apiVersion"' in hello.stderr
    assert hello.returncode != 0  # `hello` is unknown: no plugin was loaded
