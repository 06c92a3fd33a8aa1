"""Reading live state for post-render `--from-cluster`: a few named Secrets, nothing else.

Only post-render reads the cluster (its output goes there anyway); render never does. Values are
returned as the API gives them (base64 `data`) and are never logged.

The Kubernetes client belongs to the `controller` extra (`pip install 'btp-gitops[controller]'`),
so it is imported here, when a command reads the cluster, and its absence is a usage error.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from btp_gitops.generator.core.errors import ClusterUnreachable, Problem, UsageError
from btp_gitops.generator.core.objects import KubeObject

if TYPE_CHECKING:
    from kubernetes import client

CLIENT_MISSING = "--from-cluster needs the kubernetes client: pip install 'btp-gitops[controller]'"
# The top-level modules a command reading the cluster imports, all from the `controller` extra.
_CLIENT_MODULES = frozenset({"kubernetes", "urllib3"})


def require_kubernetes_client(missing: str) -> None:
    """Raise a usage error (exit 2) saying `missing` (which names the extra) when the Kubernetes
    client is not installed; every command that reads a cluster asks this first."""
    try:
        import kubernetes.client  # noqa: F401, PLC0415 - the controller extra, only to read a cluster
        import urllib3.exceptions  # noqa: F401, PLC0415
    except ModuleNotFoundError as error:
        if (error.name or "").partition(".")[0] not in _CLIENT_MODULES:
            raise
        raise UsageError(missing) from error


@dataclass(frozen=True, slots=True)
class ClusterReader:
    """Reads Secrets with the credentials of a kubeconfig (default: $KUBECONFIG or ~/.kube/config)."""

    kubeconfig: str | None = None
    context: str | None = None

    def where(self) -> str:
        return f"cluster (kubeconfig {self.kubeconfig or 'default'}" + (
            f", context {self.context})" if self.context else ")"
        )

    def _core_api(self) -> client.CoreV1Api:
        require_kubernetes_client(CLIENT_MISSING)
        from kubernetes import client, config  # noqa: PLC0415
        from kubernetes.config.config_exception import ConfigException  # noqa: PLC0415

        try:
            api_client = config.new_client_from_config(  # type: ignore[no-untyped-call]
                config_file=self.kubeconfig, context=self.context
            )
        except (ConfigException, OSError) as error:
            raise ClusterUnreachable(
                "cannot load the kubeconfig for --from-cluster", [Problem(self.where(), str(error))]
            ) from error
        return client.CoreV1Api(api_client)

    def read_secret(self, namespace: str, name: str) -> KubeObject | None:
        """The Secret as a plain object, or None when it does not exist."""
        api = self._core_api()
        from kubernetes.client.exceptions import ApiException  # noqa: PLC0415
        from urllib3.exceptions import HTTPError  # noqa: PLC0415

        try:
            secret = api.read_namespaced_secret(name, namespace)
        except ApiException as error:
            if error.status == 404:
                return None
            raise ClusterUnreachable(
                f"cannot read Secret {namespace}/{name}",
                [Problem(self.where(), f"the API server answered {error.status} {error.reason}")],
            ) from error
        except HTTPError as error:
            raise ClusterUnreachable(
                f"cannot read Secret {namespace}/{name}", [Problem(self.where(), type(error).__name__)]
            ) from error
        finally:
            api.api_client.close()
        body: dict[str, Any] = api.api_client.sanitize_for_serialization(secret)
        return body
