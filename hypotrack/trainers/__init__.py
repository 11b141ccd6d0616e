"""Trainers hypotrack runs: a GRPOTrainer subclass that exposes rollouts and loss internals to hooks."""
