"""`maps eval`'s cost estimate reads each image's size from its file's header (PNG, JPEG, GIF,
WebP; a bounded read, no pixel decoded) and counts the same tokens as from the decoded image."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from maps_autogen._util._errors import DataError
from maps_autogen.problem._images import HEADER_BYTES, header_size
from maps_autogen.problem._rows import image_size_from_field
from tests.helpers.common import TEST_KEY, write_config
from tests.helpers.eval_fixtures import write_mathvista_jsonl


def encoded(fmt: str, size: tuple[int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (200, 30, 30)).save(out, format=fmt)
    return out.getvalue()


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "GIF", "WEBP"])
def test_the_header_says_the_size_as_sent(fmt: str) -> None:
    data = encoded(fmt, (3000, 1000))
    sent = Image.open(io.BytesIO(data))
    sent.thumbnail((1568, 1568))
    assert header_size(data, max_side=1568) == sent.size == (1568, 523)  # fitted as the image is when sent
    assert header_size(data, max_side=8192) == (3000, 1000)
    assert header_size(data[:64], max_side=8192) == (3000, 1000) or fmt in ("JPEG", "WEBP")  # PNG, GIF: 64 bytes say
    assert header_size(b"not an image" * 10, max_side=8192) is None
    assert header_size(b"", max_side=8192) is None


def test_a_field_is_sized_from_a_bounded_read_or_said_unknown(tmp_path: Path) -> None:
    big = tmp_path / "big.png"
    big.write_bytes(encoded("PNG", (640, 480)) + b"\0" * (2 * HEADER_BYTES))  # trailing bytes never read
    assert image_size_from_field("big.png", name="1", base_dir=tmp_path, max_side=8192) == (640, 480)
    assert image_size_from_field({"bytes": encoded("JPEG", (50, 40)), "path": None}, name="2", base_dir=None,
                                 max_side=8192) == (50, 40)
    assert image_size_from_field(None, name="3", base_dir=None, max_side=8192) is None
    for unknown in ("https://example.org/a.png", b"garbage"):
        with pytest.raises(DataError):
            image_size_from_field(unknown, name="4", base_dir=tmp_path, max_side=8192)


def test_the_estimate_decodes_no_image_and_counts_what_a_decoded_one_gives(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from maps_autogen.benchmarks import get_benchmark
    from maps_autogen.eval import load_items
    from maps_autogen.eval._estimate import cost_range, pass_calls, unread_shown
    from maps_autogen.orchestration._solving import assemble_team
    from maps_autogen.problem._tasks import available_subsets, find_subsets
    from maps_autogen.settings._config import load_config

    data, _ = write_mathvista_jsonl(tmp_path / "mathvista", 6)
    loaded = load_config(write_config(tmp_path / "agents.yaml", **{"model.max_tokens": 512}))
    team = assemble_team(loaded, {"OPENAI_API_KEY": TEST_KEY, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    task = get_benchmark("mathvista").task
    items = load_items(task, find_subsets(task, (), available_subsets(task, data.parent)), data.parent, loaded)
    max_side = loaded.config.images.max_side
    for item in items:  # the header's count is the decoded image's
        unread = unread_shown(item, max_side)
        assert unread is not None and unread.sizes
        for method in ("maps", "direct"):
            assert ([c.prompt_tokens for c in pass_calls(team, unread, method=method, without=frozenset())]
                    == [c.prompt_tokens for c in pass_calls(team, item.load_problem(), method=method,
                                                            without=frozenset())])
    decoded: list[str] = []
    import maps_autogen.problem._images as images

    original = images.image_from_bytes
    monkeypatch.setattr(images, "image_from_bytes", lambda *a, **k: decoded.append("x") or original(*a, **k))
    monkeypatch.setattr(Image.Image, "load", lambda self: decoded.append("pixels"))
    estimate = cost_range(team, items, method="maps", without=frozenset())
    assert isinstance(estimate, tuple) and 0 < estimate[0] < estimate[1]
    assert decoded == []
