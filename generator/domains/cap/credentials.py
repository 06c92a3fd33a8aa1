"""Service credentials for CAP workloads, with no credential in Git.

CAP Operator read each consumed service's binding Secret and wrote a Secret with VCAP_SERVICES
into the cluster. Those values must never reach Git, so the work moves into the cluster. The mode
is chosen per application by the annotation `btp-gitops.io/credentials` on the CAPApplication:

`vcap` (default: CAP's Node.js and Java runtimes read VCAP_SERVICES, which every CAP Operator
workload got) -- an external-secrets.io/v1 ExternalSecret `<cav>-<workload>-vcap` per workload
that consumes services (tenant operation workloads too, whose Jobs come with the tenants)
assembles VCAP_SERVICES in the cluster, as CAP Operator did:

    {"<class>": [{"credentials": {...}, "instance_name": <name>, "label": <class>,
                  "name": <name>, "tags": [<class>]}, ...], ...}

Each binding Secret is extracted whole, its keys prefixed with `s<i>_` (i: position among the
workload's services) so that Secrets with the same keys do not collide. Without a `.metadata`
key, `credentials` is parsed as JSON. With one (the SAP service binding format of the SAP BTP
service operator), the credentials are the `credentialProperties` it lists (`format: json` ones
parsed), and its `metaDataProperties` (plan, tags, instance_guid, ...) are added to the entry;
`name` and `credentials` stay as above. The workload's container and init containers take the
Secret by `envFrom`. A SecretStore `<ca>-binding-reader` (Kubernetes provider) may read exactly
the application's binding Secrets, through its own ServiceAccount and Role.

`service-bindings` -- no copy at all: each binding Secret is mounted read-only at
`/bindings/<service>` and `SERVICE_BINDING_ROOT=/bindings` is set (servicebinding.io layout, read
by @sap/xsenv and CAP's own binding support).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from btp_gitops.generator.core.objects import KubeObject
from btp_gitops.generator.domains.cap.identity import (
    binding_reader_name,
    binding_volume_name,
    vcap_secret_name,
)
from btp_gitops.generator.domains.cap.model import Application, BtpService, CredentialsMode, Version, Workload

BINDING_ROOT = "/bindings"
REFRESH_INTERVAL = "1h"
VCAP_SERVICES = "VCAP_SERVICES"


@dataclass(frozen=True, slots=True)
class CredentialWiring:
    """What a pod spec gets to reach its credentials: env, envFrom, volumes and mounts."""

    env: tuple[dict[str, Any], ...] = ()
    env_from: tuple[dict[str, Any], ...] = ()
    volumes: tuple[dict[str, Any], ...] = ()
    volume_mounts: tuple[dict[str, Any], ...] = ()
    secrets: tuple[str, ...] = ()  # the Secrets the pods read, for rollouts on credential updates


def consumed_services(app: Application, workload: Workload) -> list[BtpService]:
    """The workload's services in the order it lists them, each once."""
    names = list(dict.fromkeys(workload.consumed_services))
    found = [app.service(name) for name in names]
    return [s for s in found if s is not None]


def workload_credentials(app: Application, version: Version, workload: Workload) -> CredentialWiring:
    services = consumed_services(app, workload)
    if not services:
        return CredentialWiring()
    if app.credentials_mode == CredentialsMode.SERVICE_BINDINGS:
        return CredentialWiring(
            env=({"name": "SERVICE_BINDING_ROOT", "value": BINDING_ROOT},),
            volumes=tuple(
                {"name": binding_volume_name(s.name), "secret": {"secretName": s.secret}} for s in services
            ),
            volume_mounts=tuple(
                {
                    "name": binding_volume_name(s.name),
                    "mountPath": f"{BINDING_ROOT}/{s.name}",
                    "readOnly": True,
                }
                for s in services
            ),
            secrets=tuple(s.secret for s in services),
        )
    secret = vcap_secret_name(version, workload)
    return CredentialWiring(env_from=({"secretRef": {"name": secret}},), secrets=(secret,))


# --- VCAP_SERVICES by ExternalSecret --------------------------------------------------------------


