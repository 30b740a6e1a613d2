"""Shared by the tests of tests/scoring/test_conformance_mathvista.py and others: DATA_NAME."""

from __future__ import annotations

DATA_NAME = "mathvista_testmini_verdicts.dev.jsonl.gz"
