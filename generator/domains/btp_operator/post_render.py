"""Post-render: the same module transforms over a stream Helm rendered."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from btp_gitops.generator.core.errors import UsageError
from btp_gitops.generator.core.kinds import ScopeIndex
from btp_gitops.generator.core.objects import Manifest, labels_of
from btp_gitops.generator.core.report import Note
from btp_gitops.generator.domains.btp_operator.model import (
    MANAGER_CONTAINER,
    MODULE_NAME,
    MODULE_NAMESPACE,
    module_labels,
)
from btp_gitops.generator.domains.btp_operator.render import (
    annotate_config_checksum,
    annotate_with_checksum,
)
from btp_gitops.generator.domains.btp_operator.render import config_checksum as config_checksum_of
from btp_gitops.generator.transforms.credentials import OPERATOR_SECRET
from btp_gitops.generator.transforms.metadata import (
    add_labels,
    add_pod_template_labels,
    set_default_namespace,
)
from btp_gitops.generator.transforms.operator_config import (
    OPERATOR_CONFIGMAP,
    OperatorSettings,
    apply_operator_settings,
)
from btp_gitops.generator.transforms.operator_secret import OperatorCredentials, install_operator_secret
from btp_gitops.generator.transforms.workloads import set_container_image

CertificateStep = Callable[[list[Manifest]], tuple[list[Manifest], list[Note]]]
_CHART_LABEL = re.compile(r"^(?P<name>.+?)-(?P<version>v?\d+\.\d+\.\d+(?:[-+].*)?)$")


@dataclass(frozen=True, slots=True)
class StreamSettings:
    """What post-render knows that render reads from BtpOperatorConfig."""

    issue_certificates: CertificateStep
    namespace: str = MODULE_NAMESPACE
    chart_version: str | None = None  # else read from the `helm.sh/chart` label
    credentials: OperatorCredentials | None = None
    enable_limited_cache: bool = True
    manager_image: str | None = None


def chart_version_from_labels(manifests: list[Manifest]) -> str | None:
    """The version in `helm.sh/chart: <name>-<version>`, which Helm charts put on every object."""
    for manifest in manifests:
        match = _CHART_LABEL.match(labels_of(manifest.body).get("helm.sh/chart", ""))
        if match:
            return match["version"]
    return None


def post_render_module_objects(
    manifests: list[Manifest], settings: StreamSettings
) -> tuple[list[Manifest], list[Note]]:
    """BTP Manager's runtime preparation over a Helm-rendered stream, hooks included, in place.

    Unlike render, nothing is dropped: Helm runs its own hooks. With credentials, the operator
    Secret and ConfigMap get their values as BTP Manager set them; without, the chart's own stay.
    """
    version = settings.chart_version or chart_version_from_labels(manifests)
    if version is None:
        raise UsageError(
            "cannot tell the module's chart version: no object carries a helm.sh/chart label; "
            "pass --chart-version"
        )
    if settings.credentials is not None:
        operator = OperatorSettings(
            cluster_id=settings.credentials.cluster_id,
            credentials_namespace=settings.credentials.credentials_namespace,
            enable_limited_cache=settings.enable_limited_cache,
        )
        manifests = apply_operator_settings(manifests, operator)
        manifests = install_operator_secret(manifests, settings.credentials)
    if settings.manager_image:
        manifests = set_container_image(manifests, MANAGER_CONTAINER, settings.manager_image)
    manifests, notes = settings.issue_certificates(manifests)
    manifests = set_default_namespace(manifests, settings.namespace, ScopeIndex())
    manifests = add_labels(manifests, module_labels(version))
    manifests = add_pod_template_labels(manifests, {"kyma-project.io/module": MODULE_NAME})
    manifests = annotate_config_checksum(manifests)
    return manifests, notes


# What an object must mention (in its YAML text) to take part in the wiring across documents: the
# operator's ConfigMap and Secret, CRDs (scope, conversion webhooks), webhook configurations,
# certificate-manager objects and the webhook certificate Secrets. A backslash may spell any of
# them in escapes, so it marks a document too. Every other object is transformed on its own.
WIRING_MARKERS = (
    "\\",
    OPERATOR_CONFIGMAP,
    OPERATOR_SECRET,
    "CustomResourceDefinition",
    "WebhookConfiguration",
    "cert-manager.io",
    "cert.gardener.cloud",
    "ca-server-cert",
    "webhook-server-cert",
)
SELF_SIGNED_MARKERS = (*WIRING_MARKERS, "Service")  # self-signed serves only the stream's Services


def may_take_part_in_wiring(text: str, markers: tuple[str, ...] = WIRING_MARKERS) -> bool:
    """False when the YAML text of a document cannot hold an object of the cross-document wiring
    (it mentions none of `markers`); such an object is transformed by `post_render_alone`."""
    return any(marker in text for marker in markers)


@dataclass(frozen=True, slots=True)
class StreamFacts:
    """What the objects of the wiring tell every other object: how `post_render_module_objects`
    transforms an object outside the wiring, given the whole stream."""

    chart_version: str
    scopes: ScopeIndex
    checksum: str | None


def stream_facts(transformed: list[Manifest], chart_version: str) -> StreamFacts:
    """The facts, from the wiring objects as `post_render_module_objects` transformed them."""
    scopes = ScopeIndex()
    for manifest in transformed:
        scopes.learn(manifest.body)
    return StreamFacts(chart_version, scopes, config_checksum_of(transformed))


def post_render_alone(manifest: Manifest, settings: StreamSettings, facts: StreamFacts) -> Manifest:
    """`post_render_module_objects` on an object outside the wiring: the certificate step and the
    operator settings leave it alone, the rest is the same steps in the same order."""
    manifests = [manifest]
    if settings.manager_image:
        manifests = set_container_image(manifests, MANAGER_CONTAINER, settings.manager_image)
    manifests = set_default_namespace(manifests, settings.namespace, facts.scopes)
    manifests = add_labels(manifests, module_labels(facts.chart_version))
    manifests = add_pod_template_labels(manifests, {"kyma-project.io/module": MODULE_NAME})
    annotate_with_checksum(manifests, facts.checksum)
    return manifest