def _quoted(text: str) -> str:
    """A Go template string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _service_list(services: Sequence[BtpService]) -> str:
    entries = " ".join(
        f"(dict {_quoted('prefix')} {_quoted(f's{index}_')} {_quoted('name')} {_quoted(s.name)} "
        f"{_quoted('class')} {_quoted(s.service_class)})"
        for index, s in enumerate(services)
    )
    return f"(list {entries})"


# The template external-secrets runs (Go text/template with Sprig, as its engine v2 does) over the
# extracted keys. `$data` holds them, so the template does not depend on what `$` is bound to.
_VCAP_TEMPLATE = """\
{{- $data := . -}}
{{- $vcap := dict -}}
{{- range $service := SERVICES -}}
{{- $entry := dict "name" $service.name "instance_name" $service.name "label" $service.class \
"tags" (list $service.class) -}}
{{- $metadata := default "" (index $data (printf "%s.metadata" $service.prefix)) -}}
{{- if $metadata -}}
{{- $described := mustFromJson $metadata -}}
{{- $credentials := dict -}}
{{- range $property := $described.credentialProperties -}}
{{- $value := default "" (index $data (printf "%s%s" $service.prefix $property.name)) -}}
{{- if eq (toString $property.format) "json" -}}
{{- $_ := set $credentials $property.name (mustFromJson $value) -}}
{{- else -}}
{{- $_ := set $credentials $property.name $value -}}
{{- end -}}
{{- end -}}
{{- range $property := $described.metaDataProperties -}}
{{- if not (has $property.name (list "name" "credentials")) -}}
{{- $value := default "" (index $data (printf "%s%s" $service.prefix $property.name)) -}}
{{- if eq (toString $property.format) "json" -}}
{{- $_ := set $entry $property.name (mustFromJson $value) -}}
{{- else -}}
{{- $_ := set $entry $property.name $value -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $_ := set $entry "credentials" $credentials -}}
{{- else -}}
{{- $_ := set $entry "credentials" (mustFromJson (default "{}" (index $data (printf "%scredentials" \
$service.prefix)))) -}}
{{- end -}}
{{- if not (hasKey $vcap $service.class) -}}{{- $_ := set $vcap $service.class (list) -}}{{- end -}}
{{- $_ := set $vcap $service.class (append (get $vcap $service.class) $entry) -}}
{{- end -}}
{{- toJson $vcap -}}"""


def vcap_template(services: Sequence[BtpService]) -> str:
    """The Go template that assembles VCAP_SERVICES from the extracted binding Secrets."""
    return _VCAP_TEMPLATE.replace("\\\n", "").replace("SERVICES", _service_list(services))


def vcap_external_secret(app: Application, version: Version, workload: Workload) -> KubeObject | None:
    services = consumed_services(app, workload)
    if app.credentials_mode != CredentialsMode.VCAP or not services:
        return None
    name = vcap_secret_name(version, workload)
    return {
        "apiVersion": "external-secrets.io/v1",
        "kind": "ExternalSecret",
        "metadata": {"name": name, "namespace": version.namespace},
        "spec": {
            "refreshInterval": REFRESH_INTERVAL,
            "secretStoreRef": {"kind": "SecretStore", "name": binding_reader_name(app)},
            "dataFrom": [
                {
                    "extract": {"key": service.secret},
                    "rewrite": [{"regexp": {"source": "^", "target": f"s{index}_"}}],
                }
                for index, service in enumerate(services)
            ],
            "target": {
                "name": name,
                "creationPolicy": "Owner",
                # Workloads need their credentials for as long as they run (CAP Operator's advice):
                # a binding Secret missing for a moment must not delete the Secret they read.
                "deletionPolicy": "Retain",
                "template": {
                    "engineVersion": "v2",
                    "mergePolicy": "Replace",
                    "type": "Opaque",
                    "data": {VCAP_SERVICES: vcap_template(services)},
                },
            },
        },
    }


def binding_reader_objects(app: Application, workloads: Sequence[Workload]) -> list[KubeObject]:
    """The SecretStore the VCAP ExternalSecrets read through, allowed exactly the binding Secrets."""
    if app.credentials_mode != CredentialsMode.VCAP:
        return []
    secrets = sorted({s.secret for w in workloads for s in consumed_services(app, w)})
    if not secrets:
        return []
    name, namespace = binding_reader_name(app), app.namespace
    meta = {"name": name, "namespace": namespace}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": dict(meta)},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": dict(meta),
            "rules": [
                {"apiGroups": [""], "resources": ["secrets"], "resourceNames": secrets, "verbs": ["get"]}
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": dict(meta),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": namespace}],
        },
        {
            "apiVersion": "external-secrets.io/v1",
            "kind": "SecretStore",
            "metadata": dict(meta),
            "spec": {
                "provider": {
                    "kubernetes": {
                        "remoteNamespace": namespace,
                        "server": {
                            "caProvider": {"type": "ConfigMap", "name": "kube-root-ca.crt", "key": "ca.crt"}
                        },
                        "auth": {"serviceAccount": {"name": name}},
                    }
                }
            },
        },
    ]
