"""How much one YAML read may hold, checked on the composed node graph before anything is built.

Every read is bounded, whatever the loader (core.yaml_reading): one document may span at most
`MAX_DOCUMENT_CHARS` (the 3 MiB the Kubernetes API server accepts for one request), and anchors and
aliases may add at most `MAX_ALIAS_NODES` nodes to everything one call reads (a file, a stream: one
`AliasBudget`), counted on the composed node graph before anything is constructed. A "billion
laughs" document is refused in microseconds: the graph libyaml composes shares the aliased nodes,
and only its expanded size is computed, once per distinct node. A text without both `&` and `*`
cannot hold an alias and skips the count. A cyclic alias (an anchor used inside its own node) is
refused too, and so is nesting deeper than `MAX_DEPTH`, which would otherwise end in a
RecursionError somewhere downstream.
"""

from __future__ import annotations

from itertools import chain

import yaml

MAX_DOCUMENT_CHARS = 3 * 1024 * 1024
MAX_ALIAS_NODES = 1_000_000
MAX_DEPTH = 128  # CRDs with their OpenAPI schemas nest a few dozen levels; Python recursion ~1000


class YamlLimitError(yaml.MarkedYAMLError):
    """A document over a size limit, or aliases expanding beyond theirs."""


class AliasBudget:
    """How many nodes aliases may still add; one budget per file or stream, shared by its pieces."""

    __slots__ = ("remaining",)

    def __init__(self, limit: int = MAX_ALIAS_NODES) -> None:
        self.remaining = limit


def may_hold_aliases(text: str) -> bool:
    """Whether `text` may hold an alias at all (else its documents need no alias count)."""
    return "*" in text and "&" in text


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return node.value  # type: ignore[no-any-return]
    if isinstance(node, yaml.MappingNode):
        return [child for pair in node.value for child in pair]
    return []


def _too_deep(node: yaml.Node) -> YamlLimitError:
    return YamlLimitError(
        None, None, f"nested deeper than {MAX_DEPTH} levels (mappings and lists)", node.start_mark
    )


def _check_depth(root: yaml.Node) -> None:
    """Raise when a node of the tree `root` (no aliases: nothing shared) is nested too deeply.

    Level by level, with the children gathered by C-level list operations: this runs on every
    document of every stream, so it is kept to a small fraction of the parse itself.
    """
    level: list[yaml.Node] = [root]
    depth = 1
    while level:
        if depth > MAX_DEPTH:
            raise _too_deep(level[0])
        below: list[yaml.Node] = []
        for node in level:
            kind = type(node)
            if kind is yaml.MappingNode:
                below.extend(chain.from_iterable(node.value))
            elif kind is yaml.SequenceNode:
                below.extend(node.value)
        level = below
        depth += 1


def _added_by_aliases(root: yaml.Node) -> int:
    """Nodes the document holds once its aliases are expanded, minus the nodes written in it.

    Iterative (no recursion limit), once per distinct node; raises on a cyclic alias and on a
    node nested deeper than `MAX_DEPTH` once expanded.
    """
    sizes: dict[int, int] = {}
    depths: dict[int, int] = {}
    entered: set[int] = set()
    stack = [root]
    while stack:
        node = stack[-1]
        key = id(node)
        if key in sizes:
            stack.pop()
            continue
        children = _children(node)
        if key not in entered:
            entered.add(key)
            for child in children:
                if id(child) in sizes:
                    continue
                if id(child) in entered:  # entered, not finished: an ancestor of `node`
                    raise YamlLimitError(
                        None, None, "an alias refers to a node that contains it", child.start_mark
                    )
                stack.append(child)
            continue
        sizes[key] = 1 + sum(sizes[id(child)] for child in children)
        depths[key] = 1 + max((depths[id(child)] for child in children), default=0)
        if depths[key] > MAX_DEPTH:
            raise _too_deep(node)
        stack.pop()
    return sizes[id(root)] - len(sizes)


def check_document(node: yaml.Node, budget: AliasBudget | None) -> None:
    """Raise `YamlLimitError` when the composed document `node` is over a limit; `budget` is None
    for a text that cannot hold aliases (only the depth is checked then), else what aliases may
    still add, shared by the documents of one read and charged here."""
    span = node.end_mark.index - node.start_mark.index
    if span > MAX_DOCUMENT_CHARS:
        raise YamlLimitError(
            None,
            None,
            f"the document is {span / (1 << 20):.1f} MiB, larger than the "
            f"{MAX_DOCUMENT_CHARS >> 20} MiB Kubernetes accepts for one object",
            node.start_mark,
        )
    if budget is None:
        _check_depth(node)
        return
    budget.remaining -= _added_by_aliases(node)
    if budget.remaining < 0:
        raise YamlLimitError(
            None,
            None,
            f"anchors and aliases expand beyond {MAX_ALIAS_NODES:,} nodes "
            '(the limit per file or stream; a "billion laughs" document?)',
            node.start_mark,
        )
