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


if __name__ == "__main__":
    draw_lever(HERE / "lever" / "lever.png")
