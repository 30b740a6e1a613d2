"""Load, validate, orient, downscale and encode images (files, http(s) URLs, data URLs)."""

from __future__ import annotations

import base64
import binascii
import io
import math
import os
import stat
import warnings
import zlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeAlias

from PIL import Image, ImageOps, UnidentifiedImageError

from maps_autogen._util import ProblemError, scoped, valid_text
from maps_autogen.problem._fetch import fetch_url
from maps_autogen.settings import LimitsConfig

SUPPORTED_FORMATS = {
    "PNG": "image/png",
    "JPEG": "image/jpeg",
    "GIF": "image/gif",
    "WEBP": "image/webp",
    "BMP": "image/bmp",
}
# Formats the chat APIs accept as they are; others (BMP) are re-encoded as PNG.
_SENDABLE = {"PNG", "JPEG", "GIF", "WEBP"}
_EXTENSION = {"image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp"}


@dataclass(frozen=True)
class ImageLimits:
    """How much an image may cost us (agents.yaml `limits:`): bytes read, pixels decoded."""

    file_bytes: int = LimitsConfig().image_file_bytes  # the defaults live in one place: settings/_config.py
    pixels: int = LimitsConfig().image_pixels

    @classmethod
    def of(cls, limits: LimitsConfig) -> ImageLimits:
        """The image limits of agents.yaml's `limits:` section."""
        return cls(file_bytes=limits.image_file_bytes, pixels=limits.image_pixels)


_limits: ContextVar[ImageLimits] = ContextVar("image_limits", default=ImageLimits())  # noqa: B039 - frozen


def image_limits(limits: ImageLimits) -> AbstractContextManager[None]:
    """Apply `limits` to every image loaded inside the block (the config's `limits:`)."""
    return scoped(_limits, limits)


def _megabytes(size: int) -> str:
    return f"{size / 2**20:.1f} MB"


def _too_large(source: str, size: int | None, limit: int) -> ProblemError:
    what = f"is {_megabytes(size)}" if size is not None else "is larger than that"
    return ProblemError(f"image {source} {what}, over limits.image_file_bytes ({_megabytes(limit)})",
                        fix="pass a smaller image or raise limits.image_file_bytes in agents.yaml")


def _read_file(path: Path, limit: int) -> bytes:
    """A regular file's bytes, at most `limit`: devices (/dev/zero) and FIFOs are refused
    without being opened, so nothing is read whole and nothing blocks."""
    try:
        info = path.stat()
    except OSError as error:
        raise ProblemError(
            f"cannot read image file {path}: {error.strerror or error}", fix="check the path and permissions"
        ) from None
    if not stat.S_ISREG(info.st_mode):
        raise ProblemError(f"image path {path} is not a regular file", fix="pass an image file")
    if info.st_size > limit:
        raise _too_large(str(path), info.st_size, limit)
    try:
        # O_NONBLOCK: should the path be swapped for a FIFO after the check, open does not wait.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise ProblemError(f"image path {path} is not a regular file", fix="pass an image file")
            data = handle.read(limit + 1)
    except OSError as error:
        raise ProblemError(
            f"cannot read image file {path}: {error.strerror or error}", fix="check the file's permissions"
        ) from None
    if len(data) > limit:
        raise _too_large(str(path), None, limit)
    return data


@dataclass(frozen=True)
class ImageInput:
    """An image ready to send: encoded bytes, MIME type, size, and where it came from."""

    name: str  # a short display name (file name, or "image-N" for data URLs)
    source: str  # the path or URL given (data URLs are abbreviated)
    data: bytes
    mime: str
    width: int
    height: int
    # The data URL, encoded once: every request that sends the image, and the transcript's
    # lookup of it, use this one string (not part of equality; `replace` makes a new one).
    _data_url: str | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def extension(self) -> str:
        return _EXTENSION[self.mime]

    def data_url(self) -> str:
        """The base64 data URL the chat API receives (encoded on first use, then kept)."""
        url = self._data_url
        if url is None:
            url = f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"
            object.__setattr__(self, "_data_url", url)  # a cache: the image itself is unchanged
        return url


