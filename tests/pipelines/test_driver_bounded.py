"""inspect-data --all's driver holds nothing per row: over 3×10^4 rows its Python heap grows by less than 10 bytes
a row from a tenth of the rows to nine tenths (measured: -7). The rows' work is replayed from the real engine's
results of 256 generated rows (support.replay_rows: findings on about one row in five, shown rows, length
statistics), so the driver's own work (read, batch, reduce, report) is all that runs. The same measure on the report that
keeps every finding (--all-findings, the driver before the cap) grows by what each finding costs (more than 30 bytes a
row; measured: +67, about one finding in five rows), so it can fail."""

from __future__ import annotations

import gc
import tracemalloc
from dataclasses import replace

import pytest

from mldebug_cli.pipelines import inspect
from mldebug_cli.pipelines.inspect import InspectOptions, build_report
from support import QWEN25, REPLAYED_ROWS, first_rows_results, generated_chat, replay_rows, write_chat_shards

pytestmark = pytest.mark.slow  # 3×10^4 rows read and reduced twice under tracemalloc: 7 minutes at a load of 27

ROWS = 30_000
KEPT = 20  # findings kept per check: the cap fills within the first tenth of the rows


@pytest.fixture(scope="module")
def rows(tmp_path_factory):
    """A Parquet shard of ROWS rows (any rows: their results are replayed), with the rows' work replayed."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path_factory.mktemp("bounded")
    results = first_rows_results(write_chat_shards(folder / "first", REPLAYED_ROWS, 1), QWEN25, folder / "results.pickle")
    (folder / "rows").mkdir()
    pq.write_table(pa.Table.from_pylist([generated_chat(i % 7) for i in range(ROWS)]),
                   folder / "rows" / "part-00000.parquet", row_group_size=10_000)
    real = inspect._RowEngine.process
    replay_rows(str(results))
    try:
        yield InspectOptions(dataset=str(folder / "rows"), tokenizer=str(QWEN25), all_rows=True, max_length=512,
                             workers=1, findings_kept=KEPT)
    finally:
        inspect._RowEngine.process = real


def heap_growth_per_row(options: InspectOptions) -> tuple[float, int]:
    """Bytes a row the traced heap grew by from a tenth of the rows to nine tenths (both marks taken as a batch's
    result has been reduced, the reader part way through a chunk: the same moment of the loop), and the findings kept."""
    marks: list[int] = []

    def progress(done: int, total: int) -> None:
        if done >= total * (1 + 8 * len(marks)) // 10 and len(marks) < 2:
            gc.collect()
            marks.append(tracemalloc.get_traced_memory()[0])

    tracemalloc.start()
    try:
        report = build_report(options, progress)
    finally:
        tracemalloc.stop()
    assert report.summary["rows_checked"] == ROWS and len(marks) == 2
    return (marks[1] - marks[0]) / (ROWS * 8 // 10), len(report.findings)


def test_the_driver_holds_nothing_per_row(rows):
    growth, kept = heap_growth_per_row(rows)
    assert kept <= KEPT * len(inspect.registry.selected((), (), family="DS"))
    assert growth < 10, f"the driver's heap grew by {growth:.1f} B a row"  # measured: -7


def test_keeping_every_finding_grows_with_the_rows_so_the_measure_can_fail(rows):
    growth, kept = heap_growth_per_row(replace(rows, findings_kept=None))
    assert kept > ROWS // 10  # about one finding in five rows, every one kept
    assert growth > 30, f"the driver's heap grew by {growth:.1f} B a row only"  # measured: +67
