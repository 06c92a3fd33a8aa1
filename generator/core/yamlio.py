"""YAML in and out, with one style everywhere.

Reading: libyaml's C parser, YAML 1.1 scalars as Kubernetes reads them, except timestamps, which
stay strings (a date in an annotation must not turn into a datetime and back). Source files are
read strictly: a duplicate key is an error, as it is for `kubectl apply`.

Every read is bounded, whatever the loader: one document may span at most `MAX_DOCUMENT_CHARS`
(the 3 MiB the Kubernetes API server accepts for one request), and anchors and aliases may add
at most `MAX_ALIAS_NODES` nodes to everything one call reads (a file, a stream), counted on the
composed node graph before anything is constructed. A "billion laughs" document is refused in
microseconds: the graph libyaml composes shares the aliased nodes, and only its expanded size is
computed, once per distinct node. A text without both `&` and `*` cannot hold an alias and skips
the count. A cyclic alias (an anchor used inside its own node) is refused too, and so is nesting
deeper than `MAX_DEPTH`, which would otherwise end in a RecursionError somewhere downstream.

Writing: block style, 2-space indent, no line folding, plain scalars unless quoting is needed,
multi-line strings as literal blocks, and a fixed key order: apiVersion, kind, metadata, name,
namespace, spec, data, stringData, then the rest sorted, `status` last. The same object always
serialises to the same bytes. PyYAML (libyaml's emitter, our representers) defines those bytes;
`dump_object` and `DocumentWriter` (a stream, as post-render writes it) write the same ones
without a PyYAML call per node (`_BlockWriter`), several times faster, wherever they can.
"""

from __future__ import annotations

import io
import operator
import re
from collections.abc import Iterator
from itertools import chain
from typing import Any

import yaml

from btp_gitops.generator.core.errors import Problem

_LEADING_KEYS = ("apiVersion", "kind", "metadata", "name", "namespace", "spec", "data", "stringData")
_KEY_RANK = {key: rank for rank, key in enumerate(_LEADING_KEYS)}
_UNRANKED = len(_LEADING_KEYS)
_TRAILING_RANK = _UNRANKED + 1  # status goes last


def _key_order(item: tuple[Any, Any]) -> tuple[int, str, str]:
    key = item[0]
    if key == "status":
        return (_TRAILING_RANK, "", "")
    return (_KEY_RANK.get(key, _UNRANKED), type(key).__name__, str(key))


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


def _may_hold_aliases(text: str) -> bool:
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


def _check_document(node: yaml.Node, budget: AliasBudget | None) -> None:
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


def _bounded_documents(loader: _Loader, text: str, budget: AliasBudget | None = None) -> Iterator[Any]:
    """The documents of `loader` (built over `text`), each checked against the limits first."""
    counted = (budget or AliasBudget()) if _may_hold_aliases(text) else None
    while loader.check_node():
        node = loader.get_node()
        if node is None:
            return
        _check_document(node, counted)
        yield _construct(loader, node, aliases_possible=counted is not None)


def _load_one(text: str, loader_type: type[_Loader], budget: AliasBudget | None = None) -> Any:
    """The one document of `text` (None when there is none), bounded like every read."""
    loader = loader_type(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        aliases_possible = _may_hold_aliases(text)
        _check_document(node, (budget or AliasBudget()) if aliases_possible else None)
        return _construct(loader, node, aliases_possible=aliases_possible)
    finally:
        loader.dispose()


_SCALAR_NODE = yaml.ScalarNode
_STR_TAG = "tag:yaml.org,2002:str"
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
_IMPLICIT_FIRSTS = frozenset(yaml.resolver.Resolver.yaml_implicit_resolvers)


class _MemoizedResolution:
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
                return _STR_TAG
            tag = self._resolved.get(value)
            if tag is None:
                if value[:1] not in _IMPLICIT_FIRSTS:
                    return _STR_TAG
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


class _Loader(_MemoizedResolution, yaml.CSafeLoader):  # type: ignore[misc]  # the builtin resolver hooks
    """C-accelerated safe loader that keeps timestamps as strings and rejects duplicate keys."""

    strict = False  # duplicate keys: the last one wins (as in PyYAML), or an error when strict


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.CSafeLoader.yaml_implicit_resolvers.items()
}


