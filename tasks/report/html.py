"""The self-contained report page: template.html filled with tables, figures, inline data and the
benchmark's own conversation browser (its browser.html and browser.css)."""

import base64
import gzip
import json
import re
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from tasks.core.safe_text import INVISIBLE_MARKERS, page_text

TEMPLATE = Path(__file__).with_name("template.html")
VISIBLE_TEXT_SCRIPT = Path(__file__).with_name("visible_text.js")
PACKED_DATA_TYPE = "application/x-gzip-7bit"
# Parts a page may leave out: a benchmark that passes bare JSON needs no data_type.
DEFAULT_PARTS = {"data_type": "application/json"}
# 7-bit values that a <script> element would not keep as they are: NUL turns into U+FFFD, CR into LF,
# and '<' could start '</script>' or '<!--'. They are written as U+0100 + value (two UTF-8 bytes).
ALTERED_IN_SCRIPT = np.array([0x00, 0x0D, 0x3C], dtype=np.uint8)
ESCAPE_OFFSET = 0x100
# Never written by seven_bit_text (whose characters stay below U+0140), so it can separate packed parts.
CHUNK_SEPARATOR = "\u0200"
# On a page's worth of answers, level 5 takes half of level 6's time for 0.7% more bytes (and 9 ten times).
GZIP_LEVEL = 5


def script_json(value: Any) -> str:
    """JSON safe inside a <script> element: '<' is escaped, so no text can close it or open a comment."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def seven_bit_text(data: bytes) -> str:
    """`data` as text of 7 bits per character, big-endian, zero-padded; about 1.17 UTF-8 bytes per byte of
    random data (base64 takes 1.33). The page's reportData() reverses it."""
    bits = np.unpackbits(np.frombuffer(data, dtype=np.uint8))
    rows = np.pad(bits, (0, -bits.size % 7)).reshape(-1, 7)
    values = np.packbits(rows, axis=1).ravel() >> 1
    codes = np.where(np.isin(values, ALTERED_IN_SCRIPT), values.astype(np.uint32) + ESCAPE_OFFSET, values)
    return codes.astype("<u4").tobytes().decode("utf-32-le")


def seven_bit_bytes(text: str) -> bytes:
    """The inverse of seven_bit_text: the padding never fills a whole byte, so it is simply dropped."""
    values = np.frombuffer(text.encode("utf-32-le"), dtype="<u4").astype(np.uint8) & 0x7F
    bits = np.unpackbits(values[:, None], axis=1)[:, 1:].ravel()
    return np.packbits(bits[: bits.size // 8 * 8]).tobytes()


def _gzip_json(value: Any) -> bytes:
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return gzip.compress(text.encode(), compresslevel=GZIP_LEVEL, mtime=0)


def packed_json(value: Any, chunks: Sequence[Any] = ()) -> str:
    """`value`, then each of `chunks`, as gzip-compressed JSON in seven_bit_text joined by CHUNK_SEPARATOR:
    a fifth of script_json's size for text, and safe inside a <script> element. The page's reportData()
    decodes `value` with the browser's own DecompressionStream, and reportChunk(i) chunk i when asked."""
    return CHUNK_SEPARATOR.join(seven_bit_text(_gzip_json(part)) for part in [value, *chunks])


def unpack_json(text: str) -> list[Any]:
    """[value, *chunks] packed by packed_json, as the page's reportData() and reportChunk(i) read them."""
    return [json.loads(gzip.decompress(seven_bit_bytes(part))) for part in text.split(CHUNK_SEPARATOR)]


def data_parts(value: Any, chunks: Sequence[Any] = (), packed: bool = True) -> dict[str, str]:
    """The page parts of the browser's data: packed (read with reportData() and reportChunk(i)), or
    inline JSON (no chunks)."""
    if packed:
        return {"data": packed_json(value, chunks), "data_type": PACKED_DATA_TYPE}
    return {"data": script_json(value), "data_type": DEFAULT_PARTS["data_type"]}


@cache
def visible_text_script() -> str:
    """The pages' visibleText(text) and showInvisibleCharacters(root) (visible_text.js), with the markers of
    tasks/core/safe_text.py: what a page's own scripts write is shown as safe_text.page_text shows it."""
    markers = json.dumps(INVISIBLE_MARKERS)  # ASCII only: \u escapes
    return f"const INVISIBLE_MARKERS = {markers};\n{VISIBLE_TEXT_SCRIPT.read_text()}"


def figures_html(figures: Mapping[str, bytes], captions: Mapping[str, str]) -> str:
    """Each PNG (by figure id) as a captioned <figure> holding a data URI, in the given order."""
    return "".join(
        f'<figure id="{name}"><img alt="{page_text(captions[name])}" '
        f'src="data:image/png;base64,{base64.b64encode(png).decode()}"><figcaption>'
        f"{page_text(captions[name])}</figcaption></figure>"
        for name, png in figures.items()
    )


def render_page(parts: Mapping[str, str], template: Path = TEMPLATE) -> str:
    """The template with every {{name}} replaced by parts[name] (or DEFAULT_PARTS; {{visible_text}} by
    visible_text_script()), escaped by the caller."""
    filled = {**DEFAULT_PARTS, "visible_text": visible_text_script(), **parts}
    # One pass, so text inserted for one placeholder is never scanned for another.
    return re.sub(r"\{\{(\w+)\}\}", lambda match: filled[match.group(1)], template.read_text())


def browser_parts(folder: Path) -> dict[str, str]:
    """The page parts of a benchmark's conversation browser: its markup and script, and its styles."""
    return {"browser": (folder / "browser.html").read_text(), "style": (folder / "browser.css").read_text()}
