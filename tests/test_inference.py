"""What the session infers from the run where the user declared nothing (hypotrack/session/inference.py)."""

from __future__ import annotations

from hypotrack.session.inference import reference_column
from hypotrack.session.reward_functions import RewardErrorLog, counted

COLUMNS = ["prompt", "answer", "level", "id"]


def exact(completions, answer, **kwargs):
    return [1.0 for _ in completions]


def test_the_task_rewards_own_argument_names_the_reference_column() -> None:
    found = reference_column(exact, COLUMNS)
    assert found is not None and (found.declaration, found.value) == ("data.reference_column", "answer")
    assert found.sentence == ("reference answers: column `answer`, the task reward `exact`'s own argument; "
                              "override with data.reference_column")


def test_the_signature_is_read_through_the_layers_hypotrack_puts_on_a_reward() -> None:
    layered = counted(counted(exact, RewardErrorLog()), RewardErrorLog())
    assert reference_column(layered, COLUMNS).value == "answer"


def test_a_required_column_counts_over_one_with_a_default() -> None:
    def graded(prompts, completions, gold, level=None, **kwargs):
        return []

    assert reference_column(graded, ["prompt", "gold", "level"]).value == "gold"


def test_two_required_columns_decide_by_an_answer_name_or_not_at_all() -> None:
    def two(completions, solution, level, **kwargs):
        return []

    def ambiguous(completions, level, id, **kwargs):
        return []

    found = reference_column(two, ["prompt", "solution", "level"])
    assert found.value == "solution" and "it also takes level" in found.how
    assert reference_column(ambiguous, COLUMNS) is None


def test_nothing_is_inferred_from_trls_own_arguments_kwargs_or_a_column_the_data_lacks() -> None:
    def only_kwargs(prompts, completions, completion_ids, trainer_state=None, **kwargs):
        return []

    assert reference_column(only_kwargs, COLUMNS + ["trainer_state"]) is None
    assert reference_column(exact, ["prompt", "target"]) is None  # `answer` is not a column of this data
    assert reference_column(exact, ["answer_prompt"]) is None
    assert reference_column(print, COLUMNS) is None  # no signature to read
