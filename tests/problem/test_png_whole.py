"""A PNG sent as it is has its pixel data checked whole without being decoded
(`problem._images.png_whole`): on every PNG, whole or damaged, it says what Pillow's full decode
says (the oracle), or leaves the PNG to that decode; and the PNGs it leaves (EXIF or XMP that
may turn them, interlaced, animated) are still decoded and turned."""

from __future__ import annotations

import io
import random
import struct
import zlib
from collections.abc import Callable

import pytest
from PIL import Image

import maps_autogen.problem._images
from maps_autogen._util._errors import ProblemError
from maps_autogen.problem._images import PNG_SIGNATURE, image_from_bytes, png_whole


def _png(image: Image.Image, **options: object) -> bytes:
    out = io.BytesIO()
    image.save(out, format="PNG", **options)
    return out.getvalue()


def _chunks(png: bytes) -> list[tuple[bytes, bytes]]:
    found, at = [], len(PNG_SIGNATURE)
    while at < len(png):
        (length,) = struct.unpack(">I", png[at : at + 4])
        found.append((png[at + 4 : at + 8], png[at + 8 : at + 8 + length]))
        at += 12 + length
    return found


def _assembled(chunks: list[tuple[bytes, bytes]]) -> bytes:
    """A PNG of these chunks, every checksum right (so Pillow's verify() passes)."""
    return PNG_SIGNATURE + b"".join(
        struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body)) for kind, body in chunks)


def _with_data(png: bytes, change: Callable[[bytes], bytes]) -> bytes:
    """`png` with its compressed pixel data (all IDATs, as one) changed, checksums recomputed."""
    chunks = _chunks(png)
    data = change(b"".join(body for kind, body in chunks if kind == b"IDAT"))
    first = next(number for number, (kind, _) in enumerate(chunks) if kind == b"IDAT")
    rest = [chunk for chunk in chunks if chunk[0] != b"IDAT"]
    return _assembled([*rest[:first], (b"IDAT", data), *rest[first:]])


def _rows_changed(png: bytes, change: Callable[[bytearray], None]) -> bytes:
    """`png` with its inflated rows changed, then compressed again (a valid zlib stream)."""
    return _with_data(png, lambda data: zlib.compress(bytes(_changed(zlib.decompress(data), change))))


def _changed(rows: bytes, change: Callable[[bytearray], None]) -> bytearray:
    editable = bytearray(rows)
    change(editable)
    return editable


def _decodes(png: bytes) -> bool:
    """The oracle: Pillow's own verify and full decode."""
    try:
        with Image.open(io.BytesIO(png)) as probe:
            probe.verify()
        with Image.open(io.BytesIO(png)) as image:
            image.load()
    except Exception:  # noqa: BLE001 - any failure is "not readable"
        return False
    return True


def _noisy(mode: str, size: tuple[int, int]) -> Image.Image:
    return Image.effect_noise(size, 60).convert("L").convert(mode)


# Every colour type and bit depth Pillow writes, at widths that leave a partial last byte.
IMAGES = [
    ("1", (37, 11)), ("L", (23, 9)), ("LA", (19, 7)), ("P", (29, 13)), ("RGB", (240, 160)), ("RGBA", (31, 17)),
    ("I;16", (13, 5)),
]


