"""Deletion rules evaluated against a real Prometheus server fed exact samples (backfilled blocks):
Gauge and Counter rules at and just past their thresholds, the namespace and job restriction, an
empty vector, NaN, expression rules (1, 0, a vector), several rules and workloads, an unusable
threshold, and a Prometheus that cannot be reached. The PromQL text is checked against the
reference's own examples. Nothing is faked; queries run at a fixed instant (EVALUATION_TIME)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from btp_gitops.controller.cap.version_cleanup import (
    MetricRule,
    MetricType,
    RuleEvaluator,
    VersionVerdict,
    metric_query,
)
from btp_gitops.controller.clients.prometheus import PrometheusClient, QueryResult
from tests.controller.version_cleanup.builders import Document, as_version, counter, gauge, version
from tests.support.prometheus import EVALUATION_TIME, PrometheusFactory, PrometheusServer, rising, steady

NS = "rules"
OTHER_NS = "elsewhere"


def _job(cav: str, workload: str = "srv") -> dict[str, str]:
    return {"job": f"{cav}-{workload}-svc", "namespace": NS}


@pytest.fixture(scope="module")
def prometheus(prometheus_with: PrometheusFactory) -> PrometheusServer:
    return prometheus_with(
        [
            # shop-1-0-0: sessions average 1.5 + 2.5 = 4 over any window; another namespace's
            # series with the same job must not count.
            steady("current_sessions", {**_job("shop-1-0-0"), "pod": "a"}, 1.5),
            steady("current_sessions", {**_job("shop-1-0-0"), "pod": "b"}, 2.5),
            steady("current_sessions", {"job": "shop-1-0-0-srv-svc", "namespace": OTHER_NS}, 100.0),
            # shop-1-0-0: requests grow by 0.25/s and 0.5/s: a rate of exactly 0.75.
            rising("http_requests_total", {**_job("shop-1-0-0"), "pod": "a"}, 0.25),
            rising("http_requests_total", {**_job("shop-1-0-0"), "pod": "b"}, 0.5),
            # shop-1-0-0's router: no traffic at all, a counter that stays where it is.
            rising("http_requests_total", _job("shop-1-0-0", "approuter"), 0.0),
            # shop-1-0-0's router: a gauge that only ever reported NaN.
            steady("queue_depth", _job("shop-1-0-0", "approuter"), float("nan")),
        ]
    )


def _evaluate(server_url: str, body: Document) -> VersionVerdict:
    client = PrometheusClient(server_url, timeout=5)
    return RuleEvaluator(lambda query: client.query(query, EVALUATION_TIME)).version(as_version(body))


def _verdict(prometheus: PrometheusServer, rules: Mapping[str, Document]) -> VersionVerdict:
    return _evaluate(prometheus.url, version(NS, "1.0.0", rules=rules))


# --- PromQL as the reference writes it ---------------------------------------------------------------


def test_metric_queries_are_the_references_promql() -> None:
    body = version("demo", "1.0.0", name="cav-demo-app-1")
    body["spec"]["workloads"][0]["name"] = "backend"
    cav = as_version(body)
    backend = cav.workloads[0]
    assert metric_query(MetricRule("current_sessions", MetricType.GAUGE, "90m", "0"), cav, backend) == (
        'sum(avg_over_time(current_sessions{job="cav-demo-app-1-backend-svc",namespace="demo"}[90m]))'
    )
    assert metric_query(
        MetricRule("total_http_requests", MetricType.COUNTER, "2h", "0.00005"), cav, backend
    ) == ('sum(rate(total_http_requests{job="cav-demo-app-1-backend-svc",namespace="demo"}[2h]))')


# --- Gauge -------------------------------------------------------------------------------------------


@pytest.mark.tools
def test_gauge_at_its_threshold_is_eligible(prometheus: PrometheusServer) -> None:
    verdict = _verdict(prometheus, {"srv": {"metrics": [gauge("current_sessions", "5m", "4")]}})
    assert verdict.eligible
    assert verdict.reason == (
        "srv: Gauge current_sessions (average over 5m): 4 <= 4; approuter: no deletion rules"
    )


@pytest.mark.parametrize("threshold", ["3.999", "0"])
@pytest.mark.tools
def test_gauge_above_its_threshold_is_not_eligible(prometheus: PrometheusServer, threshold: str) -> None:
    verdict = _verdict(prometheus, {"srv": {"metrics": [gauge("current_sessions", "2h", threshold)]}})
    assert not verdict.eligible
    assert verdict.reason == f"srv: Gauge current_sessions (average over 2h): 4 exceeds {float(threshold):g}"
    # The first workload that fails settles it: the router is not evaluated.
    assert [w.workload for w in verdict.workloads] == ["srv"]


@pytest.mark.tools
def test_gauge_that_is_nan_is_not_eligible(prometheus: PrometheusServer) -> None:
    verdict = _verdict(prometheus, {"approuter": {"metrics": [gauge("queue_depth", "5m", "1000")]}})
    assert not verdict.eligible
    assert verdict.reason.endswith("approuter: Gauge queue_depth (average over 5m): NaN exceeds 1000")


# --- Counter -----------------------------------------------------------------------------------------


@pytest.mark.tools
def test_counter_rate_at_its_threshold_is_eligible(prometheus: PrometheusServer) -> None:
    verdict = _verdict(prometheus, {"srv": {"metrics": [counter("http_requests_total", "5m", "0.75")]}})
    assert verdict.eligible
    assert verdict.workloads[0].reason == "srv: Counter http_requests_total (rate over 5m): 0.75 <= 0.75"


@pytest.mark.tools
def test_counter_rate_slightly_above_its_threshold_is_not_eligible(prometheus: PrometheusServer) -> None:
    verdict = _verdict(prometheus, {"srv": {"metrics": [counter("http_requests_total", "5m", "0.7499")]}})
    assert not verdict.eligible
    assert verdict.reason == "srv: Counter http_requests_total (rate over 5m): 0.75 exceeds 0.7499"


@pytest.mark.tools
def test_counter_without_increase_meets_a_zero_threshold(prometheus: PrometheusServer) -> None:
    verdict = _verdict(prometheus, {"approuter": {"metrics": [counter("http_requests_total", "10m", "0")]}})
    assert verdict.eligible
    assert verdict.workloads[1].reason == "approuter: Counter http_requests_total (rate over 10m): 0 <= 0"


# --- empty vectors, several rules, thresholds --------------------------------------------------------


@pytest.mark.tools
def test_metric_without_samples_is_an_empty_vector_and_eligible(prometheus: PrometheusServer) -> None:
    verdict = _verdict(
        prometheus,
        {
            "srv": {"metrics": [gauge("never_reported", "5m", "0")]},
            "approuter": {"metrics": [counter("never_counted_total", "5m", "0")]},
        },
    )
    assert verdict.eligible
    assert verdict.reason == (
        "srv: Gauge never_reported (average over 5m): no samples (empty vector); "
        "approuter: Counter never_counted_total (rate over 5m): no samples (empty vector)"
    )


@pytest.mark.tools
def test_every_metric_of_a_workload_must_hold(prometheus: PrometheusServer) -> None:
    rules = {
        "srv": {
            "metrics": [gauge("current_sessions", "5m", "10"), counter("http_requests_total", "5m", "0.5")]
        }
    }
    verdict = _verdict(prometheus, rules)
    assert not verdict.eligible
    assert verdict.reason == (
        "srv: Gauge current_sessions (average over 5m): 4 <= 10; "
        "Counter http_requests_total (rate over 5m): 0.75 exceeds 0.5"
    )


@pytest.mark.tools
def test_every_deployment_workload_must_be_eligible(prometheus: PrometheusServer) -> None:
    verdict = _verdict(
        prometheus,
        {
            "srv": {"metrics": [gauge("current_sessions", "5m", "4")]},
            "approuter": {"metrics": [counter("http_requests_total", "5m", "-1")]},
        },
    )
    assert not verdict.eligible
    assert [w.eligible for w in verdict.workloads] == [True, False]


@pytest.mark.tools
def test_threshold_that_is_not_a_number_is_not_eligible(prometheus: PrometheusServer) -> None:
    verdict = _verdict(prometheus, {"srv": {"metrics": [gauge("current_sessions", "5m", "lots")]}})
    assert not verdict.eligible
    assert (
        verdict.reason
        == "srv: Gauge current_sessions (average over 5m): thresholdValue 'lots' is not a number"
    )


def test_version_without_rules_is_eligible_without_asking_prometheus(unreachable_prometheus_url: str) -> None:
    verdict = _evaluate(unreachable_prometheus_url, version(NS, "1.0.0"))
    assert verdict.eligible
    assert verdict.reason == "srv: no deletion rules; approuter: no deletion rules"


# --- expressions ---------------------------------------------------------------------------------------

SESSIONS = 'scalar(sum(avg_over_time(current_sessions{job="shop-1-0-0-srv-svc",namespace="rules"}[5m])))'


@pytest.mark.tools
def test_expression_that_is_scalar_one_is_eligible(prometheus: PrometheusServer) -> None:
    verdict = _verdict(prometheus, {"srv": {"expression": f"{SESSIONS} <= bool 4"}})
    assert verdict.eligible
    assert verdict.workloads[0].reason == f"srv: expression {SESSIONS} <= bool 4: 1"


@pytest.mark.tools
def test_expression_that_is_scalar_zero_is_not_eligible(prometheus: PrometheusServer) -> None:
    verdict = _verdict(prometheus, {"srv": {"expression": f"{SESSIONS} <= bool 3.5"}})
    assert not verdict.eligible
    assert verdict.reason == f"srv: expression {SESSIONS} <= bool 3.5: 0, not 1"


@pytest.mark.parametrize(
    ("expression", "got"),
    [
        ("vector(1)", "a vector"),
        ('sum(current_sessions{namespace="nowhere"})', "an empty vector"),
        ('current_sessions{namespace="rules"}[5m]', "a matrix"),
    ],
)
@pytest.mark.tools
def test_expression_that_is_not_a_scalar_is_not_eligible(
    prometheus: PrometheusServer, expression: str, got: str
) -> None:
    verdict = _verdict(prometheus, {"srv": {"expression": expression}})
    assert not verdict.eligible
    assert verdict.reason == f"srv: expression {expression}: gave {got}, not a scalar"


@pytest.mark.tools
def test_metrics_and_expression_together_must_both_hold(prometheus: PrometheusServer) -> None:
    rules = {
        "srv": {"metrics": [gauge("current_sessions", "5m", "4")], "expression": f"{SESSIONS} <= bool 1"}
    }
    verdict = _verdict(prometheus, rules)
    assert not verdict.eligible
    assert [o.satisfied for o in verdict.workloads[0].outcomes] == [True, False]


@pytest.mark.tools
def test_expression_prometheus_refuses_is_not_eligible(prometheus: PrometheusServer) -> None:
    verdict = _verdict(prometheus, {"srv": {"expression": "sum(("}})
    assert not verdict.eligible
    assert "answered 400 (bad_data:" in verdict.reason


# --- Prometheus unreachable ------------------------------------------------------------------------------


def test_unreachable_prometheus_is_not_eligible_and_asked_once(unreachable_prometheus_url: str) -> None:
    client = PrometheusClient(unreachable_prometheus_url, timeout=2)
    asked: list[str] = []

    def query(promql: str) -> QueryResult:
        asked.append(promql)
        return client.query(promql, EVALUATION_TIME)

    evaluator = RuleEvaluator(query)
    rules = {
        "srv": {"metrics": [gauge("current_sessions", "5m", "4")]},
        "approuter": {"metrics": [counter("http_requests_total", "5m", "1")]},
    }
    first = evaluator.version(as_version(version(NS, "1.0.0", rules=rules)))
    second = evaluator.version(as_version(version(NS, "1.1.0", rules=rules)))
    assert not first.eligible and not second.eligible
    assert evaluator.unavailable is not None
    assert asked == ['sum(avg_over_time(current_sessions{job="shop-1-0-0-srv-svc",namespace="rules"}[5m]))']
    assert first.reason.startswith("srv: Gauge current_sessions (average over 5m): not evaluated, query ")
    assert unreachable_prometheus_url in first.reason
    assert second.reason.startswith("srv: Gauge current_sessions (average over 5m): not evaluated, query ")
