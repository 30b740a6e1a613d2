"""Loading benchmark rows: from the Hugging Face hub with `datasets`, or from a local copy
(a `save_to_disk` folder, parquet, or JSONL with image files beside it)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from maps_autogen._util import MAX_NESTING, DataError, NumberTooLong, json_loads, nesting_depth_over
from maps_autogen.problem._hub import check_hub, import_datasets, offline_error, offline_requested
from maps_autogen.problem._images import (
    HEADER_BYTES,
    ImageInput,
    file_head,
    fitted_size,
    header_size,
    image_from_bytes,
    image_from_pil,
    load_image,
)
from maps_autogen.problem._problem import Problem
from maps_autogen.problem._tasks import Row, Subset
from maps_autogen.records import checked_reference

LOCAL_SUFFIXES = (".parquet", ".jsonl", ".json")
_IMAGE_FIELD = re.compile(r"image_(\d+)")
_PLACEHOLDER = re.compile(r"<image_(\d+)>")


def _is_saved_dataset(path: Path) -> bool:
    markers = ("dataset_info.json", "state.json", "dataset_dict.json")
    return path.is_dir() and any((path / marker).exists() for marker in markers)


def _from_disk(path: Path, split: str) -> Iterator[dict[str, Any]]:
    datasets = import_datasets()

    try:
        loaded = datasets.load_from_disk(str(path))
    except Exception as error:  # noqa: BLE001 - datasets raises many types for a damaged folder
        raise DataError(f"cannot read the saved data set at {path}: {error}",
                        fix="pass a folder written by save_to_disk") from None
    if isinstance(loaded, datasets.DatasetDict):
        if split in loaded:
            loaded = loaded[split]
        elif len(loaded) == 1:
            loaded = next(iter(loaded.values()))
        else:
            raise DataError(f"{path} has splits {', '.join(loaded)} but not '{split}'", fix=f"save the '{split}' split")
    yield from images_undecoded(loaded)


def _from_parquet(*paths: Path) -> Iterator[dict[str, Any]]:
    """Rows of one parquet file, or of the shards of one split in order."""
    datasets = import_datasets()

    try:
        loaded = datasets.load_dataset("parquet", data_files=[str(path) for path in paths], split="train")
    except Exception as error:  # noqa: BLE001 - pyarrow and datasets raise many types for a damaged file
        where = paths[0] if len(paths) == 1 else paths[0].parent
        raise DataError(f"cannot read parquet file {where}: {error}", fix="check the file") from None
    yield from images_undecoded(loaded)


class NumberedRow(dict[str, Any]):
    """A row read from a JSONL line, remembering the line number for error messages."""

    line: int | None = None


def split_files(folder: Path, split: str) -> list[Path]:
    """The files of `split` in a folder, as a download from the hub lays them out: the first
    found of `<split>.parquet|.jsonl|.json`; shards `<split>-00000-of-00002….parquet`;
    `<split>/*.parquet`; the same three under `data/` (a repo snapshot); or every parquet file
    of a folder named after the split (`<config>/<split>/0000.parquet`)."""
    for base in (folder, folder / "data"):
        for suffix in LOCAL_SUFFIXES:
            if (base / f"{split}{suffix}").is_file():
                return [base / f"{split}{suffix}"]
        for pattern in (f"{split}-*.parquet", f"{split}/*.parquet"):
            shards = sorted(path for path in base.glob(pattern) if path.is_file())
            if shards:
                return shards
    if folder.name == split:
        return sorted(path for path in folder.glob("*.parquet") if path.is_file())
    return []


def _from_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    try:
        # Bytes that are not UTF-8 are kept as lone surrogates, so the row check can name the
        # line instead of the read failing half-way with no line at all.
        handle = open(path, encoding="utf-8", errors="surrogateescape")
    except OSError as error:
        raise DataError(f"cannot read {path}: {error.strerror or error}", fix="check the --data path") from None
    with handle:
        if path.suffix == ".json":
            try:
                data = json_loads(handle.read())
            except json.JSONDecodeError as error:
                raise DataError(f"{path} is not valid JSON: {error.msg} at line {error.lineno}",
                                fix="fix the file") from None
            except NumberTooLong as error:
                raise DataError(f"{path} {error}", fix="fix the file") from None
            except RecursionError:
                raise DataError(f"{path} nests JSON too deeply", fix="fix the file") from None
            if nesting_depth_over(data, MAX_NESTING + 1):  # the rows, one level down
                raise DataError(f"{path} nests JSON more than {MAX_NESTING} levels deep", fix="fix the file")
            if not isinstance(data, (list, dict)):
                raise DataError(f"{path} holds a JSON {type(data).__name__}, not a list or object of rows",
                                fix="fix the file")
            yield from data if isinstance(data, list) else data.values()
            return
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json_loads(line)
            except json.JSONDecodeError as error:
                raise DataError(f"{path} line {number} is not valid JSON: {error.msg}", fix="fix the line") from None
            except NumberTooLong as error:
                raise DataError(f"{path} line {number} {error}", fix="fix the line") from None
            except RecursionError:
                raise DataError(f"{path} line {number} nests JSON too deeply", fix="fix the line") from None
            if nesting_depth_over(row):
                raise DataError(f"{path} line {number} nests JSON more than {MAX_NESTING} levels deep",
                                fix="fix the line") from None
            if isinstance(row, dict):
                row = NumberedRow(row)
                row.line = number
            yield row


def local_rows(path: Path, config: str | None, split: str) -> tuple[Iterator[dict[str, Any]], Path]:
    """Rows of one config from a local copy, and the folder relative image paths start from.

    `path` may be the data of that config itself (a saved folder, parquet or JSONL), or a
    folder holding one entry per config: `<config>/`, `<config>.parquet` or `<config>.jsonl`.
    """
    if not path.exists():
        raise DataError(f"local data {path} does not exist", fix="check the --data path")
    if config is not None and path.is_dir() and not _is_saved_dataset(path):
        for candidate in (path / config, *(path / f"{config}{suffix}" for suffix in LOCAL_SUFFIXES)):
            if candidate.exists():
                return local_rows(candidate, None, split)
        if not split_files(path, split):  # else the folder is one config's own download
            raise DataError(f"{path} has no data for '{config}'",
                            fix=f"add {config}/ (save_to_disk), {config}.parquet or {config}.jsonl")
    if _is_saved_dataset(path):
        return _from_disk(path, split), path
    if path.is_dir():
        files = split_files(path, split)
        if len(files) == 1:
            return local_rows(files[0], None, split)
        if files:
            return _from_parquet(*files), files[0].parent
        raise DataError(
            f"{path} is not a saved data set and holds no '{split}' data ({split}.parquet, {split}.jsonl, "
            f"{split}-*.parquet, {split}/*.parquet, data/…)",
            fix="see the layouts --data accepts in docs/benchmarks.md",
        )
    if path.suffix == ".parquet":
        return _from_parquet(path), path.parent
    if path.suffix in (".jsonl", ".json"):
        return _from_jsonl(path), path.parent
    raise DataError(f"{path} is not a data set this tool reads", fix="use a save_to_disk folder, .parquet or .jsonl")


def hub_rows(hub_id: str, config: str | None, split: str) -> Iterator[dict[str, Any]]:
    """Rows from the Hugging Face hub (cached by `datasets`); offline (the user's HF_HUB_OFFLINE,
    or no network found by one short probe) they come from the cache or fail at once."""
    offline = check_hub(hub_id)
    try:
        datasets = import_datasets(offline=offline)
        loaded = datasets.load_dataset(hub_id, config, split=split)
    except Exception as error:  # noqa: BLE001 - offline, unknown id, auth: all mean "use a local copy"
        if offline:
            raise offline_error(hub_id, requested=offline_requested()) from None
        detail = " ".join(str(error).split())[:200]
        raise DataError(
            f"cannot load {hub_id}{f' ({config})' if config else ''} from the Hugging Face hub: {detail}",
            fix="check the network, or download the data elsewhere and pass --data PATH",
        ) from None
    yield from images_undecoded(loaded)


def images_undecoded(dataset: Any) -> Any:
    """The data set with its image columns read as {"bytes", "path"} instead of decoded
    pictures: rows stay small, and each image is decoded when its problem starts."""
    datasets = import_datasets()
    for name, feature in dataset.features.items():
        if isinstance(feature, datasets.Image) and feature.decode:
            dataset = dataset.cast_column(name, datasets.Image(decode=False))
    return dataset


def rows_for(hub_id: str, config: str | None, split: str,
             data: Path | None) -> tuple[Iterator[dict[str, Any]], Path | None]:
    """Rows of one config, from `data` when given, else from the hub."""
    if data is not None:
        return local_rows(data, config, split)
    return hub_rows(hub_id, config, split), None


def image_from_field(value: Any, *, name: str, base_dir: Path | None, max_side: int) -> ImageInput | None:
    """An image from a data set field: a decoded PIL image, {"bytes", "path"}, or a path.

    `name` is the image's name without extension: the extension of its real format is added
    (a JPEG is never stored as `<pid>.png`)."""
    image = _decode_field(value, name=name, base_dir=base_dir, max_side=max_side)
    return None if image is None else replace(image, name=f"{name}.{image.extension}")


def image_size_from_field(value: Any, *, name: str, base_dir: Path | None, max_side: int) -> tuple[int, int] | None:
    """The size the image of a data set field is sent at, from its file's header (no pixel
    decoded, at most `images.HEADER_BYTES` read); None when the field holds no image. Raises
    DataError when the header does not say (a URL, an unsupported or damaged file): the caller
    reads the image instead."""
    if _is_empty_field(value):
        return None
    head: bytes | None = None
    if hasattr(value, "size") and not isinstance(value, (bytes, bytearray, str, dict)):  # a decoded PIL image
        width, height = value.size
        return fitted_size(width, height, max_side) if width > 0 and height > 0 else None
    if isinstance(value, dict):
        value = value.get("bytes") or value.get("path")
    if isinstance(value, (bytes, bytearray)):
        head = bytes(value[:HEADER_BYTES])
    elif isinstance(value, str) and not value.startswith(("http://", "https://", "data:")):
        try:
            path = Path(checked_reference(value, base_dir, what=f"data set image {name}"))
            head = file_head(path if path.is_absolute() or base_dir is None else base_dir / path)
        except OSError as error:
            raise DataError(f"cannot read data set image {name}: {error.strerror or error}") from None
    size = header_size(head, max_side=max_side) if head is not None else None
    if size is None:
        raise DataError(f"the size of data set image {name} is not in its header")
    return size


def _is_empty_field(value: Any) -> bool:
    """Whether an image field holds no image (`_decode_field` gives None for it)."""
    if isinstance(value, dict):
        return not value.get("bytes") and not value.get("path")
    return value is None or value == ""


def check_image_reference(value: Any, *, name: str, base_dir: Path | None) -> None:
    """Before any problem runs: a file an image field names must be inside the data folder
    (`checked_reference`). Only the path is looked at; the file is read when its problem starts."""
    if isinstance(value, dict) and not value.get("bytes"):
        value = value.get("path")
    if isinstance(value, str) and value:
        checked_reference(value, base_dir, what=f"data set image {name}")


def _decode_field(value: Any, *, name: str, base_dir: Path | None, max_side: int) -> ImageInput | None:
    if _is_empty_field(value):
        return None
    try:
        from PIL import Image

        if isinstance(value, Image.Image):
            return image_from_pil(value, name=name, max_side=max_side)
    except ImportError:  # pragma: no cover - pillow is a dependency
        pass
    if isinstance(value, dict):
        if value.get("bytes"):
            return image_from_bytes(bytes(value["bytes"]), name=name, source=name, max_side=max_side)
        value = value.get("path")
        if not value:
            return None
    if isinstance(value, (bytes, bytearray)):
        return image_from_bytes(bytes(value), name=name, source=name, max_side=max_side)
    if isinstance(value, str):
        checked = checked_reference(value, base_dir, what=f"data set image {name}")
        return load_image(checked, max_side=max_side, base_dir=base_dir)
    raise DataError(f"image field '{name}' has an unexpected type {type(value).__name__}",
                    fix="check the data set's schema")


# --------------------------------------------------------------------------------------------
# Helpers for tasks whose rows hold numbered images (OlympiadBench, EMMA)
# --------------------------------------------------------------------------------------------


def required(fields: Mapping[str, Any], key: str) -> Any:
    """A field every row must have; a DataError naming it otherwise."""
    value = fields.get(key)
    if value is None or value == "":
        raise DataError(f"a data set row has no '{key}'",
                        fix="check that the data follows the benchmark's published schema")
    return value


def _numbered_images(fields: Mapping[str, Any]) -> dict[int, int]:
    """{field number: position} of the row's non-empty image_1, image_2, ... fields, in number
    order (decided from the fields alone: no image is read)."""
    numbers = sorted(int(m.group(1)) for key in fields if (m := _IMAGE_FIELD.fullmatch(str(key))))
    present = [number for number in numbers if not _is_empty_field(fields[f"image_{number}"])]
    return {number: position for position, number in enumerate(present, start=1)}


def row_images(fields: Mapping[str, Any], *, pid: str, base_dir: Path | None,
               max_side: int) -> tuple[tuple[ImageInput, ...], dict[int, int]]:
    """The row's images from image_1, image_2, ... (in number order, empty ones skipped), and the
    renumbering {field number: position} to apply to `<image_N>` placeholders.

    The engine labels images by their position, so when a number is skipped the placeholders
    must be renumbered for "<image_2>" to keep naming the second image shown.
    """
    positions = _numbered_images(fields)
    images = tuple(
        image_from_field(fields[f"image_{number}"], name=f"{pid}_image_{position}", base_dir=base_dir,
                         max_side=max_side)
        for number, position in positions.items()
    )
    return tuple(image for image in images if image is not None), positions


def numbered_image_problem(fields: Mapping[str, Any], *, pid: str, base_dir: Path | None, max_side: int,
                           question: str, answer_format: str, options: tuple[str, ...] = ()) -> Problem:
    """The Problem of a row whose images are image_1, image_2, ...: the images read now, and
    every `<image_N>` in the question, the row's context and the options renumbered to match."""
    images, positions = row_images(fields, pid=pid, base_dir=base_dir, max_side=max_side)
    return Problem(
        question=renumber_placeholders(question, positions),
        context=renumber_placeholders(str(fields.get("context") or "").strip(), positions),
        options=tuple(renumber_placeholders(option, positions) for option in options),
        images=images,
        answer_format=answer_format,
        id=pid,
    )


