"""`post-render`: a domain's rendering over a manifest stream Helm rendered, stdin to stdout.

    read stream ──> module transforms (same as render) ──> certificates ──> write stream
    streams/helm      domains/btp_operator                 transforms/…     streams/helm

    read stream ──> CAP or Kyma objects rendered as render renders them ──> write stream
    streams/helm      pipeline/post_render_sources (other objects untouched)  streams/helm

btp-operator streams are read twice, one document at a time, so that memory does not grow with
the stream: the first pass parses only the documents that may take part in the wiring across
documents (webhook configurations, CRDs, certificate objects and Secrets, the operator's
ConfigMap and Secret, see `btp_operator.WIRING_MARKERS`) and the first one carrying the chart
version, and runs the module transforms on those; the second pass reads every document, checks
it, and writes it at once (an object outside the wiring transformed on its own with the facts
of the first pass). The output is the same, byte for byte, as transforming the whole stream, and
so are the errors: nothing is written before the whole stream has been checked (`post_render_to`
keeps the output in a temporary file until then). A stream with document end markers, directives
or byte order marks inside (`streams.helm.NeedsWholeStream`) is read whole instead, as are CAP
and Kyma streams. Beyond the current document and the wiring objects, what post-render holds is
bounded, so its peak memory does not grow with the stream: the in-memory parts of the input spool
(io.input_files.spool_stream) and of the output (1 MiB each), the blocks read (64 KiB) and the
YAML resolvers' memo (core.yamlio, 4,096 scalars).

Pure: the caller reads stdin, the credentials and any existing certificates, and passes in the
clock and the key factory (self-signed mode); this returns the text for stdout and the notes for
stderr.
Objects keep their input order and head comments; objects a transform adds come after them, in
the order the transforms add them, with a `# Source:` comment (Helm 3) or Helm 4's filename
annotation so that Helm 4 can file them.
"""

from __future__ import annotations

import codecs
import dataclasses
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import IO, TYPE_CHECKING, BinaryIO, TextIO

from btp_gitops.generator.core.errors import EmptyChartOutput, Problem, SourceSyntaxError
from btp_gitops.generator.core.names import path_message
from btp_gitops.generator.core.objects import KubeObject, Manifest, annotations_of, describe
from btp_gitops.generator.core.report import Note
from btp_gitops.generator.core.yaml_limits import AliasBudget
from btp_gitops.generator.core.yamlio import DocumentWriter
from btp_gitops.generator.domains import btp_operator
from btp_gitops.generator.io.input_files import MAX_STREAM_BYTES, spool_stream
from btp_gitops.generator.pipeline.post_render_domains import BTP_OPERATOR, GENERATED_FILENAME, SOURCE_DOMAINS
from btp_gitops.generator.streams.helm import (
    FILENAME_ANNOTATION,
    SOURCE_PREFIX,
    HelmStream,
    NeedsWholeStream,
    StreamDocument,
    comment_only_text,
    document_text,
    filename_annotation,
    iter_raw_documents,
    mark_last,
    needs_whole_stream,
    read_document,
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
    allow_empty: bool = False  # post_render_to may hand Helm a stream without objects (--allow-empty)


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
    return [problem for document in stream.documents for problem in _filename_problem(document, stream_name)]


def _filename_problem(document: StreamDocument, stream_name: str) -> list[Problem]:
    metadata = document.body.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, dict) else None
    if not isinstance(annotations, dict) or FILENAME_ANNOTATION not in annotations:
        return []
    if message := path_message(annotations[FILENAME_ANNOTATION]):
        return [
            Problem(
                file=stream_name,
                document=document.position,
                object_ref=describe(document.body),
                field_path=f"metadata.annotations.{FILENAME_ANNOTATION}",
                message=message,
            )
        ]
    return []


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
    if request.domain not in SOURCE_DOMAINS:
        parts: list[str] = []
        try:
            helm4, objects, added, notes = _post_render_documents(
                lambda: [text], parts.append, request, now, new_key, stream_name
            )
        except NeedsWholeStream:
            return _post_render_whole_stream(text, request, now, new_key, stream_name, sources)
        return PostRenderResult("".join(parts), helm4, objects, added, notes)
    return _post_render_whole_stream(text, request, now, new_key, stream_name, sources)


def _post_render_whole_stream(  # noqa: PLR0917 - the arguments of post_render
    text: str,
    request: PostRenderRequest,
    now: datetime,
    new_key: KeyFactory,
    stream_name: str,
    sources: SourceDomainInputs | None,
) -> PostRenderResult:
    """The stream read as a whole: CAP and Kyma, and btp-operator streams that need it."""
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
    notes: list[Note] = []
    if manifests:
        manifests, notes = btp_operator.post_render_module_objects(
            manifests, _settings(request, now, new_key)
        )
    added = _back_into_stream(stream, manifests)
    return PostRenderResult(write_helm_stream(stream), helm4, len(stream.documents), added, notes)


