"""The subset of Go templates (text/template with Slim Sprig functions) that DNS templates use.

CAP Operator renders `dnsTemplates[].name` and `.target` of a Custom-mode domain as Go templates
with the Slim Sprig function library (https://sap.github.io/cap-operator/docs/usage/domain-management/custom-dns/).
A render cannot run Go, so this module reads the same language, as far as DNS names need it,
and evaluates it itself; nothing is ever passed to an interpreter:

    text outside actions          copied as it is
    {{ pipeline }}                its value, printed as Go prints it (a list as `[a b]`)
    {{- ... -}}                   trims the white space before / after the action
    {{/* comment */}}             nothing
    {{ $name := pipeline }}       declares a variable (`=` assigns one declared before); prints nothing
    pipeline                      command | command | ...: each result is the last argument of the next
    command                       a function and its arguments, or a single operand
    operands                      .domain .dnsTarget .subDomain, $ (the data) and $.field, $name,
                                  "interpreted" and `raw` string literals, ( pipeline )
    functions                     list join lower upper trim trimPrefix trimSuffix replace, with
                                  Sprig's arguments: `list "*" .domain | join "."` is `*.<domain>`

Anything else is refused by name (`printf`, `if`, `range`, numbers, ...), never guessed. Values are
bounded: a template of at most MAX_TEMPLATE characters, no value longer than MAX_VALUE characters
(checked after every function), parentheses nested at most MAX_DEPTH deep.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache

MAX_TEMPLATE = 1024
MAX_VALUE = 1024
MAX_DEPTH = 16
FIELDS = ("domain", "dnsTarget", "subDomain")
KEYWORDS = frozenset(
    {"if", "else", "end", "range", "with", "define", "template", "block", "break", "continue"}
)
LITERALS = frozenset({"nil", "true", "false"})

Value = str | tuple["Value", ...]


class TemplateError(ValueError):
    """A template this subset refuses or cannot evaluate; the message says what and where."""


# --- values and functions ------------------------------------------------------------------------


def printed(value: Value) -> str:
    """A value as Go's fmt prints it into the output."""
    if isinstance(value, str):
        return value
    return "[" + " ".join(printed(item) for item in value) + "]"


def _string(function: str, position: int, value: Value) -> str:
    if not isinstance(value, str):
        raise TemplateError(
            f"{function}: argument {position} must be a string, got the list {printed(value)}"
        )
    return value


def _strings(value: Value) -> list[str]:
    """Sprig's strslice: a list's items printed, a single string as a list of one."""
    return [printed(item) for item in value] if isinstance(value, tuple) else [value]


@dataclass(frozen=True, slots=True)
class Function:
    arity: int | None  # None: any number
    call: Callable[[list[Value]], Value]


def _strings_function(arity: int, body: Callable[..., str]) -> Function:
    def call(args: list[Value]) -> Value:
        return body(*(_string(name_of(body), i + 1, a) for i, a in enumerate(args)))

    return Function(arity, call)


def name_of(body: Callable[..., str]) -> str:
    return body.__name__


def lower(s: str) -> str:
    return s.lower()


def upper(s: str) -> str:
    return s.upper()


def trim(s: str) -> str:
    return s.strip()


def trimPrefix(prefix: str, s: str) -> str:  # noqa: N802 - Sprig's name
    return s.removeprefix(prefix)


def trimSuffix(suffix: str, s: str) -> str:  # noqa: N802 - Sprig's name
    return s.removesuffix(suffix)


def replace(old: str, new: str, s: str) -> str:
    if len(s) + s.count(old) * (len(new) - len(old)) > MAX_VALUE:  # refused before it is built
        raise TemplateError(f"a value grows past {MAX_VALUE} characters")
    return s.replace(old, new)


def _join(args: list[Value]) -> Value:
    return _string("join", 1, args[0]).join(_strings(args[1]))


FUNCTIONS: Mapping[str, Function] = {
    "list": Function(None, tuple),
    "join": Function(2, _join),
    "lower": _strings_function(1, lower),
    "upper": _strings_function(1, upper),
    "trim": _strings_function(1, trim),
    "trimPrefix": _strings_function(2, trimPrefix),
    "trimSuffix": _strings_function(2, trimSuffix),
    "replace": _strings_function(3, replace),
}
SUPPORTED = ", ".join(sorted(FUNCTIONS))


# --- syntax ----------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Literal:
    value: str


@dataclass(frozen=True, slots=True)
class Field:
    name: str


@dataclass(frozen=True, slots=True)
class Variable:
    name: str  # "$" for the data itself
    field: str = ""  # `$.domain`


@dataclass(frozen=True, slots=True)
class Identifier:
    name: str


