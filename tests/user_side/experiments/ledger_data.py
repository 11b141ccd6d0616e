"""A ninth user's loader: two-line ledger entries to total, the total under the user's own column name."""

import random

from datasets import Dataset


def load_ledger(n: int, seed: int) -> Dataset:
    rng = random.Random(f"ledger-{seed}")
    rows = []
    for _ in range(n):
        debit, credit = rng.randint(0, 49), rng.randint(0, 49)
        rows.append({"entry": f"{debit}+{credit}=", "balance": str(debit + credit)})
    return Dataset.from_list(rows)
