"""wiring.layout.detect_layout reads a tree's paths by searches over them joined: the layout
it tells is the one the path-by-path reading (every directory through core.layout.app_path)
tells, whatever the paths are."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from btp_gitops.generator.core.layout import app_path
from btp_gitops.generator.wiring.layout import detect_layout

STAGE = re.compile(r"[0-9]{2}-[^/]+/[^/]+")
PART = st.sampled_from(["tenants", "g", "0f", "app", "01-setup", "1-x", "01-", "99-z", ".wiring", ".x", ""])
PATH = st.lists(PART, min_size=1, max_size=6).map("/".join)


def by_directories(paths: list[str]) -> str | None:
    """The target the apps' directories tell, read path by path (no wiring in these trees)."""
    directories = {path.rpartition("/")[0] for path in paths if "/" in path and not path.startswith(".")}
    places = [app_path(f"{directory}/-") for directory in directories]
    if any(STAGE.fullmatch(place.inside) for place in places):
        return "flux"
    if any(place.app for place in places):
        return "argocd"
    return None


@given(st.lists(PATH, max_size=25))
def test_the_layout_read_from_joined_paths_is_the_one_each_directory_tells(paths: list[str]) -> None:
    files = {path: b"" for path in paths if not path.startswith(".wiring/")}
    layout = detect_layout(files)
    assert (layout.target if layout is not None else None) == by_directories(list(files))


def test_a_stage_directory_deep_in_a_tenant_app_is_found_among_many_apps() -> None:
    files = {f"tenants/g/{index % 256:02x}/app-{index}/deployment.yaml": b"" for index in range(2000)}
    assert detect_layout(files).target == "argocd"  # type: ignore[union-attr]
    files["tenants/g/0f/app-15/30-release-jobs/job.yaml"] = b""
    assert detect_layout(files).target == "flux"  # type: ignore[union-attr]
    files = {"app/sub/01-not-a-stage/file.yaml": b""}  # under a subdirectory of the app: no stage
    assert detect_layout(files).target == "argocd"  # type: ignore[union-attr]
