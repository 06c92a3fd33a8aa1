"""The OCI image: its config, and the CLI run inside it (see conftest.py for how it runs).

Covers: user, entrypoint, environment and OCI labels/annotations of the image config; `--version`;
a render of examples/cap-app byte-identical to the checkout's; the Argo CD CMP's generate command
exactly as argocd-cmp/plugin.yaml declares it, as the repo-server's uid; `controller --help` and
the module resources the controller falls back to; Git for the controller's source repository.
Real components: mmdebstrap, umoci, the image's own Python, venv, Git and embedded Helm engine.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

import btp_gitops
from tests.conftest import CHART, CLI, EXAMPLES, ROOT, read_tree
from tests.image.conftest import TEST_TIMEOUT, BuiltImage, Bundle

pytestmark = [pytest.mark.image, pytest.mark.tools, pytest.mark.timeout(TEST_TIMEOUT)]

LABELS = (
    "org.opencontainers.image.source",
    "org.opencontainers.image.version",
    "org.opencontainers.image.revision",
    "org.opencontainers.image.created",
    "org.opencontainers.image.licenses",
    "org.opencontainers.image.title",
    "org.opencontainers.image.description",
)
ARGOCD_UID = 999  # the repo-server's user, which argocd-cmp/repo-server-patch.yaml runs the sidecar as


def test_config_runs_the_cli_as_a_non_root_user(image: BuiltImage, bundle: Bundle) -> None:
    config = image.config()
    assert config["os"] == "linux" and config["architecture"] == "amd64"
    assert config["config"]["Entrypoint"] == ["/opt/btp-gitops/bin/btp-gitops"]
    assert config["config"]["User"] == "65532:65532"
    assert (
        "PATH=/opt/btp-gitops/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        in config["config"]["Env"]
    )
    # The user exists in the image, with a home directory of its own.
    passwd = (bundle.rootfs / "etc" / "passwd").read_text().splitlines()
    assert "btp-gitops:x:65532:65532:btp-gitops:/home/btp-gitops:/usr/sbin/nologin" in passwd
    home = bundle.rootfs / "home" / "btp-gitops"
    assert (home.stat().st_uid, home.stat().st_gid) == (65532, 65532)
    assert (bundle.uid, bundle.gid) == (65532, 65532)


def test_labels_name_the_source_version_and_revision(image: BuiltImage) -> None:
    labels = image.config()["config"]["Labels"]
    assert sorted(labels) == sorted(LABELS)
    assert labels["org.opencontainers.image.version"] == btp_gitops.__version__ == image.tag
    assert labels["org.opencontainers.image.source"] == "https://github.com/btp-gitops/btp-gitops"
    assert labels["org.opencontainers.image.licenses"] == "Apache-2.0"
    assert labels["org.opencontainers.image.title"] == "btp-gitops"
    head = subprocess.run(
        ["git", "log", "-1", "--format=%H %ct"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    revision, commit_time = head.stdout.split()
    assert labels["org.opencontainers.image.revision"] == revision
    # SOURCE_DATE_EPOCH, by default the last commit's time.
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH") or commit_time)
    created = datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert labels["org.opencontainers.image.created"] == created == image.config()["created"]
    # The same, as OCI annotations of the manifest.
    assert image.manifest()["annotations"] == labels


def test_version_matches_the_package(bundle: Bundle) -> None:
    result = bundle.run(["--version"])
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"btp-gitops {btp_gitops.__version__}"


def test_render_is_byte_identical_to_the_checkouts(bundle: Bundle, tmp_path: Path) -> None:
    # The same relative paths on both sides: nothing of the location may show in the output.
    shutil.copytree(EXAMPLES / "cap-app", tmp_path / "src")
    local = subprocess.run(
        [CLI, "render", "src", "--out", "out"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert local.returncode == 0, local.stderr

    inside = bundle.copy_in({"src": EXAMPLES / "cap-app"})
    host_dir = bundle.rootfs / inside.lstrip("/")
    result = bundle.run(["render", "src", "--out", "out"], cwd=inside)
    assert result.returncode == 0, result.stderr

    rendered = read_tree(host_dir / "out")
    assert any(path.endswith(".yaml") for path in rendered)
    assert rendered == read_tree(tmp_path / "out")


def test_argocd_cmp_generate_command_renders_the_app(bundle: Bundle, tmp_path: Path) -> None:
    plugin = yaml.safe_load((ROOT / "argocd-cmp" / "plugin.yaml").read_text())
    generate = plugin["spec"]["generate"]["command"]
    discover = plugin["spec"]["discover"]["find"]["command"]
    # The app's source repository: the example and the chart its BtpOperatorConfig names.
    repo = {
        "examples/btp-operator": EXAMPLES / "btp-operator",
        "charts/sap-btp-operator": ROOT / "charts" / "sap-btp-operator",
    }
    app = bundle.copy_in(repo, owner=ARGOCD_UID) + "/examples/btp-operator"
    # Argo CD runs the commands in the app's directory; HOME is / for a uid the image does not know.
    env = {"HOME": "/", "ARGOCD_APP_NAME": "btp-operator"}

    found = bundle.run(discover, entrypoint=False, cwd=app, uid=ARGOCD_UID, env=env)
    assert found.returncode == 0, found.stderr
    assert found.stdout.strip() in ("./btpoperatorconfig.yaml", "./btpoperator.yaml")

    result = bundle.run(generate, entrypoint=False, cwd=app, uid=ARGOCD_UID, env=env)
    assert result.returncode == 0, result.stderr

    for relative, source in repo.items():
        shutil.copytree(source, tmp_path / relative)
    local = subprocess.run(
        [CLI, "render", ".", "--stdout"],
        cwd=tmp_path / "examples/btp-operator",
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert local.returncode == 0, local.stderr
    assert result.stdout == local.stdout
    kinds = {doc["kind"] for doc in yaml.safe_load_all(result.stdout) if doc}
    assert {"Deployment", "CustomResourceDefinition", "MutatingWebhookConfiguration"} <= kinds


def test_argocd_cmp_takes_cap_sources_and_parameters(bundle: Bundle) -> None:
    """A directory of CAP sources is discovered, rendered for the cluster the Application's
    parameter names; a parameter that cannot work is refused; the chart's directory is not ours."""
    plugin = yaml.safe_load((ROOT / "argocd-cmp" / "plugin.yaml").read_text())
    generate = plugin["spec"]["generate"]["command"]
    discover = plugin["spec"]["discover"]["find"]["command"]
    root = bundle.copy_in(
        {"apps/bookshop": EXAMPLES / "cap-app", "charts/sap-btp-operator": CHART}, owner=ARGOCD_UID
    )
    app = f"{root}/apps/bookshop"
    env = {"HOME": "/", "ARGOCD_APP_NAME": "bookshop", "ARGOCD_APP_SOURCE_PATH": "apps/bookshop"}

    found = bundle.run(discover, entrypoint=False, cwd=app, uid=ARGOCD_UID, env=env)
    chart = bundle.run(
        discover, entrypoint=False, cwd=f"{root}/charts/sap-btp-operator", uid=ARGOCD_UID, env=env
    )
    assert found.returncode == 0 and found.stdout.strip(), found.stderr
    assert chart.returncode == 0 and chart.stdout == "", chart.stderr

    parameters = '[{"name": "cluster", "string": "eu10"}, {"name": "validate", "string": "true"}]'
    result = bundle.run(
        generate, entrypoint=False, cwd=app, uid=ARGOCD_UID, env={**env, "ARGOCD_APP_PARAMETERS": parameters}
    )
    assert result.returncode == 0, result.stderr
    kinds = {doc["kind"] for doc in yaml.safe_load_all(result.stdout) if doc}
    assert {"CAPApplication", "CAPTenant", "Deployment"} <= kinds
    outside = '[{"name": "allow-path", "array": ["../../.."]}]'
    refused = bundle.run(
        generate, entrypoint=False, cwd=app, uid=ARGOCD_UID, env={**env, "ARGOCD_APP_PARAMETERS": outside}
    )
    assert refused.returncode == 2
    assert "leads outside the repository" in refused.stderr


