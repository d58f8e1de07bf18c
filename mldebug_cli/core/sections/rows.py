"""inspect-data's sections on SFT rows: each shown row as the trainer sees it, and the dataset's statistics."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mldebug_cli.core.labels import IGNORE_INDEX


@dataclass(frozen=True)
class ImageLine:
    """One image of a row: its source size, the size the processor resizes it to, and where its tokens are."""

    index: int  # the image's position in the row's images
    source: str
    width: int
    height: int
    mode: str
    resized_width: int
    resized_height: int
    tokens: int
    start: int  # position of its first token in the row's ids (before truncation)
    message_index: int | None = field(default=None, compare=False)  # the message it is in (findings; not reported)

    @property
    def end(self) -> int:
        return self.start + self.tokens

    @property
    def scale(self) -> float:
        """The processor's area change: resized pixels / source pixels."""
        return (self.resized_width * self.resized_height) / (self.width * self.height)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ImageLine:
        return cls(data.get("image", 0), data.get("source", ""), data.get("width", 0), data.get("height", 0),
                   data.get("mode", ""), data.get("resized_width", 0), data.get("resized_height", 0),
                   data.get("tokens", 0), data.get("start", 0))

    def as_dict(self) -> dict[str, Any]:
        return {"image": self.index, "source": self.source, "width": self.width, "height": self.height,
                "mode": self.mode, "resized_width": self.resized_width, "resized_height": self.resized_height,
                "tokens": self.tokens, "start": self.start}

    def describe(self) -> str:
        resize = "kept" if (self.resized_width, self.resized_height) == (self.width, self.height) else \
            f"resized to {self.resized_width}x{self.resized_height}"
        return (f"image {self.index}: {self.source}, {self.width}x{self.height} {self.mode}, {resize}, "
                f"{self.tokens} tokens at {self.start}-{self.start + self.tokens - 1}")


@dataclass(frozen=True)
class RowView:
    """One shown row: its rendered prompt, token ids, labels (``IGNORE_INDEX`` masked) and token pieces.

    The sequences are held as the pipeline made them (lists, not copied): a view is built for every candidate row.
    """

    row: int  # 0-based dataset index
    prompt: str = ""
    input_ids: Sequence[int] = ()
    labels: Sequence[int] = ()
    pieces: Sequence[str] | None = None  # filled in for the rows finally shown
    offsets: Sequence[Sequence[int]] = ()  # (start, end) of each token in the prompt
    truncated_from: int | None = None  # the length before truncation, when the row was cut
    line: int | None = None  # 1-based line in the file
    dropped: bool = False  # the trainer leaves the row out
    masking: str | None = None  # how the trained text was found (None: not said)
    error: str | None = None  # why the row was not rendered (with ``dropped``: why the framework leaves it out)
    images: Sequence[ImageLine] = ()  # vision rows: one line per image, its tokens a block in the ids
    side: str | None = None  # preference rows: "chosen" or "rejected" (each side is one view of the row)

    @property
    def ok(self) -> bool:
        """Rendered (the JSON report has an "error" key when not)."""
        return self.error is None

    @property
    def trained(self) -> int:
        return sum(1 for label in self.labels if label != IGNORE_INDEX)

    def image_blocks(self) -> dict[int, tuple[ImageLine, int]]:
        """Each image's first kept position -> (the image, the position after its last kept token): the views show
        an image's tokens as one block."""
        kept = len(self.input_ids)
        return {image.start: (image, min(image.start + image.tokens, kept)) for image in self.images
                if image.tokens and image.start < kept}

    def covered_texts(self) -> list[str]:
        """The prompt text each token covers (by offsets), or its piece when offsets are missing or empty."""
        pieces = list(self.pieces or ())
        if len(self.offsets) != len(pieces):
            return pieces
        return [self.prompt[s:e] if e > s else piece for piece, (s, e) in zip(pieces, self.offsets)]

    def flowing_texts(self) -> list[str]:
        """The prompt text each token adds when the tokens are read in order: a character whose UTF-8 bytes span
        several tokens (a CJK character under a byte-level BPE) belongs to the first of them, so the texts joined
        read the prompt once, where ``covered_texts`` gives each of those tokens the whole character."""
        pieces = list(self.pieces or ())
        if len(self.offsets) != len(pieces):
            return pieces
        texts, reached = [], 0
        for piece, (start, end) in zip(pieces, self.offsets):
            if end <= start:
                texts.append(piece)
                continue
            texts.append(self.prompt[max(start, reached):end])
            reached = max(reached, end)
        return texts

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RowView:
        return cls(data.get("row", 0), data.get("prompt") or "", data.get("input_ids") or [], data.get("labels") or [],
                   data.get("pieces"), data.get("offsets") or [], data.get("truncated_from"), data.get("line"),
                   bool(data.get("dropped")), data.get("masking"), data.get("error"),
                   tuple(ImageLine.from_dict(i) for i in data.get("images") or ()), data.get("side"))

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"row": self.row}
        if self.line is not None:
            out["line"] = self.line
        out.update(prompt=self.prompt, input_ids=self.input_ids, labels=self.labels, pieces=self.pieces,
                   offsets=self.offsets, truncated_from=self.truncated_from)
        if self.dropped:
            out["dropped"] = True
        if self.masking is not None:
            out["masking"] = self.masking
        if self.error is not None:
            out["error"] = self.error
        if self.images:
            out["images"] = [image.as_dict() for image in self.images]
        if self.side is not None:
            out["side"] = self.side
        return out


