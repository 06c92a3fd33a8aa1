"""`post-render --domain cap|kyma` on streams shaped as Helm 3 and Helm 4 hand them over.

The streams are made from the bundled examples (each file a chart template), so that the same
objects can also go through `render --stdout`: what post-render adds must be what render renders,
apart from the documented mapping of sync waves to Helm hooks. The real Helm runs are in
test_cap_chart.py.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import EXAMPLES, RunCli
from tests.post_render.conftest import PostRender
from tests.post_render.test_post_render_cli import objects

CAP_APP = EXAMPLES / "cap-app"
KYMA = EXAMPLES / "kyma-modules"
FILENAME = "postrenderer.helm.sh/postrender-filename"
HOOK_KEYS = ("helm.sh/hook", "helm.sh/hook-weight", "helm.sh/hook-delete-policy")
SYNC_WAVE = "argocd.argoproj.io/sync-wave"

# Objects of the chart that no domain reads: they must come back byte for byte, in their place.
UNRELATED = """---
# Source: bookshop/templates/settings.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: bookshop-settings
  namespace: bookshop
  labels:
    app.kubernetes.io/managed-by: Helm
data:
  greeting: hello
  limits.json: '{"books": 10}'
---
# Source: bookshop/templates/operation.yaml
apiVersion: sme.sap.com/v1alpha1
kind: CAPTenantOperation
metadata:
  name: leftover
  namespace: bookshop
spec:
  operation: provisioning
---
# Source: bookshop/templates/secret.yaml
apiVersion: v1
kind: Secret
metadata:
  name: bookshop-extra
  namespace: bookshop
stringData:
  token: chart-provided
type: Opaque
"""


def documents_of(path: Path) -> list[str]:
    """The YAML documents of a source file, without its comments."""
    text = "\n".join(line for line in path.read_text().splitlines() if not line.startswith("#"))
    return [part.strip("\n") + "\n" for part in re.split(r"^---$", text, flags=re.MULTILINE) if part.strip()]


def helm3_stream(files: list[Path], chart: str = "bookshop", head: str = "") -> str:
    """What Helm 3 pipes to a post-renderer: `---`, `# Source: <chart>/templates/<file>`, the object."""
    parts = [head]
    for path in files:
        for index, document in enumerate(documents_of(path)):
            suffix = f"-{index}" if index else ""
            parts.append(f"---\n# Source: {chart}/templates/{path.stem}{suffix}.yaml\n{document}")
    return "".join(parts)


def helm4_stream(files: list[Path], chart: str = "bookshop") -> str:
    """What Helm 4 pipes to a plugin: each object annotated with the template it came from."""
    parts = []
    for path in files:
        for index, document in enumerate(documents_of(path)):
            body = yaml.safe_load(document)
            suffix = f"-{index}" if index else ""
            annotations = body["metadata"].setdefault("annotations", {})
            annotations[FILENAME] = f"{chart}/templates/{path.stem}{suffix}.yaml"
            parts.append("---\n" + yaml.safe_dump(body, sort_keys=False))
    return "".join(parts)


CAP_FILES = [
    CAP_APP / "capapplication.yaml",
    CAP_APP / "domains.yaml",
    CAP_APP / "version-1.0.0.yaml",
    CAP_APP / "tenants" / "globex.yaml",
]


def identity(body: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = body["metadata"]
    return (body["apiVersion"], body["kind"], meta.get("namespace", ""), meta["name"])


def without(body: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The object without the given annotations (the annotations map dropped when it empties)."""
    meta = dict(body["metadata"])
    annotations = {k: v for k, v in (meta.get("annotations") or {}).items() if k not in keys}
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    return {**body, "metadata": meta}


def source_of(document: str) -> str | None:
    match = re.search(r"^# Source: (.+)$", document, flags=re.MULTILINE)
    return match[1] if match else None


def stream_pieces(text: str) -> list[str]:
    return ["---\n" + piece for piece in text.split("---\n") if piece]


