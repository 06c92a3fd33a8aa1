#!/usr/bin/env python3
"""Set the btp-gitops version everywhere it is written, from its one source.

    python3 scripts/set-version.py 0.2.0     # write 0.2.0 into src/btp_gitops/__init__.py and every copy
    python3 scripts/set-version.py --check   # exit 1 and name each copy that disagrees with __version__

`src/btp_gitops/__init__.py` `__version__` is the source (pyproject.toml reads it). The copies are the
places a user sees the version without Python: the controller chart's version and appVersion, the
`helm install` commands of its README, the Helm plugin, the image tag of the Argo CD sidecar patch,
and the render action's references in the GitHub Actions page of the docs. Not copies:
charts/sap-btp-operator (the upstream operator chart's own version) and module-resources/
(generated from that chart).

Each copy is one regular expression whose group `v` is the version; a copy that no longer matches
exactly as often as it should is an error, so a moved or renamed line cannot be skipped silently.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = "src/btp_gitops/__init__.py"
VERSION = re.compile(r"^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$")  # SemVer, as Helm requires for charts


@dataclass(frozen=True)
class Copy:
    path: str
    pattern: re.Pattern[str]
    count: int = 1  # how many times the pattern occurs in the file


PLACES = (
    Copy(SOURCE, re.compile(r'^__version__ = "(?P<v>[^"]+)"$', re.MULTILINE)),
    Copy("charts/btp-gitops/Chart.yaml", re.compile(r"^version: (?P<v>\S+)$", re.MULTILINE)),
    Copy("charts/btp-gitops/Chart.yaml", re.compile(r'^appVersion: "(?P<v>[^"]+)"$', re.MULTILINE)),
    Copy(
        "charts/btp-gitops/README.md",
        re.compile(r"oci://ghcr\.io/btp-gitops/charts/btp-gitops --version (?P<v>\S+)"),
        count=2,
    ),
    Copy("helm-plugin/plugin.yaml", re.compile(r"^version: (?P<v>\S+)$", re.MULTILINE)),
    Copy(
        "argocd-cmp/repo-server-patch.yaml",
        re.compile(r"^\s+image: \S*btp-gitops:(?P<v>[^\s@]+)", re.MULTILINE),
    ),
    Copy(
        "docs/gitops/github-actions.md",
        re.compile(r"btp-gitops/\.github/actions/render@v(?P<v>[^\s`'\"]+)"),
        count=4,
    ),
)


def current_version(root: Path) -> str:
    match = PLACES[0].pattern.search((root / SOURCE).read_text(encoding="utf-8"))
    if match is None:
        raise SystemExit(f"{SOURCE}: no __version__ line")
    return match["v"]


def found(root: Path, copy: Copy) -> list[re.Match[str]]:
    matches = list(copy.pattern.finditer((root / copy.path).read_text(encoding="utf-8")))
    if len(matches) != copy.count:
        raise SystemExit(
            f"{copy.path}: expected {copy.count} match(es) of {copy.pattern.pattern!r}, found {len(matches)}"
        )
    return matches


def disagreements(root: Path) -> list[str]:
    """One line per copy whose version is not `__version__`."""
    version = current_version(root)
    return [
        f"{copy.path}: {match[0].strip()!r} has {match['v']}, __version__ is {version}"
        for copy in PLACES
        for match in found(root, copy)
        if match["v"] != version
    ]


def set_version(root: Path, version: str) -> None:
    """Rewrite every copy; all are checked first, so a failure leaves every file as it was."""
    for copy in PLACES:
        found(root, copy)
    for path in dict.fromkeys(copy.path for copy in PLACES):
        text = (root / path).read_text(encoding="utf-8")
        for copy in (c for c in PLACES if c.path == path):
            # From the last match back, so the offsets of earlier matches stay valid.
            for match in reversed(list(copy.pattern.finditer(text))):
                text = text[: match.start("v")] + version + text[match.end("v") :]
        (root / path).write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("version", nargs="?", help="the new version (SemVer: 1.2.3 or 1.2.3-rc.1)")
    parser.add_argument("--check", action="store_true", help="only report copies that disagree")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.check == bool(args.version):
        parser.error("give either a version or --check")
    if args.check:
        problems = disagreements(args.root)
        for line in problems:
            print(line, file=sys.stderr)
        return 1 if problems else 0
    if not VERSION.match(args.version):
        parser.error(f"{args.version!r} is not a SemVer version (1.2.3 or 1.2.3-rc.1)")
    set_version(args.root, args.version)
    print(f"btp-gitops version: {args.version} ({len({c.path for c in PLACES})} files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
