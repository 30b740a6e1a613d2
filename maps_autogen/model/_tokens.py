"""Token counts we compute ourselves, for when a service reports no usage and for the benchmarks.

Text is counted with `o200k_base` (GPT-4o's vocabulary, shipped inside the `toktok-rs` wheel, so
counting works offline) plus the chat format's fixed cost per message; each image costs what
GPT-4o charges for it at high detail: 85 tokens plus 170 per 512-pixel tile, after the API
scales the image to fit in 2048 x 2048 and then its shortest side down to 768.
"""

from __future__ import annotations

import base64
import binascii
import io
import math
from collections.abc import Callable, Iterable
from typing import Any

import toktok
from PIL import Image, UnidentifiedImageError

TEXT_ENCODING = "o200k_base"
TOKENS_PER_MESSAGE = 3  # the chat format's role and separator tokens
TOKENS_PER_NAME = 1
TOKENS_PER_REPLY = 3  # the assistant turn every request primes
IMAGE_BASE_TOKENS = 85
IMAGE_TILE_TOKENS = 170
IMAGE_TILE_PX = 512
IMAGE_FIT_PX = 2048
IMAGE_SHORT_SIDE_PX = 768
METHOD = (
    f"text: {TEXT_ENCODING} tokens + {TOKENS_PER_MESSAGE} per message + {TOKENS_PER_REPLY} per request; "
    f"images: GPT-4o's rule, {IMAGE_BASE_TOKENS} + {IMAGE_TILE_TOKENS} per {IMAGE_TILE_PX}-px tile after scaling "
    f"to fit {IMAGE_FIT_PX} px and the shortest side to {IMAGE_SHORT_SIDE_PX} px"
)

ImageSize = Callable[[dict[str, Any]], tuple[int, int]]


def text_tokens(texts: Iterable[str]) -> list[int]:
    """The o200k_base token count of each text."""
    counts: list[int] = toktok.batch_count(list(texts), TEXT_ENCODING, threads=1)
    return counts


def image_tokens(width: int, height: int) -> int:
    """What GPT-4o charges for a width x height image at high detail."""
    if width <= 0 or height <= 0:
        return IMAGE_BASE_TOKENS
    scale = min(1.0, IMAGE_FIT_PX / max(width, height))
    fit_width, fit_height = width * scale, height * scale
    scale = min(1.0, IMAGE_SHORT_SIDE_PX / min(fit_width, fit_height))
    fit_width, fit_height = fit_width * scale, fit_height * scale
    tiles = math.ceil(round(fit_width, 6) / IMAGE_TILE_PX) * math.ceil(round(fit_height, 6) / IMAGE_TILE_PX)
    return IMAGE_BASE_TOKENS + IMAGE_TILE_TOKENS * tiles


def data_url_size(part: dict[str, Any]) -> tuple[int, int]:
    """The pixel size of an `image_url` part holding a base64 data URL ((0, 0) if unreadable:
    a remote URL, or data that is not an image)."""
    url = (part.get("image_url") or {}).get("url", "")
    header, _, payload = url.partition(",")
    if not header.startswith("data:") or ";base64" not in header:
        return (0, 0)
    try:
        with Image.open(io.BytesIO(base64.b64decode(payload))) as image:  # reads the header only
            return image.size
    except (binascii.Error, ValueError, UnidentifiedImageError, OSError):
        return (0, 0)


def prompt_tokens(messages: list[dict[str, Any]], image_size: ImageSize = data_url_size) -> int:
    """The prompt tokens of a chat request: text parts with o200k_base, image parts (any part
    that is not text) with GPT-4o's tile rule, their size from `image_size`."""
    texts: list[str] = []
    total = TOKENS_PER_REPLY
    for message in messages:
        total += TOKENS_PER_MESSAGE
        texts.append(str(message.get("role") or ""))
        if message.get("name"):
            total += TOKENS_PER_NAME
            texts.append(str(message["name"]))
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                if part.get("type") == "text":
                    texts.append(part.get("text") or "")
                else:
                    total += image_tokens(*image_size(part))
        elif content:
            texts.append(str(content))
    return total + sum(text_tokens(texts))


def estimate_usage(messages: list[dict[str, Any]], reply: str) -> dict[str, int]:
    """Usage as a service would report it, computed by `METHOD`."""
    prompt = prompt_tokens(messages)
    completion = text_tokens([reply])[0]
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