class DuplicateKeyError(yaml.constructor.ConstructorError):
    pass


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _duplicate_key_error(node: yaml.MappingNode, key_node: yaml.Node, problem: str) -> DuplicateKeyError:
    return DuplicateKeyError("while constructing a mapping", node.start_mark, problem, key_node.start_mark)


def _construct_mapping_rejecting_duplicates(loader: _Loader, node: yaml.MappingNode) -> dict[Any, Any]:
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


class _StrictLoader(_Loader):
    strict = True


_StrictLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping_rejecting_duplicates)


class _FastLoader(_Loader):
    """For Helm streams we trust to be machine-written: no duplicate-key pass, for speed."""


_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_MAPPING_NODE = yaml.MappingNode
_SEQUENCE_NODE = yaml.SequenceNode
# Scalars of these tags other than str are built by the loader's own constructor, once per value.
_PLAIN_SCALAR_TAGS = frozenset(f"tag:yaml.org,2002:{name}" for name in ("int", "float", "bool", "null"))
_SCALARS_LIMIT = 1 << 14
_SCALARS: dict[tuple[str, str], Any] = {}  # (tag, text) -> value, for the tags above


class _Unusual(Exception):
    """A node the direct builder leaves to PyYAML's constructor (tags, merge keys, duplicates)."""


def _construct(loader: _Loader, node: yaml.Node, *, aliases_possible: bool) -> Any:
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


def _build(loader: _Loader, node: yaml.Node, strict: bool, scalars: dict[tuple[str, str], Any]) -> Any:
    kind = type(node)
    tag = node.tag
    if kind is _SCALAR_NODE:
        if tag == _STR_TAG:
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
        if tag != _MAP_TAG:
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
    if kind is _SEQUENCE_NODE and tag == _SEQ_TAG:
        return [_build(loader, child, strict, scalars) for child in node.value]
    raise _Unusual


_CONTAINERS = (dict, list)  # a tuple built once: `dict | list` would build a union per call


_PLACED_KEYS = frozenset((*_LEADING_KEYS, "status"))
_STR_ONLY = frozenset({str})
_FIRST = operator.itemgetter(0)


def _sorted_items(data: dict[Any, Any]) -> list[tuple[Any, Any]]:
    # Most mappings (labels, env entries, specs) have only string keys and none placed first or
    # last: `_key_order` then sorts by the key itself, which C does without a call per key.
    if _PLACED_KEYS.isdisjoint(data) and set(map(type, data)) <= _STR_ONLY:
        return sorted(data.items(), key=_FIRST)
    return sorted(data.items(), key=_key_order)


# Plain scalars that PyYAML reads as strings but go-yaml v2 (kubectl, Helm, Argo CD, Flux) reads
# as numbers or booleans: they must be quoted to stay strings in the cluster.
_GO_YAML_NON_STRINGS = re.compile(r"^(?:[yYnN]|[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+|0o[0-7]+)$")


_MAY_LOOK_LIKE_GO_YAML_NON_STRING = frozenset("yYnN0123456789+-")  # all in _IMPLICIT_FIRSTS


def _str_style(data: str) -> str | None:
    """The style asked of the emitter for a string; the emitter may still quote a plain one."""
    if "\n" in data:
        return "|"
    # The first-character test spares the regex for almost every string of a large stream.
    if data[:1] in _MAY_LOOK_LIKE_GO_YAML_NON_STRING and _GO_YAML_NON_STRINGS.match(data):
        return "'"
    return None


_SCALAR_NODE_TYPE = yaml.ScalarNode


