"""`post-render`: a domain's rendering over a manifest stream Helm rendered, stdin to stdout.

    read stream ──> module transforms (same as render) ──> certificates ──> write stream
    streams/helm      domains/btp_operator                 transforms/…     streams/helm

    read stream ──> CAP or Kyma objects rendered as render renders them ──> write stream
    streams/helm      pipeline/post_render_sources (other objects untouched)  streams/helm

Pure: the caller reads stdin, the credentials and any existing certificates, and passes in the
clock and the key factory (self-signed mode); this returns the text for stdout and the notes for
stderr.
Objects keep their input order and head comments; objects a transform adds come after them, in
the order the transforms add them, with a `# Source:` comment (Helm 3) or Helm 4's filename
annotation so that Helm 4 can file them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from btp_gitops.generator.core.errors import Problem, SourceSyntaxError
from btp_gitops.generator.core.names import path_message
from btp_gitops.generator.core.objects import Manifest, annotations_of, describe
from btp_gitops.generator.core.report import Note
from btp_gitops.generator.domains import btp_operator
from btp_gitops.generator.pipeline.post_render_domains import BTP_OPERATOR, GENERATED_FILENAME, SOURCE_DOMAINS
from btp_gitops.generator.streams.helm import (
    FILENAME_ANNOTATION,
    SOURCE_PREFIX,
    HelmStream,
    StreamDocument,
    read_helm_stream,
    write_helm_stream,
)
from btp_gitops.generator.transforms.certificates import (
    NO_EXISTING_CERTIFICATES,
    CertificatePlan,
    ExistingCertificates,
    issue_webhook_certificates_with_cert_manager,
)
from btp_gitops.generator.transforms.gardener_certificates import issue_webhook_certificates_with_gardener
from btp_gitops.generator.transforms.operator_secret import OperatorCredentials

# Helm runs the BTP operator's post-render on every install, where importing is most of the work:
# what only another mode needs is imported by that mode below (self-signed certificates load
# `cryptography`; the CAP and Kyma domains the render pipeline), and only named here for types.
if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric import rsa

    from btp_gitops.generator.pipeline.post_render_sources import SourceDomainInputs

KeyFactory = Callable[[], "rsa.RSAPrivateKey"]


@dataclass(frozen=True, slots=True)
class PostRenderRequest:
    domain: str = BTP_OPERATOR
    certificate_mode: str = "cert-manager"
    namespace: str | None = None  # btp-operator: the module's namespace (default kyma-system)
    chart_version: str | None = None
    credentials: OperatorCredentials | None = None
    enable_limited_cache: bool = True
    manager_image: str | None = None
    issuer: dict[str, str] | None = None  # an existing issuer for the serving certificate
    existing_certificates: ExistingCertificates = NO_EXISTING_CERTIFICATES  # self-signed: reuse these


@dataclass(slots=True)
class PostRenderResult:
    text: str
    helm4: bool
    objects: int
    added: int
    notes: list[Note] = field(default_factory=list)


def certificate_plan(request: PostRenderRequest) -> CertificatePlan:
    issuer = request.issuer or {}
    return CertificatePlan(
        prefix=btp_operator.RELEASE_NAME,
        namespace=request.namespace or btp_operator.MODULE_NAMESPACE,
        issuer_name=issuer.get("name"),
        issuer_kind=issuer.get("kind", "Issuer"),
        issuer_group=issuer.get("group", "cert-manager.io"),
    )


def certificate_step(
    request: PostRenderRequest, now: datetime, new_key: KeyFactory
) -> btp_operator.CertificateStep:
    """The webhook certificate transform of the requested mode, ready for the module transforms."""
    plan = certificate_plan(request)

    def with_cert_manager(manifests: list[Manifest]) -> tuple[list[Manifest], list[Note]]:
        return issue_webhook_certificates_with_cert_manager(manifests, plan), []

    def with_gardener(manifests: list[Manifest]) -> tuple[list[Manifest], list[Note]]:
        namespace = (request.issuer or {}).get("namespace")
        return issue_webhook_certificates_with_gardener(manifests, plan, namespace), []

    def self_signed(manifests: list[Manifest]) -> tuple[list[Manifest], list[Note]]:
        from btp_gitops.generator.transforms.self_signed_certificates import (  # noqa: PLC0415 - see above
            issue_webhook_certificates_self_signed,
        )

        return issue_webhook_certificates_self_signed(
            manifests, plan, request.existing_certificates, now, new_key
        )

    steps = {"cert-manager": with_cert_manager, "gardener": with_gardener, "self-signed": self_signed}
    return steps[request.certificate_mode]


def _back_into_stream(stream: HelmStream, manifests: list[Manifest]) -> int:
    """Rebuild `stream.documents` from the transformed objects; returns how many were added."""
    read = {id(document.body): document for document in stream.documents}
    kept = [read[id(m.body)] for m in manifests if id(m.body) in read]
    order = {id(document): index for index, document in enumerate(stream.documents)}
    kept.sort(key=lambda document: order[id(document)])
    helm4 = stream.annotated_by_helm4
    added = [_generated_document(m, helm4) for m in manifests if id(m.body) not in read]
    stream.documents = kept + added
    return len(added)


def _generated_document(manifest: Manifest, helm4: bool) -> StreamDocument:
    if helm4:
        annotations_of(manifest.body)[FILENAME_ANNOTATION] = GENERATED_FILENAME
        comments: tuple[str, ...] = ()
    else:
        comments = (f"{SOURCE_PREFIX}{manifest.origin}",)
    return StreamDocument(manifest.body, position=0, line=0, comments=comments, generated=True)


def filename_problems(stream: HelmStream, stream_name: str) -> list[Problem]:
    """Helm 4 files each object under its filename annotation (`helm template --output-dir` writes
    it there): one that is not a plain path inside the chart is refused, not passed on."""
    problems = []
    for document in stream.documents:
        metadata = document.body.get("metadata")
        annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
        if not isinstance(annotations, dict) or FILENAME_ANNOTATION not in annotations:
            continue
        if message := path_message(annotations[FILENAME_ANNOTATION]):
            problems.append(
                Problem(
                    file=stream_name,
                    document=document.position,
                    object_ref=describe(document.body),
                    field_path=f"metadata.annotations.{FILENAME_ANNOTATION}",
                    message=message,
                )
            )
    return problems


def post_render(
    text: str,
    request: PostRenderRequest,
    now: datetime,
    new_key: KeyFactory,
    *,
    stream_name: str = "<stdin>",
    sources: SourceDomainInputs | None = None,
) -> PostRenderResult:
    """Transform one stream. `now` and `new_key` are used only by self-signed certificates;
    `sources` (schemas, namespace, Kyma's catalog) by the CAP and Kyma domains."""
    stream = read_helm_stream(text, stream_name)
    if problems := filename_problems(stream, stream_name):
        raise SourceSyntaxError("the manifest stream is not valid post-renderer input", problems)
    helm4 = stream.annotated_by_helm4
    if request.domain in SOURCE_DOMAINS:
        if sources is None:
            raise ValueError(f"post-render of {request.domain} objects needs their schemas")
        from btp_gitops.generator.pipeline.post_render_sources import post_render_sources  # noqa: PLC0415

        added, found = post_render_sources(stream, request.domain, sources, now, stream_name)
        return PostRenderResult(write_helm_stream(stream), helm4, len(stream.documents), added, found)
    manifests = [document.as_manifest() for document in stream.documents]
    settings = btp_operator.StreamSettings(
        issue_certificates=certificate_step(request, now, new_key),
        namespace=request.namespace or btp_operator.MODULE_NAMESPACE,
        chart_version=request.chart_version,
        credentials=request.credentials,
        enable_limited_cache=request.enable_limited_cache,
        manager_image=request.manager_image,
    )
    notes: list[Note] = []
    if manifests:
        manifests, notes = btp_operator.post_render_module_objects(manifests, settings)
    added = _back_into_stream(stream, manifests)
    return PostRenderResult(write_helm_stream(stream), helm4, len(stream.documents), added, notes)
