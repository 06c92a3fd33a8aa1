"""A Kyma module is removed because the Kyma says so, not because a name in it is misspelt.

Renaming an entry of `spec.modules` by mistake (`relay` -> `rleay`) asks for a module the catalog
does not have and stops asking for the one that was installed: as Lifecycle Manager reads it, the
installed module is to be removed, and the GitOps tool would delete it from the cluster with its
CRDs and their objects. A render cannot tell a typo from a real removal, but the sign is plain: a
module leaves while an entry of the same Kyma cannot be resolved. Then the render is refused
(`ModuleRemovalRefused`, exit 3, nothing written), each such entry named with the module it
probably meant, unless the removal is asked for explicitly:

- `--allow-module-removal` (render and diff): this run may remove any module;
- the Kyma's annotation `btp-gitops.io/allow-module-removal`, a comma-separated list of the modules
  it may remove, which stays with the Kyma in Git and so also holds for the renders of a workflow.

A removal already under way (the previous render deleted the module's default CR, and recorded it
as `Deleting`) was chosen by that render and goes on. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from btp_gitops.generator.core.errors import ModuleRemovalRefused, Problem, raise_if_problems
from btp_gitops.generator.core.sources import problem_at
from btp_gitops.generator.core.suggestions import did_you_mean
from btp_gitops.generator.domains.kyma.model import Kyma, ModuleRequest
from btp_gitops.generator.domains.kyma.resolution import Unresolved

ALLOW_REMOVAL_ANNOTATION = "btp-gitops.io/allow-module-removal"
ALLOW_REMOVAL_FLAG = "--allow-module-removal"

# An entry of spec.modules that could not be resolved, and why.
Unresolvable = tuple[ModuleRequest, Unresolved]


def removals_allowed_by(kyma: Kyma) -> frozenset[str]:
    """The modules the Kyma's annotation allows to remove (names separated by commas)."""
    value = kyma.annotations.get(ALLOW_REMOVAL_ANNOTATION)
    if not isinstance(value, str):
        return frozenset()
    return frozenset(name.strip() for name in value.split(",") if name.strip())


def _problem(kyma: Kyma, request: ModuleRequest, failure: Unresolved, candidates: Iterable[str]) -> Problem:
    """The entry, at its name (the likely mistake), with the module it probably meant."""
    message = failure.message
    if "did you mean" not in message:
        message += did_you_mean(request.name, candidates)
    return problem_at(kyma.source, request.field("name"), f"module {request.name}: {message}")


def refuse_unconfirmed_removals(
    kyma: Kyma,
    removed: Sequence[str],
    unresolvable: Sequence[Unresolvable],
    known: Iterable[str],
    allowed: bool,
) -> None:
    """Raise ModuleRemovalRefused when the plan removes `removed` (modules whose removal starts with
    this render) while `unresolvable` entries of the same Kyma cannot be resolved, and neither
    `allowed` (--allow-module-removal) nor the Kyma's annotation allows each removal. `known`: the
    module names of the catalog, the candidates of "did you mean" besides the removed modules."""
    if allowed or not unresolvable:
        return
    unconfirmed = sorted(set(removed) - removals_allowed_by(kyma))
    if not unconfirmed:
        return
    candidates = {*unconfirmed, *known}
    problems = [_problem(kyma, request, failure, candidates) for request, failure in unresolvable]
    names, listed = ", ".join(unconfirmed), ",".join(unconfirmed)
    message = (
        f"refusing to remove Kyma module{'s' if len(unconfirmed) > 1 else ''} {names}: no longer in "
        "spec.modules while an entry there cannot be resolved (a misspelt name would delete the module "
        "it meant); nothing is written. If the removal is meant, pass "
        f'{ALLOW_REMOVAL_FLAG}, or annotate the Kyma with {ALLOW_REMOVAL_ANNOTATION}: "{listed}"'
    )
    raise_if_problems(ModuleRemovalRefused, message, problems)