def _settings(request: PostRenderRequest, now: datetime, new_key: KeyFactory) -> btp_operator.StreamSettings:
    return btp_operator.StreamSettings(
        issue_certificates=certificate_step(request, now, new_key),
        namespace=request.namespace or btp_operator.MODULE_NAMESPACE,
        chart_version=request.chart_version,
        credentials=request.credentials,
        enable_limited_cache=request.enable_limited_cache,
        manager_image=request.manager_image,
    )


# --- one document at a time ------------------------------------------------------------------

# The spooled input is read back in blocks of this many bytes. Small: each block is held as bytes,
# as text and in the splitter's buffer at once, and large blocks (1 MiB) left ~5 MiB more peak memory
# at 10,000 documents than these, for the same CPU.
_CHUNK_BYTES = 1 << 16
# Output beyond this waits in a temporary file until the stream is checked. A Helm chart's stream is
# usually smaller; a larger one rolls over early, since the in-memory text is copied when it does
# (4 MiB here cost ~5 MiB of peak memory at 10,000 documents).
_OUTPUT_IN_MEMORY = 1 << 20


@dataclass(slots=True)
class _Wiring:
    """The first pass: the wiring objects transformed as the whole stream would transform them."""

    positions: set[int] = field(default_factory=set)  # input documents holding wiring objects
    bodies: dict[tuple[int, int], KubeObject] = field(default_factory=dict)  # (position, item) -> body
    kept: set[int] = field(default_factory=set)  # ids of the bodies still in the stream
    added: list[Manifest] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    facts: btp_operator.StreamFacts | None = None
    error: Exception | None = None  # raised once the stream is known to be valid input
    readable: bool = True  # False: a document failed to read; the second pass reports it


def _first_pass(
    chunks: Iterable[str], request: PostRenderRequest, settings: btp_operator.StreamSettings, stream_name: str
) -> _Wiring:
    wiring = _Wiring()
    markers = (
        btp_operator.SELF_SIGNED_MARKERS
        if request.certificate_mode == "self-signed"
        else btp_operator.WIRING_MARKERS
    )
    version = request.chart_version
    manifests: list[Manifest] = []
    budget = AliasBudget()
    for raw, last in mark_last(iter_raw_documents(chunks)):
        if needs_whole_stream(raw):
            raise NeedsWholeStream(f"document {raw.position}")
        takes_part = btp_operator.may_take_part_in_wiring(raw.content, markers)
        if not takes_part and (version is not None or "helm.sh/chart" not in raw.content):
            continue
        read = read_document(raw, budget, stream_name, last=last)
        if read.problems:
            wiring.readable = False
            continue
        if version is None:
            version = btp_operator.chart_version_from_labels([d.as_manifest() for d in read.documents])
        if takes_part:
            wiring.positions.add(raw.position)
            for item, document in enumerate(read.documents):
                wiring.bodies[(raw.position, item)] = document.body
                manifests.append(document.as_manifest())
    if not wiring.readable:
        return wiring
    try:
        transformed, wiring.notes = btp_operator.post_render_module_objects(
            manifests, dataclasses.replace(settings, chart_version=version)
        )
    except Exception as error:
        wiring.error = error
        return wiring
    read_ids = {id(body) for body in wiring.bodies.values()}
    wiring.kept = {id(m.body) for m in transformed if id(m.body) in read_ids}
    wiring.added = [m for m in transformed if id(m.body) not in read_ids]
    assert version is not None  # else post_render_module_objects raised
    wiring.facts = btp_operator.stream_facts(transformed, version)
    return wiring


def _emit(write: Callable[[str], None], document: StreamDocument, body_text: str) -> str:
    """Write one document as `write_helm_stream` writes it; the text written."""
    text = document_text(document, body_text)
    write(text)
    return text


def _stream_end(writer: DocumentWriter, last_text: str) -> str:
    """What follows the last document: the emitter's stream end (`...` after a last body ending
    in a `|+` block), unless `document_text` closed that document already."""
    tail = writer.close()
    return "" if last_text.endswith("...\n") else tail


