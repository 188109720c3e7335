"""Readers of other tools' evaluation logs into the evidence path's raw trial rows.

One module per tool: ``inspect`` (Inspect AI ``.eval`` / ``.json`` logs:
``read_inspect_pair``) and ``lmeval`` (lm-evaluation-harness samples: ``read_lmeval_pair``).
``evidence.packet`` imports the one a manifest's ``source.format`` names.
"""
__all__ = ["inspect", "lmeval"]
