"""The `module-resources/` artifact's format, written by `btp-gitops module-resources` and read back
by it (the previous step) and by the controller (deprovisioning, outdated resources). Pure: text in,
text out; the callers read and write the files and turn format errors into their own.

    apply/<template file>    the objects the current release installs, one file per template,
                             named as the template is (`service_account.yaml` stays `.yaml`)
    delete/to-delete.yml     the previous release's objects the current one no longer produces
    excluded/to-exclude.yml  the pre-delete hooks left out
    .release.yml             the release the artifact was made for (ours; consumers ignore it)

Each document is `---`, a `# Source: <chart>/templates/<file>` line and the object. The chart
version is the `chart-version` label (BTP Manager's runtime label) or Helm's
`helm.sh/chart: <chart>-<version>`, where `<chart>` is the chart the `# Source:` line names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

from btp_gitops.generator.core.objects import KubeObject, get_path, kind_of
from btp_gitops.generator.core.yamlio import dump_object, load_trusted_document

APPLY = "apply"
DELETE_FILE = "delete/to-delete.yml"
EXCLUDE_FILE = "excluded/to-exclude.yml"
RELEASE_FILE = ".release.yml"
APPLY_SUFFIXES = (".yaml", ".yml")
EXCLUDED_HOOKS = frozenset({"pre-delete"})

CHART_VERSION_LABEL = "chart-version"
HELM_CHART_LABEL = "helm.sh/chart"

_SEPARATOR = re.compile(r"^---[ \t]*$", re.MULTILINE)
_SOURCE = re.compile(r"^# Source: (.+)$", re.MULTILINE)
_CHART = re.compile(r"^(?P<chart>[^/\s]+)/")


class NotAnObject(ValueError):
    """A document of an artifact file that is not a Kubernetes object (no apiVersion or kind)."""


@dataclass(frozen=True, slots=True)
class SourcedDocument:
    source: str  # "<chart>/templates/<file>", "" when the document has no `# Source:` line
    body: KubeObject

    def text(self) -> str:
        return f"---\n# Source: {self.source}\n{dump_object(self.body)}"

    @property
    def chart(self) -> str:
        """The chart the `# Source:` line names ("" if none)."""
        match = _CHART.match(self.source)
        return match["chart"] if match else ""


def apply_file_name(source: str) -> str:
    """`sap-btp-operator/templates/service_account.yaml` -> `apply/service_account.yaml`: the
    template's own file name, extension included (consumers diff these files by name); a template
    in a subdirectory joins the directories with `_`, a file of the chart's crds/ gets `crds_`."""
    parts = PurePosixPath(source).parts
    inside = parts[2:] if len(parts) > 2 and parts[1] in {"templates", "crds"} else parts[1:]
    prefix = "crds_" if len(parts) > 1 and parts[1] == "crds" else ""
    return f"{APPLY}/{prefix}{'_'.join(inside)}"


def is_apply_file(name: str) -> bool:
    """A file of apply/ that holds objects (a template named `.yaml` or `.yml`)."""
    return name.endswith(APPLY_SUFFIXES)


def artifact_text(documents: Iterable[SourcedDocument]) -> str:
    return "".join(document.text() for document in documents)


def _documents(text: str) -> Iterator[tuple[str, object]]:
    """(source, body) of every non-empty document; yaml.YAMLError on a document that is not YAML."""
    for piece in _SEPARATOR.split(text):
        if not piece.strip():
            continue
        body = load_trusted_document(piece)
        if body is None:
            continue
        match = _SOURCE.search(piece)
        yield (match.group(1).strip() if match else ""), body


def parse_sourced_documents(text: str) -> list[SourcedDocument]:
    """Read back a file we wrote, skipping documents that are not mappings."""
    return [SourcedDocument(source, body) for source, body in _documents(text) if isinstance(body, dict)]


def parse_artifact_objects(text: str) -> list[SourcedDocument]:
    """Read an artifact file strictly: every document must be a Kubernetes object (NotAnObject)."""
    documents = []
    for source, body in _documents(text):
        if not isinstance(body, dict) or not body.get("apiVersion") or not kind_of(body):
            raise NotAnObject("a document is not a Kubernetes object")
        documents.append(SourcedDocument(source, body))
    return documents


def labels_on(obj: KubeObject) -> dict[str, str]:
    """An object's labels, read without adding an empty map to it (core.objects.labels_of would)."""
    labels = get_path(obj, "metadata", "labels")
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def version_of(document: SourcedDocument) -> str | None:
    """The chart version one document carries, if any."""
    labels = labels_on(document.body)
    if labels.get(CHART_VERSION_LABEL):
        return labels[CHART_VERSION_LABEL]
    helm_chart = labels.get(HELM_CHART_LABEL, "")
    prefix = f"{document.chart}-"
    if document.chart and helm_chart.startswith(prefix) and len(helm_chart) > len(prefix):
        return helm_chart[len(prefix) :]
    return None


def chart_versions(documents: Iterable[SourcedDocument]) -> set[str]:
    """Every chart version the documents carry; a consistent artifact has exactly one."""
    return {version for version in map(version_of, documents) if version}
