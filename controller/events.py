"""Kubernetes Events about the objects the controller works on: what users see in `kubectl describe`.

Events are best effort (a failure to post one is logged, never fails a reconcile); repeated
events of the same object, reason and message are counted on one Event instead of piling up, the
way client-go's recorder does, so a reconcile loop that retries does not flood the namespace.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging

from btp_gitops.controller.errors import ControllerError
from btp_gitops.controller.kube import EVENT, KubeClient, KubeObject

log = logging.getLogger("btp_gitops.controller.events")

COMPONENT = "btp-gitops-controller"
NORMAL = "Normal"
WARNING = "Warning"


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _event_name(obj: KubeObject, reason: str, message: str) -> str:
    meta = obj.get("metadata") or {}
    digest = hashlib.sha1(f"{meta.get('uid')}{reason}{message}".encode()).hexdigest()[:10]
    return f"{str(meta.get('name', 'object'))[:200]}.{digest}"


def record_event(kube: KubeClient, obj: KubeObject, event_type: str, reason: str, message: str) -> None:
    """Post (or count again) an Event about `obj` in its namespace (`default` if cluster-scoped)."""
    meta = obj.get("metadata") or {}
    namespace = str(meta.get("namespace") or "default")
    name = _event_name(obj, reason, message)
    now = _now()
    try:
        existing = kube.get(EVENT, name, namespace)
        if existing is not None:
            kube.patch(
                EVENT, name, {"count": int(existing.get("count") or 1) + 1, "lastTimestamp": now}, namespace
            )
            return
        kube.create(
            EVENT,
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": name, "namespace": namespace},
                "involvedObject": {
                    "apiVersion": obj.get("apiVersion"),
                    "kind": obj.get("kind"),
                    "name": meta.get("name"),
                    "namespace": meta.get("namespace"),
                    "uid": meta.get("uid"),
                    "resourceVersion": meta.get("resourceVersion"),
                },
                "type": event_type,
                "reason": reason,
                "message": message[:1024],
                "source": {"component": COMPONENT},
                "reportingComponent": COMPONENT,
                "firstTimestamp": now,
                "lastTimestamp": now,
                "count": 1,
            },
            namespace,
        )
    except ControllerError as error:
        log.warning(
            "could not record event %s on %s/%s: %s", reason, namespace, meta.get("name"), error.message
        )
