"""Treatments that act inside the trainer, one module per treatment, each describing itself (base.py).

They reach hypotrack's own arms and a command experiment's script alike, without a flag of the script's. No
torch at import time.
"""
