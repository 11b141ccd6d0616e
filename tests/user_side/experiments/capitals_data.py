"""A user's long-context QA loader: numbered paragraphs, then the question; the evidence is recorded
both as text (`evidence`) and as a character span (`support_from`, `support_to`)."""

import random

from datasets import Dataset

from hypotrack.toy.musique_mini import make_example


def load_capitals(n: int, seed: int) -> Dataset:
    rng = random.Random(f"capitals-{seed}")
    rows = []
    for _ in range(n):
        row = make_example(rng)
        start, end = row["answer_start"], row["answer_end"]
        rows.append({"context_question": row["prompt"], "gold": row["answer"], "evidence": row["prompt"][start:end],
                     "support_from": start, "support_to": end})
    return Dataset.from_list(rows)
