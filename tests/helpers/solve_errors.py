"""Shared by the tests of tests/cli/test_solve_errors.py and others: assert_one_line_error."""

from __future__ import annotations

from tests.helpers.common import TEST_KEY


def assert_one_line_error(result, exit_code: int, *needles: str) -> str:
    assert result.returncode == exit_code, (result.returncode, result.stdout, result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert "Traceback" not in result.stderr
    error_lines = [line for line in lines if line.startswith("error: ")]
    assert len(error_lines) == 1, result.stderr
    for needle in needles:
        assert needle in error_lines[0], (needle, error_lines[0])
    assert TEST_KEY not in result.stdout + result.stderr
    return error_lines[0]
