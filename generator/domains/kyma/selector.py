"""Kubernetes label selectors, for the `spec.kymaSelector` of a restricted module's ModuleReleaseMeta.

The semantics are those of a `metav1.LabelSelector`: every `matchLabels` pair must be present with
that value, and every `matchExpressions` requirement must hold (`In`: the label is present with one
of the values; `NotIn`: absent, or present with none of them; `Exists` and `DoesNotExist`: present
or absent, whatever the value). `In` and `NotIn` need values, `Exists` and `DoesNotExist` take none.
Lifecycle Manager treats a selector without any requirement as matching no Kyma (a restricted
module is for the Kymas it names, not for all), and so does `restricted_match`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


class SelectorError(ValueError):
    """A selector that cannot be evaluated; the message names the offending field."""


def _requirement(index: int, expression: Any) -> tuple[str, str, frozenset[str]]:
    where = f"matchExpressions[{index}]"
    if not isinstance(expression, Mapping):
        raise SelectorError(f"{where}: must be an object with key, operator and values")
    key, operator, values = expression.get("key"), expression.get("operator"), expression.get("values") or []
    if not isinstance(key, str) or not key:
        raise SelectorError(f"{where}.key: required")
    if operator not in OPERATORS:
        raise SelectorError(f"{where}.operator: must be one of {', '.join(OPERATORS)}, got {operator!r}")
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise SelectorError(f"{where}.values: must be a list of strings")
    if operator in ("In", "NotIn") and not values:
        raise SelectorError(f"{where}.values: must not be empty for operator {operator}")
    if operator in ("Exists", "DoesNotExist") and values:
        raise SelectorError(f"{where}.values: must be empty for operator {operator}")
    return key, str(operator), frozenset(values)


def _holds(requirement: tuple[str, str, frozenset[str]], labels: Mapping[str, str]) -> bool:
    key, operator, values = requirement
    present = key in labels
    if operator == "In":
        return present and labels[key] in values
    if operator == "NotIn":
        return not present or labels[key] not in values
    if operator == "Exists":
        return present
    return not present


def restricted_match(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether a Kyma with `labels` is one the restricted module's selector names.

    Raises SelectorError for a selector that is not a valid label selector.
    """
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not isinstance(match_labels, Mapping) or not all(isinstance(v, str) for v in match_labels.values()):
        raise SelectorError("matchLabels: must map label keys to string values")
    if not isinstance(expressions, list):
        raise SelectorError("matchExpressions: must be a list")
    requirements = [_requirement(index, expression) for index, expression in enumerate(expressions)]
    if not match_labels and not requirements:
        return False
    if any(labels.get(str(key)) != value for key, value in match_labels.items()):
        return False
    return all(_holds(requirement, labels) for requirement in requirements)