def test_cap_stream_is_rendered_as_render_renders_it(
    post_render_cli: PostRender, run_cli: RunCli, tmp_path: Path
) -> None:
    """Same objects as `render --stdout` of the same files: only the sync waves differ, mapped to
    Helm hooks on the release Jobs, tenants' after their application's."""
    result = post_render_cli(helm3_stream(CAP_FILES), "--domain", "cap")
    assert result.returncode == 0, result.stderr
    sources = tmp_path / "sources"
    sources.mkdir()
    for path in CAP_FILES:
        (sources / path.name).write_text(path.read_text())
    rendered = run_cli("render", sources, "--stdout")
    assert rendered.returncode == 0, rendered.stderr

    post = {identity(body): body for body in objects(result.stdout)}
    by_render = {identity(body): body for body in objects(rendered.stdout)}
    assert set(post) == set(by_render)
    for key, body in by_render.items():
        assert without(post[key], HOOK_KEYS) == without(body, (SYNC_WAVE,)), key

    waves = {
        key: int(body["metadata"].get("annotations", {}).get(SYNC_WAVE, "0"))
        for key, body in by_render.items()
    }
    hooks = {
        key: body for key, body in post.items() if "helm.sh/hook" in body["metadata"].get("annotations", {})
    }
    # Exactly the release Jobs (waves 10 + step) are hooks; routing and resources stay plain.
    assert set(hooks) == {key for key, wave in waves.items() if 10 <= wave < 100}
    assert hooks and all(key[1] == "Job" for key in hooks)
    weights: dict[bool, list[int]] = {True: [], False: []}
    for key, body in hooks.items():
        annotations = body["metadata"]["annotations"]
        assert annotations["helm.sh/hook"] == "post-install,post-upgrade"
        assert annotations["helm.sh/hook-delete-policy"] == "before-hook-creation"
        tenant = "sme.sap.com/tenant-operation-type" in body["metadata"]["labels"]
        weight = int(annotations["helm.sh/hook-weight"])
        assert weight == waves[key] + (1000 if tenant else 0)
        weights[tenant].append(weight)
    # Every tenant's Jobs after every content Job of the application's version.
    assert weights[False] and weights[True] and max(weights[False]) < min(weights[True])


def test_cap_stream_snapshot_helm3(post_render_cli: PostRender, yaml_snapshot: Any) -> None:
    stream = helm3_stream(CAP_FILES) + UNRELATED
    first = post_render_cli(stream, "--domain", "cap")
    second = post_render_cli(stream, "--domain", "cap")
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    assert "HooksNotRunByHelm3" in first.stderr
    assert first.stdout == yaml_snapshot


def test_cap_stream_snapshot_helm4(post_render_cli: PostRender, yaml_snapshot: Any) -> None:
    """Helm 4: every rendered object names the template of the source it came from (Helm files it
    there); objects no single source owns go to the post-renderer's own file."""
    result = post_render_cli(helm4_stream(CAP_FILES), "--domain", "cap")
    assert result.returncode == 0, result.stderr
    rendered = objects(result.stdout)
    assert all(FILENAME in body["metadata"]["annotations"] for body in rendered)
    files = {body["metadata"]["annotations"][FILENAME] for body in rendered}
    assert "bookshop/templates/version-1.0.0.yaml" in files
    assert "btp-gitops/templates/post-render.yaml" in files
    deployments = [b for b in rendered if b["kind"] == "Deployment"]
    assert {d["metadata"]["annotations"][FILENAME] for d in deployments} == {
        "bookshop/templates/version-1.0.0.yaml"
    }
    assert "HooksNotRunByHelm3" not in result.stderr
    assert result.stdout == yaml_snapshot


def test_other_objects_pass_through_byte_for_byte(post_render_cli: PostRender) -> None:
    """A ConfigMap, a Secret the chart holds and a CAP kind render does not read come back as they
    came, in their place before the rendered objects; no CAP source is left as Helm wrote it."""
    result = post_render_cli(UNRELATED + helm3_stream(CAP_FILES), "--domain", "cap")
    assert result.returncode == 0, result.stderr
    pieces = stream_pieces(result.stdout)
    assert "".join(pieces[:3]) == UNRELATED
    assert all(source_of(piece) != "bookshop/templates/settings.yaml" for piece in pieces[3:])


def test_only_cap_objects_are_touched_in_a_stream_without_them(post_render_cli: PostRender) -> None:
    result = post_render_cli(UNRELATED, "--domain", "cap")
    assert result.returncode == 0, result.stderr
    assert result.stdout == UNRELATED


def test_pass_through_in_another_style_keeps_every_value(post_render_cli: PostRender) -> None:
    """What the serializer cannot keep (flow style, quoting, key order at the top level) comes back
    in the project's style; every value, and the head comment, is kept."""
    flow = (
        "---\n# Source: bookshop/templates/flow.yaml\n"
        "{kind: ConfigMap, apiVersion: v1, metadata: {name: flow, namespace: bookshop}, "
        "data: {'n': '007', on: 'yes', empty: ''}}\n"
    )
    result = post_render_cli(flow + helm3_stream(CAP_FILES), "--domain", "cap")
    assert result.returncode == 0, result.stderr
    first = stream_pieces(result.stdout)[0]
    assert source_of(first) == "bookshop/templates/flow.yaml"
    assert yaml.safe_load(first) == yaml.safe_load(flow)


def test_namespace_left_to_helm_is_refused_naming_the_object(post_render_cli: PostRender) -> None:
    stream = helm3_stream([CAP_APP / "capapplication.yaml"]).replace("  namespace: bookshop\n", "")
    result = post_render_cli(stream, "--domain", "cap")
    assert result.returncode == 3
    assert "CAPApplication bookshop" in result.stderr
    assert "metadata.namespace" in result.stderr
    assert "bookshop/templates/capapplication.yaml" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


