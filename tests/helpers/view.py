"""Shared by the tests of tests/report/test_view.py and others: Node, assert_nothing_executable, parse."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

from maps_autogen.report.view import SCRIPT
from tests.helpers.chromium import Chromium, Tab, chromium  # noqa: F401 - chromium is a fixture


@dataclass
class Node:
    tag: str
    attrs: dict[str, str]
    children: list[Node] = field(default_factory=list)
    text_parts: list[str] = field(default_factory=list)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def text(self) -> str:
        """All text inside, in document order."""
        return "".join(self.text_parts)

    def walk(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            yield from child.walk()

    def find_all(self, tag: str | None = None, cls: str | None = None, **attrs: str) -> list[Node]:
        return [node for node in self.walk() if (tag is None or node.tag == tag) and (cls is None or cls in node.classes)
                and all(node.attrs.get(key.replace("_", "-")) == value for key, value in attrs.items())]


VOID = {"meta", "img", "br", "hr", "input", "link"}


class DomBuilder(HTMLParser):
    """Builds the element tree the way a browser's tokenizer sees the markup."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Node("#root", {})
        self.stack = [self.root]

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Node(tag, {key: value or "" for key, value in attrs})
        self.stack[-1].children.append(node)
        if tag not in VOID:
            self.stack.append(node)

    def handle_endtag(self, tag: str) -> None:
        for depth in range(len(self.stack) - 1, 0, -1):
            if self.stack[depth].tag == tag:
                del self.stack[depth:]
                return

    def handle_data(self, data: str) -> None:
        for node in self.stack:
            node.text_parts.append(data)


def parse(page: str) -> Node:
    builder = DomBuilder()
    builder.feed(page)
    builder.close()
    return builder.root


def assert_nothing_executable(dom: Node, image_prefix: str = "data:image/png;base64,") -> None:
    """Only the page's own script; no event handler, javascript: URL, frame or foreign image."""
    scripts = dom.find_all("script")
    assert [node.text() for node in scripts] == [SCRIPT]
    for node in dom.walk():
        assert not any(name.startswith("on") for name in node.attrs), (node.tag, node.attrs)
        assert not any(value.strip().lower().startswith("javascript:") for value in node.attrs.values()), node.attrs
        assert node.tag not in ("iframe", "svg", "object", "embed", "base", "form", "link")
    for image in dom.find_all("img"):
        assert image.attrs["src"].startswith(image_prefix)
