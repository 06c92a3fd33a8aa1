"""Whether a YAML text could hold a Secret, told from its text alone.

The credential guard checks objects; a text reused from the render cache or pack is written as it
is, so the guard must know when such a text needs parsing to be checked. An object is a Secret
when its `kind` is the string `Secret`, and YAML spells that string only as the word standing
alone (plain, single- or double-quoted, a block scalar's line; an alias repeats a value spelt
out where it is anchored) or with escapes in a double-quoted scalar: folding joins lines with a
space, and plain and single-quoted scalars have no escapes. So a text without the standing word
and without a backslash holds no Secret; `imagePullSecrets` or `ExternalSecret` is not the word.
"""

from __future__ import annotations

_WORD = "Secret"


def _part_of_a_word(character: str) -> bool:
    return character.isalnum() or character in "_-"


def could_spell_secret(text: str) -> bool:
    """Whether `text` could hold the string `Secret` (see the module docstring)."""
    if "\\" in text:
        return True
    # str.find, not a regular expression with look-arounds: a C search from one occurrence to
    # the next (a tenant's Job holds `imagePullSecrets`; 20,000 of them are checked per render).
    at = text.find(_WORD)
    while at != -1:
        end = at + len(_WORD)
        starts = not at or not _part_of_a_word(text[at - 1])
        if starts and (end == len(text) or not _part_of_a_word(text[end])):
            return True
        at = text.find(_WORD, end)
    return False
