"""HotpotQA answer extraction and the official metrics (hotpot_evaluate_v1.py definitions).

normalize_answer: lowercase, remove punctuation, remove the articles a/an/the, collapse whitespace.
exact_match: normalized strings equal (the protocol metric). f1: token F1 on normalized strings, with no partial
credit when either side normalizes to yes / no / noanswer and they differ.
Extraction: the text after the last "Answer:" (case-insensitive), else the last non-empty line.

Decision (issue 35 item 8; section 10 says "last 'Answer: X'" and leaves open whether a second "Answer:" on the
same line starts a new answer): one "Answer:" per line. The answer runs from the first "Answer:" of a line to the
end of that line, and the last such line wins, so "Answer: 1990 (Answer: 1991)" reads "1990 (Answer: 1991)" (EM 0
against "1990": an answer that hedges is no short-form answer). This is how the [v1] fork's extraction reads it
(core/tasks/hotpotqa.py at 6aaae89: its answer pattern captures to the end of the line and matches do not
overlap), and it keeps a later repetition inside the line from overriding what the line states first.
"""

from __future__ import annotations

import re
import string
from collections import Counter

from core.models import Score

_PUNCTUATION = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_ANSWER = re.compile(r"\banswer\s*:[ \t]*([^\n]*)", re.IGNORECASE)
_EMPHASIS = re.compile(r"[*_`]+")
SPECIAL = ("yes", "no", "noanswer")


def normalize_answer(text: str) -> str:
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, gold: str) -> bool:
    return normalize_answer(prediction) == normalize_answer(gold)


def f1(prediction: str, gold: str) -> float:
    pred, ref = normalize_answer(prediction), normalize_answer(gold)
    if (pred in SPECIAL or ref in SPECIAL) and pred != ref:
        return 0.0
    pred_tokens, ref_tokens = pred.split(), ref.split()
    common = Counter(pred_tokens) & Counter(ref_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(ref_tokens)
    return 2 * precision * recall / (precision + recall)


def extract_answer(text: str | None) -> tuple[str | None, bool]:
    """(answer, found_answer_line). None when the text has no non-empty line."""
    if not text or not text.strip():
        return None, False
    lines = text.splitlines()
    matches = list(_ANSWER.finditer(text))
    if matches:
        last = matches[-1]
        answer = last.group(1).strip()
        if not _EMPHASIS.sub("", answer).strip():  # "Answer:" alone on its line: take the next non-empty line
            after = [ln.strip() for ln in text[last.end():].splitlines() if ln.strip()]
            answer = after[0] if after else ""
        answer = _EMPHASIS.sub("", answer).strip()
        if answer:
            return answer, True
    non_empty = [ln.strip() for ln in lines if ln.strip()]
    return (_EMPHASIS.sub("", non_empty[-1]).strip() if non_empty else None), False


def _contains(prediction_norm: str, gold_norm: str) -> bool:
    return bool(gold_norm) and f" {gold_norm} " in f" {prediction_norm} " and prediction_norm != gold_norm


def score_answer(text: str | None, gold: str) -> Score:
    answer, had_line = extract_answer(text)
    if answer is None:
        return Score(value=0.0, malformed=True, metadata={"predicted": None, "gold": gold, "f1": 0.0},
                     feedback="Empty reply: no answer found; end with a final line 'Answer: <short answer>'.")
    token_f1 = f1(answer, gold)
    meta = {"predicted": answer, "gold": gold, "f1": token_f1, "answer_line": had_line}
    if exact_match(answer, gold):
        return Score(value=1.0, metadata=meta, feedback=f"Correct: {answer!r} matches the gold answer (exact match).")
    parts = []
    if not had_line:
        parts.append(f"No 'Answer:' line found; scored the last non-empty line instead: {answer[:200]!r}.")
    if _contains(normalize_answer(answer), normalize_answer(gold)):
        parts.append(f"Answer too long: the prediction contains the gold answer {gold!r}, but exact match needs "
                     "only the short form, with no explanation.")
    else:
        parts.append(f"Answer mismatch: predicted {answer[:200]!r} but the gold answer is {gold!r} "
                     f"(token F1 {token_f1:.2f}).")
    return Score(value=0.0, metadata=meta, feedback=" ".join(parts))


def score_f1(text: str | None, gold: str) -> float:
    """Second reporting rule: token F1 of the extracted answer (0.0 when nothing can be extracted)."""
    answer, _ = extract_answer(text)
    return 0.0 if answer is None else f1(answer, gold)
