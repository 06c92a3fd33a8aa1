"""The block writer: the bytes of the one style (core.yaml_style), without a PyYAML call per node.

`dump_object` and `DocumentWriter` (core.yamlio) write through a `BlockWriter` wherever it vouches
for an object, several times faster than PyYAML's emitter, and fall back to PyYAML for the whole
object where it does not. What it vouches for, and how it stays byte for byte what PyYAML writes,
is told in `BlockWriter` (tests/unit/test_yaml_block_writer.py compares the two).
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from btp_gitops.generator.core.yaml_resolution import (
    GO_YAML_NON_STRINGS,
    IMPLICIT_FIRSTS,
    MAY_LOOK_LIKE_GO_YAML_NON_STRING,
    STR_TAG,
)
from btp_gitops.generator.core.yaml_style import dump_with_pyyaml, sorted_items


class _NotPlain(Exception):
    """The object holds something the block writer leaves to PyYAML (see `BlockWriter`)."""


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


def _simple_string_text(data: str) -> str | None:
    if not _SIMPLE_STRING.match(data):
        return None
    if data[0] not in IMPLICIT_FIRSTS:  # read back as a string, and no go-yaml non-string either
        return data
    tag = _RESOLVER.resolve(yaml.ScalarNode, data, (True, False))  # type: ignore[no-untyped-call]
    if tag != STR_TAG or (data[:1] in MAY_LOOK_LIKE_GO_YAML_NON_STRING and GO_YAML_NON_STRINGS.match(data)):
        return f"'{data}'"
    return data


_SCALAR_TYPES = frozenset({str, int, float, bool, type(None)})
_MEMO_LIMIT = 1 << 17  # distinct scalars remembered; the memo starts over beyond it
_LITERAL_MEMO_LONGEST = 256  # longer multi-line strings are not remembered (they rarely repeat)


class BlockWriter:
    """Writes the bytes `dump_with_pyyaml` writes, for the objects almost every render holds,
    without PyYAML's representer, resolver and emitter calls per node (each ~10x the work).

    Only the layout of block collections is done here: `key: value`, nested mappings indented by
    two, sequences in a mapping not indented (PyYAML's "indentless" style), `{}` and `[]` for
    empty ones, keys in the order `sorted_items` gives. How one scalar is written (plain, quoted,
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
                written = dump_with_pyyaml({key: 0})
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
                written = dump_with_pyyaml({"k": value})
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
        """`obj` as `dump_with_pyyaml` writes it, or None when it is left to PyYAML."""
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
        items = sorted_items(data)
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
