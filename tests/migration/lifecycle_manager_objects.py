"""A runtime cluster's Lifecycle Manager objects, shaped as Lifecycle Manager leaves them there.

Written for these tests from Lifecycle Manager's documentation (docs/contributor/resources/*):
the runtime's Kyma `kyma-system/default` with the labels, annotation and finalizer Lifecycle
Manager and the environment broker put on it and the status it reports; the synchronised catalog
(a ModuleReleaseMeta per module, one ModuleTemplate per version, named `<module>-<version>`, with
an OCM descriptor, `spec.resources` linking the raw manifest, `spec.manager`, `spec.info`), and a
mandatory module with its finalizer. Server bookkeeping (uid, resourceVersion, managedFields) too.
"""

from __future__ import annotations

import copy
from typing import Any

from btp_gitops.generator.migration import LiveObject

API = "operator.kyma-project.io/v1beta2"
ORIGIN = "cluster (context kind-runtime)"
RUNTIME_ID = "7c0f7f5e-2f7b-4a8e-9f51-3f0a0c6e1d24"
RELEASES = "https://github.com/example-org/{module}/releases/download/{version}/{module}.yaml"


def _server_fields(name: str, generation: int = 1) -> dict[str, Any]:
    return {
        "uid": f"0f1e2d3c-{len(name):04d}-4b5a-8c7d-{sum(map(ord, name)):012d}",
        "resourceVersion": "48213",
        "generation": generation,
        "creationTimestamp": "2026-03-02T09:14:55Z",
        "managedFields": [{"manager": "lifecycle-manager", "operation": "Apply", "apiVersion": API}],
    }


def kyma(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": API,
        "kind": "Kyma",
        "metadata": {
            "name": "default",
            "namespace": "kyma-system",
            **_server_fields("default", generation=4),
            "labels": {
                "operator.kyma-project.io/kyma-name": RUNTIME_ID,
                "operator.kyma-project.io/managed-by": "lifecycle-manager",
                "operator.kyma-project.io/watched-by": "lifecycle-manager",
                "kyma-project.io/region": "europe-west3",
                "kyma-project.io/global-account-id": "1a2b3c4d-0000-4000-8000-00000000feed",
            },
            "annotations": {
                "operator.kyma-project.io/owned-by": f"kcp-system/{RUNTIME_ID}",
                "skr-domain": "c-7c0f7f5.kyma.example.com",
            },
            "finalizers": ["operator.kyma-project.io/Kyma"],
        },
        "spec": spec
        or {"channel": "regular", "modules": [{"name": "greeter"}, {"name": "relay", "channel": "fast"}]},
        "status": {
            "state": "Ready",
            "activeChannel": "regular",
            "lastOperation": {"operation": "kyma is ready", "lastUpdateTime": "2026-03-02T10:00:00Z"},
            "conditions": [
                {
                    "type": "Modules",
                    "status": "True",
                    "reason": "Ready",
                    "message": "all modules are in ready state",
                    "lastTransitionTime": "2026-03-02T09:20:00Z",
                    "observedGeneration": 4,
                }
            ],
            "modules": [
                _module_status("greeter", "1.0.0", "regular"),
                _module_status("relay", "0.3.0", "fast"),
            ],
        },
    }
    return body


def _module_status(module: str, version: str, channel: str) -> dict[str, Any]:
    return {
        "name": module,
        "fqdn": f"kyma-project.io/module/{module}",
        "ocmComponentName": f"kyma-project.io/module/{module}",
        "channel": channel,
        "version": version,
        "state": "Ready",
        "template": {
            "apiVersion": API,
            "kind": "ModuleTemplate",
            "metadata": {"name": f"{module}-{version}", "namespace": "kyma-system", "generation": 1},
        },
        "manifest": {
            "apiVersion": API,
            "kind": "Manifest",
            "metadata": {"name": f"{RUNTIME_ID}-{module}-2093", "namespace": "kcp-system", "generation": 2},
        },
        "resource": {
            "apiVersion": "operator.example.com/v1alpha1",
            "kind": module.capitalize(),
            "metadata": {"name": "default", "namespace": "kyma-system", "generation": 1},
        },
    }


