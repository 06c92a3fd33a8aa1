"""`btp-gitops diff` end to end: the installed CLI against real Git repositories (gitpython).

A GitOps repo is rendered and committed by `render --commit`; `diff` then renders changed sources
in memory and compares with that repo at a ref (read from Git's objects) or as a directory.
Covers added / changed / removed objects across apps, masking of what someone committed by hand,
the three output formats, markdown truncation, exit codes, and that nothing is written.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import git
import pytest
import yaml

from tests.conftest import CHART, CLI, EXAMPLES, ROOT, RunCli, read_tree

CLUSTER = "demo"
SECRET_VALUE = "c3VwZXItc2VjcmV0LXZhbHVl"  # base64, as a hand-committed Secret would hold it
CA_BUNDLE = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUJhc2VjcmV0"
IDENTITY = {
    "GIT_AUTHOR_NAME": "a",
    "GIT_AUTHOR_EMAIL": "a@b",
    "GIT_COMMITTER_NAME": "a",
    "GIT_COMMITTER_EMAIL": "a@b",
}


def btp_operator_source(target: Path, **spec: object) -> Path:
    shutil.copytree(EXAMPLES / "btp-operator", target)
    config_path = target / "btpoperatorconfig.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["spec"].setdefault("chart", {})["path"] = str(CHART)
    config["spec"].update(spec)
    config_path.write_text(yaml.safe_dump(config, sort_keys=False))
    return target


@pytest.fixture(scope="module")
def gitops(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A GitOps repo with one commit: the BTP operator and the services-only CAP example."""
    repo = tmp_path_factory.mktemp("gitops") / "repo"
    source = btp_operator_source(tmp_path_factory.mktemp("src") / "btp-operator")
    rendered = subprocess.run(
        [
            str(CLI),
            "render",
            source,
            EXAMPLES / "cap-services-only",
            "--out",
            repo,
            "--cluster",
            CLUSTER,
            "--commit",
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert rendered.returncode == 0, rendered.stderr
    return repo


@pytest.fixture
def changed_source(tmp_path: Path) -> Path:
    return btp_operator_source(tmp_path / "btp-operator", clusterId="cluster-b")


def diff(run_cli: RunCli, *args: str | Path, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return run_cli("diff", *args, "--cluster", CLUSTER, cwd=cwd)


def test_added_changed_and_removed_objects_across_apps(
    gitops: Path, run_cli: RunCli, changed_source: Path
) -> None:
    result = diff(
        run_cli,
        changed_source,
        EXAMPLES / "kyma-modules",
        "--against",
        "HEAD",
        "--repo",
        gitops,
        "--output",
        "json",
    )

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    apps = {entry["app"]: entry for entry in report["apps"]}
    assert apps["btp-operator"] == {"app": "btp-operator", "added": 0, "changed": 2, "removed": 0}
    cap_apps = {
        path.name for path in (gitops / "clusters" / CLUSTER).iterdir() if path.name.startswith("cap")
    }
    assert len(cap_apps) >= 2  # the application and its domain
    assert {app for app, entry in apps.items() if entry["removed"] and not entry["added"]} == cap_apps
    assert {app for app, entry in apps.items() if entry["added"] and not entry["removed"]} == {
        "",  # the Kyma record beside the apps
        "kyma-auditlog",
        "kyma-greeter",
    }
    changed = [c for c in report["changes"] if c["change"] == "changed"]
    assert [c["subject"] for c in changed] == [
        "ConfigMap kyma-system/sap-btp-operator-config",
        "Deployment kyma-system/sap-btp-operator-controller-manager",
    ]
    assert "+  CLUSTER_ID: cluster-b\n" in changed[0]["diff"]
    assert report["against"].startswith("HEAD (") and report["changed"] is True


def test_text_output_summarises_per_app_and_shows_unified_diffs(
    gitops: Path, run_cli: RunCli, changed_source: Path
) -> None:
    result = diff(
        run_cli, changed_source, EXAMPLES / "cap-services-only", "--against", "HEAD", "--repo", gitops
    )

    assert result.returncode == 0, result.stderr
    head = git.Repo(gitops).head.commit.hexsha[:12]
    assert result.stdout.startswith(
        f"btp-gitops diff: clusters/{CLUSTER} against HEAD ({head}): 0 added, 2 changed, 0 removed in 1 app\n\n"
        "btp-operator: 0 added, 2 changed, 0 removed\n"
        "  ~ ConfigMap kyma-system/sap-btp-operator-config\n"
        "  ~ Deployment kyma-system/sap-btp-operator-controller-manager\n\n"
        f"--- a/clusters/{CLUSTER}/btp-operator/configmap-sap-btp-operator-config.yaml\n"
        f"+++ b/clusters/{CLUSTER}/btp-operator/configmap-sap-btp-operator-config.yaml\n"
    )
    assert "ExcludedHook" not in result.stdout  # render notes go to stderr
    assert "ExcludedHook" in result.stderr


def test_exit_codes(gitops: Path, run_cli: RunCli, changed_source: Path, tmp_path: Path) -> None:
    same = btp_operator_source(tmp_path / "same")
    unchanged = (same, EXAMPLES / "cap-services-only", "--against", "HEAD", "--repo", gitops)
    changed = (changed_source, EXAMPLES / "cap-services-only", "--against", "HEAD", "--repo", gitops)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "x.yaml").write_text("kind: [\n")

    assert diff(run_cli, *unchanged, "--exit-code").returncode == 0
    assert diff(run_cli, *changed, "--exit-code").returncode == 1
    assert diff(run_cli, *changed).returncode == 0  # changes are not an error without --exit-code
    invalid = diff(run_cli, tmp_path / "broken", "--against", "HEAD", "--repo", gitops, "--exit-code")
    assert invalid.returncode == 3, invalid.stderr
    unknown_ref = diff(
        run_cli, *unchanged[:2], "--against", "no-such-branch", "--repo", gitops, "--exit-code"
    )
    assert unknown_ref.returncode == 2
    assert (
        "--against no-such-branch: not a directory, and not a commit of the Git repository at"
        in unknown_ref.stderr
    )
    no_repo = diff(run_cli, same, "--against", "main", "--repo", tmp_path, "--exit-code")
    assert no_repo.returncode == 2
    assert "is not in a Git repository" in no_repo.stderr
    too_short = diff(run_cli, *changed, "--output", "markdown", "--max-length", "100")
    assert too_short.returncode == 2
    assert "--max-length must be at least 1000" in too_short.stderr


def test_a_ref_a_directory_and_the_default_repo_agree(
    gitops: Path, run_cli: RunCli, changed_source: Path
) -> None:
    sources = (changed_source, EXAMPLES / "cap-services-only")
    by_ref = diff(run_cli, *sources, "--against", "main", "--repo", gitops, "--output", "json")
    by_directory = diff(run_cli, *sources, "--against", gitops, "--output", "json")
    from_inside = diff(run_cli, *sources, "--against", "main", "--output", "json", cwd=gitops / "clusters")

    reports = [json.loads(r.stdout)["changes"] for r in (by_ref, by_directory, from_inside)]
    assert reports[0] == reports[1] == reports[2]
    assert len(reports[0]) == 2


def test_an_older_ref_and_a_repo_inside_a_larger_work_tree(tmp_path: Path, run_cli: RunCli) -> None:
    """The rendered repo may be a folder of a bigger repository; refs are of that repository."""
    outer = tmp_path / "platform"
    git.Repo.init(outer, initial_branch="main").close()
    rendered = outer / "gitops"
    rendered.mkdir()
    first = btp_operator_source(tmp_path / "first")
    second = btp_operator_source(tmp_path / "second", enableLimitedCache=False)
    for source in (first, second):
        result = run_cli("render", source, "--out", rendered, "--cluster", CLUSTER, "--commit", cwd=ROOT)
        assert result.returncode == 0, result.stderr

    against_head = diff(run_cli, second, "--against", "HEAD", "--repo", rendered, "--exit-code")
    against_first = diff(run_cli, second, "--against", "HEAD~1", "--repo", rendered, "--exit-code")

    assert against_head.returncode == 0, against_head.stderr
    assert against_first.returncode == 1, against_first.stderr
    assert "+  ENABLE_LIMITED_CACHE: 'false'" in against_first.stdout


def test_a_new_cluster_shows_everything_added(tmp_path: Path, run_cli: RunCli) -> None:
    repo = git.Repo.init(tmp_path / "new", initial_branch="main")
    (tmp_path / "new" / "README.md").write_text("GitOps\n")
    repo.git.add("README.md")
    repo.git.commit("-m", "start", env=IDENTITY)

    result = diff(
        run_cli,
        btp_operator_source(tmp_path / "src"),
        "--against",
        "main",
        "--repo",
        tmp_path / "new",
        "--new-cluster",
        "--output",
        "json",
    )

    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)["summary"]
    assert summary["added"] > 20 and summary["changed"] == summary["removed"] == 0


def test_diff_writes_nothing(gitops: Path, run_cli: RunCli, changed_source: Path) -> None:
    before = read_tree(gitops)
    with git.Repo(gitops) as repo:
        head = repo.head.commit.hexsha

        result = diff(
            run_cli,
            changed_source,
            "--against",
            "HEAD",
            "--repo",
            gitops,
            "--target",
            "flux",
            "--emit-wiring",
            "--repo-url",
            "https://example.com/g.git",
            "--allow-layout-change",
        )

        assert result.returncode == 0, result.stderr
        assert repo.head.commit.hexsha == head
        assert not repo.is_dirty(untracked_files=True)
    assert read_tree(gitops) == before
    assert "  + Kustomization flux-system/btp-operator-00-crds\n" in result.stdout
    assert (
        "  ~ ClusterRole sap-btp-operator-manager-role (moved from btp-operator/clusterrole-sap-btp-operator-manager-role.yaml)\n"
        in result.stdout
    )


def test_secret_values_and_ca_bundles_committed_by_hand_are_masked(tmp_path: Path, run_cli: RunCli) -> None:
    """Someone committed a Secret with data and a live caBundle into the rendered repo: the diff
    shows them going away without showing either value, in every format."""
    repo_dir = tmp_path / "gitops"
    source = btp_operator_source(tmp_path / "src")
    result = run_cli("render", source, "--out", repo_dir, "--cluster", CLUSTER, "--commit", cwd=ROOT)
    assert result.returncode == 0, result.stderr
    app = repo_dir / "clusters" / CLUSTER / "btp-operator"
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "sap-btp-manager", "namespace": "kyma-system"},
        "data": {"clientsecret": SECRET_VALUE},
    }
    (app / "secret-sap-btp-manager.yaml").write_text(yaml.safe_dump(secret))
    webhook_path = next(app.glob("mutatingwebhookconfiguration-*.yaml"))
    webhook = yaml.safe_load(webhook_path.read_text())
    webhook["webhooks"][0]["clientConfig"]["caBundle"] = CA_BUNDLE
    webhook_path.write_text(yaml.safe_dump(webhook, sort_keys=False))
    with git.Repo(repo_dir) as repo:
        repo.git.add("--all")
        repo.git.commit("-m", "hand edit", env=IDENTITY)

    outputs = {
        output: diff(run_cli, source, "--against", "HEAD", "--repo", repo_dir, "--output", output)
        for output in ("text", "markdown", "json")
    }

    for output, result in outputs.items():
        assert result.returncode == 0, result.stderr
        assert SECRET_VALUE not in result.stdout, output
        assert CA_BUNDLE not in result.stdout, output
    text = outputs["text"].stdout
    assert "  - Secret kyma-system/sap-btp-manager\n" in text
    assert "-  clientsecret: <masked>\n" in text
    assert "  ~ MutatingWebhookConfiguration sap-btp-operator-mutating-webhook-configuration\n" in text
    assert "-    caBundle: <masked>\n" in text


