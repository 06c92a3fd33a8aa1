"""A small typed client of Prometheus's instant-query API (`GET <url>/api/v1/query`).

Only what version cleanup needs: one PromQL expression evaluated at one instant, answered as a
vector or a scalar (matrix and string results are passed on as such for the caller to refuse).
Every failure to get an answer (connection refused, timeout, a non-2xx status, a body that is not
Prometheus's JSON, `status: error`) is `PrometheusUnavailable`, naming the query: a rule that
cannot be evaluated now is retried later, never taken as satisfied.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from btp_gitops.controller.errors import PrometheusUnavailable

QUERY_PATH = "/api/v1/query"
# How much of an error answer a message may quote: Prometheus's own `error` text is short and
# never holds metric values the caller did not ask for.
_MAX_ERROR_TEXT = 200


@dataclass(frozen=True, slots=True)
class VectorSample:
    labels: Mapping[str, str]
    value: float


@dataclass(frozen=True, slots=True)
class Vector:
    """An instant vector: zero or more samples (an empty one means no series matched)."""

    samples: tuple[VectorSample, ...]

    result_type = "vector"


@dataclass(frozen=True, slots=True)
class Scalar:
    value: float

    result_type = "scalar"


@dataclass(frozen=True, slots=True)
class OtherResult:
    """A matrix or string result, which no deletion rule accepts; kept so the reason can say so."""

    result_type: str


QueryResult = Vector | Scalar | OtherResult


def _sample_value(pair: Any, query: str) -> float:
    """A `[<unix time>, "<value>"]` pair's value; "NaN" and "+Inf" parse as floats do."""
    if not isinstance(pair, list) or len(pair) != 2:
        raise PrometheusUnavailable(f"query {query!r}: malformed sample in the answer")
    try:
        return float(pair[1])
    except (TypeError, ValueError) as error:
        raise PrometheusUnavailable(f"query {query!r}: malformed sample value in the answer") from error


def parse_result(data: Any, query: str) -> QueryResult:
    """The `data` member of a successful answer, typed."""
    if not isinstance(data, dict):
        raise PrometheusUnavailable(f"query {query!r}: the answer has no data")
    result_type = str(data.get("resultType", ""))
    result = data.get("result")
    if result_type == "vector":
        if not isinstance(result, list):
            raise PrometheusUnavailable(f"query {query!r}: malformed vector in the answer")
        return Vector(
            tuple(
                VectorSample(
                    {str(k): str(v) for k, v in (item.get("metric") or {}).items()},
                    _sample_value(item.get("value"), query),
                )
                for item in result
                if isinstance(item, dict)
            )
        )
    if result_type == "scalar":
        return Scalar(_sample_value(result, query))
    if result_type in ("matrix", "string"):
        return OtherResult(result_type)
    raise PrometheusUnavailable(f"query {query!r}: unknown result type {result_type!r}")


def _error_text(body: bytes) -> str:
    """Prometheus's `error` member of an answer, if the body is its JSON, else nothing."""
    try:
        answer = json.loads(body)
    except ValueError:
        return ""
    if isinstance(answer, dict) and answer.get("error"):
        return f" ({answer.get('errorType', 'error')!s}: {str(answer['error'])[:_MAX_ERROR_TEXT]})"
    return ""


class PrometheusClient:
    """Instant queries against one Prometheus server (`url` up to, not including, `/api/v1`)."""

    def __init__(self, url: str, timeout: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self._timeout = timeout

    def query(self, promql: str, at: float | None = None) -> QueryResult:
        """Evaluate `promql` at unix time `at` (Prometheus's "now" when None)."""
        params = {"query": promql}
        if at is not None:
            params["time"] = f"{at:.3f}"
        url = f"{self.url}{QUERY_PATH}?{urllib.parse.urlencode(params)}"
        request = urllib.request.Request(url, headers={"Accept": "application/json"}, method="GET")
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                body = response.read()
        except urllib.error.HTTPError as error:
            detail = _error_text(error.read())
            raise PrometheusUnavailable(
                f"query {promql!r}: Prometheus at {self.url} answered {error.code}{detail}"
            ) from error
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            raise PrometheusUnavailable(f"query {promql!r}: Prometheus at {self.url}: {reason}") from error
        return self._answer(body, promql)

    def _answer(self, body: bytes, promql: str) -> QueryResult:
        try:
            answer = json.loads(body)
        except ValueError as error:
            raise PrometheusUnavailable(
                f"query {promql!r}: Prometheus at {self.url} answered something that is not JSON"
            ) from error
        if not isinstance(answer, dict) or answer.get("status") != "success":
            raise PrometheusUnavailable(
                f"query {promql!r}: Prometheus at {self.url} answered status "
                f"{answer.get('status') if isinstance(answer, dict) else None!r}{_error_text(body)}"
            )
        return parse_result(answer.get("data"), promql)
