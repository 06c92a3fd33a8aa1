"""Which BtpOperator and BtpOperatorConfig a render acts on, and what it refuses in them."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from pathlib import Path

from btp_gitops.generator.core.errors import InvalidSpec, Problem
from btp_gitops.generator.core.report import Level, Note
from btp_gitops.generator.core.sources import SourceDocument, SourceSet
from btp_gitops.generator.domains.btp_operator.model import (
    BTP_OPERATOR,
    BTP_OPERATOR_CONFIG,
    CR_NAME,
    MODULE_NAMESPACE,
    ModuleConfig,
    where,
)


def select_module_request(sources: SourceSet) -> tuple[SourceDocument | None, list[Note]]:
    """The BtpOperator BTP Manager would act on; every other one is reported, as the operator did."""
    accepted: SourceDocument | None = None
    notes = []
    for document in sources.of_kind(*BTP_OPERATOR):
        meta = document.body["metadata"]
        if meta.get("namespace") == MODULE_NAMESPACE and meta.get("name") == CR_NAME:
            accepted = document
        else:
            notes.append(
                Note(
                    Level.WARNING,
                    "WrongNamespaceOrName",
                    where(document),
                    f"only {MODULE_NAMESPACE}/{CR_NAME} is rendered; this BtpOperator is ignored",
                )
            )
    return accepted, notes


def issuer_ref_problems(config: ModuleConfig) -> list[Problem]:
    """issuerRef fields the chosen certificate manager has no use for: ignoring them would issue
    from another issuer than the one the user meant."""
    issuer = config.issuer or {}
    unused: tuple[str, ...]
    if config.certificate_mode == "gardener":
        unused = ("kind", "group")
        why = "Gardener issuers are referenced by name and namespace; kind and group are for 'cert-manager'"
    else:
        unused = ("namespace",)
        why = "cert-manager issuers are referenced by name, kind and group; namespace is for 'gardener'"
    return [
        Problem(
            file=config.source.file,
            document=config.source.document,
            object_ref=config.source.ref,
            field_path=f"spec.certificates.issuerRef.{field}",
            message=why,
        )
        for field in unused
        if field in issuer
    ]


def select_module_config(sources: SourceSet, request: SourceDocument, bundled_chart: Path) -> ModuleConfig:
    configs = sources.of_kind(*BTP_OPERATOR_CONFIG)
    if len(configs) == 1:
        config = ModuleConfig.from_source(configs[0], bundled_chart)
        if config.certificate_mode == "self-signed":
            raise InvalidSpec(
                "self-signed certificates cannot be rendered into Git",
                [
                    Problem(
                        file=config.source.file,
                        document=config.source.document,
                        object_ref=config.source.ref,
                        field_path="spec.certificates.mode",
                        message="'self-signed' would put a CA private key into the repository; use "
                        "'cert-manager' or 'gardener' for render, and keep 'self-signed' for "
                        "`btp-gitops post-render`, whose output goes to the cluster",
                    )
                ],
            )
        if problems := issuer_ref_problems(config):
            raise InvalidSpec("the webhook certificate issuer cannot be rendered", problems)
        return config
    if not configs:
        problem = Problem(
            file=request.file,
            document=request.document,
            object_ref=request.ref,
            message="no BtpOperatorConfig (btp-gitops.io/v1alpha1) in the sources: add one with the "
            "cluster id",
        )
    else:
        problem = Problem(
            file=request.file,
            document=request.document,
            object_ref=request.ref,
            message="more than one BtpOperatorConfig: " + ", ".join(where(c) for c in configs),
        )
    raise InvalidSpec("cannot render the BTP operator module", [problem])


def unchecked_dependents(
    documents: Iterable[SourceDocument], skipped: Collection[tuple[str, int]]
) -> set[tuple[str, int]]:
    """The BtpOperators that cannot be checked while a BtpOperatorConfig is skipped (it failed its
    schema or name check, pipeline.source_checks): without it they would be refused for the
    wrong reason ("no BtpOperatorConfig in the sources")."""
    documents = list(documents)
    keys = [((d.api_version, d.kind), (d.file, d.document)) for d in documents]
    if not any(kind == BTP_OPERATOR_CONFIG and key in skipped for kind, key in keys):
        return set()
    return {key for kind, key in keys if kind == BTP_OPERATOR}
