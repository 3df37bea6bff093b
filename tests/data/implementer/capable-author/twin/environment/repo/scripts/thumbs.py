"""Write media/<name>_thumb.jpg for every original image, at --scale times the base resolution."""

import argparse
from pathlib import Path

ORIGINALS = Path("uploads")
THUMBS = Path("media")
BASE_STEP = 16


def thumbnail(data: bytes, scale: int) -> bytes:
    """Downsample an image's bytes; a higher scale keeps more of them."""
    step = max(1, BASE_STEP // scale)
    return b"THUMB %dx\n" % scale + data[::step]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", type=int, default=1, choices=[1, 2, 4])
    args = parser.parse_args()
    THUMBS.mkdir(exist_ok=True)
    for original in sorted(ORIGINALS.glob("*.jpg")):
        if original.stem.endswith("_thumb"):
            continue
        target = THUMBS / f"{original.stem}_thumb.jpg"
        target.write_bytes(thumbnail(original.read_bytes(), args.scale))
        print(f"{original} -> {target} ({args.scale}x)")


if __name__ == "__main__":
    main()
