"""Start-up: a command imports what it needs and nothing heavier (a behaviour test, not a timing test).

Helm runs `btp-gitops post-render` on every install and upgrade, where starting the interpreter and
importing is most of the work, and `--version` is what scripts call to probe the tool. Each case
runs the installed console script in a fresh interpreter that writes down `sys.modules` as it
exits (`-X importtime` would miss the command modules `importlib.import_module` loads), and checks the heavy packages (the Kubernetes client, the schema
validator, GitPython, cryptography, the embedded Helm engine, the entry-point scan) and the
heavy parts of btp-gitops itself (the render pipeline, the CAP and Kyma domains, the controller)
against what the command may load. `render` and `diff` pay for their pipeline, but not for
`--help` or a refused command line, and not for a mode they do not run (`--validate`, a Git ref,
a chart). The control cases show that the same check sees a heavy package when a mode really
needs it. bench/startup.py measures the time and memory this saves.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CHART, CLI
from tests.support.tools import tool_path

# Packages (and modules of ours) that only some commands or modes need.
HEAVY = (
    "kubernetes",  # post-render --from-cluster
    "urllib3",
    "jsonschema",  # schema validation: render, validate, post-render --domain cap|kyma
    "referencing",
    "git",  # render --commit, diff --against REF
    "gitdb",
    "cryptography",  # self-signed certificates; loading a DER key found in a text
    "helm_python",  # the embedded Helm engine: rendering a chart
    "semver",  # CAP and Kyma versions
    "importlib.metadata",  # reading entry points: the controller's commands
    "btp_gitops.controller",
    "btp_gitops.generator.pipeline.render",
    "btp_gitops.generator.pipeline.post_render_sources",
    "btp_gitops.generator.domains.cap",
    "btp_gitops.generator.domains.kyma",
    "btp_gitops.generator.manifests",
    "btp_gitops.generator.io.helm",
)


# Runs the console script as its own interpreter would, then lists every module left imported.
_CHILD = """
import atexit, runpy, sys
report, script = sys.argv[1], sys.argv[2]
atexit.register(lambda: open(report, "w").write("\\n".join(sorted(sys.modules))))
sys.argv = sys.argv[2:]
runpy.run_path(script, run_name="__main__")
"""


Run = Callable[..., tuple[subprocess.CompletedProcess[str], set[str]]]


@pytest.fixture
def imported_by(tmp_path: Path) -> Run:
    """Runs the installed CLI; returns its result and every module it imported."""
    report = tmp_path / "modules"
    return lambda *args, stdin="": _run(report, args, stdin)


def _run(
    report: Path, args: tuple[str, ...], stdin: str
) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    report.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(report), str(CLI), *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    modules = set(report.read_text().split())
    assert modules, "the child process wrote no module list"
    return done, modules


def heavy_among(modules: set[str]) -> list[str]:
    return sorted(m for m in modules for heavy in HEAVY if m == heavy or m.startswith(f"{heavy}."))


@pytest.fixture(scope="module")
def chart_stream() -> str:
    """The SAP BTP operator chart as `helm template` hands it to a post-renderer."""
    done = subprocess.run(
        [str(tool_path("helm3")), "template", "sap-btp-operator", str(CHART), "--namespace", "kyma-system"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return done.stdout


def test_version_imports_nothing_heavy(imported_by: Run) -> None:
    done, modules = imported_by("--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("btp-gitops ")
    assert heavy_among(modules) == []
    assert "yaml" not in modules  # not even PyYAML: printing the version reads no YAML
    assert "btp_gitops.generator.cli.render" not in modules  # no command's module


def test_post_render_of_an_empty_stream_imports_nothing_heavy(imported_by: Run) -> None:
    done, modules = imported_by("post-render", "--allow-empty", stdin="")  # without it: refused, exit 4
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert heavy_among(modules) == []
    assert "btp_gitops.generator.pipeline.post_render" in modules  # the check sees our modules
    commands = {m for m in modules if m.startswith("btp_gitops.generator.cli.")}
    assert commands == {"btp_gitops.generator.cli.post_render", "btp_gitops.generator.cli.output"}


@pytest.mark.tools
def test_post_render_of_the_chart_imports_nothing_heavy(imported_by: Run, chart_stream: str) -> None:
    """The default mode (cert-manager) on a real stream: the transforms and the writer do not
    need any of the heavy packages either, Secrets and webhooks included."""
    done, modules = imported_by("post-render", stdin=chart_stream)
    assert done.returncode == 0, done.stderr
    assert "kind: Certificate" in done.stdout
    assert heavy_among(modules) == []


# What loads OpenSSL (hashlib: ~4 MiB of post-render's peak memory) and chart rendering's helpers.
CHECKSUM_AND_CHART_MODULES = (
    "hashlib",
    "uuid",
    "btp_gitops.generator.charts.deterministic",
    "btp_gitops.generator.transforms.volatile",
)
GOLDEN = Path(__file__).parents[1] / "post_render" / "golden"


def test_a_stream_without_the_operator_configmap_loads_no_hashing(imported_by: Run) -> None:
    """A chart's stream that holds no operator ConfigMap has no config checksum to compute and no
    chart to render: post-render does not load hashlib (and so OpenSSL) or the chart helpers."""
    stream = (GOLDEN / "bench-helm3.in.yaml").read_text(encoding="utf-8")
    assert "name: sap-btp-operator-config" not in stream
    done, modules = imported_by("post-render", stdin=stream)
    assert done.returncode == 0, done.stderr
    assert "kind: Certificate" in done.stdout
    assert sorted(modules.intersection(CHECKSUM_AND_CHART_MODULES)) == []


def test_the_operator_configmap_loads_hashlib_for_its_checksum(imported_by: Run) -> None:
    """The control: the operator chart's stream has the ConfigMap whose checksum rolls the
    operator's pods, and the same check sees hashlib loaded for it (no chart helper, though)."""
    stream = (GOLDEN / "operator-chart.in.yaml").read_text(encoding="utf-8")
    done, modules = imported_by("post-render", stdin=stream)
    assert done.returncode == 0, done.stderr
    assert "checksum/config" in done.stdout
    assert sorted(modules.intersection(CHECKSUM_AND_CHART_MODULES)) == ["hashlib"]


