"""Type- and bound-checks GRPOConfig and LoRA settings: the generated field table gives the types,
run_settings.VALUE_BOUNDS the bounds (the same ones the flags and the YAML models apply), and
config_problem the rules GRPOConfig applies across fields. All without importing trl."""

from __future__ import annotations

from typing import Any

from .grpo_fields import GRPO_FIELDS, TRL_VERSION
from .run_settings import bounds_problem

# Fields hypotrack sets itself for every run; a user value would be overwritten or break
# the bookkeeping, so point to the place that controls them instead.
MANAGED_FIELDS = {
    "max_steps": "set max_steps at the top level of the experiment, or --max-steps",
    "seed": "seeds come from the experiment's seeds list, or --seeds",
    "output_dir": "use --output-dir",
    "report_to": "hypotrack logs to MLflow itself",
    "run_name": "hypotrack names runs by hypothesis, arm and seed",
}
LORA_FIELDS = {
    "enabled": "bool", "r": "int", "lora_alpha": "int", "lora_dropout": "float",
    "target_modules": "list|str", "bias": "literal:none,all,lora_only",
}


def _matches(value: Any, kind: str) -> bool:
    for option in kind.split("|"):
        if option == "any":
            return True
        if option == "none" and value is None:
            return True
        if option == "bool" and isinstance(value, bool):
            return True
        if option == "int" and isinstance(value, int) and not isinstance(value, bool):
            return True
        if option == "float" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if option == "str" and isinstance(value, str):
            return True
        if option == "list" and isinstance(value, (list, tuple)):
            return True
        if option == "dict" and isinstance(value, dict):
            return True
        if option.startswith("literal:") and str(value) in option[len("literal:"):].split(","):
            return True
    return False


def _describe(kind: str) -> str:
    words = {"none": "null", "list": "a list", "dict": "a mapping", "int": "an integer", "float": "a number",
             "bool": "true/false", "str": "a string"}
    parts = []
    for option in kind.split("|"):
        if option.startswith("literal:"):
            parts.append("one of " + ", ".join(option[len("literal:"):].split(",")))
        else:
            parts.append(words.get(option, option))
    return " or ".join(parts)


def check_setting(key: str, value: Any) -> str | None:
    """None when ``key: value`` is a valid GRPOConfig (or ``lora.<field>``) setting, else why not."""
    if key.startswith("lora."):
        field = key[len("lora."):]
        if field not in LORA_FIELDS:
            return f"unknown LoRA field {field!r} (known: {', '.join(LORA_FIELDS)})"
        kind, where = LORA_FIELDS[field], key
    else:
        if key in MANAGED_FIELDS:
            return f"{key!r} is managed by hypotrack: {MANAGED_FIELDS[key]}"
        if key not in GRPO_FIELDS:
            import difflib

            close = difflib.get_close_matches(key, list(GRPO_FIELDS), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            return f"{key!r} is not a GRPOConfig field of trl {TRL_VERSION}{hint}"
        kind, where = GRPO_FIELDS[key], f"grpo.{key}"
    if not _matches(value, kind):
        if isinstance(value, str) and any(option.startswith("literal:") for option in kind.split("|")):
            return f"{key} = {value!r} is not a value trl {TRL_VERSION} accepts: {_describe(kind)}"
        return f"{key} = {value!r} has the wrong type: expected {_describe(kind)}"
    problem = bounds_problem(where, value)
    return f"{key} {problem}" if problem else None


# GRPOConfig's defaults (trl 1.16) for the batch geometry, used where the settings leave them out.
BATCH_DEFAULTS = {"per_device_train_batch_size": 8, "num_generations": 8, "gradient_accumulation_steps": 1}


def config_problem(grpo: dict[str, Any], processes: int = 1) -> tuple[str, str] | None:
    """(the setting at fault, why) when GRPOConfig would refuse these settings together, else None.

    The cross-field rules of GRPOConfig.__post_init__ (trl 1.16), checked without importing trl (seconds)
    so that they are load-time errors: a generation batch holds whole prompt groups and is a whole number
    of training batches, and a few switches exclude each other. (One field's own type and bounds are
    check_setting's.)
    """
    if grpo.get("auto_find_batch_size"):
        return ("auto_find_batch_size", "GRPO cannot shrink the batch on out-of-memory (a generation batch must "
                                        "hold whole prompt groups): lower per_device_train_batch_size instead")
    if grpo.get("log_completions_hub_repo") is not None and not grpo.get("log_completions"):
        return ("log_completions_hub_repo", "log_completions_hub_repo needs log_completions: true")
    low, high = grpo.get("vllm_importance_sampling_clip_min"), grpo.get("vllm_importance_sampling_clip_max")
    if isinstance(low, (int, float)) and isinstance(high, (int, float)) and low >= high:
        return ("vllm_importance_sampling_clip_min", f"vllm_importance_sampling_clip_min ({low}) must be less than "
                                                     f"vllm_importance_sampling_clip_max ({high})")
    return _batch_problem(grpo, processes)


def _batch_problem(grpo: dict[str, Any], processes: int) -> tuple[str, str] | None:
    def get(key: str) -> Any:
        value = grpo.get(key)
        return BATCH_DEFAULTS.get(key) if value is None else value

    batch, generations = get("per_device_train_batch_size"), get("num_generations")
    generation_batch, steps = grpo.get("generation_batch_size"), grpo.get("steps_per_generation")
    if not all(isinstance(v, int) and v >= 1 for v in (batch, generations, get("gradient_accumulation_steps"))):
        return None  # a type or bound problem, reported on its own
    if generation_batch is not None and steps is not None:
        return ("steps_per_generation", "generation_batch_size and steps_per_generation cannot both be set "
                                        "(GRPOConfig derives one from the other)")
    global_batch = batch * processes
    if generation_batch is not None:
        if generation_batch % global_batch:
            return ("generation_batch_size", f"generation_batch_size ({generation_batch}) must be a multiple of the "
                                             f"batch size ({global_batch})")
    else:
        generation_batch = global_batch * (steps if steps is not None else get("gradient_accumulation_steps"))
    if generation_batch % generations:
        key = "generation_batch_size" if grpo.get("generation_batch_size") is not None else \
            "per_device_train_batch_size"
        return (key, f"the generation batch ({generation_batch} completions) must be a multiple of num_generations "
                     f"({generations}) so every prompt gets a whole group")
    return None


def coerce_cli_value(raw: str) -> Any:
    """Read a `--set KEY=VALUE` value the way YAML would (so 1e-5 is a float, true a bool)."""
    import yaml

    from .yamlio import _Loader  # the same resolver as the files

    try:
        return yaml.load(raw, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader subclass
    except yaml.YAMLError:
        return raw
