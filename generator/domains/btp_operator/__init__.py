"""The SAP BTP service operator module (BtpOperator + BtpOperatorConfig -> the `btp-operator` app).

model        the module's sources (ModuleConfig) and names
validation   which BtpOperator and BtpOperatorConfig a render acts on, what it refuses
render       the chart, transformed as BTP Manager installed it
post_render  the same transforms over a stream Helm rendered (`btp-gitops post-render`)
artifact     the `module-resources/` artifact's format, written by the pipeline, read by the controller

This face lists what other packages (pipeline, controller) may use. It is lazy (core.faces):
`module-resources` needs only the artifact's format, not the transforms of a render.
"""

from typing import TYPE_CHECKING

from btp_gitops.generator.core.faces import lazy_face

if TYPE_CHECKING:
    from btp_gitops.generator.domains.btp_operator.artifact import (
        APPLY,
        CHART_VERSION_LABEL,
        DELETE_FILE,
        EXCLUDE_FILE,
        EXCLUDED_HOOKS,
        HELM_CHART_LABEL,
        RELEASE_FILE,
        NotAnObject,
        SourcedDocument,
        apply_file_name,
        artifact_text,
        chart_versions,
        is_apply_file,
        labels_on,
        parse_artifact_objects,
        parse_sourced_documents,
        version_of,
    )
    from btp_gitops.generator.domains.btp_operator.model import (
        BTP_OPERATOR_FINALIZER,
        MODULE_NAMESPACE,
        RELEASE_NAME,
    )
    from btp_gitops.generator.domains.btp_operator.post_render import (
        SELF_SIGNED_MARKERS,
        WIRING_MARKERS,
        CertificateStep,
        StreamFacts,
        StreamSettings,
        chart_version_from_labels,
        may_take_part_in_wiring,
        post_render_alone,
        post_render_module_objects,
        stream_facts,
    )
    from btp_gitops.generator.domains.btp_operator.render import render_btp_operator
    from btp_gitops.generator.domains.btp_operator.validation import unchecked_dependents
    from btp_gitops.generator.transforms.operator_secret import (
        InvalidSecret,
        operator_credentials_from_secret,
    )

__all__ = [
    "APPLY",
    "BTP_OPERATOR_FINALIZER",
    "CHART_VERSION_LABEL",
    "DELETE_FILE",
    "EXCLUDED_HOOKS",
    "EXCLUDE_FILE",
    "HELM_CHART_LABEL",
    "MODULE_NAMESPACE",
    "RELEASE_FILE",
    "RELEASE_NAME",
    "SELF_SIGNED_MARKERS",
    "WIRING_MARKERS",
    "CertificateStep",
    "InvalidSecret",
    "NotAnObject",
    "SourcedDocument",
    "StreamFacts",
    "StreamSettings",
    "apply_file_name",
    "artifact_text",
    "chart_version_from_labels",
    "chart_versions",
    "is_apply_file",
    "labels_on",
    "may_take_part_in_wiring",
    "operator_credentials_from_secret",
    "parse_artifact_objects",
    "parse_sourced_documents",
    "post_render_alone",
    "post_render_module_objects",
    "render_btp_operator",
    "stream_facts",
    "unchecked_dependents",
    "version_of",
]

__getattr__ = lazy_face(
    __name__,
    {
        "artifact": (
            "APPLY",
            "CHART_VERSION_LABEL",
            "DELETE_FILE",
            "EXCLUDE_FILE",
            "EXCLUDED_HOOKS",
            "HELM_CHART_LABEL",
            "RELEASE_FILE",
            "NotAnObject",
            "SourcedDocument",
            "apply_file_name",
            "artifact_text",
            "chart_versions",
            "is_apply_file",
            "labels_on",
            "parse_artifact_objects",
            "parse_sourced_documents",
            "version_of",
        ),
        "model": ("BTP_OPERATOR_FINALIZER", "MODULE_NAMESPACE", "RELEASE_NAME"),
        "post_render": (
            "SELF_SIGNED_MARKERS",
            "WIRING_MARKERS",
            "CertificateStep",
            "StreamFacts",
            "StreamSettings",
            "chart_version_from_labels",
            "may_take_part_in_wiring",
            "post_render_alone",
            "post_render_module_objects",
            "stream_facts",
        ),
        "render": ("render_btp_operator",),
        "validation": ("unchecked_dependents",),
        "btp_gitops.generator.transforms.operator_secret": (
            "InvalidSecret",
            "operator_credentials_from_secret",
        ),
    },
)