class _Dumper(_MemoizedResolution, yaml.CSafeDumper):  # type: ignore[misc]  # the builtin resolver hooks
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
            return _SCALAR_NODE_TYPE(_STR_TAG, data, style=_str_style(data))
        if kind is dict:
            known = seen.get(id(data))
            if known is not None:
                return known
            self.object_keeper.append(data)
            items: list[tuple[yaml.Node, yaml.Node]] = []
            mapping = yaml.MappingNode(_MAP_TAG, items, flow_style=False)
            seen[id(data)] = mapping
            node = self._node
            items += [(node(key, seen), node(value, seen)) for key, value in _sorted_items(data)]
            return mapping
        if kind is list:
            known = seen.get(id(data))
            if known is not None:
                return known
            self.object_keeper.append(data)
            children: list[yaml.Node] = []
            sequence = yaml.SequenceNode(_SEQ_TAG, children, flow_style=False)
            seen[id(data)] = sequence
            node = self._node
            children += [node(item, seen) for item in data]
            return sequence
        return self.represent_data(data)


def _represent_mapping(dumper: _Dumper, data: dict[Any, Any]) -> yaml.MappingNode:
    return dumper.represent_mapping(_MAP_TAG, _sorted_items(data))


def _represent_str(dumper: _Dumper, data: str) -> yaml.ScalarNode:
    return dumper.represent_scalar(_STR_TAG, data, style=_str_style(data))


_Dumper.add_representer(dict, _represent_mapping)
_Dumper.add_representer(str, _represent_str)

_DUMP_OPTIONS: dict[str, Any] = {
    "Dumper": _Dumper,
    "default_flow_style": False,
    "indent": 2,
    "width": 1 << 30,  # never fold long lines
    "allow_unicode": True,
    "sort_keys": False,  # ordering is done by _represent_mapping
}


def _dump_with_pyyaml(obj: Any) -> str:
    return yaml.dump(obj, **_DUMP_OPTIONS)  # type: ignore[no-any-return]


class _NotPlain(Exception):
    """The object holds something the block writer leaves to PyYAML (see `_BlockWriter`)."""


def _one_line(text: str) -> bool:
    # Every line break YAML knows (and a few more) counts: libyaml indents after U+2028 too.
    return len(text.splitlines()) == 1 and text.endswith("\n")


_OTHER_BREAKS = re.compile("[\r\x85\u2028\u2029]")
_LITERAL_HEAD = re.compile(r"k: \|[1-9]?-?\n")


def _is_literal_block(value: str, written: str) -> bool:
    """True when `written` (PyYAML's `k: <value>`) is a literal block the writer may indent further:
    `|`, `|-`, `|2` or `|2-` (not `|+`), then lines that are empty or indented by two."""
    head = _LITERAL_HEAD.match(written)
    if head is None or _OTHER_BREAKS.search(value) or not written.endswith("\n"):
        return False
    return all(not line or line.startswith("  ") for line in written[head.end() : -1].split("\n"))


# Names, hosts, IDs, versions: no character of these is a YAML indicator where it stands, so the
# string is written plain when the resolver reads it back as a string, else in single quotes
# (nothing to escape), which is what the emitter chooses. One resolver call instead of a dump.
_SIMPLE_STRING = re.compile(r"[A-Za-z0-9][A-Za-z0-9_./-]{0,99}\Z")
_RESOLVER = yaml.resolver.Resolver()
_STR_TAG = "tag:yaml.org,2002:str"


def _simple_string_text(data: str) -> str | None:
    if not _SIMPLE_STRING.match(data):
        return None
    if data[0] not in _IMPLICIT_FIRSTS:  # read back as a string, and no go-yaml non-string either
        return data
    tag = _RESOLVER.resolve(yaml.ScalarNode, data, (True, False))  # type: ignore[no-untyped-call]
    if tag != _STR_TAG or (
        data[:1] in _MAY_LOOK_LIKE_GO_YAML_NON_STRING and _GO_YAML_NON_STRINGS.match(data)
    ):
        return f"'{data}'"
    return data


_SCALAR_TYPES = frozenset({str, int, float, bool, type(None)})
_MEMO_LIMIT = 1 << 17  # distinct scalars remembered; the memo starts over beyond it
_LITERAL_MEMO_LONGEST = 256  # longer multi-line strings are not remembered (they rarely repeat)


