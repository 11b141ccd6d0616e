"""Toy lab: tokenizer, model cache, datasets, rewards, musique offsets (real components, no mocks)."""
import sys

import pytest

from hypotrack.toy import lab, warmstart
from hypotrack.toy.arith import arith_correct
from hypotrack.toy.letters import LENGTH, letters_share
from hypotrack.toy.musique_mini import musique_correct


@pytest.fixture(scope="session")
def arith_dir(tmp_path_factory):
    # One cheap build per session into a private cache; a short recipe keeps the suite fast.
    root = tmp_path_factory.mktemp("cache")
    old = warmstart.RECIPES["arith"]
    warmstart.RECIPES["arith"] = dict(old, steps=5)
    try:  # restored as soon as it is built: a later test of this process that builds arith gets the real recipe
        return lab.ensure_model("arith", cache_dir=root)
    finally:
        warmstart.RECIPES["arith"] = old


def test_import_does_not_pull_torch():
    import subprocess

    code = "import sys, hypotrack.toy, hypotrack.toy.lab; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_tokenizer_round_trip(tmp_path):
    """Saved beside the toy's Qwen2 config, as the toy cache holds it: transformers 5.24 and later then load it as
    Qwen2Tokenizer, which must read every character (spaces and newlines too) as the toy lab encodes it."""
    from transformers import AutoTokenizer

    from hypotrack.toy.model import build_config
    from hypotrack.toy.tokenizer import CHARS, SPECIALS, build_tokenizer, save_tokenizer

    built = save_tokenizer(tmp_path)
    build_config(built).save_pretrained(tmp_path)
    tok = AutoTokenizer.from_pretrained(tmp_path)
    text = "[1] ab3 is in cd4.\nQ: 12+7=?"
    ids = tok(text)["input_ids"]
    assert ids[0] == tok.bos_token_id
    assert ids[1:] == [len(SPECIALS) + CHARS.index(c) for c in text]  # one token per character, ids as ever
    assert tok.decode(ids, skip_special_tokens=True) == text
    prompts = list(lab.load_dataset("musique-mini", 20, 0)["prompt"]) + list(lab.load_dataset("arith", 20, 0)["prompt"])
    assert all(tok(p)["input_ids"] == build_tokenizer()(p)["input_ids"] for p in prompts)
    assert tok.pad_token_id != tok.eos_token_id
    assert tok.padding_side == "left"


