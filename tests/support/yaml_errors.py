"""What a test may assert of a YAML syntax error: our part of the message, not the parser's.

PyYAML words its reasons ("did not find expected node content") as it likes, and the wording
changes between releases. Ours is everything around it: the file, the document, the object, the
line and column in the whole file or stream. An expected message writes :data:`PARSER` where
PyYAML's reason stands.
"""

from __future__ import annotations

import re

PARSER = "<the parser's reason>"


def parser_wording(expected: str) -> re.Pattern[str]:
    """`expected` as a pattern in which each :data:`PARSER` stands for a non-empty reason on one line."""
    return re.compile(r"[^\n]*\S[^\n]*".join(re.escape(part) for part in expected.split(PARSER)))


def matches(actual: str, expected: str) -> bool:
    """Whether `actual` is `expected` with some reason of the parser's at each :data:`PARSER`."""
    return parser_wording(expected).fullmatch(actual) is not None