class _BlockWriter:
    """Writes the bytes `_dump_with_pyyaml` writes, for the objects almost every render holds,
    without PyYAML's representer, resolver and emitter calls per node (each ~10x the work).

    Only the layout of block collections is done here: `key: value`, nested mappings indented by
    two, sequences in a mapping not indented (PyYAML's "indentless" style), `{}` and `[]` for
    empty ones, keys in `_represent_mapping`'s order. How one scalar is written (plain, quoted,
    escaped) is asked of PyYAML itself, once per distinct scalar, and remembered: a value as
    `k: <value>`, a key as `<key>: 0`. Anything whose bytes could depend on more than that is left
    to PyYAML, for the whole object: a root that is not a mapping, keys that are not strings or
    need the `? ` form, scalars written on more than one line other than the literal blocks
    below, types other than str, int, float, bool and None (subclasses included), and a mapping or
    list met twice in one object (PyYAML writes an anchor and alias).

    A string with line breaks is written as the literal block PyYAML writes for it as `k: <value>`
    (`|`, `|-` or `|2-` and its lines indented by two), indented further where it stands: libyaml
    indents a block scalar's lines by two past the column of the mapping's keys or of the list's
    dashes, and leaves empty lines empty. Refused, and so left to PyYAML: a block kept with its
    trailing line breaks (`|+`, after which libyaml may end the stream with `...`) and a string
    holding a line break other than `\n` (`\r`, U+0085, U+2028, U+2029).

    `memo_limit` bounds how many distinct keys and values are remembered, and `memo_longest` how
    long a remembered value may be (None: any; a literal block is remembered up to 256 characters
    at most): a writer that lives through a whole stream keeps both small so that its memory does
    not grow with the stream.
    """

    __slots__ = ("keys", "limit", "longest", "values")

    def __init__(self, memo_limit: int = _MEMO_LIMIT, memo_longest: int | None = None) -> None:
        self.keys: dict[str, str] = {}
        self.values: dict[tuple[type, Any], str] = {}
        self.limit = memo_limit
        self.longest = memo_longest

    def key(self, key: Any) -> str:
        if type(key) is not str:
            raise _NotPlain
        text = self.keys.get(key)
        if text is None:
            text = _simple_string_text(key)
            if text is None:
                written = _dump_with_pyyaml({key: 0})
                if written.startswith("? ") or not _one_line(written) or not written.endswith(": 0\n"):
                    raise _NotPlain
                text = written[: -len(": 0\n")]
            if len(self.keys) >= self.limit:
                self.keys.clear()
            self.keys[key] = text
        return text

    def scalar(self, value: Any) -> str:
        kind = type(value)
        if kind not in _SCALAR_TYPES:
            raise _NotPlain
        # The type too: 1, 1.0 and True are equal keys; and a float by its text: 0.0 and -0.0
        # are equal keys but written differently.
        memo = (kind, repr(value)) if kind is float else (kind, value)
        text = self.values.get(memo)
        if text is None:
            text = _simple_string_text(value) if kind is str else None
            if text is None:
                written = _dump_with_pyyaml({"k": value})
                one_line = _one_line(written) and written.startswith("k: ")
                if not one_line and not (kind is str and _is_literal_block(value, written)):
                    raise _NotPlain
                text = written[3:-1]
            if self._remembers(value if kind is str else "", text):
                if len(self.values) >= self.limit:
                    self.values.clear()
                self.values[memo] = text
        return text

    def _remembers(self, value: str, text: str) -> bool:
        longest = self.longest
        if "\n" in text:  # a literal block: short ones only, whatever the writer (config files, scripts)
            longest = _LITERAL_MEMO_LONGEST if longest is None else min(longest, _LITERAL_MEMO_LONGEST)
        return longest is None or len(value) <= longest

    def document(self, obj: Any) -> str | None:
        """`obj` as `_dump_with_pyyaml` writes it, or None when it is left to PyYAML."""
        if type(obj) is not dict:
            return None
        if not obj:
            return "{}\n"
        out: list[str] = []
        try:
            self._mapping(obj, "", "", out, set())
        except _NotPlain:
            return None
        return "".join(out)

    def _mapping(self, data: dict[Any, Any], indent: str, first: str, out: list[str], seen: set[int]) -> None:
        if id(data) in seen:
            raise _NotPlain
        seen.add(id(data))
        if _PLACED_KEYS.isdisjoint(data) and set(map(type, data)) <= _STR_ONLY:
            items = sorted(data.items(), key=_FIRST)
        else:
            items = sorted(data.items(), key=_key_order)
        prefix = first
        deeper = indent + "  "
        for key, value in items:
            kind = type(value)
            if kind is dict:
                if value:
                    out.append(f"{prefix}{self.key(key)}:\n")
                    self._mapping(value, deeper, deeper, out, seen)
                else:
                    out.append(f"{prefix}{self.key(key)}: {{}}\n")
            elif kind is list:
                if value:
                    out.append(f"{prefix}{self.key(key)}:\n")
                    self._sequence(value, indent, indent, out, seen)
                else:
                    out.append(f"{prefix}{self.key(key)}: []\n")
            else:
                text = self.scalar(value)
                if indent and "\n" in text:
                    text = text.replace("\n  ", f"\n{deeper}")
                out.append(f"{prefix}{self.key(key)}: {text}\n")
            prefix = indent

    def _sequence(self, data: list[Any], indent: str, first: str, out: list[str], seen: set[int]) -> None:
        if id(data) in seen:
            raise _NotPlain
        seen.add(id(data))
        prefix = first
        deeper = indent + "  "
        for item in data:
            kind = type(item)
            if kind is dict:
                if item:
                    self._mapping(item, deeper, f"{prefix}- ", out, seen)
                else:
                    out.append(f"{prefix}- {{}}\n")
            elif kind is list:
                if item:
                    self._sequence(item, deeper, f"{prefix}- ", out, seen)
                else:
                    out.append(f"{prefix}- []\n")
            else:
                text = self.scalar(item)
                if indent and "\n" in text:
                    text = text.replace("\n  ", f"\n{deeper}")
                out.append(f"{prefix}- {text}\n")
            prefix = indent


