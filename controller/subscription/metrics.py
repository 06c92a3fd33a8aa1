"""Prometheus metrics of the subscription server, on a registry of its own (served at `/metrics`).

    btp_gitops_subscription_requests_total{method,code}        every answered request
    btp_gitops_subscription_requests_in_flight                  requests being handled now
    btp_gitops_subscription_request_duration_seconds{method,route}
    btp_gitops_subscription_callbacks_total{outcome}            completion callbacks to the SaaS registry
                                                                or subscription manager (`count_callback`)

Routes are the templates (`/provision/tenants/{tenantId}`), never raw paths, so label sets stay
bounded whatever callers send.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

PREFIX = "btp_gitops_subscription"
CALLBACK_OUTCOMES = ("succeeded", "failed", "error")


class SubscriptionMetrics:
    """The collectors, registered on `registry` (a fresh one unless given)."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            f"{PREFIX}_requests",
            "Requests answered, by method and status code",
            ["method", "code"],
            registry=self.registry,
        )
        self.in_flight = Gauge(
            f"{PREFIX}_requests_in_flight", "Requests being handled", registry=self.registry
        )
        self.duration = Histogram(
            f"{PREFIX}_request_duration_seconds",
            "Time to answer a request, by method and route template",
            ["method", "route"],
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
            registry=self.registry,
        )
        self.callbacks = Counter(
            f"{PREFIX}_callbacks",
            "Completion callbacks by outcome (succeeded / failed: status reported; error: not delivered)",
            ["outcome"],
            registry=self.registry,
        )

    @contextmanager
    def in_progress(self) -> Iterator[None]:
        self.in_flight.inc()
        try:
            yield
        finally:
            self.in_flight.dec()

    def observe(self, method: str, route: str, code: int, seconds: float) -> None:
        self.requests.labels(method=method, code=str(code)).inc()
        self.duration.labels(method=method, route=route).observe(seconds)

    def count_callback(self, outcome: str) -> None:
        """For the completion watcher: one callback ended with `outcome` (one of CALLBACK_OUTCOMES)."""
        if outcome not in CALLBACK_OUTCOMES:
            raise ValueError(f"callback outcome {outcome!r} is not one of {', '.join(CALLBACK_OUTCOMES)}")
        self.callbacks.labels(outcome=outcome).inc()

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
