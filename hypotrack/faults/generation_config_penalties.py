"""h14's cause under a vLLM server: sampling settings the served model's generation_config.json carries, which the
server applies to every request that leaves them unset, and TRL's requests leave presence_penalty and
frequency_penalty unset."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypotrack.errors import HypotrackError
from hypotrack.faults.base import PlantedFault


class GenerationConfigPenalties(PlantedFault):
    name = "generation_config_penalties"
    imitates = "h14"
    description = ("the run's model ships a generation_config.json with a presence penalty (model cards suggest one "
                   "against repetition), which vLLM's server applies to every request that leaves it unset, and TRL's do: "
                   "vLLM samples, and reports logprobs, with a penalty the loss never scores with (NeMo-RL#3497)")
    seams = ("config",)
    needs_vllm = ("it lives in the defaults a vLLM server reads from the served model's generation config: "
                  "hypotrack selftest --experiment toy_letters_vllm_server --faults clean,generation_config_penalties "
                  "(on the arith toy's 2-3 token answers a penalty rarely bites)")

    @dataclass(frozen=True)
    class Settings:
        presence_penalty: float = 1.5
        """The presence penalty the model's generation_config.json carries (model cards suggest up to 2 against
        repetition)."""

    def configure(self, arm: dict[str, Any]) -> None:
        if arm["grpo"].get("vllm_mode") != "server":
            raise HypotrackError(f"the planted fault {self.name} needs vllm_mode server (such as toy_letters_vllm_server): "
                                 "TRL hands its colocated engine every sampling setting, so a model's generation "
                                 "config cannot reach what it samples")
        arm["model"] = str(self._model_with_penalty(arm["model"]))

    def _model_with_penalty(self, model: str) -> Path:
        """A copy of the model's folder whose generation_config.json carries the penalty, built once beside the toy
        models."""
        from hypotrack.toy.lab import resolve_model
        from hypotrack.toy.warmstart import cache_root, publish_folder

        source = Path(resolve_model(model))
        if not source.is_dir():
            raise HypotrackError(f"the planted fault {self.name} needs a model folder to copy ({model!r} is not one)")
        target = cache_root() / "planted" / f"{source.name}-presence{self.config.presence_penalty:g}"
        if (target / "generation_config.json").exists():
            return target

        def copy_with_penalty(folder: Path) -> None:
            for item in source.iterdir():
                if item.is_file():
                    shutil.copy2(item, folder / item.name)
            path = folder / "generation_config.json"
            config = json.loads(path.read_text()) if path.exists() else {}
            config.pop("_from_model_config", None)  # transformers rebuilds such a config from the model's, dropping extras
            config["presence_penalty"] = self.config.presence_penalty
            path.write_text(json.dumps(config, indent=2))

        return publish_folder(target, copy_with_penalty)
