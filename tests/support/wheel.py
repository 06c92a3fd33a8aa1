"""btp-gitops as users get it: the wheel built from this checkout, installed into a fresh venv.

The venv lives in a temporary directory outside the checkout and the installed CLI runs with an
environment that names nothing of the checkout (no PYTHONPATH, an empty working directory), so a
data file missing from the wheel or an import of the checkout fails here as it would for a user.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONSTRAINTS = ROOT / "constraints.txt"


def source_files(root: Path) -> list[str]:
    """The checkout's files as Git sees them: tracked or new, not ignored (no .venv, no build/)."""
    listed = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout
    return sorted(name for name in listed.decode().split("\0") if name and (root / name).exists())


def build_wheel(work: Path) -> Path:
    """btp_gitops-<version>-py3-none-any.whl, as `pip wheel --no-deps` builds it.

    Built from a copy of the working tree, so setuptools' build/ directory (the editable install's
    tree among them) cannot carry files of an earlier build into it, and nothing is written into the
    checkout."""
    source, out = work / "source", work / "wheel"
    for name in source_files(ROOT):
        target = source / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(source)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = out.glob("btp_gitops-*.whl")
    return wheel


@dataclass(frozen=True)
class InstalledProduct:
    venv: Path
    home: Path  # an empty directory: the working directory and HOME of every run

    @property
    def cli(self) -> Path:
        return self.venv / "bin" / "btp-gitops"

    def env(self) -> dict[str, str]:
        keep = {k: v for k, v in os.environ.items() if k in ("LANG", "LC_ALL", "TZ", "TMPDIR")}
        return {
            **keep,
            "PATH": f"{self.venv / 'bin'}:/usr/local/bin:/usr/bin:/bin",
            "HOME": str(self.home),
            "CI": "true",
        }

    def run(
        self, *args: str | Path, stdin: str | None = None, cwd: Path | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.cli), *map(str, args)],
            input=stdin,
            capture_output=True,
            text=True,
            cwd=cwd or self.home,
            env=self.env(),
            check=False,
            timeout=300,
        )

    def python(self, code: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.venv / "bin" / "python"), "-c", code],
            capture_output=True,
            text=True,
            cwd=self.home,
            env=self.env(),
            check=False,
            timeout=120,
        )


def install(wheel: Path, where: Path, extras: str = "") -> InstalledProduct:
    """A new venv under `where` with the wheel (and `extras`) from the package index, pinned like setup."""
    venv, home = where / "venv", where / "home"
    home.mkdir(parents=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True, timeout=120)
    requirement = f"btp-gitops[{extras}] @ {wheel.as_uri()}" if extras else str(wheel)
    constraints = ["--constraint", str(CONSTRAINTS)] if CONSTRAINTS.is_file() else []
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", *constraints, requirement],
        capture_output=True,
        text=True,
        cwd=home,
        env={
            **InstalledProduct(venv, home).env(),
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            # The user's download cache: the same files PyPI would send, fetched once.
            "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip")),
        },
        check=False,
        timeout=900,
    )
    if done.returncode != 0:
        raise RuntimeError(f"pip install {requirement} failed:\n{done.stderr[-4000:]}")
    return InstalledProduct(venv, home)