def _read_source(source: str, base_dir: Path | None) -> tuple[bytes, str]:
    limit = _limits.get().file_bytes
    if source.startswith("data:"):
        header, _, payload = source.partition(",")
        if ";base64" not in header or not payload:
            raise ProblemError("a data URL image is not base64-encoded", fix="use data:image/png;base64,...")
        if len(payload) * 3 // 4 > limit:
            raise _too_large("(data URL)", len(payload) * 3 // 4, limit)
        try:
            return base64.b64decode(payload, validate=False), "image"
        except (binascii.Error, ValueError):
            raise ProblemError("a data URL image has invalid base64", fix="re-encode the image") from None
    if source.startswith(("http://", "https://")):
        # Only public addresses unless the URL is the user's own (fetch.private_urls_allowed).
        data = fetch_url(source, limit=limit)
        if data is None:
            raise _too_large(source, None, limit)
        return data, source.rstrip("/").rsplit("/", 1)[-1] or "image"
    path = Path(source).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = base_dir / path
    if not path.exists():
        raise ProblemError(f"image file {path} does not exist", fix="check the path")
    if path.is_dir():
        raise ProblemError(f"image path {path} is a folder, not a file", fix="pass an image file")
    return _read_file(path, limit), path.name


def load_image(source: str, *, max_side: int, base_dir: Path | None = None, index: int = 1) -> ImageInput:
    """Load and validate one image; apply EXIF orientation; downscale so neither side exceeds
    `max_side`; re-encode only when something changed or the format is not sendable."""
    raw, name = _read_source(source, base_dir)
    # A path from the command line may hold bytes that are not UTF-8 (lone surrogates here).
    display, name = (valid_text(source) if not source.startswith("data:") else f"data URL #{index}"), valid_text(name)
    if name == "image":
        name = f"image-{index}"
    return image_from_bytes(raw, name=name, source=display, max_side=max_side)


def image_from_bytes(raw: bytes, *, name: str, source: str, max_side: int) -> ImageInput:
    """Validate, orient, downscale and encode image bytes (from a file, a URL or a data set).

    A big JPEG is decoded at a reduced scale (Pillow's draft mode) when it will be downscaled
    anyway; an image whose decoded size is over limits.image_pixels is refused before decoding."""
    limit = _limits.get().pixels
    try:
        with warnings.catch_warnings():
            # Our own pixel limit decides; Pillow's multi-line warning about big images is noise.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = _open_within_limit(raw, source, max_side, limit)
            # A PNG sent as it is: its pixel data checked whole without decoding it (png_whole).
            whole = png_whole(raw) if image.format == "PNG" and max(image.size) <= max_side else None
            if whole is False:
                raise ValueError("the PNG's pixel data is not whole")
            if whole:
                return ImageInput(name, source, raw, SUPPORTED_FORMATS["PNG"], image.width, image.height)
            image.load()
    except Image.DecompressionBombError:
        raise _too_many_pixels(source, None, limit) from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError):
        raise ProblemError(f"{source} is not a readable image", fix="use a PNG, JPEG, GIF, WebP or BMP file") from None
    fmt = image.format or ""
    rotated = _has_orientation(image)
    oriented = ImageOps.exif_transpose(image) if rotated else image  # (it copies even when nothing turns)
    too_big = max(oriented.size) > max_side
    if too_big:
        oriented = oriented.copy()
        oriented.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
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


#: What a Problem's `images` may hold: a ready image, a path, an http(s) or data URL, the
#: image file's bytes, or a PIL image (the Python API's forms; a problem file gives paths and URLs).
ImageSource: TypeAlias = ImageInput | str | os.PathLike[str] | bytes | bytearray | Image.Image


def image_input(source: ImageSource, *, max_side: int, index: int) -> ImageInput:
    """Any `ImageSource` as an image ready to send, checked as a problem file's images are (the
    limits in force, private URLs refused unless allowed); a ready `ImageInput` is kept as it is.
    `index` numbers the images of one problem (the name of one that has none)."""
    if isinstance(source, ImageInput):
        return source
    if isinstance(source, (str, os.PathLike)):
        return load_image(os.fspath(source), max_side=max_side, index=index)  # relative: to the working folder
    name = f"image-{index}"
    if isinstance(source, (bytes, bytearray)):
        limit = _limits.get().file_bytes
        if len(source) > limit:
            raise _too_large(f"#{index} (bytes)", len(source), limit)
        return image_from_bytes(bytes(source), name=name, source=f"bytes #{index}", max_side=max_side)
    if isinstance(source, Image.Image):
        return image_from_pil(source, name=name, max_side=max_side)
    raise ProblemError(f"image #{index} is a {type(source).__name__}",
                       fix="give a file path, an http(s) or data URL, the image's bytes or a PIL image")


# Enough for a PNG's, GIF's and WebP's header and for a JPEG's markers up to its frame header.
HEADER_BYTES = 256 * 1024


