"""Fuzzing `btp-gitops post-render` over Helm streams, with a bounded budget.

The seeds are the stream Helm hands a post-renderer for the bundled SAP BTP service operator
chart (rendered once by the embedded Helm engine, in Helm 3's shape) and the benchmark's
synthetic stream. Each example changes random field paths of a few of their objects, or mixes in
random documents, and runs post-render with a credentials file holding a canary secret. Whatever
the stream: no traceback, no exit 70, nothing on stdout when it fails, nothing written beside
the credentials file, and the canary never in stderr (stdout is for the cluster: the operator
Secret legitimately carries the credentials there).
"""

from __future__ import annotations

import base64
import functools
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from bench.stream_fixture import bench_stream
from btp_gitops.generator.charts.renderer import ChartRequest
from btp_gitops.generator.io import bundled
from btp_gitops.generator.io.helm import EmbeddedHelm
from tests.support.fuzzing import (
    CANARY_SECRET,
    Run,
    assert_clean_exit,
    assert_no_canary,
    mutated,
    run_in_process,
    run_subprocess,
    snapshot,
    values,
)

CREDENTIALS = {
    "clientid": "client-7f3a",
    "clientsecret": CANARY_SECRET,
    "sm_url": "https://service-manager.example.com",
    "tokenurl": "https://auth.example.com/oauth/token",
    "cluster_id": "3f9d2c1e-7a4b-4e2f-9c8d-1b2a3c4d5e6f",
}
CREDENTIALS_YAML = yaml.safe_dump(
    {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "sap-btp-manager", "namespace": "kyma-system"},
        "data": {k: base64.b64encode(v.encode()).decode() for k, v in CREDENTIALS.items()},
    }
)


def _dump(body: Any) -> str:
    return yaml.dump(body, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True)


@functools.cache
def chart_stream() -> tuple[tuple[str, Any, str], ...]:
    """(Source, object, its YAML) of what the bundled chart renders, as Helm 3 streams it; the
    CRDs are left out (Helm does not pass them to a post-renderer, and they are most of the size)."""
    rendered = EmbeddedHelm().render_chart(
        ChartRequest(
            chart=bundled.chart_dir(bundled.SAP_BTP_OPERATOR_CHART),
            release="sap-btp-operator",
            namespace="kyma-system",
            values={"cluster": {"id": CREDENTIALS["cluster_id"]}},
        )
    )
    return tuple(
        (source, body, _dump(body))
        for source, text in rendered.templates.items()
        for body in yaml.load_all(text, Loader=yaml.CSafeLoader)
        if isinstance(body, dict) and body.get("kind") != "CustomResourceDefinition"
    )


@functools.cache
def bench_documents() -> tuple[tuple[str, Any, str], ...]:
    return tuple(
        ("bench-chart/templates/objects.yaml", body, _dump(body))
        for body in yaml.load_all(bench_stream(12), Loader=yaml.CSafeLoader)
        if body
    )


@st.composite
def mutated_stream(draw: st.DrawFn) -> str:
    documents = list(chart_stream() if draw(st.integers(min_value=0, max_value=3)) else bench_documents())
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        index = draw(st.integers(min_value=0, max_value=len(documents) - 1))
        source, body, _ = documents[index]
        changed = draw(mutated(body))
        documents[index] = (source, changed, _dump(changed))
    if draw(st.integers(min_value=0, max_value=4)) == 0:
        extra = draw(values)
        at = draw(st.integers(min_value=0, max_value=len(documents)))
        documents.insert(at, ("x/templates/random.yaml", extra, _dump(extra)))
    if draw(st.integers(min_value=0, max_value=4)) == 0:
        wrapped = {"apiVersion": "v1", "kind": "List", "items": [body for _, body, _ in documents]}
        documents = [("x/templates/list.yaml", wrapped, _dump(wrapped))]
    return "".join(f"---\n# Source: {source}\n{text}" for source, _, text in documents)


def _post_render(stream: str, mode: str, *, subprocess_run: bool = False) -> Run:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        credentials = root / "credentials.yaml"
        credentials.write_text(CREDENTIALS_YAML)
        before = snapshot(root)
        args = ["post-render", "--credentials", str(credentials), "--certificates", mode]
        run = (run_subprocess if subprocess_run else run_in_process)(
            args, stream.encode("utf-8", "surrogatepass")
        )
        assert snapshot(root) == before, "post-render wrote a file"
    assert_clean_exit(run)
    event(f"exit {run.code}")
    if run.code != 0:
        assert run.stdout == "", "a failed post-render must hand Helm nothing"
    assert_no_canary([run.stderr])
    return run


# Self-signed mode generates 4096-bit RSA keys: fuzzed in its own, smaller share.
MODES = st.sampled_from(("cert-manager", "cert-manager", "cert-manager", "gardener"))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_stream(), MODES)
def test_mutated_streams_post_render_or_fail_cleanly(stream: str, mode: str) -> None:
    _post_render(stream, mode)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(values, min_size=1, max_size=4), MODES)
def test_random_documents_post_render_or_fail_cleanly(documents: list[Any], mode: str) -> None:
    stream = "".join(f"---\n{yaml.safe_dump(d, allow_unicode=True)}" for d in documents)
    _post_render(stream, mode)


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_stream())
def test_the_console_script_on_mutated_streams(stream: str) -> None:
    """A few examples through the installed command, self-signed mode included."""
    _post_render(stream, "self-signed", subprocess_run=True)
