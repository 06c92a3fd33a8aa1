"""Service Manager credentials as values, for post-render mode only (the output goes to the cluster).

BTP Manager read the Secret `kyma-system/sap-btp-manager`, checked that `clientid`,
`clientsecret`, `sm_url`, `tokenurl` and `cluster_id` are present and non-empty, copied every key
but `cluster_id` and `credentials_namespace` into the Secret `sap-btp-service-operator` in the
credentials namespace, and put the cluster id and that namespace into the operator ConfigMap.
The same checks keep BTP Manager's reasons and wording (`MissingSecret`, `InvalidSecret`).

Values are bytes held only in `OperatorCredentials`; nothing here formats a value into a message.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field

from btp_gitops.generator.core.errors import InvalidSpec, Problem
from btp_gitops.generator.core.objects import KubeObject, Manifest, describe, kind_of, name_of
from btp_gitops.generator.transforms.credentials import EXCLUDED_KEYS, OPERATOR_SECRET

REQUIRED_SECRET = "sap-btp-manager"
REQUIRED_SECRET_NAMESPACE = "kyma-system"
REQUIRED_KEYS = ("clientid", "clientsecret", "sm_url", "tokenurl", "cluster_id")
DEFAULT_CREDENTIALS_NAMESPACE = "kyma-system"


class MissingSecret(InvalidSpec):
    reason = "MissingSecret"


class InvalidSecret(InvalidSpec):
    reason = "InvalidSecret"


@dataclass(frozen=True, slots=True)
class OperatorCredentials:
    """The keys of the required Secret; `repr` shows key names only."""

    values: Mapping[str, bytes] = field(repr=False)

    @property
    def cluster_id(self) -> str:
        return self.values["cluster_id"].decode("utf-8")

    @property
    def credentials_namespace(self) -> str:
        namespace = self.values.get("credentials_namespace", b"").decode("utf-8")
        return namespace or DEFAULT_CREDENTIALS_NAMESPACE

    def operator_secret_data(self) -> dict[str, str]:
        """Base64 data of `sap-btp-service-operator`: every key but the two BTP Manager kept out."""
        return {
            key: base64.b64encode(value).decode("ascii")
            for key, value in sorted(self.values.items())
            if key not in EXCLUDED_KEYS
        }


def missing_secret_error(where: str) -> MissingSecret:
    return MissingSecret(
        f"MissingSecret: {REQUIRED_SECRET} Secret in {REQUIRED_SECRET_NAMESPACE} namespace not found",
        [Problem(where, f"no Secret {REQUIRED_SECRET_NAMESPACE}/{REQUIRED_SECRET}")],
    )


def _decoded_values(secret: KubeObject, where: str) -> tuple[dict[str, bytes], list[Problem]]:
    values: dict[str, bytes] = {}
    problems: list[Problem] = []
    for key, encoded in (secret.get("data") or {}).items():
        try:
            values[str(key)] = base64.b64decode(str(encoded or ""), validate=True)
        except (binascii.Error, ValueError):
            # The value is a credential: say which key is broken, never what it holds.
            problems.append(
                Problem(where, "is not valid base64", object_ref=describe(secret), field_path=f"data.{key}")
            )
    for key, value in (secret.get("stringData") or {}).items():
        values[str(key)] = str(value if value is not None else "").encode("utf-8")
    return values, problems


def operator_credentials_from_secret(secret: KubeObject, where: str) -> OperatorCredentials:
    """Check the required Secret as BTP Manager did; `where` names the file or cluster it came from."""
    if kind_of(secret) != "Secret":
        raise InvalidSecret(
            "InvalidSecret: the credentials must be a Secret",
            [
                Problem(
                    where,
                    f"found {kind_of(secret) or 'no kind'}",
                    object_ref=describe(secret),
                    field_path="kind",
                )
            ],
        )
    values, problems = _decoded_values(secret, where)
    missing = [key for key in REQUIRED_KEYS if key not in values]
    empty = [key for key in REQUIRED_KEYS if key in values and not values[key].strip()]
    if missing:
        problems.append(Problem(where, f"key(s) {', '.join(missing)} not found", object_ref=describe(secret)))
    if empty:
        problems.append(
            Problem(where, f"missing value(s) for {', '.join(empty)} key(s)", object_ref=describe(secret))
        )
    if problems:
        raise InvalidSecret(f"InvalidSecret: {REQUIRED_SECRET} Secret is not usable", problems)
    return OperatorCredentials(values)


def operator_secret(credentials: OperatorCredentials, labels: Mapping[str, str]) -> KubeObject:
    metadata: dict[str, object] = {"name": OPERATOR_SECRET, "namespace": credentials.credentials_namespace}
    if labels:
        metadata["labels"] = dict(labels)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata,
        "type": "Opaque",
        "data": credentials.operator_secret_data(),
    }


def install_operator_secret(manifests: list[Manifest], credentials: OperatorCredentials) -> list[Manifest]:
    """Put the credentials into the chart's `sap-btp-service-operator` Secret, where it stands.

    The chart's Secret keeps its place in the stream and its labels; its data and namespace come
    from the credentials. A stream without that Secret (e.g. Helm 4 post-rendering hooks on their
    own) is left alone, so a second invocation never adds a second copy.
    """
    for manifest in manifests:
        body = manifest.body
        if kind_of(body) == "Secret" and name_of(body) == OPERATOR_SECRET:
            labels = body.get("metadata", {}).get("labels") or {}
            replacement = operator_secret(credentials, labels)
            annotations = body.get("metadata", {}).get("annotations")
            if annotations:
                replacement["metadata"]["annotations"] = dict(annotations)
            body.clear()
            body.update(replacement)
    return manifests