_WRITER = _BlockWriter()


def dump_object(obj: Any) -> str:
    """One object as a YAML document body (no leading `---`)."""
    text = _WRITER.document(obj)
    return _dump_with_pyyaml(obj) if text is None else text


def dump_each(objects: list[Any]) -> list[str]:
    """Each object as its own document body, like `dump_object`, as one stream (`DocumentWriter`).

    (A body ending in a `|+` block gets no `...` marker here: the next `---` ends it just as well;
    a stream-end marker, when libyaml writes one, is part of the last body.)
    """
    writer = DocumentWriter()
    try:
        bodies = [writer.dump(obj) for obj in objects]
    finally:
        tail = writer.close()
    if bodies:
        bodies[-1] += tail
    return bodies


def dump_documents(objects: list[Any]) -> str:
    """Several objects as a multi-document stream, each document starting with `---`."""
    return "".join(f"---\n{dump_object(obj)}" for obj in objects)


def yaml_problem_location(error: yaml.YAMLError, line_offset: int = 0) -> str:
    """`line L, column C: problem`; `line_offset` maps a piece of a stream back to its line."""
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error)
    if mark is not None:
        return f"line {mark.line + 1 + line_offset}, column {mark.column + 1}: {problem}"
    return str(problem)


def load_source_documents(text: str, file: str) -> Iterator[tuple[int, Any]]:
    """Yield (1-based document index, parsed document) of a source file, strictly.

    Raises `SourceSyntaxProblem` carrying a `Problem` that names the file, the document and the
    line where parsing failed.
    """
    loader = _StrictLoader(text)
    index = 0
    try:
        for index, document in enumerate(_bounded_documents(loader, text), start=1):
            yield index, document
    except yaml.YAMLError as error:
        raise SourceSyntaxProblem(
            Problem(file=file, document=index + 1, message=f"invalid YAML: {yaml_problem_location(error)}")
        ) from error
    except RecursionError as error:
        raise SourceSyntaxProblem(
            Problem(file=file, document=index + 1, message="invalid YAML: nested too deeply")
        ) from error
    finally:
        loader.dispose()


