"""The OCI image built by `scripts/build-image.sh`, unpacked and run for real.

How the image runs here: `umoci unpack` turns the image into an OCI runtime bundle (the root
filesystem and the `config.json` a runtime would execute: entrypoint, environment, working
directory and user, all derived from the image config). The tests run that process with
`chroot --userspec` into the bundle's root filesystem, as the image's non-root user. Nothing of
the checkout or the host's Python is visible inside: the image's own Python, venv, Git and
Helm engine do the work.

Why not podman: podman 4.3 with crun 1.8 (Debian bookworm) cannot start a container in this
kind of sandbox (crun is refused `setrlimit` and does not support its hybrid cgroup layout), so
a test with it could only be skipped here. chroot runs the same files, user and environment;
what it leaves out (namespaces, cgroups, seccomp) is the runtime's part, not the image's.

Root is needed for mmdebstrap, `umoci unpack` and chroot: the tests run them directly as root,
else through passwordless `sudo -n` (as on a CI runner).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.support.tiers import require_marker

BUILD_SCRIPT = ROOT / "scripts" / "build-image.sh"
BUILD_TIMEOUT = 2400  # a cold build takes about 3 minutes on 2 cores; the script bounds itself too
RUN_TIMEOUT = 300
# pytest-timeout's bound for one test of this folder (pyproject.toml's is 300 s): a cold build, then a run
TEST_TIMEOUT = BUILD_TIMEOUT + RUN_TIMEOUT


def as_root() -> list[str]:
    """The prefix that runs a command as root: nothing when we are root, else `sudo -n`."""
    require_marker("tools", "mmdebstrap, umoci and root (scripts/build-image.sh)")
    if os.geteuid() == 0:
        return []
    if (
        shutil.which("sudo")
        and subprocess.run(["sudo", "-n", "true"], capture_output=True, check=False).returncode == 0
    ):
        return ["sudo", "-n"]
    pytest.fail("the image tests need root or passwordless sudo (mmdebstrap, umoci unpack, chroot)")


@dataclass(frozen=True)
class BuiltImage:
    """What `scripts/build-image.sh` reports in image.env."""

    version: str
    digest: str
    layout: Path
    archive: Path
    tag: str

    def blob(self, digest: str) -> Any:
        algorithm, value = digest.split(":", 1)
        return json.loads((self.layout / "blobs" / algorithm / value).read_bytes())

    def manifest(self) -> Any:
        return self.blob(self.digest)

    def config(self) -> Any:
        return self.blob(self.manifest()["config"]["digest"])


def build_image(out: Path, *, cache: bool = True) -> BuiltImage:
    require_marker("tools", "mmdebstrap, umoci and root (scripts/build-image.sh)")
    args = ["bash", str(BUILD_SCRIPT), "--out", str(out)]
    if not cache:
        args.append("--no-cache")
    result = subprocess.run(
        args, cwd=ROOT, capture_output=True, text=True, timeout=BUILD_TIMEOUT, check=False
    )
    assert result.returncode == 0, f"build-image.sh failed:\n{result.stderr[-4000:]}"
    fields = dict(line.split("=", 1) for line in (out / "image.env").read_text().splitlines())
    return BuiltImage(
        version=fields["version"],
        digest=fields["digest"],
        layout=Path(fields["layout"]),
        archive=Path(fields["archive"]),
        tag=fields["tag"],
    )


@pytest.fixture(scope="session")
def image(tmp_path_factory: pytest.TempPathFactory) -> BuiltImage:
    """The image of this checkout, from the build cache when its inputs are unchanged."""
    as_root()
    return build_image(tmp_path_factory.mktemp("image"))


@dataclass(frozen=True)
class Bundle:
    """An unpacked image: its root filesystem and the process its config.json would run."""

    rootfs: Path
    process: Any
    entrypoint: list[str]

    @property
    def uid(self) -> int:
        return int(self.process["user"]["uid"])

    @property
    def gid(self) -> int:
        return int(self.process["user"]["gid"])

    def workdir(self, owner: int | None = None) -> tuple[Path, str]:
        """A fresh directory inside the image (host path, path inside), owned by `owner`."""
        inside = f"/tmp/test-{uuid.uuid4().hex}"
        host = self.rootfs / inside.lstrip("/")
        subprocess.run([*as_root(), "install", "-d", "-o", str(owner or self.uid), str(host)], check=True)
        return host, inside

    def copy_in(self, tree: dict[str, Path], owner: int | None = None) -> str:
        """Copy host directories (by their relative path in `tree`) into a fresh directory inside
        the image, owned by `owner` (default: the image's user); returns its path inside."""
        host, inside = self.workdir(owner)
        uid = owner or self.uid
        for relative, source in tree.items():
            target = host / relative
            subprocess.run([*as_root(), "mkdir", "-p", str(target)], check=True)
            subprocess.run([*as_root(), "cp", "-r", f"{source}/.", str(target)], check=True)
        subprocess.run([*as_root(), "chown", "-R", f"{uid}:{uid}", str(host)], check=True)
        return inside

    def run(
        self,
        args: Sequence[str],
        *,
        entrypoint: bool = True,
        cwd: str | None = None,
        uid: int | None = None,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run `args` in the image as its config would: after the entrypoint (unless
        `entrypoint=False`), with its environment and working directory, as its user (or `uid`)."""
        user = f"{uid if uid is not None else self.uid}:{uid if uid is not None else self.gid}"
        command = [*self.entrypoint, *args] if entrypoint else list(args)
        environment = [*self.process["env"], *(f"{k}={v}" for k, v in (env or {}).items())]
        return subprocess.run(
            [
                *as_root(),
                "chroot",
                f"--userspec={user}",
                f"--groups={user.split(':')[1]}",
                str(self.rootfs),
                "/usr/bin/env",
                "-i",
                f"--chdir={cwd or self.process['cwd']}",
                *environment,
                *command,
            ],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=RUN_TIMEOUT,
            check=False,
        )


@pytest.fixture(scope="session")
def bundle(image: BuiltImage, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bundle]:
    """The image unpacked by umoci (as root, so files keep their owners)."""
    target = tmp_path_factory.mktemp("bundle") / "bundle"
    subprocess.run(
        [*as_root(), "umoci", "unpack", "--image", f"{image.layout}:{image.tag}", str(target)],
        check=True,
        capture_output=True,
        timeout=RUN_TIMEOUT,
    )
    config = json.loads(
        subprocess.run(
            [*as_root(), "cat", str(target / "config.json")], capture_output=True, check=True
        ).stdout
    )
    entrypoint = image.config()["config"]["Entrypoint"]
    assert config["process"]["args"][: len(entrypoint)] == entrypoint
    yield Bundle(rootfs=target / "rootfs", process=config["process"], entrypoint=entrypoint)
    subprocess.run([*as_root(), "rm", "-rf", str(target)], check=True, timeout=RUN_TIMEOUT)