@pytest.mark.tools
def test_self_signed_mode_loads_cryptography_when_it_makes_keys(imported_by: Run, chart_stream: str) -> None:
    """The control: the same check sees the package a mode really needs."""
    done, modules = imported_by("post-render", "--certificates", "self-signed", stdin=chart_stream)
    assert done.returncode == 0, done.stderr
    assert "cryptography" in modules
    assert {m.partition(".")[0] for m in heavy_among(modules)} == {"cryptography"}


def test_a_controller_command_is_found_through_its_entry_point(imported_by: Run) -> None:
    """The entry points are read when the command is not one of ours; `--help` lists both kinds."""
    done, modules = imported_by("--help")
    assert done.returncode == 0, done.stderr
    for command in ("render", "module-resources", "crds", "post-render", "diff", "validate", "controller"):
        assert f"    {command} " in done.stdout, command
    assert "importlib.metadata" in modules
    done, _ = imported_by("-h", "render")  # the top-level help, all commands listed
    assert done.returncode == 0, done.stderr
    assert "    controller " in done.stdout and "    validate " in done.stdout
    done, _ = imported_by("controller", "--help")
    assert done.returncode == 0, done.stderr
    assert "usage: btp-gitops controller" in done.stdout


def test_an_unknown_command_is_refused_with_the_list_of_commands(imported_by: Run) -> None:
    done, _ = imported_by("rendr")
    assert done.returncode == 2
    assert "invalid choice: 'rendr'" in done.stderr
    assert "'subscription-server'" in done.stderr


