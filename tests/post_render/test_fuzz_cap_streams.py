"""Fuzzing `post-render --domain cap` over Helm streams of the CAP example, with a bounded budget.

The seed is the example application (application, domains, a version, a new tenant) as Helm 3
streams it, with a ConfigMap of the chart beside it. Each example changes random field paths of a
few objects (mostly in their specs, where CAP Operator's rules live) or mixes in random documents.
Whatever the stream: no traceback, no exit 70, nothing on stdout when it fails; when it succeeds,
the chart's ConfigMap is still there as it came.
"""

from __future__ import annotations

import functools
from typing import Any

import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tests.post_render.test_source_domains import CAP_FILES, documents_of
from tests.support.fuzzing import assert_clean_exit, mutated, run_in_process, values

SETTINGS = (
    "---\n# Source: bookshop/templates/settings.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n"
    "  name: bookshop-settings\n  namespace: bookshop\ndata:\n  greeting: hello\n"
)


def _dump(body: Any) -> str:
    return yaml.dump(body, Dumper=yaml.CSafeDumper, sort_keys=False, allow_unicode=True)


@functools.cache
def cap_documents() -> tuple[tuple[str, Any], ...]:
    return tuple(
        (f"bookshop/templates/{path.stem}-{index}.yaml", yaml.safe_load(text))
        for path in CAP_FILES
        for index, text in enumerate(documents_of(path))
    )


@st.composite
def mutated_cap_stream(draw: st.DrawFn) -> str:
    documents = list(cap_documents())
    if draw(st.integers(min_value=0, max_value=2)) == 0:
        # The CAP objects as they are, beside objects no domain reads: the success path.
        for number in range(draw(st.integers(min_value=1, max_value=3))):
            other = {
                "apiVersion": draw(st.sampled_from(["v1", "example.com/v1", "sme.sap.com/v1alpha1"])),
                "kind": draw(st.sampled_from(["ConfigMap", "Widget", "CAPTenantOutput"])),
                "metadata": {"name": f"other-{number}", "namespace": "bookshop"},
                "data": draw(values),
            }
            at = draw(st.integers(min_value=0, max_value=len(documents)))
            documents.insert(at, ("bookshop/templates/other.yaml", other))
        return SETTINGS + "".join(f"---\n# Source: {source}\n{_dump(body)}" for source, body in documents)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        index = draw(st.integers(min_value=0, max_value=len(documents) - 1))
        source, body = documents[index]
        documents[index] = (source, draw(mutated(body)))
    if draw(st.integers(min_value=0, max_value=4)) == 0:
        at = draw(st.integers(min_value=0, max_value=len(documents)))
        documents.insert(at, ("bookshop/templates/random.yaml", draw(values)))
    return SETTINGS + "".join(f"---\n# Source: {source}\n{_dump(body)}" for source, body in documents)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_cap_stream())
def test_mutated_cap_streams_render_or_fail_cleanly(stream: str) -> None:
    run = run_in_process(["post-render", "--domain", "cap"], stream.encode("utf-8", "surrogatepass"))
    assert_clean_exit(run)
    event(f"exit {run.code}")
    if run.code != 0:
        assert run.stdout == "", "a failed post-render must hand Helm nothing"
    else:
        assert run.stdout.startswith(SETTINGS)
