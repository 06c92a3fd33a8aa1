"""What the writer writes and says: a batch's commit message, and Git's output masked.

Nothing here prints a remote URL's credentials: every message built from Git's output is masked
first (`detail`)."""

from __future__ import annotations

import re

COMMITTED_BY_TRAILER = "Committed-By: btp-gitops controller"

# Greedy up to the last `@` before the host's `/`: a password may hold an unescaped `@` itself.
_URL_USERINFO = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)[^/\s]*@")
_MAX_DETAIL = 400
_TRAILER_LINE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*: \S")


def mask_credentials(text: str) -> str:
    """`text` with the user:password part of every URL in it replaced by `***`."""
    return _URL_USERINFO.sub(r"\g<scheme>***@", text)


def one_line(text: str) -> str:
    return " ".join(text.split())


def detail(output: str) -> str:
    """Git's own explanation, masked, on one line and bounded (it may quote long ref lists)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    text = mask_credentials("; ".join(lines))
    return text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 3] + "..."


def commit_message(changes: list[tuple[str, str]]) -> str:
    """The message of a batch's commit; `changes` are (message, summary) of the changes that changed
    something. One change keeps its own message; several get a count and their summaries, sorted."""
    if len(changes) == 1:
        text = changes[0][0].strip() or changes[0][1]
    else:
        listed = "\n".join(f"- {one_line(summary)}" for summary in sorted(s for _, s in changes))
        text = f"Record {len(changes)} changes\n\n{listed}"
    return f"{text}{_trailer_separator(text)}{COMMITTED_BY_TRAILER}\n"


def _trailer_separator(text: str) -> str:
    """Join our trailer to the message's own trailer block (Git reads only the last paragraph as
    trailers), else start one."""
    paragraphs = text.rstrip("\n").split("\n\n")
    last = paragraphs[-1].splitlines()
    own_trailers = len(paragraphs) > 1 and bool(last) and all(_TRAILER_LINE.match(line) for line in last)
    return "\n" if own_trailers else "\n\n"
