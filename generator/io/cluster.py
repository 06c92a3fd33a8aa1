"""Reading live state for post-render `--from-cluster`: a few named Secrets, nothing else.

Only post-render reads the cluster (its output goes there anyway); render never does. Values are
returned as the API gives them (base64 `data`) and are never logged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from urllib3.exceptions import HTTPError

from btp_gitops.generator.core.errors import ClusterUnreachable, Problem
from btp_gitops.generator.core.objects import KubeObject


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
