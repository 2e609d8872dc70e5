"""An animated GIF written frame by frame (pillow), for :func:`robodyn.plotting.animate_result`.

Each frame is appended to the file as it arrives, so memory stays at one frame whatever the
length of the animation. The first frame fixes one palette (pillow's median cut, 255 colours)
that every later frame is mapped to without dithering: a stick figure's few colours stay
exact and no frame is quantized from scratch. A frame stores only the rectangle where it
differs from the previous one, and in it the unchanged pixels as transparent (GIF frames are
drawn over the previous one), which compresses to almost nothing.
"""

from __future__ import annotations

import numpy as np

__all__ = ["GifWriter", "frame_delay_ms"]

_UNCHANGED = 255  # the palette index of a pixel that keeps the previous frame's colour


def frame_delay_ms(fps):
    """The delay between frames a GIF can store for ``fps`` frames per second: a multiple of
    10 ms, at least 20 ms (viewers show shorter delays as 100 ms)."""
    return max(20, 10 * int(round(100.0 / float(fps))))


class GifWriter:
    """``with GifWriter(path, fps) as gif: gif.add(rgb)`` for each (h, w, 3) uint8 frame.

    Every frame must have the first frame's size. The file loops forever; it is complete
    when the ``with`` block ends; an error inside the block removes the partial file."""

    def __init__(self, path, fps):
        self.path = path
        self.delay = frame_delay_ms(fps)
        self.frames = 0
        self._file = None
        self._palette = None  # the first frame, quantized: its palette serves every frame
        self._colours = 0      # the palette's entries in use (the rest repeat entry 0)
        self._previous = None  # the previous frame's palette indices (h, w)

    def __enter__(self):
        self._file = open(self.path, "wb")
        return self

    def add(self, pixels):
        """Append one frame: an (h, w, 3) RGB or (h, w, 4) RGBA uint8 array (alpha ignored),
        e.g. a matplotlib Agg canvas's ``buffer_rgba()``."""
        from PIL import GifImagePlugin, Image

        pixels = np.asarray(pixels)
        if pixels.dtype != np.uint8 or pixels.ndim != 3 or pixels.shape[2] not in (3, 4):
            raise ValueError(f"GIF frame: expected an (h, w, 3 or 4) uint8 array, got "
                             f"{pixels.dtype} {pixels.shape}")
        mode = "RGB" if pixels.shape[2] == 3 else "RGBA"
        image = Image.fromarray(np.ascontiguousarray(pixels), mode)
        if mode == "RGBA":
            image = image.convert("RGB")
        if self._palette is None:
            # 255 colours and a 256-entry table: index 255 is "unchanged" (transparent)
            self._palette = image.quantize(colors=255)
            table = bytes(self._palette.getpalette("RGB")[:3 * 255])
            self._colours = len(table) // 3
            # the unused entries repeat colour 0 (a frame's pixel mapped to one is colour 0)
            self._palette.putpalette(table + table[:3] * (256 - self._colours))
            index = np.asarray(self._palette)
            header, _ = GifImagePlugin.getheader(self._palette.copy(),
                                                 info={"loop": 0, "duration": self.delay})
            self._file.write(b"".join(header))
            self._write(index, (0, 0), transparency=None)
        else:
            if image.size != self._palette.size:
                raise ValueError(f"GIF frame {self.frames}: size {image.size}, the first "
                                 f"frame's {self._palette.size}")
            index = np.array(image.quantize(palette=self._palette, dither=Image.Dither.NONE))
            index[index >= self._colours] = 0
            self._write_change(index)
        self._previous = index
        self.frames += 1

    def _write_change(self, index):
        """Write the rectangle of ``index`` that differs from the previous frame, its unchanged
        pixels transparent (they show the previous frame, and compress to nothing); one
        transparent pixel when nothing changed (the frame still counts, and lasts its
        delay)."""
        diff = index != self._previous
        rows, cols = np.flatnonzero(diff.any(axis=1)), np.flatnonzero(diff.any(axis=0))
        if rows.size == 0:
            self._write(np.full((1, 1), _UNCHANGED, dtype=np.uint8), (0, 0), _UNCHANGED)
            return
        top, bottom, left, right = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
        part = index[top:bottom, left:right].copy()
        part[~diff[top:bottom, left:right]] = _UNCHANGED
        self._write(part, (int(left), int(top)), _UNCHANGED)

    def _write(self, index, offset, transparency):
        """One frame's image block: palette indices (h, w) placed at ``offset`` (x, y)."""
        from PIL import GifImagePlugin, Image

        part = Image.fromarray(np.ascontiguousarray(index, dtype=np.uint8), "P")
        part.putpalette(self._palette.getpalette("RGB"))
        params = {"duration": self.delay}
        if transparency is not None:
            params["transparency"] = transparency
        for chunk in GifImagePlugin.getdata(part, offset=offset, **params):
            self._file.write(chunk)

    def __exit__(self, kind, value, traceback):
        import os

        if self._file is None:
            return False
        try:
            if kind is None:
                self._file.write(b";")  # the trailer
        finally:
            self._file.close()
            if kind is not None:
                os.remove(self.path)
        return False
