"""Images: formats, EXIF orientation, downscaling, re-encoding, and clear errors."""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest
from PIL import Image

from maps_autogen._util._errors import ProblemError
from maps_autogen.problem._fetch import private_urls_allowed
from maps_autogen.problem._images import load_image


def save(path: Path, fmt: str, size=(400, 100), **kwargs) -> Path:
    Image.new("RGB", size, "red").save(path, format=fmt, **kwargs)
    return path


@pytest.mark.parametrize(("fmt", "mime"), [("PNG", "image/png"), ("JPEG", "image/jpeg"), ("GIF", "image/gif"), ("WEBP", "image/webp")])
def test_sendable_formats_are_kept_as_they_are(tmp_path: Path, fmt: str, mime: str) -> None:
    path = save(tmp_path / f"a.{fmt.lower()}", fmt)
    image = load_image(str(path), max_side=1568)
    assert image.mime == mime and image.data == path.read_bytes() and (image.width, image.height) == (400, 100)
    assert image.data_url().startswith(f"data:{mime};base64,")


def test_bmp_is_reencoded_as_png(tmp_path: Path) -> None:
    image = load_image(str(save(tmp_path / "a.bmp", "BMP")), max_side=1568)
    assert image.mime == "image/png" and Image.open(io.BytesIO(image.data)).format == "PNG"


def test_large_images_are_downscaled_keeping_aspect(tmp_path: Path) -> None:
    image = load_image(str(save(tmp_path / "big.png", "PNG", size=(4000, 1000))), max_side=1568)
    assert (image.width, image.height) == (1568, 392)
    assert Image.open(io.BytesIO(image.data)).size == (1568, 392)


def test_exif_orientation_is_applied(tmp_path: Path) -> None:
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display
    path = tmp_path / "phone.jpg"
    Image.new("RGB", (300, 100), "blue").save(path, format="JPEG", exif=exif)
    image = load_image(str(path), max_side=1568)
    assert (image.width, image.height) == (100, 300) and image.mime == "image/jpeg"


def test_data_url(tmp_path: Path) -> None:
    raw = save(tmp_path / "a.png", "PNG").read_bytes()
    image = load_image("data:image/png;base64," + base64.b64encode(raw).decode(), max_side=1568, index=3)
    assert image.name == "image-3" and image.data == raw and image.source == "data URL #3"


def test_http_url(tmp_path: Path) -> None:
    import http.server
    import threading

    save(tmp_path / "web.png", "PNG")
    handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(*a, directory=str(tmp_path), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/web.png"
        with private_urls_allowed(True):  # a loopback address: only the user's own URL is fetched
            assert load_image(url, max_side=1568).name == "web.png"
            with pytest.raises(ProblemError, match="cannot download image"):
                load_image(url.replace("web.png", "missing.png"), max_side=1568)
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("source", "message"),
    [("missing.png", "does not exist"), ("data:image/png,notbase64", "not base64"), ("data:image/png;base64,aGVsbG8=", "not a readable image")],
)
def test_errors(tmp_path: Path, source: str, message: str) -> None:
    with pytest.raises(ProblemError, match=message):
        load_image(source, max_side=1568, base_dir=tmp_path)


def test_unsupported_format(tmp_path: Path) -> None:
    path = tmp_path / "a.tiff"
    Image.new("RGB", (10, 10)).save(path, format="TIFF")
    with pytest.raises(ProblemError, match="TIFF image, which is not supported"):
        load_image(str(path), max_side=1568)
