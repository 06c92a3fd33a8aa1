"""Which tag a scalar gets, as PyYAML and go-yaml decide it, asked for every scalar read or written.

Reading and writing both resolve scalars: libyaml's composer asks once per scalar read (is this
plain `1` an int?), its serializer twice per scalar written (would this string read back as one,
or must it be quoted?). The loaders (core.yaml_reading) and the dumper (core.yaml_style) share
`MemoizedResolution`, which remembers the answers by value and answers `str` at once for a plain
scalar whose first character no implicit resolver looks at. The go-yaml patterns name the plain
strings Kubernetes tools would read as something else, which the writers quote.
"""

from __future__ import annotations

import operator
import re
from typing import Any

import yaml

MAP_TAG = "tag:yaml.org,2002:map"
SEQ_TAG = "tag:yaml.org,2002:seq"
_SCALAR_NODE = yaml.ScalarNode
STR_TAG = "tag:yaml.org,2002:str"
# Distinct plain scalars remembered per class; then the memo starts over. Small on purpose: what
# repeats (keys, labels, common values) is a few hundred scalars, refilled within a document after a
# restart, while what fills the memo are values met once (names, per-object settings), which it would
# otherwise keep alive: at 1 << 16, two memos held ~8 MiB over a 10,000-document post-render, a third
# of its peak memory, for no measurable CPU (docs/benchmarks.md).
_RESOLVED_LIMIT = 1 << 12


# The first characters of a plain scalar that some implicit resolver looks at (PyYAML keys its
# resolvers by first character; "" for the empty scalar): a plain scalar starting with any other
# character is a string, whatever the rest. Taken from the base resolver, whose keys every loader
# and dumper here keeps (the loaders drop only the timestamp resolvers); none is a wildcard (None).
# (tests/unit/test_yaml_resolution.py checks these assumptions against the installed PyYAML.)
IMPLICIT_FIRSTS = frozenset(yaml.resolver.Resolver.yaml_implicit_resolvers)


class MemoizedResolution:
    """`resolve` of plain scalars remembered by value: libyaml's composer asks once per scalar read,
    its serializer twice per scalar written, and a stream repeats the same keys and values.

    The answer for a scalar depends only on its value (no path resolvers are registered), and a
    quoted scalar (implicit[0] false) is always a string, and so is a plain one whose first
    character no implicit resolver looks at (not remembered: the memo keeps room for the others);
    other nodes ask the resolver itself.
    """

    _resolved: dict[str, str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._resolved = {}

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is _SCALAR_NODE:
            if not implicit[0]:
                return STR_TAG
            tag = self._resolved.get(value)
            if tag is None:
                if value[:1] not in IMPLICIT_FIRSTS:
                    return STR_TAG
                tag = super().resolve(kind, value, implicit)  # type: ignore[misc]
                if len(self._resolved) >= _RESOLVED_LIMIT:
                    self._resolved.clear()
                self._resolved[value] = tag
            return tag
        return super().resolve(kind, value, implicit)  # type: ignore[misc,no-any-return]

    # libyaml's composer and serializer call these around every node they compose or serialize,
    # for path resolvers; none is registered (tests/unit/test_yaml_resolution.py), so the resolver's
    # own methods only return. Builtins that take the same arguments and do nothing spare a Python
    # frame per node (a builtin as a class attribute is not bound: no `self`).
    descend_resolver = operator.is_  # (current_node, current_index) -> bool, ignored
    ascend_resolver = tuple  # () -> (), ignored


# Plain scalars that PyYAML reads as strings but go-yaml v2 (kubectl, Helm, Argo CD, Flux) reads
# as numbers or booleans: they must be quoted to stay strings in the cluster.
GO_YAML_NON_STRINGS = re.compile(r"^(?:[yYnN]|[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+|0o[0-7]+)$")
MAY_LOOK_LIKE_GO_YAML_NON_STRING = frozenset("yYnN0123456789+-")  # all in IMPLICIT_FIRSTS