def _post_render_documents(  # noqa: PLR0917 - the arguments of post_render
    chunks: Callable[[], Iterable[str]],
    write: Callable[[str], None],
    request: PostRenderRequest,
    now: datetime,
    new_key: KeyFactory,
    stream_name: str,
) -> tuple[bool, int, int, list[Note]]:
    """btp-operator post-render over the text `chunks()` yields (called once per pass); writes the
    output through `write` and returns (Helm 4, objects written, objects added, notes). Raises as
    `post_render` raises, and then after writing part of the output: the caller discards it."""
    settings = _settings(request, now, new_key)
    wiring = _first_pass(chunks(), request, settings, stream_name)
    problems: list[Problem] = []
    misnamed: list[Problem] = []
    comment_only: list[tuple[str, ...]] = []
    objects = written = 0
    helm4 = False
    writer = DocumentWriter()
    text = ""  # the last document written
    budget = AliasBudget()
    try:
        for raw, last in mark_last(iter_raw_documents(chunks())):
            read = read_document(raw, budget, stream_name, last=last)
            if read.comment_only:
                comment_only.append(raw.comments)
            problems += read.problems
            for item, document in enumerate(read.documents):
                objects += 1
                if problems:
                    continue  # the stream is refused for these: only reading on
                misnamed += _filename_problem(document, stream_name)
                if misnamed or wiring.facts is None:
                    continue  # only checking from here on
                if raw.position in wiring.positions:
                    body = wiring.bodies[(raw.position, item)]
                    if id(body) not in wiring.kept:
                        helm4 = helm4 or filename_annotation(body) is not None
                        continue
                else:
                    body = btp_operator.post_render_alone(document.as_manifest(), settings, wiring.facts).body
                helm4 = helm4 or filename_annotation(body) is not None
                text = _emit(write, document, writer.dump(body))
                written += 1
        if problems:
            raise SourceSyntaxError("the manifest stream is not valid post-renderer input", problems)
        if misnamed:
            raise SourceSyntaxError("the manifest stream is not valid post-renderer input", misnamed)
        if objects == 0:
            write(comment_only_text(comment_only))
            return False, 0, 0, []
        if wiring.error is not None:
            raise wiring.error
        for manifest in wiring.added:
            document = _generated_document(manifest, helm4)
            text = _emit(write, document, writer.dump(document.body))
            written += 1
        if written == 0:
            write(comment_only_text(comment_only))
        else:
            write(_stream_end(writer, text))
        return helm4, written, len(wiring.added), wiring.notes
    finally:
        writer.close()


def post_render_to(
    source: BinaryIO,
    out: TextIO,
    request: PostRenderRequest,
    now: datetime,
    new_key: KeyFactory,
    *,
    stream_name: str = "<stdin>",
    sources: SourceDomainInputs | None = None,
    limit: int = MAX_STREAM_BYTES,
) -> PostRenderResult:
    """`post_render` from a binary stream to a text one, holding one document at a time (the input
    waits in a temporary file between the passes). Nothing is written to `out` unless the whole
    stream transforms; the result's `text` is empty (the output went to `out`).

    A result without objects is refused (EmptyChartOutput) unless `request.allow_empty`: Helm hands
    over an empty stream when the chart rendered nothing, and passing nothing back makes `helm
    upgrade` delete every object of the release.

    Raises UnreadableInput when the input is too large or not UTF-8, as `read_stream_text` does."""
    with spool_stream(source, limit) as spooled:
        if request.domain in SOURCE_DOMAINS:
            result = post_render(
                _decoded_whole(spooled), request, now, new_key, stream_name=stream_name, sources=sources
            )
            _refuse_nothing(result.objects, request, stream_name)
            out.write(result.text)
            return dataclasses.replace(result, text="")

        def chunks() -> Iterator[str]:
            spooled.seek(0)
            decoder = codecs.getincrementaldecoder("utf-8")()
            while block := spooled.read(_CHUNK_BYTES):
                yield decoder.decode(block)
            yield decoder.decode(b"", final=True)

        with tempfile.SpooledTemporaryFile(
            _OUTPUT_IN_MEMORY, mode="w+", encoding="utf-8", newline=""
        ) as output:
            try:
                helm4, objects, added, notes = _post_render_documents(
                    chunks, _writer(output), request, now, new_key, stream_name
                )
            except NeedsWholeStream:
                text = _decoded_whole(spooled)
                whole = _post_render_whole_stream(text, request, now, new_key, stream_name, None)
                _refuse_nothing(whole.objects, request, stream_name)
                out.write(whole.text)
                return dataclasses.replace(whole, text="")
            _refuse_nothing(objects, request, stream_name)
            output.seek(0)
            shutil.copyfileobj(output, out)
    return PostRenderResult("", helm4, objects, added, notes)


def _refuse_nothing(objects: int, request: PostRenderRequest, stream_name: str) -> None:
    """EmptyChartOutput for a result without objects, unless the request allows one."""
    if objects == 0 and not request.allow_empty:
        raise EmptyChartOutput(
            f"{stream_name}: the manifest stream holds no objects, so the chart rendered none (values "
            "that turn every template off?); passing nothing on would make `helm upgrade` delete every "
            "object of the release. If that is meant, pass --allow-empty (Helm 3: "
            "--post-renderer-args=--allow-empty; Helm 4 refuses an empty result in any case)"
        )


def _writer(output: IO[str]) -> Callable[[str], None]:
    def write(text: str) -> None:
        output.write(text)

    return write


def _decoded_whole(spooled: IO[bytes]) -> str:
    spooled.seek(0)
    return spooled.read().decode("utf-8")
