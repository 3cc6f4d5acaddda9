"""A small HotpotQA data directory in the official layouts, for job tests that read HotpotQA by its real loader.

* `data/validation.jsonl`: the Hugging Face `hotpotqa/hotpot_qa` distractor validation layout (id, question, answer,
  type, level, supporting_facts{title, sent_id}, context{title, sentences}), one row for every ID of the shipped
  official split manifest (benchmarks/hotpotqa/hotpotqa_splits.json: 150 train / 50 validation / 100 test), in
  manifest order. The questions and answers are synthetic (the real rows are not in this repository); IDs, fields and
  nesting are the real ones, so the loader, the splits and the scorer run unchanged.
* `wiki/`: the HotpotQA enwiki abstracts release layout (subdirectories of bz2 JSON-lines files of
  {id, url, title, text[sentences]}), one page per context title, so the job runs with the conformant `wiki_dir`
  retrieval source.
"""

from __future__ import annotations

import bz2
import json
from pathlib import Path
from typing import Any

from benchmarks.hotpotqa import BENCHMARK

NAMES = ("Alder", "Birch", "Cedar", "Dogwood", "Elm", "Fir", "Ginkgo", "Hazel", "Ironwood", "Juniper")


def official_ids() -> list[str]:
    splits = BENCHMARK.splits()
    return [*splits.train, *splits.validation, *splits.test]


def record(index: int, rid: str) -> dict[str, Any]:
    """Row `index`: a bridge question (answer: a person) or, every third row, a yes/no comparison question."""
    place, person = f"{NAMES[index % 10]} Hollow {index}", f"{NAMES[(index + 3) % 10]} Marlowe {index}"
    titles = [place, person, f"{NAMES[(index + 6) % 10]} Ferry {index}"]
    sentences = [[f"{place} is a village founded in {1800 + index}.", f" Its founder was {person}."],
                 [f"{person} was a surveyor born in {1770 + index}.", " They mapped the river valley."],
                 [f"{titles[2]} is a river crossing.", " It closed in 1950."]]
    if index % 3 == 2:
        question = f"Were {place} and {titles[2]} both founded before 1700 (question {index})?"
        answer, kind = "no", "comparison"
    else:
        question = f"Who founded the village of {place} (question {index})?"
        answer, kind = person, "bridge"
    return {"id": rid, "question": question, "answer": answer, "type": kind,
            "level": ("easy", "medium", "hard")[index % 3],
            "supporting_facts": {"title": [place, person], "sent_id": [1, 0]},
            "context": {"title": titles, "sentences": sentences}}


def write_hotpotqa_layout(root: Path) -> tuple[Path, Path]:
    """Write the data directory and the abstracts corpus under `root`; returns (data_dir, wiki_dir)."""
    data_dir, wiki_dir = root / "data", root / "wiki"
    data_dir.mkdir(parents=True)
    records = [record(i, rid) for i, rid in enumerate(official_ids())]
    (data_dir / "validation.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    pages = [{"id": str(n), "url": f"https://en.wikipedia.org/wiki?curid={n}", "title": title, "text": sentences}
             for n, (title, sentences) in enumerate(
                 (t, s) for r in records for t, s in zip(r["context"]["title"], r["context"]["sentences"]))]
    half = len(pages) // 2
    for sub, chunk in (("AA", pages[:half]), ("AB", pages[half:])):
        (wiki_dir / sub).mkdir(parents=True)
        with bz2.open(wiki_dir / sub / "wiki_00.bz2", "wt", encoding="utf-8") as fh:
            fh.writelines(json.dumps(page) + "\n" for page in chunk)
    return data_dir, wiki_dir
