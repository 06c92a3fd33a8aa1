"""The image's size, and what its slimming (scripts/build-image.sh, slim_rootfs) must not break.

The size is the one layer's uncompressed length: the root filesystem as a tar stream, what a
runtime unpacks (headers included; hard links stored once), measured from the built OCI layout.
The build moves the standard library and pure-Python packages into zip archives and purges
Debian packages nothing of ours runs, so the other tests here run what could have lost a piece:
every module of btp-gitops imported by the image's Python (the controller's Kubernetes client
and the subscription server's aiohttp included), the Kubernetes schemas of the oldest and newest
bundled version read from their archive, post-render, and Git committing, cloning and pushing.
"""

from __future__ import annotations

import gzip
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import CLI, EXAMPLES
from tests.image.conftest import BUILD_SCRIPT, TEST_TIMEOUT, BuiltImage, Bundle

pytestmark = [pytest.mark.image, pytest.mark.tools, pytest.mark.timeout(TEST_TIMEOUT)]

MAX_UNPACKED_BYTES = 250 * 1000 * 1000


def uncompressed_layer_bytes(image: BuiltImage) -> int:
    """The length of the image's one layer once gunzipped: the root filesystem's tar stream."""
    (layer,) = image.manifest()["layers"]
    algorithm, value = layer["digest"].split(":", 1)
    total = 0
    with gzip.open(image.layout / "blobs" / algorithm / value, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            total += len(block)
    return total


def test_unpacked_image_is_at_most_250_mb(image: BuiltImage) -> None:
    size = uncompressed_layer_bytes(image)
    assert size <= MAX_UNPACKED_BYTES, f"the unpacked image is {size / 1e6:.1f} MB, more than 250 MB"


def test_every_module_of_btp_gitops_imports(bundle: Bundle) -> None:
    probe = (
        "import importlib, pkgutil, btp_gitops\n"
        "names = [m.name for m in pkgutil.walk_packages(btp_gitops.__path__, 'btp_gitops.')]\n"
        "for name in names: importlib.import_module(name)\n"
        "import kubernetes.client, aiohttp.web, helm_python, git, cryptography.x509\n"
        "print(len(names), kubernetes.client.__file__)\n"
    )
    result = bundle.run(["/opt/btp-gitops/bin/python", "-c", probe], entrypoint=False)
    assert result.returncode == 0, result.stderr
    count, client_file = result.stdout.split()
    assert int(count) > 100
    # The Kubernetes client comes from the archive the build made, not from a directory.
    assert client_file.startswith("/opt/btp-gitops/lib/python3.11/site-packages.zip/kubernetes/")


@pytest.mark.parametrize("command", [["controller", "--help"], ["subscription-server", "--help"]])
def test_long_running_commands_start(bundle: Bundle, command: list[str]) -> None:
    result = bundle.run(command)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"usage: btp-gitops {command[0]}")


@pytest.mark.parametrize("version", ["oldest", "newest"])
def test_validate_reads_the_kubernetes_schemas_of_every_version(
    bundle: Bundle, version: str, tmp_path: Path
) -> None:
    listed = bundle.run(
        [
            "/opt/btp-gitops/bin/python",
            "-c",
            "from btp_gitops.generator.io.kube_schemas import supported_kubernetes_versions as v; print(*v())",
        ],
        entrypoint=False,
    )
    assert listed.returncode == 0, listed.stderr
    versions = listed.stdout.split()
    assert versions[0] == "1.25" and len(versions) >= 13
    chosen = versions[0] if version == "oldest" else versions[-1]
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"selector": {"matchLabels": {"app": "web"}}, "replicas": "two"},
    }
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "web.yaml").write_text(yaml.safe_dump(deployment))
    inside = bundle.copy_in({".": tmp_path / "src"})
    result = bundle.run(["validate", "--kubernetes-version", chosen, "web.yaml"], cwd=inside)
    # `replicas: two` is not an integer, and `template` is missing: both found through the schema.
    assert result.returncode == 3, result.stderr
    assert "replicas" in result.stderr and "template" in result.stderr


def test_post_render_is_byte_identical_to_the_checkouts(bundle: Bundle, tmp_path: Path) -> None:
    stream = "".join(f"---\n{path.read_text()}" for path in sorted((EXAMPLES / "cap-app").rglob("*.yaml")))
    local = subprocess.run(
        [CLI, "post-render", "--domain", "cap"],
        input=stream,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert local.returncode == 0, local.stderr
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "stream.yaml").write_text(stream)
    inside = bundle.copy_in({".": tmp_path / "in"})
    result = bundle.run(
        ["/bin/sh", "-c", "btp-gitops post-render --domain cap <stream.yaml"], entrypoint=False, cwd=inside
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == local.stdout
    kinds = {doc["kind"] for doc in yaml.safe_load_all(result.stdout) if doc}
    assert "Deployment" in kinds


def test_git_commits_clones_and_pushes(bundle: Bundle) -> None:
    _, inside = bundle.workdir()
    identity = "git -c user.name=test -c user.email=test@example.com"
    script = (
        "set -e; git init -q -b main origin; cd origin; echo a >file; git add file;"
        f" {identity} commit -q -m one; git checkout -q -b side; cd ..;"
        " git clone -q origin copy; cd copy; git checkout -q main; echo b >>file;"
        f" {identity} commit -q -am two; git push -q origin main; git -C ../origin log --format=%s main"
    )
    result = bundle.run(["/bin/sh", "-c", script], entrypoint=False, cwd=inside)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["two", "one"]


def test_build_script_names_what_it_needs(tmp_path: Path) -> None:
    """Without mmdebstrap the build stops before it starts, saying which package to install."""
    tools = tmp_path / "bin"
    tools.mkdir()
    for directory in ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"):
        for program in Path(directory).iterdir():
            if program.name != "mmdebstrap" and not (tools / program.name).exists():
                (tools / program.name).symlink_to(program)
    result = subprocess.run(
        ["bash", str(BUILD_SCRIPT), "--out", str(tmp_path / "out")],
        env={"PATH": str(tools), "HOME": str(tmp_path), "XDG_CACHE_HOME": str(tmp_path / "cache")},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "missing mmdebstrap: apt-get install mmdebstrap" in result.stderr
    assert not (tmp_path / "out" / "image.env").exists()
