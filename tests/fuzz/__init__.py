"""A differential fuzzer: random programs compiled with backend="mlir" and compared with eager.

generator.py draws programs from the op tables in ops.py (program.py renders them as Python),
check.py compares a compiled run with eager's; test_fuzz.py runs a fixed-seed budget in CI, run.py
a longer run outside pytest (`python -m tests.fuzz.run --help`), test_regressions.py keeps what
it found.
"""
