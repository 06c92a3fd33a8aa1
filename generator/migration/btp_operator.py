"""BTP Manager's objects -> the BtpOperator source and a BtpOperatorConfig, under `btp-operator/`.

Writes only under `btp-operator/`, in the layout of `examples/btp-operator`:

    btp-operator/btpoperator.yaml        the module request (kyma-system/btpoperator)
    btp-operator/btpoperatorconfig.yaml  the non-secret settings BTP Manager read at runtime

It picks the BtpOperator CRs (operator.kyma-project.io), the Secret `kyma-system/sap-btp-manager`
BTP Manager reads, and the ConfigMap `kyma-system/sap-btp-operator-config` it wrote (for
ENABLE_LIMITED_CACHE, which the Secret does not hold, and the cluster id when the Secret lacks one).

Of the Secret, only two keys are settings: `cluster_id` (it is in the operator's ConfigMap too)
and `credentials_namespace`. Every other key (`clientid`, `clientsecret`, `sm_url`, `tokenurl`,
and any key not known to be a setting) is a credential: no value of it is written, logged or put
into a message; not even a key's name is, unless it is one of BTP Manager's own. The credentials
stay in the cluster: the imported BtpOperatorConfig names that Secret as
`spec.credentials.sourceSecret`, and the render copies it in-cluster with an ExternalSecret.

The webhook certificates BTP Manager issued itself come from a certificate manager after the
move: cert-manager when its Certificate CRD was read, else Gardener cert-management when its
CRD was, else cert-manager, with a comment saying it must be installed
(migration.cluster_managers).

BTP Manager acts on `kyma-system/btpoperator` only (others get Warning WrongNamespaceOrName):
any other BtpOperator is listed as skipped. Without a cluster id (no Secret, no ConfigMap), no
BtpOperatorConfig can be written, and the render refuses a BtpOperator without one: the
BtpOperator is listed as skipped too, nothing is half-written.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from btp_gitops.generator.core.names import NameRule, name_message
from btp_gitops.generator.migration.cluster_managers import (
    CERT_MANAGER,
    GARDENER,
    InstalledManagers,
    installed_managers,
)
from btp_gitops.generator.migration.kyma_fields import section, type_word
from btp_gitops.generator.migration.live_meta import (
    Refused,
    document,
    kept_metadata,
    left_out_line,
    quoted,
    refused,
    skipped,
    unique_objects,
    unknown_fields,
)
from btp_gitops.generator.migration.model import (
    ImportedDocument,
    ImportedFile,
    ImportResult,
    LiveObject,
)

GROUP = "operator.kyma-project.io"
BTP_OPERATOR_API = f"{GROUP}/v1alpha1"
CONFIG_API = "btp-gitops.io/v1alpha1"
NAMESPACE = "kyma-system"
CR_NAME = "btpoperator"
SECRET_NAME = "sap-btp-manager"
CONFIGMAP_NAME = "sap-btp-operator-config"
CONFIG_NAME = "btp-operator"
DIRECTORY = "btp-operator"
BTP_OPERATOR_FILE = f"{DIRECTORY}/btpoperator.yaml"
CONFIG_FILE = f"{DIRECTORY}/btpoperatorconfig.yaml"

SETTING_KEYS = ("cluster_id", "credentials_namespace")
CREDENTIAL_KEYS = ("clientid", "clientsecret", "sm_url", "tokenurl")
# Labels BTP Manager, Lifecycle Manager and the environment broker set; the user's are kept.
_OPERATOR_PREFIXES = ("operator.kyma-project.io/", "app.kubernetes.io/managed-by")
_SKIP_RECONCILIATION = "kyma-project.io/skip-reconciliation"
FORCE_DELETE_LABEL = "force-delete"
ENVIRONMENT_BROKER = "kcp-kyma-environment-broker"


def _picked(live: LiveObject) -> bool:
    if live.kind == "BtpOperator" and live.api_version.split("/", 1)[0] == GROUP:
        return True
    where = (live.namespace, live.name)
    return live.api_version == "v1" and (
        (live.kind == "Secret" and where == (NAMESPACE, SECRET_NAME))
        or (live.kind == "ConfigMap" and where == (NAMESPACE, CONFIGMAP_NAME))
    )


def _secret_setting(secret: Mapping[str, Any], key: str) -> str | None:
    """A setting of the Secret, decoded; None when absent. Only called for SETTING_KEYS, so a
    message may show the value; a credential's never reaches here."""
    data = section(secret, "data", "data")
    string_data = section(secret, "stringData", "stringData")
    if key in string_data:
        value = string_data[key]
        if not isinstance(value, str):
            raise Refused(f"stringData.{key}", f"must be a string, not {type_word(value)}")
        return value
    if key not in data:
        return None
    encoded = data[key]
    if not isinstance(encoded, str):
        raise Refused(f"data.{key}", f"must be a base64 string, not {type_word(encoded)}")
    try:
        return base64.b64decode(encoded, validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise Refused(f"data.{key}", "not base64 of UTF-8 text") from None


def _credential_report(secret: Mapping[str, Any]) -> list[str]:
    """What the Secret holds besides the settings, by BTP Manager's key names and a count: never a
    value, nor the name of a key that is not BTP Manager's (a name may carry anything)."""
    keys: set[str] = set()
    empty: set[str] = set()
    for field in ("data", "stringData"):
        values = secret.get(field)
        if isinstance(values, Mapping):
            keys.update(str(key) for key in values)
            empty.update(str(key) for key, value in values.items() if value in ("", None))
    credentials = [key for key in CREDENTIAL_KEYS if key in keys]
    others = len(keys - set(CREDENTIAL_KEYS) - set(SETTING_KEYS))
    lines = [
        "Credentials stay in the cluster: "
        + (", ".join(credentials) or "no credential key")
        + (f" and {others} other key(s)" if others else "")
        + f" of Secret {NAMESPACE}/{SECRET_NAME} (spec.credentials' default source) reach the operator "
        "through the render's ExternalSecret."
    ]
    missing = [key for key in CREDENTIAL_KEYS if key not in keys]
    unset = [key for key in CREDENTIAL_KEYS if key in empty]
    if missing or unset:
        lines.append(
            "Warning: BTP Manager reported InvalidSecret for it: "
            + "; ".join(
                part
                for part in (
                    f"key(s) {', '.join(missing)} not found" if missing else "",
                    f"missing value(s) for {', '.join(unset)} key(s)" if unset else "",
                )
                if part
            )
            + "; the operator gets the same keys, fix the Secret."
        )
    return lines


def _secret_origin_lines(live: LiveObject) -> list[str]:
    labels = live.body["metadata"].get("labels")
    labels = labels if isinstance(labels, Mapping) else {}
    if str(labels.get(_SKIP_RECONCILIATION, "")).lower() == "true":
        owner = " (customised: labelled kyma-project.io/skip-reconciliation, nothing restores it)."
    elif labels.get("app.kubernetes.io/managed-by") == ENVIRONMENT_BROKER:
        owner = " (the environment broker's: it restores the Secret, keep it in the cluster)."
    else:
        owner = "."
    return [f"Settings read from {live.origin}: Secret {NAMESPACE}/{SECRET_NAME}{owner}"]


@dataclass(frozen=True, slots=True)
class _Settings:
    """What was read of the Secret and the ConfigMap: settings, and comment lines (no credential)."""

    cluster_id: str | None = None
    credentials_namespace: str | None = None
    limited_cache: str | None = None
    comment: tuple[str, ...] = ()


def _secret_settings(live: LiveObject) -> _Settings:
    """The Secret's two settings, or `Refused` naming the field."""
    cluster_id = _secret_setting(live.body, "cluster_id") or None
    namespace = _secret_setting(live.body, "credentials_namespace") or None
    if namespace is not None and (message := name_message(namespace, NameRule.LABEL)) is not None:
        raise Refused("data.credentials_namespace", message)
    comment = (*_secret_origin_lines(live), *_credential_report(live.body))
    return _Settings(cluster_id, namespace, comment=comment)


def _configmap_settings(live: LiveObject) -> _Settings:
    """What BTP Manager wrote into the operator's ConfigMap, or `Refused` naming the field."""
    data = section(live.body, "data", "data")
    values: dict[str, str] = {}
    for key in ("CLUSTER_ID", "MANAGEMENT_NAMESPACE", "ENABLE_LIMITED_CACHE"):
        value = data.get(key)
        if value is not None and not isinstance(value, str):
            raise Refused(f"data.{key}", f"must be a string, not {type_word(value)}")
        if value:
            values[key] = value
    namespace = values.get("MANAGEMENT_NAMESPACE")
    if namespace is not None and (message := name_message(namespace, NameRule.LABEL)) is not None:
        raise Refused("data.MANAGEMENT_NAMESPACE", message)
    return _Settings(
        values.get("CLUSTER_ID"),
        namespace,
        values.get("ENABLE_LIMITED_CACHE"),
        (f"Settings read from {live.origin}: ConfigMap {NAMESPACE}/{CONFIGMAP_NAME} (operator flags).",),
    )


def _certificate_mode(managers: InstalledManagers) -> tuple[str, str]:
    """spec.certificates.mode for the certificate managers found installed, and the comment why."""
    issued = "BTP Manager issued the webhook certificates itself; the render has"
    if managers.cert_manager:
        return CERT_MANAGER, f"{issued} cert-manager issue them (its Certificate CRD is installed)."
    if managers.gardener:
        return GARDENER, (
            f"{issued} Gardener cert-management issue them: its Certificate CRD is installed, "
            "cert-manager's is not. The webhooks get their CA from Gardener's CA injector "
            "(shoot-cert-service caInjector.enabled); or install cert-manager and set "
            "spec.certificates.mode: cert-manager."
        )
    return CERT_MANAGER, (
        f"{issued} cert-manager issue them: install it before the hand-over. Neither its "
        "Certificate CRD nor Gardener's was among the objects read (with Gardener "
        "cert-management instead, set spec.certificates.mode: gardener)."
    )


def _config_document(
    secret: _Settings, configmap: _Settings, managers: InstalledManagers
) -> ImportedDocument | None:
    """The BtpOperatorConfig, or None when no cluster id was read."""
    comment = list(secret.comment) + list(configmap.comment)
    cluster_id = secret.cluster_id
    if cluster_id is None and configmap.cluster_id is not None:
        cluster_id = configmap.cluster_id
        comment.append("The cluster id is the operator ConfigMap's: the Secret gave none.")
    if cluster_id is None:
        return None
    namespace = secret.credentials_namespace or configmap.credentials_namespace or NAMESPACE
    spec: dict[str, Any] = {"clusterId": cluster_id, "credentialsNamespace": namespace}
    if configmap.limited_cache is not None:
        spec["enableLimitedCache"] = configmap.limited_cache.lower() != "false"
    else:
        comment.append(
            "enableLimitedCache: the render's default (true); BTP Manager's ConfigMap was not read."
        )
    # spec.credentials stays unset: its default source is the Secret BTP Manager read.
    if not secret.comment:
        comment.append(
            f"Warning: Secret {NAMESPACE}/{SECRET_NAME} was not read; the render's ExternalSecret reads "
            "the credentials from it in the cluster: it must exist there."
        )
    mode, why = _certificate_mode(managers)
    spec["certificates"] = {"mode": mode}
    comment.append(why)
    body = {
        "apiVersion": CONFIG_API,
        "kind": "BtpOperatorConfig",
        "metadata": {"name": CONFIG_NAME, "namespace": NAMESPACE},
        "spec": spec,
    }
    return document(body, tuple(comment))


def _btp_operator_document(live: LiveObject) -> ImportedDocument:
    kept = kept_metadata(live, _OPERATOR_PREFIXES)
    left_out = kept.left_out
    spec = section(live.body, "spec", "spec")
    left_out += [f"{field} (BtpOperator has no settings)" for field in unknown_fields(spec, (), "spec")]
    comment = [f"Imported from {live.origin}: {live.describe()}."]
    status = live.body.get("status")
    if isinstance(status, Mapping):
        comment.append(f"BTP Manager's status (not a source): {quoted(status.get('state') or 'no state')}.")
        left_out.append("status")
    if kept.metadata.get("labels", {}).get(FORCE_DELETE_LABEL) == "true":
        comment.append(
            "Labelled force-delete: removing this BtpOperator deletes every service instance and binding."
        )
    body = {"apiVersion": BTP_OPERATOR_API, "kind": "BtpOperator", "metadata": kept.metadata}
    return document(body, (*comment, *left_out_line(left_out)))


def _one(objects: Sequence[LiveObject], kind: str) -> LiveObject | None:
    return next((live for live in objects if live.kind == kind), None)


def import_btp_operator(objects: Sequence[LiveObject]) -> ImportResult:
    """The BtpOperator source and its BtpOperatorConfig from BTP Manager's live objects (pure)."""
    picked, skips = unique_objects(objects, _picked)
    requests: list[LiveObject] = []
    for live in picked:
        if live.kind != "BtpOperator":
            continue
        if live.api_version != BTP_OPERATOR_API:
            skips.append(
                skipped(live, f"only {BTP_OPERATOR_API} is imported: read the object at that version")
            )
        elif (live.namespace, live.name) != (NAMESPACE, CR_NAME):
            skips.append(
                skipped(
                    live,
                    f"BTP Manager acts on {NAMESPACE}/{CR_NAME} only (it reported this one "
                    "WrongNamespaceOrName), and so does the render",
                )
            )
        else:
            requests.append(live)
    read: dict[str, _Settings] = {}
    for kind, settings_of in (("Secret", _secret_settings), ("ConfigMap", _configmap_settings)):
        holder = _one(picked, kind)
        if holder is None:
            continue
        try:
            read[kind] = settings_of(holder)
        except Refused as refusal:
            skips.append(refused(holder, refusal))
    files: list[ImportedFile] = []
    managers = installed_managers(objects)
    config = _config_document(read.get("Secret", _Settings()), read.get("ConfigMap", _Settings()), managers)
    if config is not None:
        files.append(ImportedFile(CONFIG_FILE, (config,)))
    for live in requests:
        if config is None:
            skips.append(
                skipped(
                    live,
                    f"no cluster id was read (Secret {NAMESPACE}/{SECRET_NAME}: data.cluster_id, or "
                    f"ConfigMap {NAMESPACE}/{CONFIGMAP_NAME}: data.CLUSTER_ID): without a "
                    "BtpOperatorConfig the render refuses it",
                )
            )
            continue
        try:
            files.append(ImportedFile(BTP_OPERATOR_FILE, (_btp_operator_document(live),)))
        except Refused as refusal:
            skips.append(refused(live, refusal))
    if config is None:
        skips += [
            skipped(
                live,
                "holds no cluster id (data.cluster_id, data.CLUSTER_ID): no BtpOperatorConfig is written",
            )
            for live in picked
            if live.kind in read
        ]
    return ImportResult(
        files=tuple(sorted(files, key=lambda f: f.path)),
        skipped=tuple(sorted(skips, key=lambda s: (s.object, s.origin, s.reason))),
    )
