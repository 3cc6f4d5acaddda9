"""MATH answer extraction and the Hendrycks `is_equiv` normalisation, re-implemented from its description.

`last_boxed` returns the content of the last \\boxed{...} (or \\fbox{...}) with brace counting.
`strip_string` applies the published normalisation: drop line breaks, `\\!`, spaces, \\left/\\right, degree
marks, `\\$`, `\\%`, trailing `\\text{ unit}`; tfrac/dfrac -> frac; \\frac12 -> \\frac{1}{2}; \\sqrt3 -> \\sqrt{3};
0.5 -> \\frac{1}{2}; integer a/b -> \\frac{a}{b}; a leading ".5" -> "0.5"; a short "x =" prefix is dropped.
`is_equiv` compares the normalised strings (falling back to raw equality if normalisation fails).
"""

from __future__ import annotations

import re

_BOX_MARKERS = ("\\boxed", "\\fbox")


def last_boxed(text: str | None) -> str | None:
    """Content of the last \\boxed{...} / \\fbox{...} (nested braces counted), \\boxed 5 style too; else None."""
    if not text:
        return None
    start = max(text.rfind(marker) for marker in _BOX_MARKERS)
    if start < 0:
        return None
    marker = next(m for m in _BOX_MARKERS if text.startswith(m, start))
    rest = text[start + len(marker):]
    if rest.startswith(" ") and not rest.lstrip().startswith("{"):
        # "\boxed 5": the argument runs to the next "$" or end of line
        return re.split(r"[$\n]", rest.strip(), maxsplit=1)[0].strip() or None
    rest = rest.lstrip()
    if not rest.startswith("{"):
        return None
    depth = 0
    for i, ch in enumerate(rest):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return rest[1:i]
    return None  # unbalanced


def _fix_fracs(string: str) -> str:
    parts = string.split("\\frac")
    out = parts[0]
    for part in parts[1:]:
        out += "\\frac"
        if part.startswith("{"):
            out += part
            continue
        if len(part) < 2:
            return string
        a, b, post = part[0], part[1], part[2:]
        if b != "{":
            out += "{" + a + "}{" + b + "}" + post
        else:
            out += "{" + a + "}" + b + post
    return out


def _fix_a_slash_b(string: str) -> str:
    pieces = string.split("/")
    if len(pieces) != 2:
        return string
    a, b = pieces
    if re.fullmatch(r"-?\d+", a) and re.fullmatch(r"-?\d+", b) and f"{int(a)}/{int(b)}" == string:
        return "\\frac{" + str(int(a)) + "}{" + str(int(b)) + "}"
    return string


def _remove_right_units(string: str) -> str:
    if "\\text{ " in string:
        return string.split("\\text{ ")[0]
    return string


def _fix_sqrt(string: str) -> str:
    if "\\sqrt" not in string:
        return string
    parts = string.split("\\sqrt")
    out = parts[0]
    for part in parts[1:]:
        if part and part[0] != "{":
            out += "\\sqrt{" + part[0] + "}" + part[1:]
        else:
            out += "\\sqrt" + part
    return out


def strip_string(string: str) -> str:
    """Hendrycks-style normalisation of an answer string."""
    s = string.replace("\n", "").replace("\\!", "").replace("\\\\", "\\")
    s = s.replace("tfrac", "frac").replace("dfrac", "frac")
    s = s.replace("\\left", "").replace("\\right", "")
    s = s.replace("^{\\circ}", "").replace("^\\circ", "")
    s = s.replace("\\$", "")
    s = _remove_right_units(s)
    s = s.replace("\\%", "")
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
    s = _fix_a_slash_b(s)
    return s


def is_equiv(a: str | None, b: str | None) -> bool:
    """Hendrycks equivalence: equal after `strip_string` (None never equals an answer)."""
    if a is None or b is None:
        return a is None and b is None
    try:
        return strip_string(a) == strip_string(b)
    except Exception:  # a normaliser bug must not decide the score differently from raw equality
        return a == b
