"""The loaders: libyaml's C parser, YAML 1.1 scalars as Kubernetes reads them, and a fast builder.

Timestamps stay strings (a date in an annotation must not turn into a datetime and back). Source
files are read strictly (`StrictLoader`): a duplicate key is an error, as it is for `kubectl
apply`. Every document is checked against the limits (core.yaml_limits) once composed, before
anything is constructed (`bounded_documents`, `load_one`).

A document that cannot hold aliases is then built directly from its nodes (`_construct`) rather
than by PyYAML's per-node dispatch: the values, and the errors of whatever the direct builder
leaves to PyYAML, are PyYAML's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

from btp_gitops.generator.core.yaml_limits import AliasBudget, check_document, may_hold_aliases
from btp_gitops.generator.core.yaml_resolution import MAP_TAG, SEQ_TAG, STR_TAG, MemoizedResolution

_SCALAR_NODE = yaml.ScalarNode


class Loader(MemoizedResolution, yaml.CSafeLoader):  # type: ignore[misc]  # the builtin resolver hooks
    """C-accelerated safe loader that keeps timestamps as strings and rejects duplicate keys."""

    strict = False  # duplicate keys: the last one wins (as in PyYAML), or an error when strict


Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.CSafeLoader.yaml_implicit_resolvers.items()
}


class DuplicateKeyError(yaml.constructor.ConstructorError):
    pass


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _duplicate_key_error(node: yaml.MappingNode, key_node: yaml.Node, problem: str) -> DuplicateKeyError:
    return DuplicateKeyError("while constructing a mapping", node.start_mark, problem, key_node.start_mark)


def _construct_mapping_rejecting_duplicates(loader: Loader, node: yaml.MappingNode) -> dict[Any, Any]:
    # Duplicates are looked for among the keys written in this mapping only: keys brought in by a
    # merge (`<<: *anchor`) may be overridden, which is what merge keys are for.
    mapping: dict[Any, Any] = {}
    has_merge = False
    for key_node, value_node in node.value:
        if key_node.tag == _MERGE_TAG:
            has_merge = True
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in mapping
        except TypeError:
            raise _duplicate_key_error(node, key_node, "found an unhashable key") from None
        if duplicate:
            raise _duplicate_key_error(node, key_node, f"found duplicate key {key!r}")
        mapping[key] = loader.construct_object(value_node, deep=True)
    if not has_merge:
        return mapping  # the common case: one pass, no second construction
    loader.flatten_mapping(node)
    return {
        loader.construct_object(key_node, deep=True): loader.construct_object(value_node, deep=True)
        for key_node, value_node in node.value
    }


class StrictLoader(Loader):
    strict = True


StrictLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping_rejecting_duplicates)


class FastLoader(Loader):
    """For Helm streams we trust to be machine-written: no duplicate-key pass, for speed."""


_MAPPING_NODE = yaml.MappingNode
_SEQUENCE_NODE = yaml.SequenceNode
# Scalars of these tags other than str are built by the loader's own constructor, once per value.
_PLAIN_SCALAR_TAGS = frozenset(f"tag:yaml.org,2002:{name}" for name in ("int", "float", "bool", "null"))
_SCALARS_LIMIT = 1 << 14
_SCALARS: dict[tuple[str, str], Any] = {}  # (tag, text) -> value, for the tags above


class _Unusual(Exception):
    """A node the direct builder leaves to PyYAML's constructor (tags, merge keys, duplicates)."""


def _construct(loader: Loader, node: yaml.Node, *, aliases_possible: bool) -> Any:
    """The document of `node`, as `loader.construct_document` builds it, without its per-node
    dispatch: strings are the node's value, other scalars come from a memo filled by the loader's
    constructors, and containers are built directly. A document that may hold aliases (whose
    identity PyYAML keeps), or any node that is not a plain string, number, boolean, null, map or
    list, goes to PyYAML's constructor instead, and so does any mapping with a merge key or a
    duplicate key: errors are PyYAML's, word for word, as are the values."""
    if not aliases_possible:
        try:
            return _build(loader, node, loader.strict, _SCALARS)
        except _Unusual:
            pass
    return loader.construct_document(node)


def _build(loader: Loader, node: yaml.Node, strict: bool, scalars: dict[tuple[str, str], Any]) -> Any:
    kind = type(node)
    tag = node.tag
    if kind is _SCALAR_NODE:
        if tag == STR_TAG:
            return node.value
        if tag not in _PLAIN_SCALAR_TAGS:
            raise _Unusual
        key = (tag, node.value)
        try:
            return scalars[key]
        except KeyError:
            pass
        try:
            value = loader.yaml_constructors[tag](loader, node)
        except Exception as error:  # left to PyYAML, which reports it as it always has
            raise _Unusual from error
        if len(scalars) >= _SCALARS_LIMIT:
            scalars.clear()
        scalars[key] = value
        return value
    if kind is _MAPPING_NODE:
        if tag != MAP_TAG:
            raise _Unusual
        mapping: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE_TAG:
                raise _Unusual
            key = _build(loader, key_node, strict, scalars)
            try:
                if strict and key in mapping:
                    raise _Unusual
                mapping[key] = _build(loader, value_node, strict, scalars)
            except TypeError:  # an unhashable key
                raise _Unusual from None
        return mapping
    if kind is _SEQUENCE_NODE and tag == SEQ_TAG:
        return [_build(loader, child, strict, scalars) for child in node.value]
    raise _Unusual


def bounded_documents(loader: Loader, text: str, budget: AliasBudget | None = None) -> Iterator[Any]:
    """The documents of `loader` (built over `text`), each checked against the limits first."""
    counted = (budget or AliasBudget()) if may_hold_aliases(text) else None
    while loader.check_node():
        node = loader.get_node()
        if node is None:
            return
        check_document(node, counted)
        yield _construct(loader, node, aliases_possible=counted is not None)


def load_one(text: str, loader_type: type[Loader], budget: AliasBudget | None = None) -> Any:
    """The one document of `text` (None when there is none), bounded like every read."""
    loader = loader_type(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        aliases_possible = may_hold_aliases(text)
        check_document(node, (budget or AliasBudget()) if aliases_possible else None)
        return _construct(loader, node, aliases_possible=aliases_possible)
    finally:
        loader.dispose()
