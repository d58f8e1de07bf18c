"""Images of vision-language rows: where each one is (a file beside the dataset, or bytes in the row), read with a
bound, never fetched.

A row's image is a path (relative paths are resolved against the dataset's folder), a ``data:image/...;base64,``
string, or a ``{"bytes": ..., "path": ...}`` mapping as the ``datasets`` Image feature stores it (``bytes`` raw, or
base64 text in JSON). URLs are refused: mldebug works offline. Only the header is read to learn an image's size
(``ImageInfo``), then, under a pixel limit like Pillow's ``MAX_IMAGE_PIXELS`` (a decompression bomb is a finding, not
an out-of-memory kill), the pixels are decoded once to prove the file whole (a truncated file fails here as it fails in
the trainer's collator) and dropped. ``ImageReader`` keeps what it learnt of each file, so an image used by many rows is
read once.
"""

from __future__ import annotations

import base64
import binascii
import io
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mldebug_cli.core.errors import InputError

MAX_IMAGE_PIXELS = 89_478_485  # Pillow's own default: larger images are refused as decompression bombs
MAX_IMAGE_BYTES = 64 * 2**20
_URL_SCHEMES = ("http://", "https://", "ftp://", "s3://", "gs://")


class ImageProblem(Exception):
    """An image that cannot be used: missing, unreadable, not an image, too large, or a URL."""

    def __init__(self, what: str, source: str) -> None:
        super().__init__(what)
        self.what = what
        self.source = source


@dataclass(frozen=True)
class ImageInfo:
    """One image as its header describes it."""

    source: str  # the path as written in the row, or "bytes (N bytes)"
    width: int
    height: int
    mode: str
    format: str | None


def describe(value: Any) -> str:
    """How a row names an image, for messages (paths as written; bytes by their size)."""
    if isinstance(value, str):
        return value if not value.startswith("data:") else f"a data URI ({len(value):,} characters)"
    if isinstance(value, Mapping):
        if value.get("path"):
            return str(value["path"])
        data = value.get("bytes")
        return f"embedded bytes ({len(data):,} bytes)" if isinstance(data, (bytes, str)) else "an image mapping"
    if isinstance(value, (bytes, bytearray)):
        return f"embedded bytes ({len(value):,} bytes)"
    return type(value).__name__


class ImageReader:
    """Reads the images of a dataset whose relative paths start at ``base``, each file once."""

    def __init__(self, base: Path, cache_size: int = 4096) -> None:
        self.base = base
        self.cache_size = cache_size
        self._seen: dict[str, ImageInfo | ImageProblem] = {}

    def info(self, value: Any) -> ImageInfo:
        if not isinstance(value, str) or value.startswith("data:"):
            return read_info(value, self.base)
        known = self._seen.get(value)
        if known is None:
            try:
                known = read_info(value, self.base)
            except ImageProblem as problem:
                known = problem
            if len(self._seen) >= self.cache_size:
                self._seen.pop(next(iter(self._seen)))
            self._seen[value] = known
        if isinstance(known, ImageProblem):
            raise known
        return known


def read_info(value: Any, base: Path) -> ImageInfo:
    """The size and mode of the image ``value`` names, its pixels decoded once to prove the file whole;
    ``ImageProblem`` when it cannot be used."""
    source = describe(value)
    data = _bytes_of(value, base, source)
    import warnings

    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:
        raise InputError("image rows need Pillow, which is not installed", hint="pip install 'mldebug[vision]'") from None

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # the size is checked below
            with Image.open(io.BytesIO(data)) as image:
                width, height = image.size
                mode, fmt = image.mode, image.format
    except Image.DecompressionBombError as exc:
        raise ImageProblem(f"is refused by Pillow as a decompression bomb ({exc})", source) from None
    except UnidentifiedImageError:
        raise ImageProblem("is not an image Pillow can read", source) from None
    except (OSError, ValueError, SyntaxError) as exc:
        raise ImageProblem(f"cannot be read ({exc})", source) from None
    if width <= 0 or height <= 0:
        raise ImageProblem(f"has no pixels ({width}x{height})", source)
    if width * height > MAX_IMAGE_PIXELS:
        raise ImageProblem(f"is {width}x{height} = {width * height:,} pixels, over the {MAX_IMAGE_PIXELS:,} pixel "
                           "limit (Pillow refuses it as a decompression bomb)", source)
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as exc:
        raise ImageProblem(f"cannot be decoded ({exc})", source) from None
    return ImageInfo(source, width, height, mode, fmt)


def image_bytes(value: Any, base: Path) -> bytes:
    """The bytes of the image ``value`` names (a path from ``base``, a data URI, bytes or a bytes mapping), read with
    the same bounds as ``read_info``; ``ImageProblem`` when it cannot be read."""
    return _bytes_of(value, base, describe(value))


def _bytes_of(value: Any, base: Path, source: str) -> bytes:
    if isinstance(value, Mapping):
        data = value.get("bytes")
        if data is not None:
            return _embedded(data, source)
        if value.get("path"):
            return _file(str(value["path"]), base, source)
        raise ImageProblem("has neither bytes nor a path", source)
    if isinstance(value, (bytes, bytearray)):
        return _limited(bytes(value), source)
    if not isinstance(value, str) or not value:
        raise ImageProblem(f"is a {type(value).__name__}, not a path, a data URI or a bytes mapping", source)
    if value.startswith("data:"):
        head, _, payload = value.partition(",")
        if ";base64" not in head:
            raise ImageProblem("is a data URI without base64 data", source)
        return _embedded(payload, source)
    if value.lower().startswith(_URL_SCHEMES):
        raise ImageProblem("is a URL: mldebug never fetches (download the images and give their paths)", source)
    return _file(value, base, source)


def _embedded(data: Any, source: str) -> bytes:
    if isinstance(data, (bytes, bytearray)):
        return _limited(bytes(data), source)
    if isinstance(data, str):
        try:
            return _limited(base64.b64decode(data, validate=True), source)
        except (binascii.Error, ValueError):
            raise ImageProblem("has bytes that are not valid base64", source) from None
    raise ImageProblem(f"has bytes of type {type(data).__name__}", source)


def _file(path: str, base: Path, source: str) -> bytes:
    where = Path(path).expanduser()
    if not where.is_absolute():
        where = base / where
    try:
        if not where.is_file():
            raise ImageProblem(f"does not exist (looked for {where})" if not where.exists() else "is not a file", source)
        if where.stat().st_size > MAX_IMAGE_BYTES:
            raise ImageProblem(f"is {where.stat().st_size:,} bytes, over the {MAX_IMAGE_BYTES:,} byte limit", source)
        return where.read_bytes()
    except OSError as exc:
        raise ImageProblem(f"cannot be read ({exc.strerror or exc})", source) from None


def _limited(data: bytes, source: str) -> bytes:
    if len(data) > MAX_IMAGE_BYTES:
        raise ImageProblem(f"is {len(data):,} bytes, over the {MAX_IMAGE_BYTES:,} byte limit", source)
    if not data:
        raise ImageProblem("is empty (0 bytes)", source)
    return data
