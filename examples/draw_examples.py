"""Draws the example diagrams (our own). Run: python examples/draw_examples.py"""

from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

HERE = Path(__file__).resolve().parent


def draw_lever(path: Path) -> None:
    image = Image.new("RGB", (640, 320), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default()
    # beam and fulcrum
    draw.rectangle((70, 150, 570, 160), fill=(90, 90, 90))
    draw.polygon([(320, 160), (295, 215), (345, 215)], fill=(40, 40, 160))
    draw.line((40, 215, 600, 215), fill="black", width=2)
    # left mass: 3 kg at 0.4 m; right mass: unknown at 0.6 m
    draw.rectangle((140, 95, 200, 150), outline="black", width=3, fill=(230, 200, 200))
    draw.text((155, 115), "3 kg", fill="black", font=font)
    draw.rectangle((500, 95, 560, 150), outline="black", width=3, fill=(200, 230, 200))
    draw.text((522, 115), "m ?", fill="black", font=font)
    # distance markers
    draw.line((170, 250, 320, 250), fill="black", width=2)
    draw.text((225, 258), "0.4 m", fill="black", font=font)
    draw.line((320, 250, 530, 250), fill="black", width=2)
    draw.text((410, 258), "0.6 m", fill="black", font=font)
    for x in (170, 320, 530):
        draw.line((x, 242, x, 258), fill="black", width=2)
    draw.text((250, 20), "Light lever in equilibrium", fill="black", font=font)
    image.save(path)


def _resistor(draw: ImageDraw.ImageDraw, x: int, top: int, bottom: int, label: str, font) -> None:
    """A vertical resistor (a box on a wire) between y=top and y=bottom at x, labelled at its right."""
    middle = (top + bottom) // 2
    draw.line((x, top, x, middle - 35), fill="black", width=3)
    draw.rectangle((x - 14, middle - 35, x + 14, middle + 35), outline="black", width=3, fill="white")
    draw.line((x, middle + 35, x, bottom), fill="black", width=3)
    draw.text((x + 22, middle - 6), label, fill="black", font=font)


def draw_circuit(path: Path) -> None:
    """A battery driving two resistors in parallel; the values appear only in the picture."""
    image = Image.new("RGB", (640, 360), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default()
    left, right, top, bottom = 90, 500, 70, 290
    # the outer wires: top rail, bottom rail, and the battery's branch on the left
    draw.line((left, top, right, top), fill="black", width=3)
    draw.line((left, bottom, right, bottom), fill="black", width=3)
    middle = (top + bottom) // 2
    draw.line((left, top, left, middle - 12), fill="black", width=3)
    draw.line((left, middle + 12, left, bottom), fill="black", width=3)
    # battery: a long plate (+) above a short plate (-)
    draw.line((left - 30, middle - 12, left + 30, middle - 12), fill="black", width=4)
    draw.line((left - 15, middle + 12, left + 15, middle + 12), fill="black", width=6)
    draw.text((left - 42, middle - 24), "+", fill="black", font=font)
    draw.text((left + 40, middle - 6), "12 V", fill="black", font=font)
    _resistor(draw, 300, top, bottom, "R1 = 4 ohm", font)
    _resistor(draw, right, top, bottom, "R2 = 12 ohm", font)
    draw.text((250, 20), "Battery and two resistors", fill="black", font=font)
    image.save(path)


if __name__ == "__main__":
    draw_lever(HERE / "lever" / "lever.png")
    draw_circuit(HERE / "circuit" / "circuit.png")