def test_controller_help_and_its_bundled_module_resources(bundle: Bundle) -> None:
    result = bundle.run(["controller", "--help"])
    assert result.returncode == 0, result.stderr
    assert "--module-resources" in result.stdout
    # Without --module-resources (the chart's default) the controller uses the copy in the package.
    probe = "from btp_gitops.generator.io import bundled; print(bundled.module_resources_dir())"
    located = bundle.run(["/opt/btp-gitops/bin/python", "-c", probe], entrypoint=False)
    assert located.returncode == 0, located.stderr
    directory = located.stdout.strip()
    assert directory.startswith("/opt/btp-gitops/lib/python3.11/site-packages/btp_gitops/data/")
    assert any((bundle.rootfs / directory.lstrip("/") / "apply").iterdir())


def test_git_works_for_the_image_user(bundle: Bundle) -> None:
    host_dir, inside = bundle.workdir()
    result = bundle.run(["git", "init", "-q", "-b", "main", "repo"], entrypoint=False, cwd=inside)
    assert result.returncode == 0, result.stderr
    assert (host_dir / "repo" / ".git" / "HEAD").read_text() == "ref: refs/heads/main\n"
    assert (host_dir / "repo").stat().st_uid == bundle.uid


def test_byte_code_is_checked_hash(bundle: Bundle) -> None:
    # Timestamp .pyc files would go stale under the layer's fixed mtimes and be recompiled at every
    # start (the chart's root filesystem is read-only); checked-hash ones hold the source's hash.
    checked_hash = (0b11).to_bytes(4, "little")  # PEP 552 flags: hash-based, check the source
    site = bundle.rootfs / "opt/btp-gitops/lib/python3.11/site-packages"
    stdlib = bundle.rootfs / "usr/lib/python3.11"
    for tree in (site / "btp_gitops", site / "btp_gitops" / "generator", site / "yaml", stdlib):
        sources = list(tree.glob("*.py"))
        assert sources, tree
        for source in sources:
            cached = source.parent / "__pycache__" / f"{source.stem}.cpython-311.pyc"
            assert cached.read_bytes()[4:8] == checked_hash, cached


@pytest.mark.parametrize(
    ("archive", "module"),
    [
        ("usr/lib/python311.zip", "json/__init__.py"),
        ("opt/btp-gitops/lib/python3.11/site-packages.zip", "kubernetes/client/__init__.py"),
    ],
)
def test_byte_code_in_archives_is_the_sources(bundle: Bundle, archive: str, module: str) -> None:
    # The standard library and pure-Python packages are imported from zip archives: beside each
    # source, its byte-code with the source's hash (unchecked: the archive never changes).
    unchecked_hash = (0b01).to_bytes(4, "little")
    with zipfile.ZipFile(bundle.rootfs / archive) as opened:
        names = set(opened.namelist())
        sources = sorted(name for name in names if name.endswith(".py"))
        assert module in sources
        for source in sources:
            code = opened.read(source + "c")
            assert code[:4] == importlib.util.MAGIC_NUMBER, source
            assert code[4:8] == unchecked_hash, source
            assert code[8:16] == importlib.util.source_hash(opened.read(source)), source
