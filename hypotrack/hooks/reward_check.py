"""h13 a broken reward function: does it give a correct answer the top reward, and a wrong one less?

The oldest check of a verifier is to hand it answers whose score is known (unsloth#1761: a regex that
never matches; open-r1#235: a reward with the wrong sign; trl#2771: a chat-template prefill the
parser does not expect). On the first rollout and every `every` steps, for up to `rows` prompts of
the batch, the task reward function (by role) scores, the way TRL calls it:
- the row's reference answer (the experiment's `data.reference_column`), written as a completion;
- a wrong answer in the same format: another row's reference answer that differs.

- `reference_beats_wrong_share`: rows where the reference scored strictly higher than the wrong
  answer (healthy: about 1; a reward that cannot tell them apart: 0; a wrong sign: 0).
- `reference_reward_mean`, `wrong_reward_mean`: their mean scores; `checked_rows`.
The reference column is the experiment's declaration, else the task reward's own argument that is a column
(session/inference.py). Nothing is reported where neither names one (the criteria say how to declare it).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypotrack.hooks.base import DiagnosticHook, RolloutBatch


class RewardCheckHook(DiagnosticHook):
    name = "reward_check"
    description = (
        "h13: the task reward of each row's reference answer against a wrong answer in the same format"
    )
    metrics = (
        "reference_beats_wrong_share", "reference_reward_mean", "wrong_reward_mean", "checked_rows",
    )
    reads = ("data.reference_column",)

    @dataclass(frozen=True)
    class Settings:
        every: int = 10
        """Score the reference answers every this many rollouts."""
        rows: int = 16
        """Rows scored per check (at least 2)."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self.every, self.rows = max(int(self.config.every), 1), max(int(self.config.rows), 2)
        self._n_rollouts = 0

    def on_rollout(self, batch: RolloutBatch, step: int) -> dict[str, float]:
        due = self._n_rollouts % self.every == 0
        self._n_rollouts += 1
        column = batch.reference_column
        if not due or not column or column not in batch.columns or not batch.reward_funcs:
            return {}
        references = batch.columns[column]
        G = max(int(batch.num_generations), 1)
        picks = list(range(0, len(references), G))[: self.rows]  # one row per prompt
        pairs = []
        for i, row in enumerate(picks):
            wrong = next((references[j] for j in picks[i + 1:] + picks[:i] if str(references[j]) != str(references[row])),
                         None)
            if wrong is not None:
                pairs.append((row, wrong))
        if not pairs:
            return {}
        func = batch.reward_funcs[batch.task_index]
        right = self._score(func, batch, [row for row, _ in pairs], [references[row] for row, _ in pairs])
        wrong = self._score(func, batch, [row for row, _ in pairs], [w for _, w in pairs])
        scored = [(r, w) for r, w in zip(right, wrong) if r is not None and w is not None]
        if not scored:
            return {}
        return {
            "reference_beats_wrong_share": sum(r > w for r, w in scored) / len(scored),
            "reference_reward_mean": sum(r for r, _ in scored) / len(scored),
            "wrong_reward_mean": sum(w for _, w in scored) / len(scored),
            "checked_rows": float(len(scored)),
        }

    @staticmethod
    def _score(func, batch: RolloutBatch, rows: list[int], answers: list[Any]) -> list[float | None]:
        """The reward function on these answers as completions, with the rows' prompts and columns."""
        return score_rows(func, batch, rows, [str(a) for a in answers], [[] for _ in rows])


def score_rows(func, batch: RolloutBatch, rows: list[int], texts: list[str],
               completion_ids: list[list[int]]) -> list[float | None]:
    """A reward function called as TRL calls it on these rows: their prompts and dataset columns, ``texts`` as
    the completions (as messages when the prompts are conversations). None where it gives no score or raises
    (a raising reward is counted by the trainer's wrapper; here it is unscorable)."""
    prompts = [batch.prompts[i] for i in rows] if batch.prompts else [batch.prompts_text[i] for i in rows]
    conversational = bool(prompts) and not isinstance(prompts[0], str)
    completions = [[{"role": "assistant", "content": t}] for t in texts] if conversational else list(texts)
    columns = {key: [values[i] for i in rows] for key, values in batch.columns.items()}
    try:
        scores = func(prompts=prompts, completions=completions, completion_ids=completion_ids, **columns)
    except Exception:  # noqa: BLE001 - user code
        return [None] * len(rows)
    return [None if s is None or s != s else float(s) for s in scores]