@dataclass(frozen=True, slots=True)
class Pipeline:
    commands: tuple[tuple[Operand, ...], ...]
    declare: str = ""  # `$x :=` or `$x =`: the variable set, the action prints nothing


Operand = Literal | Field | Variable | Identifier | Pipeline


@dataclass(frozen=True, slots=True)
class Template:
    parts: tuple[str | Pipeline, ...]
    fields: frozenset[str]  # the data fields it reads

    def render(self, data: Mapping[str, str]) -> str:
        variables: dict[str, Value] = {}
        out: list[str] = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
                continue
            value = _pipeline(part, data, variables)
            if part.declare:
                variables[part.declare] = value
            else:
                out.append(printed(value))
            if sum(len(chunk) for chunk in out) > MAX_VALUE:
                raise TemplateError(f"renders more than {MAX_VALUE} characters")
        return "".join(out)


_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.DOTALL)
_TOKEN = re.compile(
    r"""\s*(?:
        (?P<string>"(?:[^"\\\n]|\\.)*")
      | (?P<raw>`[^`]*`)
      | (?P<declare>:=)
      | (?P<assign>=)
      | (?P<pipe>\|)
      | (?P<open>\()
      | (?P<close>\))
      | (?P<field>\.[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
      | (?P<dot>\.)
      | (?P<variable>\$[A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)
      | (?P<identifier>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<other>\S+?)(?=[\s|()]|$)
    )""",
    re.VERBOSE,
)
_ESCAPES = {"\\": "\\", '"': '"', "n": "\n", "t": "\t", "'": "'"}


def _unquote(token: str) -> str:
    out, index = [], 1
    while index < len(token) - 1:
        char = token[index]
        if char == "\\":
            escaped = token[index + 1]
            if escaped not in _ESCAPES:
                raise TemplateError(f"unsupported escape \\{escaped} in {token}")
            out.append(_ESCAPES[escaped])
            index += 2
        else:
            out.append(char)
            index += 1
    return "".join(out)


def _tokens(action: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    position = 0
    while position < len(action):
        if not action[position:].strip():
            break
        match = _TOKEN.match(action, position)
        if match is None or match.lastgroup is None:
            raise TemplateError(f"cannot read {action[position:].strip()!r}")
        found.append((match.lastgroup, match.group(match.lastgroup)))
        position = match.end()
    return found


class _Parser:
    def __init__(self, tokens: list[tuple[str, str]], declared: set[str]) -> None:
        self.tokens = tokens
        self.index = 0
        self.declared = declared
        self.fields: set[str] = set()

    def peek(self) -> tuple[str, str] | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self) -> tuple[str, str]:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def action(self) -> Pipeline:
        if (
            len(self.tokens) >= 2
            and self.tokens[0][0] == "variable"
            and self.tokens[1][0] in ("declare", "assign")
        ):
            name = self.tokens[0][1]
            if "." in name or name == "$":
                raise TemplateError(f"cannot assign to {name}")
            if self.tokens[1][0] == "assign" and name not in self.declared:
                raise TemplateError(f"undefined variable {name}")
            self.index = 2
            pipeline = self.pipeline(0)
            self.declared.add(name)
            return Pipeline(pipeline.commands, declare=name)
        return self.pipeline(0)

    def pipeline(self, depth: int) -> Pipeline:
        if depth > MAX_DEPTH:
            raise TemplateError(f"parentheses nested more than {MAX_DEPTH} deep")
        commands = [self.command(depth)]
        while (token := self.peek()) is not None and token[0] == "pipe":
            self.take()
            commands.append(self.command(depth))
        return Pipeline(tuple(commands))

    def command(self, depth: int) -> tuple[Operand, ...]:
        operands: list[Operand] = []
        while (token := self.peek()) is not None and token[0] not in ("pipe", "close"):
            operands.append(self.operand(depth))
        if not operands:
            raise TemplateError("missing value in pipeline")
        if any(isinstance(o, Identifier) for o in operands[1:]):
            name = next(o.name for o in operands[1:] if isinstance(o, Identifier))
            raise TemplateError(f"function {name!r} used as an argument: put it in parentheses")
        return tuple(operands)

    def operand(self, depth: int) -> Operand:
        kind, text = self.take()
        if kind == "string":
            return Literal(_unquote(text))
        if kind == "raw":
            return Literal(text[1:-1])
        if kind == "field":
            return Field(self._field(text[1:]))
        if kind == "variable":
            name, _, field = text.partition(".")
            if name != "$" and name not in self.declared:
                raise TemplateError(f"undefined variable {name}")
            return Variable(name, self._field(field) if field else "")
        if kind == "open":
            inner = self.pipeline(depth + 1)
            if self.peek() is None or self.take()[0] != "close":
                raise TemplateError("unclosed parenthesis")
            return inner
        if kind == "identifier":
            return self._identifier(text)
        if kind == "dot":
            raise TemplateError(f"`.` alone is the whole data; use one of {_field_list()}")
        raise TemplateError(f"{text!r} is not supported (only string literals, variables and functions)")

    def _field(self, name: str) -> str:
        if name not in FIELDS:
            raise TemplateError(f"unknown variable .{name} (available: {_field_list()})")
        self.fields.add(name)
        return name

    @staticmethod
    def _identifier(name: str) -> Identifier:
        if name in KEYWORDS:
            raise TemplateError(f"{{{{{name}}}}} is not supported: DNS templates take no control actions")
        if name in LITERALS:
            raise TemplateError(f"{name} is not supported (only string literals)")
        if name not in FUNCTIONS:
            raise TemplateError(f"function {name!r} is not supported (supported: {SUPPORTED})")
        return Identifier(name)