def release_meta(
    module: str, channels: dict[str, str] | None = None, mandatory: str | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"moduleName": module, "ocmComponentName": f"kyma-project.io/module/{module}"}
    if mandatory is not None:
        spec["mandatory"] = {"version": mandatory}
    else:
        spec["channels"] = [{"channel": c, "version": v} for c, v in sorted((channels or {}).items())]
    metadata: dict[str, Any] = {"name": module, "namespace": "kyma-system", **_server_fields(module)}
    if mandatory is not None:
        metadata["finalizers"] = ["operator.kyma-project.io/mandatory-module"]
    return {"apiVersion": API, "kind": "ModuleReleaseMeta", "metadata": metadata, "spec": spec}


def template(module: str, version: str, mandatory: bool = False) -> dict[str, Any]:
    name = f"{module}-{version}"
    labels = {"operator.kyma-project.io/module-name": module}
    if mandatory:
        labels["operator.kyma-project.io/mandatory-module"] = "true"
    return {
        "apiVersion": API,
        "kind": "ModuleTemplate",
        "metadata": {
            "name": name,
            "namespace": "kyma-system",
            **_server_fields(name),
            "labels": labels,
            "annotations": {"operator.kyma-project.io/is-cluster-scoped": "false"},
        },
        "spec": {
            "moduleName": module,
            "version": version,
            "mandatory": mandatory,
            "requiresDowntime": False,
            "info": {
                "repository": f"https://github.com/example-org/{module}",
                "documentation": f"https://example.com/docs/{module}",
                "icons": [{"name": "module-icon", "link": f"https://example.com/icons/{module}.svg"}],
            },
            "manager": {
                "group": "apps",
                "version": "v1",
                "kind": "Deployment",
                "namespace": "kyma-system",
                "name": f"{module}-controller-manager",
            },
            "data": {
                "apiVersion": "operator.example.com/v1alpha1",
                "kind": module.capitalize(),
                "metadata": {"name": "default", "namespace": "kyma-system"},
                "spec": {"replicas": 1},
            },
            "resources": [{"name": "rawManifest", "link": RELEASES.format(module=module, version=version)}],
            "associatedResources": [
                {"group": "operator.example.com", "version": "v1alpha1", "kind": module.capitalize()}
            ],
            "descriptor": {
                "component": {
                    "name": f"kyma-project.io/module/{module}",
                    "version": version,
                    "provider": '{"name":"kyma-project.io"}',
                    "repositoryContexts": [
                        {
                            "type": "OCIRegistry",
                            "baseUrl": "europe-docker.pkg.dev/example/modules",
                            "componentNameMapping": "urlPath",
                        }
                    ],
                    "resources": [
                        {
                            "name": "raw-manifest",
                            "type": "directoryTree",
                            "relation": "local",
                            "version": version,
                            "access": {
                                "type": "localBlob",
                                "localReference": "sha256:" + "ab" * 32,
                                "mediaType": "application/x-tar",
                            },
                        }
                    ],
                    "sources": [],
                    "componentReferences": [],
                },
                "meta": {"schemaVersion": "v2"},
            },
        },
    }


def runtime_objects() -> list[LiveObject]:
    """greeter (regular 1.0.0, fast 1.1.0) and relay (fast 0.3.0) as the Kyma asks for them, and
    the mandatory auditlog 1.2.0."""
    bodies = [
        kyma(),
        release_meta("greeter", {"regular": "1.0.0", "fast": "1.1.0"}),
        template("greeter", "1.0.0"),
        template("greeter", "1.1.0"),
        release_meta("relay", {"regular": "0.2.0", "fast": "0.3.0"}),
        template("relay", "0.2.0"),
        template("relay", "0.3.0"),
        release_meta("auditlog", mandatory="1.2.0"),
        template("auditlog", "1.2.0", mandatory=True),
    ]
    return [LiveObject(body, ORIGIN) for body in bodies]


def changed(live: LiveObject, path: tuple[str | int, ...], value: Any) -> LiveObject:
    """A copy of `live` with the field at `path` set to `value` (or removed when `value` is ...)."""
    body = copy.deepcopy(live.body)
    parent: Any = body
    for key in path[:-1]:
        parent = parent[key]
    if value is ...:
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return LiveObject(body, live.origin)
