"""BtpOperatorReconciler: the finalizer and the status of `kyma-system/btpoperator`.

The module itself is rendered into Git and applied by Argo CD or Flux; this reconciler does what
needs the live cluster: it holds the BtpOperator with the finalizer
`operator.kyma-project.io/btp-manager` (which the render already writes into its manifest) and,
once deleted, deprovisions (`deprovisioning.py`); until
then it reports whether the module works: the required Secret is there and complete (checked
with the generator's own rules and messages, never logging a value), and the operator Deployment
the GitOps tool applied is Available. Any other BtpOperator gets Warning `WrongNamespaceOrName`.

Watches: BtpOperators everywhere; the operator Deployment and the required Secret, so their
changes update the status at once instead of at the next poll.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable, Sequence

from btp_gitops.controller.btp_operator import status
from btp_gitops.controller.btp_operator.deprovisioning import Clock, Deprovisioning
from btp_gitops.controller.btp_operator.settings import FINALIZER, BtpOperatorSettings
from btp_gitops.controller.events import record_event
from btp_gitops.controller.kube import BTP_OPERATOR, DEPLOYMENT, SECRET, KubeClient, KubeObject
from btp_gitops.controller.runtime import DONE, ObjectKey, Outcome, Watch
from btp_gitops.generator.domains.btp_operator import InvalidSecret, operator_credentials_from_secret

log = logging.getLogger("btp_gitops.controller.btp_operator")


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def deployment_available(deployment: KubeObject) -> bool:
    conditions = (deployment.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Available" and c.get("status") == "True" for c in conditions)


class BtpOperatorReconciler:
    """Constructed from a client and settings only: everything it decides on is in the cluster."""

    name = "btp-operator"

    def __init__(self, kube: KubeClient, settings: BtpOperatorSettings, clock: Clock = utc_now) -> None:
        self._kube = kube
        self._settings = settings
        self._clock = clock
        self._deprovisioning = Deprovisioning(kube, settings, self._record, clock)

    @property
    def key(self) -> ObjectKey:
        return ObjectKey(self._settings.namespace, self._settings.name)

    @property
    def watches(self) -> Sequence[Watch]:
        settings = self._settings
        operator = _KeysForName(settings.operator_deployment, self.key)
        secret = _KeysForName(settings.required_secret, self.key)
        return (
            Watch(BTP_OPERATOR),
            Watch(DEPLOYMENT, namespace=settings.namespace, to_keys=operator),
            Watch(SECRET, namespace=settings.required_secret_namespace, to_keys=secret),
        )

    def reconcile(self, key: ObjectKey) -> Outcome:
        obj = self._kube.get(BTP_OPERATOR, key.name, key.namespace or None)
        if obj is None:
            return DONE
        deleting = bool(obj["metadata"].get("deletionTimestamp"))
        if key != self.key:
            return self._ignore(obj, deleting)
        if deleting:
            if FINALIZER not in (obj["metadata"].get("finalizers") or []):
                return DONE
            return self._deprovisioning.advance(obj)
        # The render writes the finalizer into the BtpOperator's manifest, so this is a no-op for
        # it; kept as the safety net for a BtpOperator rendered by an older version without it.
        obj = self._kube.add_finalizer(BTP_OPERATOR, obj, FINALIZER)
        verdict, requeue_after = self._readiness()
        self._record(obj, verdict)
        return Outcome(requeue_after=requeue_after)

    def _ignore(self, obj: KubeObject, deleting: bool) -> Outcome:
        """Not the module's BtpOperator: report it and never hold its deletion."""
        if deleting:
            if self._kube.remove_finalizer(BTP_OPERATOR, obj, FINALIZER):
                log.info("%s: released finalizer of an ignored BtpOperator", _where(obj))
            return DONE
        self._record(obj, status.wrong_namespace_or_name(self._settings.namespace, self._settings.name))
        return DONE

    def _readiness(self) -> tuple[status.Verdict, float]:
        settings = self._settings
        secret = self._kube.get(SECRET, settings.required_secret, settings.required_secret_namespace)
        if secret is None:
            return (
                status.missing_secret(settings.required_secret_namespace, settings.required_secret),
                settings.processing_requeue,
            )
        try:
            # Only the check matters here; the values stay in this frame and are never formatted.
            operator_credentials_from_secret(
                secret, f"Secret {settings.required_secret_namespace}/{settings.required_secret}"
            )
        except InvalidSecret as error:
            return status.invalid_secret(error.problems), settings.processing_requeue
        deployment = self._kube.get(DEPLOYMENT, settings.operator_deployment, settings.namespace)
        if deployment is None or not deployment_available(deployment):
            verdict = status.waiting_for_deployment(
                settings.namespace, settings.operator_deployment, exists=deployment is not None
            )
            return verdict, settings.ready_check_interval
        return status.reconcile_succeeded(), settings.ready_requeue

    def _record(self, obj: KubeObject, verdict: status.Verdict) -> KubeObject:
        """Write the status when it changes, with one log line and an Event per change."""
        wanted = status.status_for(obj, verdict, self._clock())
        if not status.status_changes(obj, wanted):
            return obj
        namespace, name = obj["metadata"].get("namespace"), str(obj["metadata"]["name"])
        updated = self._kube.patch_status(BTP_OPERATOR, name, wanted, namespace)
        log.info("%s: %s %s: %s", _where(obj), verdict.state.value, verdict.reason.value, verdict.message)
        record_event(self._kube, updated, verdict.event_type, verdict.reason.value, verdict.message)
        return updated


class _KeysForName:
    """Maps a watched object to the BtpOperator's key when it is the one object of interest."""

    def __init__(self, name: str, key: ObjectKey) -> None:
        self._name = name
        self._key = key

    def __call__(self, obj: KubeObject) -> Iterable[ObjectKey]:
        return (self._key,) if (obj.get("metadata") or {}).get("name") == self._name else ()


def _where(obj: KubeObject) -> str:
    meta = obj.get("metadata") or {}
    return f"BtpOperator {meta.get('namespace')}/{meta.get('name')}"
