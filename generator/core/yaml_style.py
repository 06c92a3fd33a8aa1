"""The one style btp-gitops writes YAML in, as PyYAML's emitter (libyaml) writes it with our dumper.

Block style, 2-space indent, no line folding, plain scalars unless quoting is needed (and quoted
where go-yaml would read a plain string as something else, core.yaml_resolution), multi-line
strings as literal blocks, and a fixed key order: apiVersion, kind, metadata, name, namespace,
spec, data, stringData, then the rest sorted, `status` last. The same object always serialises to
the same bytes, and `dump_with_pyyaml` defines them: the block writer (core.yaml_block_writer)
writes the same bytes faster wherever it can, and is tested against this.
"""

from __future__ import annotations

import operator
from typing import Any

import yaml

from btp_gitops.generator.core.yaml_resolution import (
    GO_YAML_NON_STRINGS,
    MAP_TAG,
    MAY_LOOK_LIKE_GO_YAML_NON_STRING,
    SEQ_TAG,
    STR_TAG,
    MemoizedResolution,
)

_LEADING_KEYS = ("apiVersion", "kind", "metadata", "name", "namespace", "spec", "data", "stringData")
_KEY_RANK = {key: rank for rank, key in enumerate(_LEADING_KEYS)}
_UNRANKED = len(_LEADING_KEYS)
_TRAILING_RANK = _UNRANKED + 1  # status goes last


def _key_order(item: tuple[Any, Any]) -> tuple[int, str, str]:
    key = item[0]
    if key == "status":
        return (_TRAILING_RANK, "", "")
    return (_KEY_RANK.get(key, _UNRANKED), type(key).__name__, str(key))


_CONTAINERS = (dict, list)  # a tuple built once: `dict | list` would build a union per call


_PLACED_KEYS = frozenset((*_LEADING_KEYS, "status"))
_STR_ONLY = frozenset({str})
_FIRST = operator.itemgetter(0)


def sorted_items(data: dict[Any, Any]) -> list[tuple[Any, Any]]:
    """The items of a mapping in the order written: the placed keys first, `status` last."""
    # Most mappings (labels, env entries, specs) have only string keys and none placed first or
    # last: `_key_order` then sorts by the key itself, which C does without a call per key.
    if _PLACED_KEYS.isdisjoint(data) and set(map(type, data)) <= _STR_ONLY:
        return sorted(data.items(), key=_FIRST)
    return sorted(data.items(), key=_key_order)


def _str_style(data: str) -> str | None:
    """The style asked of the emitter for a string; the emitter may still quote a plain one."""
    if "\n" in data:
        return "|"
    # The first-character test spares the regex for almost every string of a large stream.
    if data[:1] in MAY_LOOK_LIKE_GO_YAML_NON_STRING and GO_YAML_NON_STRINGS.match(data):
        return "'"
    return None


_SCALAR_NODE_TYPE = yaml.ScalarNode


class Dumper(MemoizedResolution, yaml.CSafeDumper):  # type: ignore[misc]  # the builtin resolver hooks
    def ignore_aliases(self, data: Any) -> bool:
        # Only a mapping or list met twice becomes an anchor and alias (which keeps an alias-heavy
        # input from expanding on output); the base check walks a list of scalar types per value.
        return not isinstance(data, _CONTAINERS)

    def represent(self, data: Any) -> None:
        """`BaseRepresenter.represent` with the nodes of strings, dicts and lists made directly.

        The nodes are those the registered representers make (`_represent_str`,
        `_represent_mapping`, PyYAML's list representer with `default_flow_style=False`), and a
        dict or list met twice is the same node, which the serializer turns into an anchor and
        alias, as `represent_data` does; any other value goes through `represent_data`.
        """
        try:
            node = self._node(data, self.represented_objects)
            self.serialize(node)
        finally:
            self.represented_objects = {}
            self.object_keeper = []
            self.alias_key = None

    def _node(self, data: Any, seen: dict[int, yaml.Node]) -> yaml.Node:
        kind = type(data)
        if kind is str:
            return _SCALAR_NODE_TYPE(STR_TAG, data, style=_str_style(data))
        if kind is dict:
            known = seen.get(id(data))
            if known is not None:
                return known
            self.object_keeper.append(data)
            items: list[tuple[yaml.Node, yaml.Node]] = []
            mapping = yaml.MappingNode(MAP_TAG, items, flow_style=False)
            seen[id(data)] = mapping
            node = self._node
            items += [(node(key, seen), node(value, seen)) for key, value in sorted_items(data)]
            return mapping
        if kind is list:
            known = seen.get(id(data))
            if known is not None:
                return known
            self.object_keeper.append(data)
            children: list[yaml.Node] = []
            sequence = yaml.SequenceNode(SEQ_TAG, children, flow_style=False)
            seen[id(data)] = sequence
            node = self._node
            children += [node(item, seen) for item in data]
            return sequence
        return self.represent_data(data)


def _represent_mapping(dumper: Dumper, data: dict[Any, Any]) -> yaml.MappingNode:
    return dumper.represent_mapping(MAP_TAG, sorted_items(data))


def _represent_str(dumper: Dumper, data: str) -> yaml.ScalarNode:
    return dumper.represent_scalar(STR_TAG, data, style=_str_style(data))


Dumper.add_representer(dict, _represent_mapping)
Dumper.add_representer(str, _represent_str)

DUMP_OPTIONS: dict[str, Any] = {
    "Dumper": Dumper,
    "default_flow_style": False,
    "indent": 2,
    "width": 1 << 30,  # never fold long lines
    "allow_unicode": True,
    "sort_keys": False,  # ordering is done by _represent_mapping
}


def dump_with_pyyaml(obj: Any) -> str:
    """`obj` in the one style, written by PyYAML: the bytes every faster writer must match."""
    return yaml.dump(obj, **DUMP_OPTIONS)  # type: ignore[no-any-return]
