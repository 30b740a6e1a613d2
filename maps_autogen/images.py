"""Load, validate, orient, downscale and encode images (files, http(s) URLs, data URLs)."""

from __future__ import annotations

import base64
import binascii
import io
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageOps, UnidentifiedImageError

from maps_autogen.errors import ProblemError

SUPPORTED_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "GIF": "image/gif", "WEBP": "image/webp", "BMP": "image/bmp"}
# Formats the chat APIs accept as they are; others (BMP) are re-encoded as PNG.
_SENDABLE = {"PNG", "JPEG", "GIF", "WEBP"}
MAX_DOWNLOAD_BYTES = 25 * 1024 * 1024
_EXTENSION = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}


@dataclass(frozen=True)
class ImageInput:
    """An image ready to send: encoded bytes, MIME type, size, and where it came from."""

    name: str  # a short display name (file name, or "image-N" for data URLs)
    source: str  # the path or URL given (data URLs are abbreviated)
    data: bytes
    mime: str
    width: int
    height: int

    @property
    def extension(self) -> str:
        return _EXTENSION[self.mime]

    def data_url(self) -> str:
        """The base64 data URL the chat API receives."""
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"


def _read_source(source: str, base_dir: Path | None) -> tuple[bytes, str]:
    if source.startswith("data:"):
        header, _, payload = source.partition(",")
        if ";base64" not in header or not payload:
            raise ProblemError("a data URL image is not base64-encoded", fix="use data:image/png;base64,...")
        try:
            return base64.b64decode(payload, validate=False), "image"
        except (binascii.Error, ValueError):
            raise ProblemError("a data URL image has invalid base64", fix="re-encode the image") from None
    if source.startswith(("http://", "https://")):
        request = urllib.request.Request(source, headers={"User-Agent": "maps-autogen"})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                data = response.read(MAX_DOWNLOAD_BYTES + 1)
        except (urllib.error.URLError, OSError, ValueError) as error:
            reason = getattr(error, "reason", error)
            raise ProblemError(f"cannot download image {source}: {reason}", fix="check the URL or save the image and pass the file") from None
        if len(data) > MAX_DOWNLOAD_BYTES:
            raise ProblemError(f"image {source} is larger than {MAX_DOWNLOAD_BYTES // 2**20} MB", fix="pass a smaller image")
        return data, source.rstrip("/").rsplit("/", 1)[-1] or "image"
    path = Path(source).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    if not path.exists():
        raise ProblemError(f"image file {path} does not exist", fix="check the path")
    if path.is_dir():
        raise ProblemError(f"image path {path} is a folder, not a file", fix="pass an image file")
    try:
        return path.read_bytes(), path.name
    except OSError as error:
        raise ProblemError(f"cannot read image file {path}: {error.strerror or error}", fix="check the file's permissions") from None


def load_image(source: str, *, max_side: int, base_dir: Path | None = None, index: int = 1) -> ImageInput:
    """Load and validate one image; apply EXIF orientation; downscale so neither side exceeds
    `max_side`; re-encode only when something changed or the format is not sendable."""
    raw, name = _read_source(source, base_dir)
    display = source if not source.startswith("data:") else f"data URL #{index}"
    if name == "image":
        name = f"image-{index}"
    return image_from_bytes(raw, name=name, source=display, max_side=max_side)


def image_from_bytes(raw: bytes, *, name: str, source: str, max_side: int) -> ImageInput:
    """Validate, orient, downscale and encode image bytes (from a file, a URL or a data set)."""
    try:
        with Image.open(io.BytesIO(raw)) as probe:
            probe.verify()
        image = Image.open(io.BytesIO(raw))
        image.load()
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, Image.DecompressionBombError):
        raise ProblemError(f"{source} is not a readable image", fix="use a PNG, JPEG, GIF, WebP or BMP file") from None
    fmt = image.format or ""
    if fmt not in SUPPORTED_FORMATS:
        raise ProblemError(f"{source} is a {fmt or 'unknown'} image, which is not supported", fix="convert it to PNG or JPEG")
    rotated = _has_orientation(image)
    oriented = ImageOps.exif_transpose(image) if rotated else image  # (it copies even when nothing turns)
    too_big = max(oriented.size) > max_side
    if too_big:
        oriented = oriented.copy()
        oriented.thumbnail((max_side, max_side), Image.LANCZOS)
    if not (too_big or rotated) and fmt in _SENDABLE:
        return ImageInput(name, source, raw, SUPPORTED_FORMATS[fmt], image.width, image.height)
    out = io.BytesIO()
    if fmt == "JPEG":
        oriented.convert("RGB").save(out, format="JPEG", quality=90)
        mime = "image/jpeg"
    else:
        if oriented.mode not in ("RGB", "RGBA", "L", "LA"):
            oriented = oriented.convert("RGBA")
        oriented.save(out, format="PNG")
        mime = "image/png"
    return ImageInput(name, source, out.getvalue(), mime, oriented.width, oriented.height)


def image_from_pil(image: Image.Image, *, name: str, max_side: int) -> ImageInput:
    """An image a data set decoded (PIL) made ready to send."""
    out = io.BytesIO()
    fmt = image.format if image.format in _SENDABLE else "PNG"
    frame = image if fmt != "JPEG" else image.convert("RGB")
    if fmt == "PNG" and frame.mode not in ("RGB", "RGBA", "L", "LA", "P"):
        frame = frame.convert("RGBA")
    frame.save(out, format=fmt)
    return image_from_bytes(out.getvalue(), name=name, source=name, max_side=max_side)


def _has_orientation(image: Image.Image) -> bool:
    try:
        return image.getexif().get(0x0112, 1) != 1
    except Exception:  # a broken EXIF block is not worth failing the image for
        return False
