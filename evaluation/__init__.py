"""Evaluation helpers shared by the benchmarks (``bench/``) and the tests.

``corpus`` unpacks the shared evaluation pages (never committed);
``perturb`` makes the realistic near-duplicate copies the quality harness and
the tests measure recall on. Not part of the installed package.
"""
