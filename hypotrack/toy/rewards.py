"""Reward functions by stable import path, e.g. "hypotrack.toy.rewards:arith_correct"."""
from .arith import arith_correct, arith_format
from .letters import letters_share
from .musique_mini import musique_correct, musique_format

__all__ = ["arith_correct", "arith_format", "letters_share", "musique_correct", "musique_format"]