def test_a_command_parses_only_its_own_options(imported_by: Run) -> None:
    """Options of another command are refused as before (only the command named is built)."""
    done, _ = imported_by("post-render", "--cluster", "x")
    assert done.returncode == 2
    assert "unrecognized arguments: --cluster x" in done.stderr


def test_render_without_commit_does_not_load_git(imported_by: Run, tmp_path: Path) -> None:
    """GitPython is for `--commit`; a render into a directory (or to stdout) must not pay for it.
    The control commits and so loads it."""
    source = Path(__file__).resolve().parents[2] / "examples" / "cap-app"
    done, modules = imported_by("render", str(source), "--out", str(tmp_path / "plain"))
    assert done.returncode == 0, done.stderr
    assert "btp_gitops.generator.pipeline.render" in modules  # the check sees the render
    assert not {m for m in modules if m == "git" or m.startswith("git.")}

    repo = tmp_path / "committed"
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=60)
    done, modules = imported_by("render", str(source), "--out", str(repo), "--commit")
    assert done.returncode == 0, done.stderr
    assert "git" in modules


# What the render pipeline loads and `render --help` or a refused command line does not need.
PIPELINE = (
    "jsonschema",
    "referencing",
    "git",
    "semver",
    "btp_gitops.generator.pipeline",
    "btp_gitops.generator.domains.cap",
    "btp_gitops.generator.domains.kyma.render",
    "btp_gitops.generator.domains.kyma.resolution",
    "btp_gitops.generator.io.helm",
    "btp_gitops.generator.io.render_cache",
    "btp_gitops.generator.io.kube_schemas",
    "btp_gitops.generator.manifests",
)


def pipeline_among(modules: set[str]) -> list[str]:
    return sorted(m for m in modules for part in PIPELINE if m == part or m.startswith(f"{part}."))


