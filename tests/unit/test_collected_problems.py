"""core.collected_problems: one error for every stage's problems, ordered, with the most specific
class (and so exit code) all of them share; a non-input error carries the problems found before."""

from __future__ import annotations

import pytest

from btp_gitops.generator.core.collected_problems import CollectedProblems, ordered_problems
from btp_gitops.generator.core.errors import (
    ChartRenderFailed,
    InputError,
    InvalidSpec,
    Problem,
    SchemaViolation,
)
from btp_gitops.generator.core.exit_codes import ExitCode, exit_code_for

SCHEMA = Problem("b.yaml", "unknown field", 1, "CAPTenant ns/t", "spec.subdomain")
RULE = Problem(
    "a.yaml", "no CAPApplication x", 2, "CAPApplicationVersion ns/v", "spec.capApplicationInstance"
)
PLAN = Problem("a.yaml", "no version 1.1.1", 1, "CAPTenant ns/acme", "spec.version")


def _raise(error: Exception) -> None:
    raise error


def test_problems_are_ordered_by_file_document_and_field_and_given_once() -> None:
    later_field = Problem("a.yaml", "m", 1, "CAPTenant ns/acme", "spec.z")
    assert ordered_problems([SCHEMA, later_field, RULE, PLAN, PLAN]) == [PLAN, later_field, RULE, SCHEMA]


def test_one_failed_stage_keeps_its_class_and_words() -> None:
    checks = CollectedProblems()
    checks.add(SchemaViolation, "invalid source documents", [SCHEMA])
    checks.add(InvalidSpec, "names", [])
    with pytest.raises(SchemaViolation) as raised:
        checks.raise_if_any()
    assert raised.value.lines() == [
        "invalid source documents (1 problem)",
        "  b.yaml: document 1 (CAPTenant ns/t): spec.subdomain: unknown field",
    ]


def test_several_stages_raise_their_shared_class_with_every_problem() -> None:
    checks = CollectedProblems()
    checks.add(SchemaViolation, "invalid source documents", [SCHEMA])
    assert (
        checks.run(lambda: _raise(InvalidSpec("invalid CAP applications (2 problems)", [RULE, PLAN])), "x")
        == "x"
    )
    assert checks.failed_documents() == {("b.yaml", 1), ("a.yaml", 2), ("a.yaml", 1)}
    with pytest.raises(InputError) as raised:
        checks.raise_if_any()
    assert type(raised.value) is InputError
    assert exit_code_for(raised.value) == ExitCode.INPUT
    assert raised.value.message == (
        "invalid sources (3 problems: invalid source documents; invalid CAP applications)"
    )
    assert list(raised.value.problems) == [PLAN, RULE, SCHEMA]


def test_a_stage_that_passes_returns_its_result() -> None:
    checks = CollectedProblems()
    assert checks.run(lambda: [1], []) == [1]
    checks.raise_if_any()  # nothing failed: nothing raised


def test_an_error_not_about_the_input_ends_the_run_with_the_problems_found_before() -> None:
    checks = CollectedProblems()
    checks.add(SchemaViolation, "invalid source documents", [SCHEMA])
    with pytest.raises(ChartRenderFailed) as raised:
        checks.run(lambda: _raise(ChartRenderFailed("chart x failed")), None)
    assert exit_code_for(raised.value) == ExitCode.CHART
    assert list(raised.value.problems) == [SCHEMA]
