"""What a release tag publishes, decided before anything is published (.github/workflows/release.yml).

    python scripts/release.py check TAG

checks that TAG is `v` + `btp_gitops.__version__` and that the chart `charts/btp-gitops` and the
Helm plugin `helm-plugin/` carry the same version, then prints, as `name=value` lines (the form
of $GITHUB_OUTPUT):

- `version`: the version without the `v`;
- `prerelease`: `true` unless the version is a final release `X.Y.Z` (PEP 440 pre-, post- and
  dev-releases such as `0.2.0rc1` are pre-releases here: they never become "latest");
- `latest`: `true` when the image tag `latest` moves to this release: a final release that is at
  least as high as every other final-release tag `vX.Y.Z` of the repository (a patch of an older
  line, 0.1.5 after 0.2.0, publishes `0.1.5` but leaves `latest` on 0.2.0);
- `image-tags`: the image tags to push, separated by spaces: the version, and `latest` as above.

The version is read from the file, not imported: this runs before anything is installed. Only
the standard library is used. Exit status 1 with a message on stderr when anything disagrees.
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FINAL = re.compile(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)")
TOP_LEVEL_FIELD = re.compile(r"^(?P<key>[A-Za-z]+):\s*[\"']?(?P<value>[^\"'\s#]+)[\"']?\s*(?:#.*)?$")


class ReleaseError(Exception):
    pass


@dataclass(frozen=True)
class Release:
    version: str
    prerelease: bool
    latest: bool

    @property
    def image_tags(self) -> list[str]:
        return [self.version, "latest"] if self.latest else [self.version]

    def outputs(self) -> str:
        lines = {
            "version": self.version,
            "prerelease": str(self.prerelease).lower(),
            "latest": str(self.latest).lower(),
            "image-tags": " ".join(self.image_tags),
        }
        return "".join(f"{name}={value}\n" for name, value in lines.items())


def package_version(root: Path) -> str:
    """`__version__` of src/btp_gitops/__init__.py, as written there."""
    source = root / "src" / "btp_gitops" / "__init__.py"
    for node in ast.parse(source.read_text(), filename=str(source)).body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(target, "id", None) for target in node.targets] == ["__version__"]
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value
    raise ReleaseError(f'{source}: no `__version__ = "..."`')


def yaml_field(path: Path, key: str) -> str:
    """A top-level scalar of a flat YAML file (Chart.yaml, plugin.yaml), without a YAML library."""
    for line in path.read_text().splitlines():
        match = TOP_LEVEL_FIELD.match(line)
        if match and match["key"] == key:
            return match["value"]
    raise ReleaseError(f"{path}: no top-level {key}")


def final_release(version: str) -> tuple[int, int, int] | None:
    match = FINAL.fullmatch(version)
    return (int(match[1]), int(match[2]), int(match[3])) if match else None


def decide(tag: str, root: Path, other_tags: Iterable[str]) -> Release:
    version = package_version(root)
    if tag != f"v{version}":
        raise ReleaseError(f"tag {tag} does not match btp_gitops.__version__ {version} (expected v{version})")
    chart = root / "charts" / "btp-gitops" / "Chart.yaml"
    plugin = root / "helm-plugin" / "plugin.yaml"
    for path, key in ((chart, "version"), (chart, "appVersion"), (plugin, "version")):
        found = yaml_field(path, key)
        if found != version:
            raise ReleaseError(f"{path.relative_to(root)}: {key} is {found}, the release is {version}")
    this = final_release(version)
    if this is None:
        return Release(version, prerelease=True, latest=False)
    others = [final_release(other.removeprefix("v")) for other in other_tags if other.startswith("v")]
    latest = all(other is None or other <= this for other in others)
    return Release(version, prerelease=False, latest=latest)


def repository_tags(root: Path) -> list[str]:
    result = subprocess.run(
        ["git", "-C", str(root), "tag", "--list", "v*"], capture_output=True, text=True, check=True
    )
    return result.stdout.split()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="check a tag against the sources and print the release")
    check.add_argument("tag", help="the pushed tag, e.g. v0.1.0")
    check.add_argument("--root", type=Path, default=ROOT, help="the checkout (default: this script's)")
    arguments = parser.parse_args(argv)
    try:
        release = decide(arguments.tag, arguments.root, repository_tags(arguments.root))
    except ReleaseError as error:
        print(f"release: {error}", file=sys.stderr)
        return 1
    sys.stdout.write(release.outputs())
    return 0


if __name__ == "__main__":
    sys.exit(main())