def numbered_image_fields(fields: Mapping[str, Any]) -> list[Any]:
    """The row's non-empty image_1, image_2, ... fields in number order, unread."""
    return [fields[f"image_{number}"] for number in _numbered_images(fields)]


def check_row_image_references(fields: Mapping[str, Any], *, pid: str, base_dir: Path | None) -> None:
    """`check_image_reference` for each of the row's image_1, image_2, ... fields."""
    for number, position in _numbered_images(fields).items():
        check_image_reference(fields[f"image_{number}"], name=f"{pid}_image_{position}", base_dir=base_dir)


def renumber_placeholders(text: str, positions: Mapping[int, int]) -> str:
    """`<image_N>` → `<image_position>` (one pass, so renumbered tags are not renumbered again)."""
    if all(number == position for number, position in positions.items()):
        return text
    return _PLACEHOLDER.sub(lambda m: f"<image_{positions.get(int(m.group(1)), int(m.group(1)))}>", text)


def config_rows(
    hub_id: str,
    split: str,
    subsets: tuple[Subset, ...],
    data: Path | None,
    *,
    key: str,
    belongs: Callable[[Subset, Mapping[str, Any]], bool],
) -> Iterator[Row]:
    """Rows of each subset's hub config (or local entry), in subset order.

    `belongs` drops rows whose own fields contradict the subset, so one local file holding
    several configs is split correctly. When a single local source serves every subset and a
    row would still count for two of them, the subsets cannot be told apart: a DataError asks
    for one entry per config instead of silently counting the row twice.
    """
    shared_source = data is not None and not _has_config_entries(data, subsets)
    claimed: dict[str, str] = {}
    for subset in subsets:
        rows, base_dir = rows_for(hub_id, subset.source, split, data)
        for fields in rows:
            if not belongs(subset, fields):
                continue
            if shared_source:
                row_key = str(fields.get(key))
                if claimed.setdefault(row_key, subset.name) != subset.name:
                    raise DataError(
                        f"{data} holds rows of several configs that cannot be told apart "
                        f"({key} {row_key} counts for {claimed[row_key]} and {subset.name})",
                        fix="pass a folder with one entry per config: <config>/, <config>.parquet or <config>.jsonl",
                    )
            yield Row(subset.name, dict(fields), base_dir)


def _has_config_entries(data: Path, subsets: tuple[Subset, ...]) -> bool:
    """Whether `data` is a folder with an entry per config (the layout `rows_for` looks up)."""
    if not data.is_dir():
        return False
    return any((data / s.source).exists()
               or any((data / f"{s.source}{suffix}").exists() for suffix in LOCAL_SUFFIXES)
               for s in subsets)