def test_markdown_stays_under_the_limit_with_a_note(tmp_path: Path, run_cli: RunCli) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()

    result = diff(
        run_cli,
        btp_operator_source(tmp_path / "src"),
        "--against",
        empty,
        "--new-cluster",
        "--output",
        "markdown",
        "--max-length",
        "3000",
    )

    assert result.returncode == 0, result.stderr
    assert len(result.stdout) <= 3000
    assert "| `btp-operator` |" in result.stdout
    assert "> [!NOTE]\n> Truncated to 3,000 characters: the diffs of " in result.stdout


# --- the tree compared with must be the one meant -------------------------------------------------

URL = ("--repo-url", "https://example.com/gitops.git")
LAYOUTS = {
    "argocd": ("--target", "argocd"),
    "argocd-wired": ("--target", "argocd", "--emit-wiring", *URL),
    "flux": ("--target", "flux"),
    "flux-wired": ("--target", "flux", "--emit-wiring", *URL),
}


@pytest.fixture(scope="module")
def layouts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One committed GitOps repo per layout, each with cluster `demo` rendered from the same source."""
    source = btp_operator_source(tmp_path_factory.mktemp("layout-src") / "btp-operator")
    repos = {}
    for name, options in LAYOUTS.items():
        repo = tmp_path_factory.mktemp(name) / "repo"
        rendered = subprocess.run(
            [str(CLI), "render", source, "--out", repo, "--cluster", CLUSTER, "--commit", *options],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=False,
        )
        assert rendered.returncode == 0, rendered.stderr
        repos[name] = repo
    repos["source"] = source
    return repos


@pytest.mark.parametrize("by", ["ref", "directory"])
@pytest.mark.parametrize(
    ("repo", "cluster", "message"),
    [
        (
            "argocd",
            "demi",
            "clusters/demi at {at} does not exist; the clusters there are demo: is --cluster misspelt? "
            "(--new-cluster compares with an empty cluster directory, for a cluster not rendered yet)",
        ),
        (
            "sources",
            CLUSTER,
            "clusters/demo at {at} does not exist; there is no clusters/ directory: not a repository "
            "btp-gitops renders into",
        ),
        (
            "empty-clusters",
            CLUSTER,
            "clusters/demo at {at} does not exist; clusters/ holds no cluster directory",
        ),
        (
            "hand-made",
            CLUSTER,
            "clusters/demo at {at} was not written by `btp-gitops render` (it has no .btp-gitops-files)",
        ),
    ],
)
def test_a_cluster_directory_that_is_not_there_is_an_error(
    layouts: dict[str, Path], tmp_path: Path, run_cli: RunCli, by: str, repo: str, cluster: str, message: str
) -> None:
    if repo == "argocd":
        root = layouts["argocd"]
    else:  # a Git repository that is no rendered one
        root = tmp_path / repo
        files = {
            "sources": {"btpoperatorconfig.yaml": "kind: BtpOperatorConfig\n"},
            "empty-clusters": {"clusters/README.md": "no cluster yet\n"},
            "hand-made": {"clusters/demo/app/deployment.yaml": "kind: Deployment\n"},
        }[repo]
        for path, text in files.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)
        with git.Repo.init(root, initial_branch="main") as created:
            created.git.add("-A")
            created.git.commit("-m", "not rendered", env=IDENTITY)
    with git.Repo(root) as opened:
        head = opened.head.commit.hexsha[:12]
    against = ("--against", "HEAD", "--repo", root) if by == "ref" else ("--against", root)
    at = f"HEAD ({head})" if by == "ref" else f"directory {root}"

    result = run_cli("diff", layouts["source"], *against, "--cluster", cluster, "--exit-code", cwd=ROOT)

    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert message.format(at=at) in result.stderr
    assert "Traceback" not in result.stderr


def test_new_cluster_compares_with_an_empty_directory_where_there_is_none(
    layouts: dict[str, Path], tmp_path: Path, run_cli: RunCli
) -> None:
    result = run_cli(
        "diff",
        layouts["source"],
        "--against",
        tmp_path,
        "--cluster",
        CLUSTER,
        "--new-cluster",
        "--output",
        "json",
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)["summary"]
    assert summary["added"] > 20 and summary["changed"] == summary["removed"] == 0


EVIDENCE = {
    "argocd": "--target argocd (it has no .wiring/ and no stage directories)",
    "argocd-wired": "--target argocd --emit-wiring (.wiring/ holds an Argo CD ApplicationSet)",
    "flux": "--target flux (.wiring/ holds Flux Kustomizations)",
    "flux-wired": "--target flux --emit-wiring (.wiring/ holds Flux Kustomizations and a GitRepository)",
}


@pytest.mark.parametrize("rendered", sorted(LAYOUTS))
@pytest.mark.parametrize("asked", sorted(LAYOUTS))
def test_a_layout_other_than_the_repositorys_is_reported(
    layouts: dict[str, Path], run_cli: RunCli, rendered: str, asked: str
) -> None:
    """Every pair of layouts: the same one compares (nothing changed); any other is one error
    naming both, not dozens of moved files; --allow-layout-change shows the change all the same."""
    against = ("--against", "HEAD", "--repo", layouts[rendered], "--cluster", CLUSTER, "--exit-code")

    result = run_cli("diff", layouts["source"], *against, *LAYOUTS[asked], cwd=ROOT)

    if rendered == asked:
        assert result.returncode == 0, result.stderr
        return
    assert result.returncode == 2, result.stderr
    asked_options = " ".join(o for o in LAYOUTS[asked] if o not in URL)
    assert f"was rendered with {EVIDENCE[rendered]}, this diff renders with {asked_options}:" in result.stderr
    assert result.stdout == ""
    allowed = run_cli("diff", layouts["source"], *against, *LAYOUTS[asked], "--allow-layout-change", cwd=ROOT)
    assert allowed.returncode == 1, allowed.stderr