def header_size(head: bytes, *, max_side: int) -> tuple[int, int] | None:
    """The size an image is sent at (fitted to `max_side`), read from the first bytes of its file
    (at most `HEADER_BYTES`): PIL reads only the header, no pixel is decoded. None when those
    bytes do not say (not a supported image, a header past them)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with Image.open(io.BytesIO(head[:HEADER_BYTES])) as image:
                (width, height), fmt = image.size, image.format
                try:
                    # A JPEG's EXIF orientation (read with its header; other formats' EXIF needs a decode).
                    if fmt == "JPEG" and image.getexif().get(0x0112) in (5, 6, 7, 8):
                        width, height = height, width
                except (OSError, ValueError, SyntaxError, EOFError):
                    pass  # no EXIF within the bytes read: sent as it is stored
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError, EOFError, Image.DecompressionBombError):
        return None
    if fmt not in SUPPORTED_FORMATS or width < 1 or height < 1:
        return None
    return fitted_size(width, height, max_side)


def fitted_size(width: int, height: int, max_side: int) -> tuple[int, int]:
    """The size PIL's `thumbnail((max_side, max_side))` gives an image of `width` x `height`
    (as `image_from_bytes` downscales it): the aspect kept, rounded as PIL rounds it."""
    if width <= max_side and height <= max_side:
        return width, height
    aspect = width / height

    def rounded(number: float, key: Callable[[int], float]) -> int:
        return max(min(math.floor(number), math.ceil(number), key=key), 1)

    if aspect <= 1:  # x / y >= aspect with x = y = max_side
        return rounded(max_side * aspect, key=lambda n: abs(aspect - n / max_side)), max_side
    return max_side, rounded(max_side / aspect, key=lambda n: 0 if n == 0 else abs(aspect - max_side / n))


def file_head(path: Path) -> bytes:
    """The first `HEADER_BYTES` of a regular file (a device or FIFO is refused unopened)."""
    if not stat.S_ISREG(path.stat().st_mode):
        raise ProblemError(f"image path {path} is not a regular file", fix="pass an image file")
    with open(path, "rb") as handle:
        return handle.read(HEADER_BYTES)


def fitted_image(image: ImageInput, *, max_side: int) -> ImageInput:
    """`image` downscaled so neither side exceeds `max_side` and checked against the pixel limit
    in force (a run's config may be stricter than the one it was loaded under); unchanged when
    it already fits."""
    if max(image.width, image.height) <= max_side and image.width * image.height <= _limits.get().pixels:
        return image
    return image_from_bytes(image.data, name=image.name, source=image.source, max_side=max_side)


def image_from_pil(image: Image.Image, *, name: str, max_side: int) -> ImageInput:
    """An image a data set decoded (PIL) made ready to send."""
    _check_pixels(name, image.size, _limits.get().pixels)
    out = io.BytesIO()
    fmt = image.format if image.format in _SENDABLE else "PNG"
    frame = image if fmt != "JPEG" else image.convert("RGB")
    if fmt == "PNG" and frame.mode not in ("RGB", "RGBA", "L", "LA", "P"):
        frame = frame.convert("RGBA")
    frame.save(out, format=fmt)
    return image_from_bytes(out.getvalue(), name=name, source=name, max_side=max_side)


def _open_within_limit(raw: bytes, source: str, max_side: int, limit: int) -> Image.Image:
    """Verify the image, set a big JPEG to be reduced while decoding, refuse too many pixels
    (the caller decodes it: `load`)."""
    with Image.open(io.BytesIO(raw)) as probe:
        probe.verify()  # checks structure and checksums without decoding the pixels
    image = Image.open(io.BytesIO(raw))
    fmt = image.format or ""
    if fmt not in SUPPORTED_FORMATS:
        raise ProblemError(
            f"{source} is a {fmt or 'unknown'} image, which is not supported", fix="convert it to PNG or JPEG"
        )
    if fmt == "JPEG" and max(image.size) > max_side:
        image.draft(None, (max_side, max_side))  # decode at 1/2, 1/4 or 1/8 scale
    _check_pixels(source, image.size, limit)
    return image


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# PNG's colour types: the samples in a pixel, and the bit depths each may have.
_PNG_SAMPLES = {0: (1, (1, 2, 4, 8, 16)), 2: (3, (8, 16)), 3: (1, (1, 2, 4, 8)), 4: (2, (8, 16)), 6: (4, (8, 16))}
# Text chunks under these keywords may turn the image (Pillow reads an orientation from them).
_ORIENTING_TEXT = (b"Raw profile type exif\0", b"XML:com.adobe.xmp\0")
# The pixel data is inflated (and dropped) this many bytes at a time: under malloc's mmap threshold
# (128 KB), so each piece reuses memory instead of faulting in fresh pages (a 2 MB image: 500 faults)
_INFLATED_PIECE = 1 << 16


def png_whole(raw: bytes) -> bool | None:
    """Whether a PNG that is sent as it is holds whole pixel data, told without decoding it:
    its compressed data (the consecutive IDAT chunks, as Pillow reads them) inflates without an
    error to every row's bytes, and each row begins with one of PNG's five filter types. That is
    everything Pillow's decoder checks (the chunks' checksums are `verify()`'s), at a fraction
    of its cost (no rows unfiltered, no image made). None: a PNG this does not decide
    (interlaced, animated, one whose EXIF or XMP may turn it, an unusual header or a second
    one, pixel data that ends, whole, between two rows): it is decoded.

    The work is bounded: the chunks are walked once, the pixel data is inflated in pieces of
    `_INFLATED_PIECE` bytes (`_inflated`: linear in the data) and only up to the bytes its rows
    need (the pixel limit is checked before), and each piece's filter bytes are read by one slice."""
    if not raw.startswith(PNG_SIGNATURE):
        return None
    view = memoryview(raw)
    header, compressed, at, after_data = None, [], len(PNG_SIGNATURE), False
    while at + 8 <= len(raw):
        length, kind = int.from_bytes(view[at : at + 4], "big"), bytes(view[at + 4 : at + 8])
        body = view[at + 8 : at + 8 + length]
        if kind == b"IHDR":
            if header is not None:
                return None  # Pillow reads the last one before the data, and none after it: it decides
            header = bytes(body)
        elif kind == b"IDAT" and not after_data:
            compressed.append(body)
        elif kind in (b"eXIf", b"acTL") or (kind in (b"tEXt", b"zTXt", b"iTXt")
                                            and bytes(body[:24]).startswith(_ORIENTING_TEXT)):
            return None
        elif kind == b"IEND":
            break
        after_data = after_data or (bool(compressed) and kind != b"IDAT")
        at += 12 + length
    if header is None or len(header) != 13 or not compressed:
        return None
    width, height = int.from_bytes(header[0:4], "big"), int.from_bytes(header[4:8], "big")
    depth, colour, method, filtering, interlace = header[8:13]
    samples, depths = _PNG_SAMPLES.get(colour, (0, ()))
    if depth not in depths or method or filtering or interlace:
        return None
    row = 1 + (width * samples * depth + 7) // 8  # a filter byte, then the row's pixels
    # Inflated as Pillow inflates it (zlib's header and, once reached, its checksum checked by zlib).
    inflate, needed, done = zlib.decompressobj(), height * row, 0
    try:
        for piece in _inflated(inflate, compressed, needed):
            if max(piece[-done % row :: row], default=0) > 4:
                return False  # no filter type
            done += len(piece)
    except zlib.error:
        return False
    if done == needed:
        return True
    # The data ended before the last row. Between two rows, Pillow may take that for the image's
    # end, or not, by how the stream's last bytes fall across the IDAT chunks: it decides.
    return None if inflate.eof and 0 < done and done % row == 0 else False


def _inflated(inflate: zlib._Decompress, compressed: list[memoryview], needed: int) -> Iterator[bytes]:
    """The first `needed` bytes `compressed` inflates to (fewer where it ends sooner), in pieces of
    at most `_INFLATED_PIECE`. It is handed to zlib in pieces of that size too: what zlib keeps
    back of an input is copied for the next call, so the whole data would be copied once per piece."""
    done = 0
    for chunk in compressed:
        for start in range(0, len(chunk), _INFLATED_PIECE):
            pending: bytes | memoryview = chunk[start : start + _INFLATED_PIECE]
            while pending and not inflate.eof:
                piece = inflate.decompress(pending, min(_INFLATED_PIECE, needed - done))
                pending, done = inflate.unconsumed_tail, done + len(piece)
                yield piece
                if done >= needed:
                    return


def _too_many_pixels(source: str, size: tuple[int, int] | None, limit: int) -> ProblemError:
    what = f"{size[0]}x{size[1]} = {size[0] * size[1]:,} pixels" if size else "more pixels than Pillow decodes"
    return ProblemError(f"image {source} has {what}, over limits.image_pixels ({limit:,})",
                        fix="pass a smaller image or raise limits.image_pixels in agents.yaml")


def _check_pixels(source: str, size: tuple[int, int], limit: int) -> None:
    if size[0] * size[1] > limit:
        raise _too_many_pixels(source, size, limit)


def _has_orientation(image: Image.Image) -> bool:
    try:
        return bool(image.getexif().get(0x0112, 1) != 1)
    except Exception:  # noqa: BLE001 - a broken EXIF block is not worth failing the image for
        return False
