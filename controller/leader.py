"""Leader election with a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it.

Only the holder of the Lease runs reconcilers (the subscription callbacks among them, sent by the
tenant-operations reconciler), so two replicas never act twice. The holder renews every
`renew_period`; a candidate takes the Lease over only when its `renewTime` is older than
`leaseDurationSeconds`. Every write is an update with the Lease's resourceVersion, so two
candidates racing for an expired Lease cannot both win: the API server rejects the second with
409.

A leader that cannot renew within `renew_deadline` stops leading: `run` returns and the process
exits, so a new leader never overlaps with an old one that lost its connection (the Pod restarts
and becomes a candidate again).
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass

from btp_gitops.controller.errors import ControllerError
from btp_gitops.controller.kube import LEASE, Conflict, KubeClient, KubeObject

log = logging.getLogger("btp_gitops.controller.leader")

_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


@dataclass(frozen=True, slots=True)
class LeaseSettings:
    namespace: str
    name: str
    identity: str  # unique per process: the Pod name plus a random suffix
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def _format(moment: dt.datetime) -> str:
    return moment.strftime(_TIME_FORMAT)


def _parse(text: str | None) -> dt.datetime | None:
    if not text:
        return None
    for pattern in (_TIME_FORMAT, "%Y-%m-%dT%H:%M:%SZ"):
        try:
            return dt.datetime.strptime(text, pattern).replace(tzinfo=dt.UTC)
        except ValueError:
            continue
    return None


class LeaderElector:
    """Acquire, hold and release one Lease. `run(on_leading)` blocks until leadership ends."""

    def __init__(
        self, kube: KubeClient, settings: LeaseSettings, clock: Callable[[], dt.datetime] = _now
    ) -> None:
        self._kube = kube
        self._settings = settings
        self._clock = clock
        self._stop = threading.Event()
        self._other_holder = ""  # who holds the Lease when it was last seen held by another

    def _spec(self, transitions: int, acquired: str | None) -> dict[str, object]:
        now = _format(self._clock())
        return {
            "holderIdentity": self._settings.identity,
            "leaseDurationSeconds": int(self._settings.lease_duration),
            "acquireTime": acquired or now,
            "renewTime": now,
            "leaseTransitions": transitions,
        }

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when this process holds the Lease afterwards."""
        name, namespace = self._settings.name, self._settings.namespace
        lease = self._kube.get(LEASE, name, namespace)
        if lease is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": name, "namespace": namespace},
                "spec": self._spec(0, None),
            }
            try:
                self._kube.create(LEASE, body, namespace)
            except Conflict:
                return False  # another candidate created it first
            return True
        return self._take_over_or_renew(lease)

    def _take_over_or_renew(self, lease: KubeObject) -> bool:
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        ours = holder == self._settings.identity
        renewed = _parse(spec.get("renewTime"))
        duration = float(spec.get("leaseDurationSeconds") or self._settings.lease_duration)
        expired = renewed is None or (self._clock() - renewed).total_seconds() > duration
        if not ours and holder and not expired:
            self._other_holder = str(holder)
            return False
        transitions = int(spec.get("leaseTransitions") or 0) + (0 if ours else 1)
        lease["spec"] = self._spec(transitions, spec.get("acquireTime") if ours else None)
        try:
            self._kube.replace(LEASE, lease)
        except Conflict:
            return False
        if not ours:
            log.info("took over lease %s/%s from %r", self._settings.namespace, self._settings.name, holder)
        return True

    def release(self) -> None:
        """Give the Lease up on a clean shutdown so a standby takes over at once."""
        try:
            lease = self._kube.get(LEASE, self._settings.name, self._settings.namespace)
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != self._settings.identity:
                return
            lease["spec"] = {**lease["spec"], "holderIdentity": "", "leaseDurationSeconds": 1}
            self._kube.replace(LEASE, lease)
        except ControllerError as error:
            log.warning("could not release the lease: %s", error.message)

    def stop(self) -> None:
        self._stop.set()

    def run(self, on_started_leading: Callable[[], None], on_stopped_leading: Callable[[], None]) -> None:
        """Wait for the Lease, call `on_started_leading`, renew until stopped or lost, then call
        `on_stopped_leading` and release."""
        while not self._stop.is_set():
            if self._attempt():
                break
            self._stop.wait(self._settings.retry_period)
        if self._stop.is_set():
            return
        log.info("leading as %s", self._settings.identity)
        try:
            on_started_leading()
            self._renew_until_lost()
        finally:
            on_stopped_leading()
            self.release()

    def _attempt(self) -> bool:
        try:
            return self.try_acquire_or_renew()
        except ControllerError as error:
            log.warning("lease %s/%s: %s", self._settings.namespace, self._settings.name, error.message)
            return False

    def _renew_until_lost(self) -> None:
        last_renewal = self._clock()
        while not self._stop.wait(self._settings.retry_period):
            self._other_holder = ""
            if self._attempt():
                last_renewal = self._clock()
                continue
            if self._other_holder:
                log.error(
                    "lease %s/%s is held by %r now: stopping",
                    self._settings.namespace,
                    self._settings.name,
                    self._other_holder,
                )
                return
            if (self._clock() - last_renewal).total_seconds() >= self._settings.renew_deadline:
                log.error("lost the lease %s/%s: stopping", self._settings.namespace, self._settings.name)
                return