def test_namespace_option_fills_in_what_helm_would(post_render_cli: PostRender) -> None:
    stream = helm3_stream(CAP_FILES).replace("  namespace: bookshop\n", "")
    filled = post_render_cli(stream, "--domain", "cap", "--namespace", "bookshop")
    written = post_render_cli(helm3_stream(CAP_FILES), "--domain", "cap")
    assert filled.returncode == 0, filled.stderr
    assert filled.stdout == written.stdout


def test_schema_violation_names_template_object_and_field(post_render_cli: PostRender) -> None:
    stream = helm3_stream(CAP_FILES).replace("version: 1.0.0\n", "version: [1, 0]\n", 1)
    result = post_render_cli(stream, "--domain", "cap")
    assert result.returncode == 3
    assert "CAPApplicationVersion bookshop/bookshop-1-0-0" in result.stderr
    assert "spec.version" in result.stderr
    assert "bookshop/templates/version-1.0.0.yaml" in result.stderr
    assert "Traceback" not in result.stderr


def test_rendered_object_the_chart_also_has_is_refused(post_render_cli: PostRender) -> None:
    """The chart ships a Service that the version renders too: Helm would refuse the release."""
    clash = (
        "---\n# Source: bookshop/templates/svc.yaml\napiVersion: v1\nkind: Service\nmetadata:\n"
        "  name: bookshop-1-0-0-srv-svc\n  namespace: bookshop\nspec:\n  ports:\n  - port: 80\n"
    )
    result = post_render_cli(helm3_stream(CAP_FILES) + clash, "--domain", "cap")
    assert result.returncode == 3, result.stderr
    assert "Service bookshop/bookshop-1-0-0-srv-svc" in result.stderr
    assert "renders it too" in result.stderr


def test_private_key_in_a_cap_object_is_refused_without_printing_it(post_render_cli: PostRender) -> None:
    key = "-----BEGIN RSA PRIVATE KEY-----\\nMIIEowIBAAKCAQEAzq4s7secretbody\\n-----END RSA PRIVATE KEY-----"
    stream = helm3_stream(CAP_FILES).replace(
        "          - name: CDS_ENV\n            value: production\n",
        f'          - name: CDS_ENV\n            value: production\n          - name: KEY\n            value: "{key}"\n',
    )
    assert "KEY" in stream
    result = post_render_cli(stream, "--domain", "cap")
    assert result.returncode == 5, result.stderr
    assert "secretbody" not in result.stderr + result.stdout
    assert "Deployment" in result.stderr or "CAPApplicationVersion" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--domain", "cap", "--credentials", "creds.yaml"], "--credentials: only for --domain btp-operator"),
        (
            ["--domain", "cap", "--certificates", "self-signed"],
            "--certificates: only for --domain btp-operator",
        ),
        (
            ["--domain", "cap", "--catalog", "x"],
            "--catalog, --allow-path, --restricted-modules: only for --domain kyma",
        ),
        (["--catalog", "x"], "--catalog, --allow-path, --restricted-modules: only for --domain kyma"),
        (
            ["--domain", "cap", "--restricted-modules", "relay"],
            "--catalog, --allow-path, --restricted-modules: only for --domain kyma",
        ),
        (["--domain", "kyma"], "pass --catalog DIR"),
    ],
)
def test_options_of_another_domain_are_usage_errors(
    post_render_cli: PostRender, args: list[str], message: str
) -> None:
    result = post_render_cli(helm3_stream(CAP_FILES), *args)
    assert result.returncode == 2
    assert message in result.stderr


def test_module_option_still_names_the_btp_operator(post_render_cli: PostRender) -> None:
    """`--module btp-operator` (the option's earlier name) still selects the module transforms."""
    stream = UNRELATED.replace("bookshop-settings", "sap-btp-operator-config")
    by_module = post_render_cli(stream, "--module", "btp-operator", "--chart-version", "1.0.0")
    by_domain = post_render_cli(stream, "--domain", "btp-operator", "--chart-version", "1.0.0")
    assert by_module.returncode == 0, by_module.stderr
    assert by_module.stdout == by_domain.stdout
    assert "kyma-project.io/module: btp-operator" in by_module.stdout


KYMA_HEAD = """---
# Source: platform/templates/settings.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: platform-settings
  namespace: kyma-system
data:
  region: europe-west1
"""


