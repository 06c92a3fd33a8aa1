"""One new tenant in a 1,000-tenant source changes only that tenant's files.

The shop application with 1,000 tenants in every situation a render meets (running on the newest
version, upgrading with three steps, just subscribed, being deprovisioned) is rendered with
`--commit` into a real Git repository; then one tenant file is added and the render committed
again. The second commit must only add files, all in the new tenant's app directory, and the
writer must report the same; the first commit, of thousands of files, has a message that lists
the first of them and counts the rest. Real components: the in-process render pipeline, the repo writer
and Git (gitpython); nothing is faked.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import git
import pytest

from btp_gitops.generator.core.layout import app_path
from btp_gitops.generator.core.ownership import MANIFEST_FILE, is_manifest
from btp_gitops.generator.io.helm import EmbeddedHelm
from btp_gitops.generator.io.schemas import load_schema_registry
from btp_gitops.generator.pipeline.render import RenderRequest, RenderResult, render_into_repo
from tests.cap_tenants.conftest import (
    CLUSTER,
    recorded_status,
    tenant_dir,
    tenant_files,
    tenant_record,
    write_tenants,
)

TENANTS = 1000


def situation(index: int) -> dict[str, Any]:
    name = f"customer-{index:04d}"
    if index % 10 == 0:
        return tenant_record(name)  # just subscribed: provisioning
    if index % 10 == 1:
        return tenant_record(
            name, status=recorded_status("shop-3"), annotations={"btp-gitops.io/deprovision": "true"}
        )
    if index % 10 in (2, 3, 4):
        return tenant_record(name, status=recorded_status("shop-2"))  # upgrading to shop-3
    return tenant_record(name, status=recorded_status("shop-3"))


def render_and_commit(source: Path, repo: Path) -> RenderResult:
    request = RenderRequest(sources=(source,), out=repo, cluster=CLUSTER, commit=True)
    return render_into_repo(request, EmbeddedHelm(), load_schema_registry())


@pytest.mark.slow
def test_one_new_tenant_changes_only_its_own_files(shop_source: Path, tmp_path: Path) -> None:
    write_tenants(shop_source, [situation(index) for index in range(TENANTS)])
    repo_dir = tmp_path / "repo"
    first = render_and_commit(shop_source, repo_dir)
    assert first.commit is not None
    assert sum(1 for path in first.files if app_path(path).app.startswith("cap-tenant.")) > 3 * TENANTS

    write_tenants(shop_source, [tenant_record("newcomer", status=recorded_status("shop-2"))])
    second = render_and_commit(shop_source, repo_dir)

    [directory] = {app_path(path).directory for path in tenant_files(second.files, "newcomer")}
    assert directory.startswith("tenants/")  # its shard directory: the trees above it stay small
    own = f"clusters/{CLUSTER}/{directory}/"
    with git.Repo(repo_dir) as repo:
        commit = repo.commit(second.commit)
        changes = [(diff.change_type, diff.b_path) for diff in commit.parents[0].diff(commit)]
        # Thousands of files: the first commit's message lists some and counts the rest.
        assert "\n... and " in str(repo.commit(first.commit).message)
    assert changes, "the new tenant rendered nothing"
    # The ownership manifest of the tenant's shard gains the new files (its group's lists the shard's
    # manifest when the shard is new); the cluster directory's manifest and everything else outside
    # the tenant's directory stay as they were.
    shard = directory.rpartition("/")[0]
    manifests = {path for _, path in changes if is_manifest(path)}
    assert f"clusters/{CLUSTER}/{shard}/{MANIFEST_FILE}" in manifests
    assert manifests <= {
        f"clusters/{CLUSTER}/{part}/{MANIFEST_FILE}" for part in (shard, shard.rpartition("/")[0])
    }
    changes = [(change_type, path) for change_type, path in changes if not is_manifest(path)]
    assert {change_type for change_type, _ in changes} == {"A"}
    assert all(path.startswith(own) for _, path in changes), [p for _, p in changes if not p.startswith(own)]
    assert len(changes) == 7  # CAPTenant, DNS entry, three upgrade Jobs, VirtualService, kustomization.yaml
    assert second.changes.changed == () and second.changes.removed == ()
    assert all(app_path(path).app == tenant_dir("newcomer") for path in second.changes.added)
