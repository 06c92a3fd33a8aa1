"""controller.clients.prometheus against a real Prometheus server: vector, scalar, matrix and string answers,
the evaluation instant, and every way of not getting an answer (a query Prometheus refuses, a wrong
path, nobody listening, a server that never answers) becoming PrometheusUnavailable that names the
query. The silent server is a plain loopback socket that never accepts; nothing else is faked."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from btp_gitops.controller.clients.prometheus import (
    OtherResult,
    PrometheusClient,
    Scalar,
    Vector,
    VectorSample,
)
from btp_gitops.controller.errors import PrometheusUnavailable, TemporaryError
from tests.support.prometheus import EVALUATION_TIME, PrometheusFactory, PrometheusServer, steady


@pytest.fixture(scope="module")
def prometheus(prometheus_with: PrometheusFactory) -> PrometheusServer:
    return prometheus_with([steady("up_gauge", {"job": "a", "namespace": "n"}, 3.0, span=600)])


@pytest.mark.tools
def test_vector_answer(prometheus: PrometheusServer) -> None:
    result = PrometheusClient(prometheus.url).query('up_gauge{job="a"}', EVALUATION_TIME)
    assert result == Vector((VectorSample({"__name__": "up_gauge", "job": "a", "namespace": "n"}, 3.0),))


@pytest.mark.tools
def test_the_evaluation_instant_is_sent(prometheus: PrometheusServer) -> None:
    client = PrometheusClient(prometheus.url)
    assert client.query("sum(up_gauge)", EVALUATION_TIME) == Vector((VectorSample({}, 3.0),))
    # Beyond the lookback window after the last sample there is nothing: an empty vector.
    assert client.query("sum(up_gauge)", EVALUATION_TIME + 3600) == Vector(())
    assert client.query("sum(up_gauge)") == Vector(())  # Prometheus's own now


@pytest.mark.tools
def test_scalar_matrix_and_string_answers(prometheus: PrometheusServer) -> None:
    client = PrometheusClient(prometheus.url)
    assert client.query("scalar(sum(up_gauge)) > bool 2", EVALUATION_TIME) == Scalar(1.0)
    assert client.query("up_gauge[1m]", EVALUATION_TIME) == OtherResult("matrix")
    assert client.query('"text"', EVALUATION_TIME) == OtherResult("string")


@pytest.mark.tools
def test_query_prometheus_refuses(prometheus: PrometheusServer) -> None:
    with pytest.raises(PrometheusUnavailable) as refused:
        PrometheusClient(prometheus.url).query("sum(", EVALUATION_TIME)
    assert refused.value.message.startswith(
        f"query 'sum(': Prometheus at {prometheus.url} answered 400 (bad_data: "
    )
    assert isinstance(refused.value, TemporaryError)


@pytest.mark.tools
def test_wrong_path_is_unavailable(prometheus: PrometheusServer) -> None:
    with pytest.raises(
        PrometheusUnavailable, match=r"^query 'up_gauge': Prometheus at .*/nothing answered 404$"
    ):
        PrometheusClient(f"{prometheus.url}/nothing/").query("up_gauge")


def test_nobody_listening(unreachable_prometheus_url: str) -> None:
    with pytest.raises(
        PrometheusUnavailable, match=r"^query 'up': Prometheus at http://127\.0\.0\.1:\d+: .*refused"
    ):
        PrometheusClient(unreachable_prometheus_url).query("up")


@pytest.fixture
def silent_server() -> Iterator[str]:
    """A loopback socket that takes connections (the kernel's backlog) but never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"


def test_server_that_never_answers_times_out(silent_server: str) -> None:
    with pytest.raises(PrometheusUnavailable, match=r"^query 'up': Prometheus at .*: .*timed out"):
        PrometheusClient(silent_server, timeout=0.5).query("up")
