"""Planted faults: faithful copies of real GRPO bugs, one module per fault, each describing itself (base.py).

`plant:` in an experiment or `--plant` on the command line switches one on in both arms; `hypotrack selftest`
plants each in the toy lab and checks that its own hypothesis catches it and no other does. Where a fault copies
a bug reported upstream, its description names the issue or pull request. No torch at import time.
"""
