"""Every problem of every checking stage of one run, reported at once (docs/errors.md).

A render checks its sources in stages: each document against its schema, the names that become
paths, each domain's rules across objects, and the CAP tenants' plans. A stage that finds
problems does not end the run: `CollectedProblems` keeps them, later stages skip only the
documents that failed (`failed_documents`, and what cannot be checked without them, which the
domain says), and the run fails once, at the end, with every problem ordered by file, document
(the object), field path and message.

One exit code: the error raised is of the most specific class every failed stage's error shares
(SchemaViolation alone stays SchemaViolation; schema and cross-object problems together are an
InputError), so its code is the table's (core.exit_codes) for that class; every input problem
exits 3. An error that is not about the sources' content (a chart that cannot be rendered: 4; the
output: 5) still ends the run where it happens, with its own code, and lists the input problems
found before it.

Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

from btp_gitops.generator.core.errors import BtpGitopsError, InputError, Problem

__all__ = ["CollectedProblems", "ordered_problems"]

T = TypeVar("T")
DocumentKey = tuple[str, int]  # (file as shown, 1-based document index)


def _order(problem: Problem) -> tuple[str, int, str, str, str]:
    return (
        problem.file,
        problem.document or 0,
        problem.object_ref or "",
        problem.field_path or "",
        problem.message,
    )


def ordered_problems(problems: Iterable[Problem]) -> list[Problem]:
    """Each problem once, by file, then document (the object), then field path, then message."""
    return sorted(dict.fromkeys(problems), key=_order)


def _shared_class(errors: list[InputError]) -> type[InputError]:
    """The most specific class all `errors` are instances of (at worst InputError itself)."""
    for candidate in type(errors[0]).__mro__:
        if (
            isinstance(candidate, type)
            and issubclass(candidate, InputError)
            and all(isinstance(error, candidate) for error in errors)
        ):
            return candidate
    return InputError


class CollectedProblems:
    """The input errors of a run's stages, kept until `raise_if_any`."""

    def __init__(self) -> None:
        self._errors: list[InputError] = []

    def add(self, error_type: type[InputError], message: str, problems: Iterable[Problem]) -> None:
        """Record a stage's problems (none: nothing is recorded)."""
        found = list(problems)
        if found:
            self._errors.append(error_type(f"{message} ({_count(found)})", found))

    def run(self, stage: Callable[[], T], instead: T) -> T:
        """`stage()`, or `instead` when it fails on the input (its problems are kept). Any other
        error of ours ends the run at once, carrying the input problems found so far."""
        try:
            return stage()
        except InputError as error:
            self._errors.append(error)
            return instead
        except BtpGitopsError as error:
            if self._errors:
                error.problems = (*error.problems, *self.problems())
            raise

    def problems(self) -> list[Problem]:
        return ordered_problems(p for error in self._errors for p in error.problems)

    def failed_documents(self) -> set[DocumentKey]:
        """The documents some stage found a problem in: later stages skip them."""
        return {(p.file, p.document) for e in self._errors for p in e.problems if p.document is not None}

    def raise_if_any(self) -> None:
        """Raise one error with every problem of every stage, if any stage failed."""
        if not self._errors:
            return
        problems = self.problems()
        error_type = _shared_class(self._errors)
        if len(self._errors) == 1:
            # One stage failed: its own words ("invalid source documents (2 problems)").
            raise error_type(self._errors[0].message, problems)
        stages = "; ".join(dict.fromkeys(_without_count(error.message) for error in self._errors))
        raise error_type(f"invalid sources ({_count(problems)}: {stages})", problems)


def _count(problems: list[Problem]) -> str:
    return f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"


def _without_count(message: str) -> str:
    """A stage's message without the " (N problems)" that `raise_if_problems` appended."""
    head, separator, tail = message.rpartition(" (")
    return head if separator and tail.endswith(")") and tail.split(" ")[0].isdigit() else message