@dataclass(frozen=True)
class LengthPercentiles:
    """Nearest-rank percentiles of the row lengths in tokens (before truncation)."""

    p50: int
    p90: int
    p99: int
    max: int

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> LengthPercentiles | None:
        if not data:
            return None
        return cls(data.get("p50", 0), data.get("p90", 0), data.get("p99", 0), data.get("max", 0))

    def as_dict(self) -> dict[str, int]:
        return {"p50": self.p50, "p90": self.p90, "p99": self.p99, "max": self.max}


@dataclass(frozen=True)
class LengthHistogram:
    """Row lengths in equal bins from 0: bin i counts lengths in [i * bin_width, (i + 1) * bin_width)."""

    bin_width: int
    counts: Sequence[int]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> LengthHistogram | None:
        if not data or not data.get("counts") or not data.get("bin_width"):
            return None
        return cls(data["bin_width"], data["counts"])

    def as_dict(self) -> dict[str, Any]:
        return {"bin_width": self.bin_width, "counts": self.counts}


@dataclass(frozen=True)
class RowsSummary:
    """inspect-data's statistics on SFT rows (``Report.summary``)."""

    rows: int = 0  # in the dataset
    rows_checked: int = 0
    rows_failed: int = 0  # could not be rendered
    tokens: int = 0  # of the rows that train, after truncation
    trainable_tokens: int = 0
    trainable_fraction: float = 0.0
    length_percentiles: LengthPercentiles | None = None
    length_histogram: LengthHistogram | None = None
    max_length: int | None = None
    rows_truncated: int = 0  # cut to max_length (rows left out for their length are rows_dropped)
    rows_dropped: int = 0  # left out of training by the trainer (their tokens are not counted)
    tokens_kept: int = 0  # tokens of the rows that train, after truncation
    lengths_kept: Sequence[tuple[int, int]] = ()  # (tokens, rows) of the rows that train (packing)
    lengths_untrained: Sequence[tuple[int, int]] = ()  # rows dropped with nothing left to train
    by_check: Mapping[str, int] | None = None

    sequences_per_row = 1  # the rows the trainer iterates per dataset row

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RowsSummary:
        return cls(
            rows=data.get("rows") or 0, rows_checked=data.get("rows_checked") or 0,
            rows_failed=data.get("rows_failed") or 0, tokens=data.get("tokens", 0),
            trainable_tokens=data.get("trainable_tokens", 0), trainable_fraction=data.get("trainable_fraction", 0),
            length_percentiles=LengthPercentiles.from_dict(data.get("length_percentiles")),
            length_histogram=LengthHistogram.from_dict(data.get("length_histogram")),
            max_length=data.get("max_length"), rows_truncated=data.get("rows_truncated", 0),
            rows_dropped=data.get("rows_dropped", 0), tokens_kept=data.get("tokens_kept", 0),
            lengths_kept=data.get("lengths_kept", ()), lengths_untrained=data.get("lengths_untrained", ()),
            by_check=data.get("by_check"),
        )  # fmt: skip

    def as_dict(self) -> dict[str, Any]:
        return {
            "rows": self.rows,
            "rows_checked": self.rows_checked,
            "rows_failed": self.rows_failed,
            "tokens": self.tokens,
            "trainable_tokens": self.trainable_tokens,
            "trainable_fraction": self.trainable_fraction,
            "length_percentiles": self.length_percentiles.as_dict() if self.length_percentiles else {},
            "length_histogram": self.length_histogram.as_dict() if self.length_histogram else {},
            "max_length": self.max_length,
            "rows_truncated": self.rows_truncated,
            "rows_dropped": self.rows_dropped,
            "tokens_kept": self.tokens_kept,
            "lengths_kept": self.lengths_kept,
            "lengths_untrained": self.lengths_untrained,
            "by_check": dict(self.by_check or {}),
        }


@dataclass(frozen=True)
class RowsSection:
    """inspect-data's details on SFT rows: the shown rows, and whether the text view shows each token."""

    rows: tuple[RowView, ...]
    token_table: bool = False  # the text view's rendered prompt and per-token table (--tokens, or --rows)
    sequence_lengths: Sequence[Any] | None = None  # every kept row's (row, sequence lengths, trained) for memory

    @classmethod
    def from_details(cls, details: Mapping[str, Any]) -> RowsSection:
        return cls(tuple(RowView.from_dict(r) for r in details.get("rows") or ()), bool(details.get("token_table")),
                   details.get("sequence_lengths"))

    def as_details(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rows": [r.as_dict() for r in self.rows], "token_table": self.token_table}
        if self.sequence_lengths is not None:
            out["sequence_lengths"] = self.sequence_lengths
        return out