def load_stream_document(text: str, budget: AliasBudget | None = None) -> Any:
    """Parse one document of a manifest stream strictly (duplicate keys are errors).

    Pass one `budget` to every piece of one stream, so that the alias limit holds for the whole.
    """
    return _load_one(text, _StrictLoader, budget)


def load_stream_documents(pieces: list[str]) -> list[Any] | None:
    """Parse many single-document pieces in one strict pass; None when any piece fails or the
    pieces do not map one-to-one onto documents (the caller then parses them one by one, which
    names the piece at fault). One pass spares a loader per document on large streams."""
    text = "\n---\n".join(pieces)
    loader = _StrictLoader(text)
    try:
        documents = list(_bounded_documents(loader, text))
    except (yaml.YAMLError, RecursionError):
        return None
    finally:
        loader.dispose()
    return documents if len(documents) == len(pieces) else None


def load_values_document(text: str) -> Any:
    """Parse a Helm values file (or Chart.yaml): YAML as Helm reads it, bounded like every read."""
    return _load_one(text, _Loader)


def load_trusted_document(text: str, budget: AliasBudget | None = None) -> Any:
    """Parse one machine-written document (e.g. a chart template's output) quickly, though still
    within the limits: a chart or a previous output tree may come from an untrusted change. Pass
    one `budget` to every piece of one file or chart, so that the alias limit holds for the whole.
    """
    return _load_one(text, _FastLoader, budget)


class SourceSyntaxProblem(Exception):
    """Carries the Problem of a YAML syntax error up to the loader, which collects them."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.render())
        self.problem = problem


# Helm splits rendered templates on this pattern (a `---` at the start of a line, glued content
# included); we split the same way so that a document boundary means what it means to Helm.
_DOCUMENT_SEPARATOR = re.compile(r"(?:^|[\t\n\f\r ]*\n)---[\t\n\f\r ]*")  # Go's \s: ASCII only


def split_documents(text: str) -> list[str]:
    """Split a multi-document YAML text the way Helm does; blank pieces are dropped."""
    return [piece for piece in _DOCUMENT_SEPARATOR.split(text) if piece.strip()]


# The block writer of a `DocumentWriter`: it lives through a whole stream, so it remembers few
# scalars and no long ones (post-render's peak memory stays flat with the stream's size).
_STREAM_MEMO_LIMIT = 1 << 12
_STREAM_MEMO_LONGEST = 256


class DocumentWriter:
    """Objects dumped one at a time as one libyaml emitter writes them as a stream: each document
    `---` and its body (`dump` gives the body), then whatever the emitter writes at the stream's end
    (`close` gives it: a `...` after a last document ending in a `|+` block, else nothing).

    A body is written by the block writer (`_BlockWriter`) when it vouches for the object, else by
    the emitter. Both write the same bytes; the emitter carries nothing from one document into the
    next but whether the stream is left open-ended (`|+`, which the block writer refuses), and
    that only shows at the end: `close` gives nothing after a last body the block writer wrote.
    """

    def __init__(self) -> None:
        self._buffer = io.StringIO()
        options = {key: value for key, value in _DUMP_OPTIONS.items() if key != "Dumper"}
        self._dumper = _Dumper(self._buffer, explicit_start=True, **options)
        self._dumper.open()
        self._blocks = _BlockWriter(_STREAM_MEMO_LIMIT, _STREAM_MEMO_LONGEST)
        self._last_by_blocks = False
        self._closed = False

    def _take(self) -> str:
        text = self._buffer.getvalue()
        self._buffer.seek(0)
        self._buffer.truncate()
        return text

    def dump(self, obj: Any) -> str:
        # An empty mapping is `--- {}` in a stream: left to the emitter, as any other root.
        text = self._blocks.document(obj) if obj else None
        self._last_by_blocks = text is not None
        if text is not None:
            return text
        self._dumper.represent(obj)
        return self._take().removeprefix("---\n")

    def close(self) -> str:
        if self._closed:
            return ""
        self._closed = True
        try:
            self._dumper.close()
            tail = self._take()
        finally:
            self._dumper.dispose()
        return "" if self._last_by_blocks else tail
