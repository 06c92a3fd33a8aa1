"""Every third-party action the project runs is pinned by a full commit SHA.

A tag or branch can be moved to other code by whoever controls the action's repository; a
40-hex commit cannot. This covers every workflow and every action under `.github/` (the render
action's steps included), at any depth of the YAML, and the trailing `# vX.Y.Z` comment that
names the release Dependabot keeps in step. Local actions (`./...`) and Docker images
(`docker://...@sha256:...`) are the only other forms allowed.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT

GITHUB_DIR = ROOT / ".github"
PINNED = re.compile(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_./-]+@[0-9a-f]{40}")
DOCKER_PINNED = re.compile(r"docker://[^@\s]+@sha256:[0-9a-f]{64}")
USES_LINE = re.compile(r"^\s*-?\s*uses:\s*(?P<ref>\S+)(?P<comment>.*)$", re.MULTILINE)
VERSION_COMMENT = re.compile(r"\s+# v\d+\.\d+\.\d+\b")


def github_yaml_files() -> list[Path]:
    return sorted(path for path in GITHUB_DIR.rglob("*") if path.suffix in (".yml", ".yaml"))


def uses_values(node: Any) -> Iterator[str]:
    """Every `uses:` value anywhere in a loaded YAML document (steps, reusable-workflow jobs)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "uses" and isinstance(value, str):
                yield value
            else:
                yield from uses_values(value)
    elif isinstance(node, list):
        for value in node:
            yield from uses_values(value)


def unpinned(reference: str) -> bool:
    if reference.startswith("./"):
        return False
    if reference.startswith("docker://"):
        return DOCKER_PINNED.fullmatch(reference) is None
    return PINNED.fullmatch(reference) is None


def test_the_project_has_workflows_and_the_render_action_to_check() -> None:
    names = {path.relative_to(GITHUB_DIR).as_posix() for path in github_yaml_files()}
    assert {"workflows/ci.yml", "workflows/release.yml", "actions/render/action.yml"} <= names


@pytest.mark.parametrize(
    "path", github_yaml_files(), ids=lambda path: path.relative_to(GITHUB_DIR).as_posix()
)
def test_every_third_party_action_is_pinned_by_commit(path: Path) -> None:
    references = list(uses_values(yaml.safe_load(path.read_text())))
    assert [ref for ref in references if unpinned(ref)] == []


@pytest.mark.parametrize(
    "path", github_yaml_files(), ids=lambda path: path.relative_to(GITHUB_DIR).as_posix()
)
def test_every_pin_names_its_release_in_a_comment(path: Path) -> None:
    lines = USES_LINE.finditer(path.read_text())
    missing = [
        match["ref"]
        for match in lines
        if PINNED.fullmatch(match["ref"]) and not VERSION_COMMENT.match(match["comment"])
    ]
    assert missing == []


@pytest.mark.parametrize(
    "reference",
    [
        "actions/checkout@v4",
        "actions/checkout@v4.2.2",
        "actions/checkout@main",
        "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af68",  # 39 hex: abbreviated
        "actions/checkout@11BD71901BBE5B1630CEEA73D27597364C9AF683",  # not how Git names commits
        "actions/checkout",
        "docker://alpine:3.20",
    ],
)
def test_a_tag_a_branch_or_a_short_sha_is_not_a_pin(reference: str) -> None:
    assert unpinned(reference)


@pytest.mark.parametrize(
    "reference",
    [
        "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683",
        "github/codeql-action/init@0123456789abcdef0123456789abcdef01234567",
        "./.github/actions/render",
        "docker://alpine@sha256:" + "a" * 64,
    ],
)
def test_a_commit_a_local_action_or_a_digest_is(reference: str) -> None:
    assert not unpinned(reference)


def test_uses_is_found_at_any_depth() -> None:
    document = yaml.safe_load(
        "jobs:\n"
        "  a:\n    uses: org/repo/.github/workflows/x.yml@v1\n"
        "  b:\n    steps:\n      - uses: actions/cache@v4\n      - run: echo\n"
    )
    assert sorted(uses_values(document)) == ["actions/cache@v4", "org/repo/.github/workflows/x.yml@v1"]
