"""Without the conformance data (a user's clone), the conformance tests skip with a reason that
says how to get it: the file, where it was looked for, the docs section on where it comes from,
and the variable that points at it; in CI they fail instead."""

from __future__ import annotations

import pytest

from tests.helpers.common import CONFORMANCE_VARIABLE, REPO, conformance_file


def test_missing_data_skips_saying_how_to_get_it_and_fails_in_ci(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv(CONFORMANCE_VARIABLE, str(tmp_path))
    with pytest.raises(pytest.skip.Exception) as skipped:
        conformance_file("absent_verdicts.dev.jsonl.gz")
    reason = str(skipped.value)
    assert "absent_verdicts.dev.jsonl.gz" in reason and CONFORMANCE_VARIABLE in reason
    assert f"{REPO.parent / 'shared' / 'conformance'}" in reason
    assert "docs/development.md#conformance-data" in reason
    assert "\n## Conformance data\n" in (REPO / "docs" / "development.md").read_text()
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must have it"):
        conformance_file("absent_verdicts.dev.jsonl.gz")


def test_the_variable_points_at_the_data(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    (tmp_path / "emma_verdicts.dev.jsonl.gz").write_bytes(b"")
    monkeypatch.setenv(CONFORMANCE_VARIABLE, str(tmp_path))
    assert conformance_file("emma_verdicts.dev.jsonl.gz") == tmp_path / "emma_verdicts.dev.jsonl.gz"