def _field_list() -> str:
    return ", ".join(f".{f}" for f in FIELDS)


@lru_cache(maxsize=1024)
def parse(text: str) -> Template:
    """The template, or TemplateError naming what is refused."""
    if len(text) > MAX_TEMPLATE:
        raise TemplateError(f"longer than {MAX_TEMPLATE} characters")
    parts: list[str | Pipeline] = []
    fields: set[str] = set()
    declared: set[str] = set()
    position = 0
    trim_next = False
    for match in _ACTION.finditer(text):
        before = text[position : match.start()]
        if trim_next:
            before = before.lstrip()
        if match.group(1):
            before = before.rstrip()
        parts.append(before)
        trim_next = bool(match.group(3))
        position = match.end()
        body = match.group(2).strip()
        if body.startswith("/*"):
            if not body.endswith("*/"):
                raise TemplateError("unclosed comment")
            continue
        parser = _Parser(_tokens(body), declared)
        try:
            pipeline = parser.action()
        except IndexError:
            raise TemplateError(f"incomplete action {{{{{body}}}}}") from None
        left = parser.peek()
        if left is not None:
            raise TemplateError(f"unexpected {left[1]!r} in {{{{{body}}}}}")
        fields |= parser.fields
        parts.append(pipeline)
    rest = text[position:]
    if "{{" in rest:
        raise TemplateError("unclosed action: {{ without }}")
    parts.append(rest.lstrip() if trim_next else rest)
    return Template(tuple(p for p in parts if p != ""), frozenset(fields))


# --- evaluation ------------------------------------------------------------------------------------


def _bounded(value: Value) -> Value:
    if len(printed(value)) > MAX_VALUE:
        raise TemplateError(f"a value grows past {MAX_VALUE} characters")
    return value


def _operand(operand: Operand, data: Mapping[str, str], variables: Mapping[str, Value]) -> Value:
    if isinstance(operand, Literal):
        return operand.value
    if isinstance(operand, Field):
        return data[operand.name]
    if isinstance(operand, Variable):
        if operand.name == "$":
            if not operand.field:
                raise TemplateError(f"`$` alone is the whole data; use one of {_field_list()}")
            return data[operand.field]
        return variables[operand.name]
    if isinstance(operand, Pipeline):
        return _pipeline(operand, data, variables)
    raise TemplateError(f"function {operand.name!r} used as a value")


def _command(
    command: tuple[Operand, ...], piped: Value | None, data: Mapping[str, str], variables: Mapping[str, Value]
) -> Value:
    head, rest = command[0], command[1:]
    if not isinstance(head, Identifier):
        if rest or piped is not None:
            raise TemplateError("only a function takes arguments (or a piped value)")
        return _operand(head, data, variables)
    args = [_operand(o, data, variables) for o in rest]
    if piped is not None:
        args.append(piped)
    function = FUNCTIONS[head.name]
    if function.arity is not None and len(args) != function.arity:
        raise TemplateError(f"{head.name} takes {function.arity} arguments, got {len(args)}")
    return _bounded(function.call(args))


def _pipeline(pipeline: Pipeline, data: Mapping[str, str], variables: Mapping[str, Value]) -> Value:
    value: Value | None = None
    for command in pipeline.commands:
        value = _command(command, value, data, variables)
    if value is None:  # a pipeline has at least one command (the parser sees to it)
        raise TemplateError("empty pipeline")
    return value


def render(text: str, data: Mapping[str, str]) -> str:
    """`text` rendered with `data` (every name of FIELDS), or TemplateError."""
    return parse(text).render(data)
