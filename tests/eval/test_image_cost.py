"""What an image costs a problem of `maps eval` (issue 27), counted, not timed: each image's
pixel data is checked whole once (a PNG sent as it is by inflating its pixel data,
`images.png_whole`, at a fraction of a decode's cost; any other image by decoding it), its data
URL is encoded once, the bytes sent and the bytes saved in the run folder are the file's own
when nothing needed changing, and a damaged image (truncated, or corrupt inside a PNG whose
chunk checksums are right) fails its own problem before any request about it."""

from __future__ import annotations

import base64
import io
import json
import struct
import zlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

import maps_autogen.problem._images
from maps_autogen._util._errors import ProblemError
from tests.helpers.common import TEST_KEY, clean_env, run_maps
from tests.helpers.eval_cli import eval_dir_of, scripted_answers
from tests.helpers.eval_fixtures import ProblemScript, write_mathvista_jsonl
from tests.helpers.fake_openai import FakeOpenAI

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _noisy(size: tuple[int, int] = (240, 160)) -> Image.Image:
    return Image.effect_noise(size, 40).convert("RGB")


def _png(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def _jpeg(image: Image.Image) -> bytes:
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=90)
    return out.getvalue()


def _corrupt_pixels_keeping_checksums(png: bytes) -> bytes:
    """`png` with zeros written into the middle of its compressed pixel data and each chunk's CRC
    recomputed: its structure checks out (Pillow's verify() passes); only decoding finds it."""
    out, at = bytearray(png[:8]), 8
    while at < len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        kind, body = png[at + 4 : at + 8], bytearray(png[at + 8 : at + 8 + length])
        if kind == b"IDAT":
            body[length // 2 : length // 2 + 16] = bytes(16)
        out += struct.pack(">I", length) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
        at += 12 + length
    return bytes(out)


def test_a_corrupt_png_with_right_checksums_passes_verify_but_not_the_decode() -> None:
    """The fixture below is only caught by the full decode (what a verify-only check would miss)."""
    broken = _corrupt_pixels_keeping_checksums(_png(_noisy()))
    with Image.open(io.BytesIO(broken)) as probe:
        probe.verify()  # no error: the chunk structure and checksums are right
    with pytest.raises(ProblemError, match="is not a readable image"):
        maps_autogen.problem._images.image_from_bytes(broken, name="x", source="x.png", max_side=2048)


def test_each_image_is_decoded_and_encoded_once_and_sent_and_saved_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, rows = write_mathvista_jsonl(tmp_path / "data", 5)
    images = data.parent / "images"
    originals = {"1": _png(_noisy()), "2": _jpeg(_noisy())}  # sendable as they are: no resize, rotation or conversion
    for pid, raw in originals.items():
        (images / f"{pid}.png").write_bytes(raw)
    good = _png(_noisy())
    (images / "3.png").write_bytes(good[: len(good) // 2])  # truncated
    (images / "4.png").write_bytes(_corrupt_pixels_keeping_checksums(_png(_noisy())))
    jpeg = _jpeg(_noisy())
    (images / "5.png").write_bytes(jpeg[: len(jpeg) // 2])  # a truncated JPEG (verify() checks nothing there)

    decoded: Counter[str] = Counter()  # the images' decoders started, by format
    getdecoder = Image._getdecoder

    def counting_decoder(mode: str, decoder_name: str, *args: Any, **kwargs: Any) -> Any:
        decoded[decoder_name] += 1
        return getdecoder(mode, decoder_name, *args, **kwargs)

    encoded: list[bytes] = []  # the image bytes base64-encoded for a data URL
    b64encode = base64.b64encode

    def counting_b64encode(raw: bytes, *args: Any) -> bytes:
        if raw[:8] == PNG_SIGNATURE or raw[:3] == b"\xff\xd8\xff":
            encoded.append(raw)
        return b64encode(raw, *args)

    checked: list[bytes] = []  # the PNGs whose pixel data was inflated, not decoded
    png_whole = maps_autogen.problem._images.png_whole

    def counting_png_whole(raw: bytes) -> bool | None:
        checked.append(raw)
        return png_whole(raw)

    monkeypatch.setattr(maps_autogen.problem._images, "png_whole", counting_png_whole)
    monkeypatch.setattr(Image, "_getdecoder", counting_decoder)
    monkeypatch.setattr(maps_autogen.problem._images.base64, "b64encode", counting_b64encode)
    script = ProblemScript(scripted_answers(rows))
    with FakeOpenAI(script) as server:
        env = clean_env(OPENAI_API_KEY=TEST_KEY, OPENAI_BASE_URL=server.base_url)
        result = run_maps(["eval", "mathvista", "--data", str(data), "--runs-dir", str(tmp_path / "runs"),
                           "--concurrency", "1", "--no-cache", "--quiet"], env=env, cwd=tmp_path)
        received = list(server.received)
    assert "Traceback" not in result.stderr, result.stderr[-2000:]

    eval_dir = eval_dir_of(tmp_path / "runs")
    results = {r["pid"]: r for r in map(json.loads, (eval_dir / "results.jsonl").read_text().splitlines())}
    assert {pid: r["status"] for pid, r in results.items()} == {
        "1": "ok", "2": "ok", "3": "failed", "4": "failed", "5": "failed"}
    for pid in ("3", "4", "5"):  # one line naming the image, and nothing of the problem was sent
        assert "\n" not in results[pid]["error"] and f"{pid}.png is not a readable image" in results[pid]["error"]
    assert {script.pid_of_critic(request) for request in received} == {"1", "2"}

    # Each image checked once (--quiet: without it, the cost estimate printed before the run loads
    # up to 20 problems on its own): the PNG that is sent and the PNG whose checksums are right
    # (refused) by inflating their pixel data, never decoded; the JPEG that is sent and the
    # truncated one (refused) by one decode each; the truncated PNG fails its structure check
    # before either.
    assert decoded == Counter({"jpeg": 2}), decoded
    assert sorted(checked) == sorted([originals["1"], (images / "4.png").read_bytes()])
    # One data URL per problem, whatever the number of requests that carry the image.
    assert sorted(encoded) == sorted(originals.values())
    sent = [part["image_url"]["url"] for request in received for message in request.messages
            if isinstance(message.get("content"), list) for part in message["content"] if part.get("type") == "image_url"]
    assert sorted(base64.b64decode(url.partition(",")[2]) for url in sent) == sorted(originals.values())
    # The run folder keeps the file's own bytes (not a re-encoding).
    assert (eval_dir / "problems" / "1" / "images" / "image-1.png").read_bytes() == originals["1"]
    assert (eval_dir / "problems" / "2" / "images" / "image-1.jpg").read_bytes() == originals["2"]
