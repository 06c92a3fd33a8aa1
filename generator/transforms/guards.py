"""Last checks before anything is written to Git: no credential and no private key leaves us."""

from __future__ import annotations

from btp_gitops.generator.core.errors import CredentialInOutput, Problem
from btp_gitops.generator.core.objects import Manifest, describe, kind_of

PRIVATE_KEY_MARKERS = ("PRIVATE KEY-----", "PRIVATE KEY BLOCK-----")


def secrets_with_data(manifests: list[Manifest]) -> list[Manifest]:
    return [
        m
        for m in manifests
        if kind_of(m.body) == "Secret" and (m.body.get("data") or m.body.get("stringData"))
    ]


def assert_no_credentials(manifests: list[Manifest], serialized: dict[str, str]) -> None:
    """Refuse Secrets with data, and any text that holds a PEM private key.

    `serialized` maps output file names to their text; the scan covers every byte we would write.
    """
    problems = [
        Problem(file=m.origin, object_ref=describe(m.body), field_path="data", message="Secret with data")
        for m in secrets_with_data(manifests)
    ]
    problems += [
        Problem(file=name, message="contains a PEM private key")
        for name, text in sorted(serialized.items())
        if any(marker in text for marker in PRIVATE_KEY_MARKERS)
    ]
    if problems:
        raise CredentialInOutput(
            "refusing to write credentials into the rendered repo: credentials must be referenced "
            "(ExternalSecret) and certificates issued in-cluster (cert-manager)",
            problems,
        )