def test_kyma_with_catalog_renders_the_modules(
    post_render_cli: PostRender, run_cli: RunCli, yaml_snapshot: Any
) -> None:
    """The Kyma's modules from --catalog, as `render --catalog` renders them: the default CR of a
    module whose CRD is in the release becomes a post-install hook; the Kyma itself is consumed."""
    stream = helm3_stream([KYMA / "kyma.yaml"], chart="platform", head=KYMA_HEAD)
    args = ("--domain", "kyma", "--catalog", KYMA / "catalog", "--allow-path", KYMA)
    first = post_render_cli(stream, *args)
    second = post_render_cli(stream, *args)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    assert first.stdout.startswith(KYMA_HEAD)
    rendered = run_cli(
        "render", KYMA / "kyma.yaml", "--stdout", "--catalog", KYMA / "catalog", "--allow-path", KYMA
    )
    assert rendered.returncode == 0, rendered.stderr
    post = {identity(body): body for body in objects(first.stdout)[1:]}
    by_render = {identity(body): body for body in objects(rendered.stdout)}
    assert set(post) == set(by_render)
    assert not any(key[1] == "Kyma" for key in post)
    for key, body in by_render.items():
        assert without(post[key], HOOK_KEYS) == without(body, (SYNC_WAVE,)), key
    hooks = [k for k, b in post.items() if "helm.sh/hook" in b["metadata"].get("annotations", {})]
    assert hooks == [
        k for k, b in by_render.items() if b["metadata"].get("annotations", {}).get(SYNC_WAVE) == "1"
    ]
    assert all(post[k]["metadata"]["annotations"]["helm.sh/hook"] == "post-install" for k in hooks)
    assert first.stdout == yaml_snapshot


@pytest.mark.parametrize(
    ("options", "rendered"),
    [
        pytest.param((), False, id="a kymaSelector on a module not in the list: not rendered"),
        pytest.param(("--restricted-modules", "relay"), True, id="listed, the selector matches: rendered"),
    ],
)
def test_kyma_restricted_modules_as_lifecycle_manager_lists_them(
    post_render_cli: PostRender, tmp_path: Path, options: tuple[str, ...], rendered: bool
) -> None:
    """A release meta's kymaSelector counts only for a module of the restricted-modules list."""
    example = tmp_path / "kyma-modules"
    shutil.copytree(KYMA, example)
    catalog = example / "catalog"
    relay = catalog / "relay.yaml"
    relay.write_text(
        relay.read_text().replace(
            "  moduleName: relay\n",
            "  moduleName: relay\n  kymaSelector:\n    matchLabels:\n      kyma-project.io/region: europe-west1\n",
            1,
        )
    )
    kyma = yaml.safe_load((KYMA / "kyma.yaml").read_text())
    kyma["metadata"]["labels"]["operator.kyma-project.io/beta"] = "true"
    kyma["spec"]["modules"] = [{"name": "relay"}]
    kyma_file = tmp_path / "kyma.yaml"
    kyma_file.write_text(yaml.safe_dump(kyma))
    stream = helm3_stream([kyma_file], chart="platform", head=KYMA_HEAD)

    result = post_render_cli(
        stream, "--domain", "kyma", "--catalog", catalog, "--allow-path", example, *options
    )

    assert result.returncode == 0, result.stderr
    relay_objects = [b for b in objects(result.stdout) if "relay" in b["metadata"]["name"]]
    assert bool(relay_objects) is rendered


def test_kyma_module_outside_the_catalog_roots_is_refused(post_render_cli: PostRender) -> None:
    """Without --allow-path the catalog's raw manifests (beside it, not in it) are not read."""
    stream = helm3_stream([KYMA / "kyma.yaml"], chart="platform")
    result = post_render_cli(stream, "--domain", "kyma", "--catalog", KYMA / "catalog")
    assert result.returncode != 0
    assert "outside the source roots" in result.stderr
    assert "spec.rawManifest.path" in result.stderr
    assert result.stdout == ""


def test_schema_and_cross_object_problems_of_a_stream_in_one_run(post_render_cli: PostRender) -> None:
    """A misspelt field in one template and a misspelt application in another are one run."""
    stream = helm3_stream([*CAP_FILES, CAP_APP / "tenants" / "acme.yaml"])
    stream = stream.replace("  subDomain: globex\n", "  subdomain: globex\n").replace(
        "capApplicationInstance: bookshop\n  subDomain: acme",
        "capApplicationInstance: bookshp\n  subDomain: acme",
    )
    result = post_render_cli(stream, "--domain", "cap")
    assert result.returncode == 3, result.stderr
    lines = result.stderr.splitlines()
    assert (
        lines[0] == "error: invalid sources (3 problems: invalid source documents; invalid CAP applications)"
    )
    assert [line.split(": ", 2)[2] for line in lines[1:]] == [
        "spec.capApplicationInstance: no CAPApplication bookshp in namespace bookshop in the sources "
        '(did you mean "bookshop"?)',
        "spec.subDomain: required field is missing",
        'spec.subdomain: unknown field (did you mean "subDomain"?)',
    ]
    assert result.stdout == ""
