"""Without the developers' full conformance sets (a user's clone), the conformance tests run on the
subset that ships with the project, and none is skipped; in CI (CI=true) a missing full set fails,
saying where it was looked for and how to get it."""

from __future__ import annotations

import pytest

from tests.helpers.common import REPO
from tests.helpers.conformance import (
    BUNDLED,
    CONFORMANCE_VARIABLE,
    EMMA,
    MATHVISTA,
    OLYMPIADBENCH_EXAMPLES,
    OLYMPIADBENCH_JUDGED,
    conformance_data,
    shared_file,
)

ALL = (MATHVISTA, EMMA, OLYMPIADBENCH_JUDGED, OLYMPIADBENCH_EXAMPLES)


def _away(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """No full set anywhere: the variable points at an empty folder, and no folder above has one."""
    monkeypatch.setenv(CONFORMANCE_VARIABLE, str(tmp_path))
    monkeypatch.setattr("tests.helpers.conformance.conformance_folders", lambda: [tmp_path])


def test_without_the_full_sets_the_bundled_subset_runs_and_nothing_skips(monkeypatch: pytest.MonkeyPatch,
                                                                          tmp_path) -> None:
    monkeypatch.delenv("CI", raising=False)
    _away(monkeypatch, tmp_path)
    for files in ALL:
        [data] = conformance_data(files)
        assert data.kind == "bundled" and data.path.is_file() and data.path.parent == BUNDLED
    assert (BUNDLED / "README.md").is_file()


def test_in_ci_a_missing_full_set_fails_saying_how_to_get_it(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    _away(monkeypatch, tmp_path)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI must have it") as failed:
        shared_file("absent_verdicts.dev.jsonl.gz")
    reason = str(failed.value)
    assert "absent_verdicts.dev.jsonl.gz" in reason and CONFORMANCE_VARIABLE in reason
    assert f"{REPO.parent / 'shared' / 'conformance'}" in reason
    assert "docs/development.md#conformance-data" in reason
    assert "\n## Conformance data\n" in (REPO / "docs" / "development.md").read_text()


def test_the_variable_points_at_the_full_sets(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    (tmp_path / "emma_verdicts.dev.jsonl.gz").write_bytes(b"")
    monkeypatch.setenv(CONFORMANCE_VARIABLE, str(tmp_path))
    assert [(d.kind, d.path) for d in conformance_data(EMMA)] == [
        ("bundled", BUNDLED / "emma_verdicts.subset.jsonl.gz"), ("shared", tmp_path / "emma_verdicts.dev.jsonl.gz")]
