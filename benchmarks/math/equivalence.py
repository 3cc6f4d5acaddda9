"""MATH answer extraction and Hendrycks' `is_equiv` (hendrycks/math, modeling/math_equivalence.py).

Protocol-v1 section 5.7: "Hendrycks is_equiv of last \\boxed{}"; section 10: "Last \\boxed{} with brace counting".

`last_boxed` returns the content of the last `\\boxed{` (found with rfind) with brace counting; unbalanced -> None.
No other box form is recognised (no `\\fbox`, no `\\boxed 5`): the protocol names only `\\boxed{}`.

`strip_string` is the published normalisation, written to behave exactly like it, including where the published
code raises (a second "\\text{ " unit marker, a `\\frac` or `\\sqrt` with nothing after it): `is_equiv` then falls
back to raw string equality, as the published `is_equiv` does with its bare `except`. Steps: drop line breaks,
`\\!`; `\\\\` -> `\\`; tfrac/dfrac -> frac; drop \\left/\\right, degree marks, `\\$`; cut right units at "\\text{ ";
drop `\\%` (only: a bare `%` stays, see below); " ." -> " 0.", "{." -> "{0.", a leading "." gets a 0; drop a
left side of at most 2 chars before a single "="; \\sqrt3 -> \\sqrt{3}; drop spaces; \\frac12 -> \\frac{1}{2};
"0.5" -> \\frac{1}{2}; integer "a/b" -> \\frac{a}{b}.

Percent (issue 35 item 2): the published code (hendrycks/math main, modeling/math_equivalence.py, last changed in
940d1bf) removes percentage with two lines, `replace("\\\\%", "")` and `replace("\\%", "")`; the second is an unknown
escape in a Python literal, i.e. the same two characters backslash-percent again. So only `\\%` is dropped and a
bare `%` stays: `\\boxed{50\\%}` equals 50, `\\boxed{50%}` does not. (A later pull request to that repository,
never merged, rewrites the second line to drop a bare `%`; the protocol names the published `is_equiv`.)
"""

from __future__ import annotations

_BOX = "\\boxed{"


class _Unnormalisable(Exception):
    """The published normaliser raises on this input; is_equiv compares the raw strings instead."""


def last_boxed(text: str | None) -> str | None:
    """Content of the last \\boxed{...} (nested braces counted); None if absent or unbalanced."""
    if not text:
        return None
    start = text.rfind(_BOX)
    if start < 0:
        return None
    depth = 0
    first = start + len(_BOX) - 1
    for i in range(first, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[first + 1:i]
    return None


def _fix_fracs(string: str) -> str:
    parts = string.split("\\frac")
    out = parts[0]
    for part in parts[1:]:
        out += "\\frac"
        if not part:
            raise _Unnormalisable("\\frac with nothing after it")
        if part[0] == "{":
            out += part
            continue
        if len(part) < 2:
            return string
        a, b, post = part[0], part[1], part[2:]
        out += ("{" + a + "}{" + b + "}" + post) if b != "{" else ("{" + a + "}" + b + post)
    return out


def _fix_a_slash_b(string: str) -> str:
    pieces = string.split("/")
    if len(pieces) != 2:
        return string
    try:
        a, b = int(pieces[0]), int(pieces[1])
    except ValueError:
        return string
    if string != f"{a}/{b}":
        return string
    return "\\frac{" + str(a) + "}{" + str(b) + "}"


def _remove_right_units(string: str) -> str:
    if "\\text{ " not in string:
        return string
    splits = string.split("\\text{ ")
    if len(splits) != 2:
        raise _Unnormalisable("more than one '\\text{ ' unit marker")
    return splits[0]


def _fix_sqrt(string: str) -> str:
    if "\\sqrt" not in string:
        return string
    parts = string.split("\\sqrt")
    out = parts[0]
    for part in parts[1:]:
        if not part:
            raise _Unnormalisable("\\sqrt with nothing after it")
        out += ("\\sqrt{" + part[0] + "}" + part[1:]) if part[0] != "{" else ("\\sqrt" + part)
    return out


def strip_string(string: str) -> str:
    """Hendrycks' normalisation; the input unchanged where the published code raises (for feedback/voting)."""
    try:
        return _strip(string)
    except _Unnormalisable:
        return string


def _strip(string: str) -> str:
    """Hendrycks' normalisation. Raises _Unnormalisable where the published code raises."""
    s = string.replace("\n", "").replace("\\!", "").replace("\\\\", "\\")
    s = s.replace("tfrac", "frac").replace("dfrac", "frac")
    s = s.replace("\\left", "").replace("\\right", "")
    s = s.replace("^{\\circ}", "").replace("^\\circ", "")
    s = s.replace("\\$", "")
    s = _remove_right_units(s)
    s = s.replace("\\%", "")  # the published code's two percent lines both remove backslash-percent only
    s = s.replace(" .", " 0.").replace("{.", "{0.")
    if not s:
        return s
    if s[0] == ".":
        s = "0" + s
    sides = s.split("=")
    if len(sides) == 2 and len(sides[0]) <= 2:
        s = sides[1]
    s = _fix_sqrt(s)
    s = s.replace(" ", "")
    s = _fix_fracs(s)
    if s == "0.5":
        s = "\\frac{1}{2}"
    return _fix_a_slash_b(s)


def is_equiv(a: str | None, b: str | None) -> bool:
    """Hendrycks equivalence: both None -> True; one None -> False; else equal after `strip_string`, or raw
    equality when the normalisation raises."""
    if a is None or b is None:
        return a is None and b is None
    try:
        return _strip(a) == _strip(b)
    except _Unnormalisable:
        return a == b
