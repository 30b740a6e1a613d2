"""What a request on a model that cannot see (or a request over an endpoint's image cap) must
say of each image it does not carry: its note, once, under the images heading, worded as the
prompt file writes it; nothing else changed (no stray "notes from the user")."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
TASK = yaml.safe_load((REPO / "maps_autogen" / "settings" / "defaults" / "prompts" / "task.yaml").read_text())
LABELS: dict[str, str] = TASK["labels"]


def note_for(tag: str, name: str, width: int, height: int, *, template: str = "image_note",
             max_images: int | None = None) -> str:
    """The note as the built-in prompt file words it for one image."""
    text = str(TASK[template])
    values = {"tag": tag, "name": name, "width": width, "height": height, "max_images": max_images}
    return re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: str(values[m.group(1)]), text)


def assert_notes_once_under_images(text: str, notes: list[str]) -> None:
    """`text` (a request's user text) carries each of `notes` exactly once, together, right under
    the images heading, and no section the run did not ask for (a person's notes)."""
    section = f"## {LABELS['images']}\n" + "\n".join(notes)
    assert (text + "\n\n").count(section + "\n\n") == 1, text  # the section whole, ended by a blank line or the end
    for note in notes:
        assert text.count(note) == 1, text
    assert f"## {LABELS['user_notes']}" not in text, text
    bullets = [line for line in text.splitlines() if re.fullmatch(r"- .?", line)]
    assert not bullets, bullets  # no one-character bullet lines