@pytest.mark.parametrize("command", ["render", "diff"])
def test_help_of_render_and_diff_loads_no_pipeline(imported_by: Run, command: str) -> None:
    """`render --help` and `diff --help` build the parser only: the pipeline, the schema validator
    and GitPython are loaded by the handler that runs a render. The module itself names none of
    them either (the CLI imports it by name)."""
    done, modules = imported_by(command, "--help")
    assert done.returncode == 0, done.stderr
    assert f"usage: btp-gitops {command}" in done.stdout
    assert f"btp_gitops.generator.cli.{command}" in modules  # the check sees the command's module
    assert pipeline_among(modules) == []
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys, btp_gitops.generator.cli.{command}; print(*sorted(sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert pipeline_among(set(loaded.stdout.split())) == []


def test_a_refused_render_loads_no_pipeline(imported_by: Run) -> None:
    """A command line argparse refuses (no --out) is answered before any of the pipeline loads."""
    source = Path(__file__).resolve().parents[2] / "examples" / "cap-app"
    done, modules = imported_by("render", str(source))
    assert done.returncode == 2
    assert "one of the arguments --out --stdout is required" in done.stderr
    assert pipeline_among(modules) == []


# What `render --validate` and `validate` use, and a render of charts (the CAP example has none).
MANIFEST_VALIDATION = (
    "btp_gitops.generator.io.kube_schemas",
    "btp_gitops.generator.manifests.validation",
    "btp_gitops.generator.pipeline.validate",
)
CHART_RENDERING = ("btp_gitops.generator.io.chart_schemas", "btp_gitops.generator.io.helm_process")


def test_a_render_loads_the_manifest_validator_with_validate_only(imported_by: Run, tmp_path: Path) -> None:
    """A render validates its sources (jsonschema is loaded) but not its output unless asked:
    the Kubernetes schemas and the manifest validator come with --validate (the control). A CAP
    render renders no chart: the chart reader and the Helm worker's process code stay unloaded,
    and with --no-cache importlib.metadata (the cache key's library versions) too."""
    source = Path(__file__).resolve().parents[2] / "examples" / "cap-app"
    done, modules = imported_by("render", str(source), "--out", str(tmp_path / "plain"), "--no-cache")
    assert done.returncode == 0, done.stderr
    assert "jsonschema" in modules  # the sources are validated
    assert sorted(modules.intersection(MANIFEST_VALIDATION)) == []
    assert sorted(modules.intersection(CHART_RENDERING)) == []
    assert "importlib.metadata" not in modules

    done, modules = imported_by("render", str(source), "--out", str(tmp_path / "checked"), "--validate")
    assert done.returncode == 0, done.stderr
    assert sorted(modules.intersection(MANIFEST_VALIDATION)) == sorted(MANIFEST_VALIDATION)


# What only a cluster with a Kyma needs: its plan (resolution, maintenance windows, the removal
# guard) and the modules' content (chart rendering helpers).
KYMA_PLANNING = (
    "btp_gitops.generator.domains.kyma.planning",
    "btp_gitops.generator.domains.kyma.resolution",
    "btp_gitops.generator.domains.kyma.removal_guard",
    "btp_gitops.generator.domains.kyma.content",
)


def test_a_render_without_a_kyma_loads_no_kyma_planning(imported_by: Run, tmp_path: Path) -> None:
    """Every render asks the Kyma domain for the cluster's Kyma; a cluster without one (the CAP
    example) loads none of the planning or module content. The control renders the Kyma example."""
    examples = Path(__file__).resolve().parents[2] / "examples"
    done, modules = imported_by(
        "render", str(examples / "cap-app"), "--out", str(tmp_path / "cap"), "--no-cache"
    )
    assert done.returncode == 0, done.stderr
    assert "btp_gitops.generator.domains.kyma.render" in modules  # the check sees the domain
    assert sorted(modules.intersection(KYMA_PLANNING)) == []

    done, modules = imported_by(
        "render", str(examples / "kyma-modules"), "--out", str(tmp_path / "kyma"), "--no-cache"
    )
    assert done.returncode == 0, done.stderr
    assert "Kyma kyma-system/default" in done.stdout
    assert sorted(modules.intersection(KYMA_PLANNING)) == sorted(KYMA_PLANNING)


def test_diff_does_not_load_git(imported_by: Run, tmp_path: Path) -> None:
    """GitPython is for `render --commit`: a diff against a rendered directory, or against a ref
    (read with `git` itself, io.git_blobs), does not pay for it. The control is the render that
    commits."""
    source = Path(__file__).resolve().parents[2] / "examples" / "cap-app"
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=60)
    done, modules = imported_by("render", str(source), "--out", str(repo), "--commit")
    assert done.returncode == 0, done.stderr
    assert "git" in modules
    done, modules = imported_by("diff", str(source), "--against", str(repo))
    assert done.returncode == 0, done.stderr
    assert "btp_gitops.generator.pipeline.diff" in modules  # the check sees the diff
    assert not {m for m in modules if m == "git" or m.startswith("git.")}

    done, modules = imported_by("diff", str(source), "--against", "HEAD", "--repo", str(repo))
    assert done.returncode == 0, done.stderr
    assert "btp_gitops.generator.io.git_blobs" in modules
    assert not {m for m in modules if m == "git" or m.startswith("git.")}


def test_a_schema_registry_loads_referencing_with_its_first_validator() -> None:
    """Building the registry and asking which kinds it knows (what a render does first) loads
    neither jsonschema nor referencing; the first validator does."""
    script = """
import sys
from btp_gitops.generator.io.schemas import load_schema_registry
registry = load_schema_registry()
assert registry.knows("sme.sap.com/v1alpha1", "CAPTenant")
before = sorted(m for m in sys.modules if m.partition(".")[0] in ("jsonschema", "referencing"))
errors = list(registry.validator("sme.sap.com/v1alpha1", "CAPTenant").iter_errors({"spec": 1}))
print(before, "referencing" in sys.modules, bool(errors))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.split() == ["[]", "True", "True"]