def test_model_and_tokenizer_load_from_cache(arith_dir, monkeypatch, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(arith_dir)
    tok = AutoTokenizer.from_pretrained(arith_dir)
    assert type(model).__name__ == "Qwen2ForCausalLM"
    assert 1e5 <= sum(p.numel() for p in model.parameters()) <= 2e6
    assert model.config.vocab_size == len(tok)
    # Second call hits the cache instead of rebuilding.
    assert lab.ensure_model("arith", cache_dir=arith_dir.parent.parent) == arith_dir


def test_cache_root_honours_env(monkeypatch, tmp_path):
    monkeypatch.setenv("HYPOTRACK_CACHE", str(tmp_path))
    assert warmstart.model_dir("arith").is_relative_to(tmp_path)
    assert warmstart.VERSION in warmstart.model_dir("arith").name


@pytest.mark.parametrize("task", lab.TASKS)
def test_datasets_deterministic_with_columns(task):
    a, b, c = lab.load_dataset(task, 20, 0), lab.load_dataset(task, 20, 0), lab.load_dataset(task, 20, 1)
    assert {"prompt", "answer"} <= set(a.column_names)
    assert a.to_list() == b.to_list()
    assert a["prompt"] != c["prompt"]
    assert all(isinstance(p, str) and isinstance(x, str) for p, x in zip(a["prompt"], a["answer"]))


def test_musique_prompts_long_and_offsets_point_at_answer_paragraph():
    ds = lab.load_dataset("musique-mini", 200, 0)
    assert {"answer_start", "answer_end"} <= set(ds.column_names)
    lengths = [len(p) for p in ds["prompt"]]
    assert min(lengths) >= 150 and max(lengths) <= 600
    for row in ds:
        para = row["prompt"][row["answer_start"]: row["answer_end"]]
        assert para.startswith("[") and "\n" not in para
        assert f"capital is {row['answer']}." in para


def test_arith_reward():
    assert arith_correct(["19", " 19", "18", "", "19x", "x19"], ["19"] * 6) == [1.0, 1.0, 0.0, 0.0, 1.0, 0.0]
    ds = lab.load_dataset("arith", 5, 0)
    assert arith_correct(list(ds["answer"]), list(ds["answer"])) == [1.0] * 5


def test_musique_reward():
    assert musique_correct(["Avo", " Avo.", "Bel", "", "avo"], ["Avo"] * 5) == [1.0, 1.0, 0.0, 0.0, 0.0]


def test_letters_reward_is_the_share_of_the_letter_asked_over_the_full_length():
    assert letters_share(["k" * LENGTH, "k" * (LENGTH // 2), "kx" * LENGTH, "x" * LENGTH], ["k"] * 4) == [
        1.0, 0.5, 0.5, 0.0]
    ds = lab.load_dataset("letters", 50, 0)
    assert {len(p) for p in ds["prompt"]} != {len(ds["prompt"][0])}  # prompts vary in length, as real ones do
    assert all(len(c) == LENGTH and 0.1 < letters_share([c], [a])[0] < 0.6
               for c, a in zip(ds["completion"], ds["answer"]))


def test_reward_paths_resolve():
    import importlib

    for task in lab.TASKS:
        for path in lab.reward_functions(task):
            mod, name = path.split(":")
            assert callable(getattr(importlib.import_module(mod), name))


@pytest.mark.parametrize("task,name", [("arith", "toy_arith"), ("musique-mini", "musique_mini")])
def test_presets_match_experiment_yaml(task, name):
    """calibrate.py measures presets.py; the experiments must run exactly what was calibrated."""
    from pathlib import Path

    import yaml

    from hypotrack.toy import presets

    path = Path(__file__).resolve().parents[1] / "experiments" / f"{name}.yaml"
    exp = yaml.safe_load(path.read_text())
    for key, value in exp["settings"].items():
        assert presets.GRPO_SETTINGS[task][key] == pytest.approx(value), key
    lora = {k: v for k, v in exp["lora"].items() if k != "enabled"}
    assert exp["lora"]["enabled"] is True and lora == presets.LORA_CONFIG
    assert exp["rewards"] == presets.REWARDS[task]
    assert exp["reward_weights"] == presets.REWARD_WEIGHTS[task]
    assert exp["data"]["size"] == presets.DATASET_SIZES[task]


def test_datasets_are_identical_across_processes():
    """Same seed, different hash seeds (every new Python process has one): the same rows."""
    import subprocess
    import sys

    code = ("from hypotrack.toy.lab import load_dataset; import json; "
            "print(json.dumps([list(load_dataset(t, 40, 3)['prompt']) for t in ('arith', 'musique-mini')]))")
    outputs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={**__import__("os").environ, "PYTHONHASHSEED": hs}).stdout for hs in ("1", "2")}
    assert len(outputs) == 1


def test_first_use_of_a_toy_model_is_announced_to_the_runner(monkeypatch, tmp_path):
    """A worker that has to build the warm start says so (the progress line shows it), once."""
    import io
    import json

    from hypotrack.protocol import Event, EventWriter
    from hypotrack.toy.lab import resolve_model

    monkeypatch.setenv("HYPOTRACK_CACHE", str(tmp_path))
    monkeypatch.setitem(warmstart.RECIPES, "arith", dict(warmstart.RECIPES["arith"], steps=2))
    stream = io.StringIO()
    events = EventWriter(stream)

    def building(text):
        events.emit(Event.PHASE, text=text)

    first = resolve_model("toy:arith", building)
    assert resolve_model("toy:arith", building) == first
    phases = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [p["event"] for p in phases] == ["phase"]
    assert "building the arith toy model" in phases[0]["text"]
    assert resolve_model("/some/user/model", building) == "/some/user/model"