def _samples() -> list[bytes]:
    """Whole PNGs (several compression levels, split pixel data) and damaged ones."""
    whole = [_png(_noisy(mode, size), compress_level=level) for mode, size in IMAGES for level in (0, 1, 9)]
    whole.append(_assembled([(kind, body) for kind, body in _chunks(whole[12]) if kind != b"IDAT"][:-1]
                            + [(b"IDAT", piece) for piece in _split(b"".join(
                                body for kind, body in _chunks(whole[12]) if kind == b"IDAT"))]
                            + [(b"IEND", b"")]))
    damaged = []
    chooser = random.Random(47)
    for png in whole:
        data_size = sum(len(body) for kind, body in _chunks(png) if kind == b"IDAT")
        for _ in range(6):  # bytes overwritten inside the compressed data, checksums right
            at, width = chooser.randrange(2, max(3, data_size - 4)), chooser.randrange(1, 24)
            damaged.append(_with_data(png, lambda data, at=at, width=width: data[:at] + bytes(width) + data[at + width:]))
        damaged.append(_with_data(png, lambda data: data[: len(data) // 2]))  # the stream cut short
        damaged.append(_with_data(png, lambda data: data[:-4]))  # without its checksum: Pillow stops before it
        damaged.append(_with_data(png, lambda data: data + b"trailing"))  # more than the rows need
        damaged.append(_with_data(png, lambda data: bytes([data[0], data[1] | 0x20]) + data[2:]))  # a preset dictionary
        damaged.append(_with_data(png, lambda data: bytes([0x88]) + data[1:]))  # a window over 32 KB
        damaged.append(_rows_changed(png, lambda rows: rows.__setitem__(0, 5)))  # no such filter type
        damaged.append(_rows_changed(png, lambda rows: rows.__setitem__(len(rows) - 1 - len(rows) // 3, 9)))
        damaged.append(_rows_changed(png, lambda rows: rows.extend(bytes(7))))  # rows longer than they are
        damaged.append(_rows_changed(png, lambda rows: rows.__delitem__(slice(len(rows) - 3, None))))  # shorter
    return whole + damaged


def _inflated(png: bytes) -> bytes:
    return zlib.decompress(b"".join(body for kind, body in _chunks(png) if kind == b"IDAT"))


def _row_bytes(png: bytes) -> int:
    """The bytes of one row of `png`'s pixel data (its filter byte included)."""
    (height,) = struct.unpack(">I", _chunks(png)[0][1][4:8])
    return len(_inflated(png)) // height


def _split(data: bytes, size: int = 97) -> list[bytes]:
    return [data[at : at + size] for at in range(0, len(data), size)] + [b""]


def _in_pieces(png: bytes) -> bytes:
    """`png` with its pixel data in IDAT chunks of 3 bytes."""
    chunks = _chunks(png)
    data = b"".join(body for kind, body in chunks if kind == b"IDAT")
    rest = [chunk for chunk in chunks if chunk[0] != b"IDAT"]
    return _assembled([*rest[:-1], *((b"IDAT", piece) for piece in _split(data, 3)), rest[-1]])


def test_a_stream_that_ends_between_rows_is_left_to_pillow() -> None:
    """A PNG whose pixel data ends, whole, after some of its rows: Pillow takes that for the
    image's end or not by how the stream's last bytes fall across its IDAT chunks, so the check
    leaves it to Pillow's decode, and it is refused exactly when Pillow refuses it."""
    verdicts = set()
    for mode, size in IMAGES:
        png = _png(_noisy(mode, size))
        row = _row_bytes(png)
        for kept in (row, row * 2, len(_inflated(png)) // row // 2 * row):
            cut = _rows_changed(png, lambda rows, kept=kept: rows.__delitem__(slice(kept, None)))
            for sample in (cut, _in_pieces(cut)):
                assert png_whole(sample) is None
                readable = _decodes(sample)
                try:
                    image_from_bytes(sample, name="a.png", source="a.png", max_side=2048)
                except ProblemError:
                    assert not readable
                else:
                    assert readable
                verdicts.add(readable)
    assert verdicts == {True, False}  # Pillow takes some and refuses others


@pytest.mark.parametrize("piece", [None, 997])  # 997: rows cut across the pieces inflated
def test_the_check_says_what_pillows_decode_says_on_whole_and_damaged_pngs(
    piece: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if piece is not None:
        monkeypatch.setattr(maps_autogen.problem._images, "_INFLATED_PIECE", piece)
    samples = _samples()
    told = [png_whole(png) for png in samples]
    assert told.count(None) == 0, "each of these is a PNG the check decides"
    disagreeing = [number for number, (png, whole) in enumerate(zip(samples, told, strict=True))
                   if whole != _decodes(png)]
    assert not disagreeing
    assert told.count(True) >= len(IMAGES) * 3 and told.count(False) >= len(samples) // 2  # both kinds are there


def test_a_damaged_png_with_right_checksums_is_refused_and_a_whole_one_sent_as_it_is() -> None:
    good = _png(_noisy("RGB", (240, 160)))
    image = image_from_bytes(good, name="a.png", source="a.png", max_side=2048)
    assert image.data == good and image.mime == "image/png" and (image.width, image.height) == (240, 160)
    broken = _rows_changed(good, lambda rows: rows.__setitem__(len(rows) // 2 // 721 * 721, 7))
    with pytest.raises(ProblemError, match="a.png is not a readable image"):
        image_from_bytes(broken, name="a.png", source="a.png", max_side=2048)


def _text_chunk(kind: bytes, keyword: bytes, text: bytes) -> tuple[bytes, bytes]:
    body = keyword + b"\0" + (b"\0\0\0\0" + text if kind == b"iTXt" else text)
    return kind, body


def _xmp_turned(png: bytes) -> bytes:
    xmp = b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:Description tiff:Orientation="6"/></x:xmpmeta>'
    chunks = _chunks(png)
    return _assembled([chunks[0], _text_chunk(b"iTXt", b"XML:com.adobe.xmp", xmp), *chunks[1:]])


def test_pngs_the_check_leaves_are_decoded_and_turned() -> None:
    plain = Image.effect_noise((60, 20), 60).convert("RGB")
    exif = Image.Exif()
    exif[0x0112] = 6  # turned 90 degrees clockwise to display
    turned = _png(plain, exif=exif)
    interlaced = _assembled([(kind, body[:12] + b"\x01" if kind == b"IHDR" else body)
                             for kind, body in _chunks(_png(Image.new("L", (1, 1))))])
    for png in (turned, _xmp_turned(_png(plain)), interlaced):
        assert png_whole(png) is None
    for png in (turned, _xmp_turned(_png(plain))):
        image = image_from_bytes(png, name="t.png", source="t.png", max_side=2048)
        assert (image.width, image.height) == (20, 60) and image.data != png  # turned, so encoded anew


def _header(width: int, height: int) -> tuple[bytes, bytes]:
    return b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)  # 8-bit grey


def test_a_second_header_is_left_to_pillow_never_believed() -> None:
    """Pillow reads the header before the pixel data; one written after it (or a second one) is
    not what the image is decoded by: a PNG with one is left to the decode, so a damaged PNG is
    not made whole by a header that claims fewer rows, and a bomb of pixel data is not inflated
    for a header that claims more."""
    one_row_cut = zlib.compressobj().compress(b"\0" + bytes(100)) + b"\0"  # one row, the stream cut short
    damaged = _assembled([_header(100, 100), (b"IDAT", one_row_cut), _header(100, 1), (b"IEND", b"")])
    assert png_whole(damaged) is None and not _decodes(damaged)
    with pytest.raises(ProblemError, match="is not a readable image"):
        image_from_bytes(damaged, name="a.png", source="a.png", max_side=2048)
    packer = zlib.compressobj(9)
    bomb = b"".join(packer.compress(bytes(1 << 20)) for _ in range(64)) + packer.flush()  # 64 MB of zeros
    for chunks in ([_header(1, 1), (b"IDAT", bomb), _header(1 << 20, 1 << 20), (b"IEND", b"")],
                   [_header(1, 1), _header(1 << 20, 1 << 20), (b"IDAT", bomb), (b"IEND", b"")]):
        assert png_whole(_assembled(chunks)) is None


_DECOMPRESSOBJ = zlib.decompressobj


class _Counted:
    """zlib's decompressor, counting the compressed bytes it is handed (what it keeps back of a
    call's input is copied and handed over again by the next)."""

    handed = 0

    def __init__(self) -> None:
        self._inflate = _DECOMPRESSOBJ()

    def decompress(self, data: bytes, max_length: int = 0) -> bytes:
        _Counted.handed += len(data)
        return self._inflate.decompress(data, max_length)

    def __getattr__(self, name: str) -> object:
        return getattr(self._inflate, name)


def test_the_pixel_data_is_handed_to_zlib_about_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The work is linear in the data: a PNG stored without compression (its data as large as its
    rows, inflated in hundreds of pieces) has its data handed to zlib about once, not once per piece."""
    png = _png(Image.effect_noise((640, 640), 60).convert("RGB"), compress_level=0)
    monkeypatch.setattr(zlib, "decompressobj", _Counted)
    assert png_whole(png) is True
    data = sum(len(body) for kind, body in _chunks(png) if kind == b"IDAT")
    assert data > 16 * maps_autogen.problem._images._INFLATED_PIECE  # many pieces
    assert _Counted.handed <= 2 * data
