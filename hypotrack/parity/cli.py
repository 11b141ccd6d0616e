"""`hypotrack parity loss|logprobs|determinism`: thin click layer over hypotrack.parity (torch only inside)."""
from __future__ import annotations

from pathlib import Path

import click

from hypotrack.definitions.vocabulary import REFERENCE_LOSS_TYPES, SCALE_REWARDS

from .settings import ParitySettings

_MODEL = click.option("--model", "model", default="toy", show_default=True,
                      help="Model directory (from_pretrained), or 'toy' / 'toy:<task>' for the toy lab model.")
_SEED = click.option("--seed", default=0, show_default=True, type=int, help="Seed of the probe batch / runs.")
_OUT = click.option("--out", "out", type=click.Path(file_okay=False, path_type=Path), default=None,
                    help="Also write parity_<check>.md/.json into this directory.")
_THREADS = click.option("--threads", default=1, show_default=True, type=int, help="torch CPU threads.")


def _csv(kind):
    def conv(ctx, param, value):
        if value is None:
            return None
        try:
            return [kind(v.strip()) for v in value.split(",") if v.strip()]
        except ValueError as e:
            raise click.BadParameter(str(e)) from None
    return conv


def _run(settings_kw: dict, model: str, seed: int, out: Path | None) -> None:
    from pydantic import ValidationError

    try:
        settings = ParitySettings(**{k: v for k, v in settings_kw.items() if v is not None})
    except ValidationError as e:
        flags = {param.name: param.opts[0] for param in click.get_current_context().command.params if param.opts}
        problems = "; ".join(f"{flags.get(str(err['loc'][0]), err['loc'][0]) if err['loc'] else 'options'} "
                             f"{err.get('input')!r}: {err['msg']}" for err in e.errors())
        raise click.ClickException(f"invalid parity options: {problems}") from None
    from rich.console import Console

    from . import probe

    try:
        result = probe.run_check(settings, model, seed)
    except (FileNotFoundError, OSError, ValueError) as e:
        raise click.ClickException(f"{settings.check} parity could not run on {model!r}: {e}") from None
    mod = __import__(f"hypotrack.parity.{settings.check}", fromlist=["render_table"])
    console = Console()
    if not console.is_terminal:  # piped / CI: the default 80 columns squeeze the tables unreadably
        console = Console(width=220)
    console.print(mod.render_table(result))
    if settings.check == "logprobs":
        console.print(mod.render_token_details(result), markup=False, highlight=False)
    if out is not None:
        for p in probe.write_artifacts(settings, result, out):
            console.print(f"wrote {p}")
    ok = probe.passed(settings, result)
    console.print("[green]PASS[/]" if ok else "[red]FAIL[/]")
    if not ok:
        raise SystemExit(1)


@click.group("parity")
def parity():
    """Parity checks: reference GRPO loss vs TRL, logprob contexts, bitwise determinism."""


@parity.command("loss")
@_MODEL
@click.option("--loss-types", callback=_csv(str), default=None,
              help=f"Comma-separated loss types (default: {','.join(REFERENCE_LOSS_TYPES)}).")
@click.option("--betas", callback=_csv(float), default=None, help="Comma-separated KL betas (default: 0,0.04).")
@click.option("--tolerance", type=float, default=None, help="atol = rtol for loss and gradients (default 1e-6).")
@click.option("--scale-rewards", type=click.Choice(SCALE_REWARDS), default=None)
@click.option("--eval-mode", is_flag=True, help="Compare in eval mode (no accumulation division).")
@click.option("--grad-accum", type=int, default=None, help="Gradient-accumulation steps (train mode).")
@click.option("--no-variants", is_flag=True, help="Skip the seed-004 manual-step variants.")
@_SEED
@_OUT
@_THREADS
def loss_cmd(model, loss_types, betas, tolerance, scale_rewards, eval_mode, grad_accum, no_variants, seed, out,
             threads):
    """TRL's GRPOTrainer loss vs the reference loss, loss and gradients.

    Example: hypotrack parity loss --model toy --loss-types grpo,dapo --betas 0,0.04
    """
    _run(dict(check="loss", loss_types=loss_types, betas=betas, tolerance=tolerance, scale_rewards=scale_rewards,
              train_mode=not eval_mode, gradient_accumulation_steps=grad_accum, variants=not no_variants,
              threads=threads), model, seed, out)


@parity.command("logprobs")
@_MODEL
@click.option("--contexts", callback=_csv(str), default=None, help="Comma-separated contexts (default: all).")
@click.option("--dropout", type=float, default=None, help="attention_dropout for train_mode_dropout (0.1).")
@click.option("--tolerance", "logprob_tolerance", type=float, default=None,
              help="Allowed max |Δ logp| over fp32 contexts (default 1e-5).")
@click.option("--max-new-tokens", "max_completion_length", type=int, default=None)
@_SEED
@_OUT
@_THREADS
def logprobs_cmd(model, contexts, dropout, logprob_tolerance, max_completion_length, seed, out, threads):
    """The same sampled tokens scored in different contexts, bitwise.

    Example: hypotrack parity logprobs --model ./my-model --contexts sampling,grad_enabled,bf16
    """
    _run(dict(check="logprobs", contexts=contexts, dropout=dropout, logprob_tolerance=logprob_tolerance,
              max_completion_length=max_completion_length, num_prompts=4, threads=threads), model, seed, out)


@parity.command("determinism")
@_MODEL
@click.option("--steps", type=int, default=None, help="GRPO steps per run (default 5).")
@click.option("--loss-type", type=click.Choice(REFERENCE_LOSS_TYPES),
              default=None)
@click.option("--beta", type=float, default=None)
@click.option("--perturb-at-step", type=int, default=None,
              help="Perturb the second run after this step (checks the reporting).")
@click.option("--no-deterministic", is_flag=True, help="Do not enable torch deterministic algorithms.")
@_SEED
@_OUT
@_THREADS
def determinism_cmd(model, steps, loss_type, beta, perturb_at_step, no_deterministic, seed, out, threads):
    """Two identical short GRPO runs compared bitwise (metrics per step, final weights).

    Example: hypotrack parity determinism --model toy --steps 5
    """
    _run(dict(check="determinism", steps=steps, loss_type=loss_type, beta=beta, perturb_at_step=perturb_at_step,
              deterministic=not no_deterministic, threads=threads), model, seed, out)
