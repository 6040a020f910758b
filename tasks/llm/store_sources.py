"""The files a ledger folder's records are read from, as one process's store (tasks/llm/call_store.py) holds
them: a segment (its index and the lines this process appended since), a compacted file (its typed rows,
its records a row group at a time), an old-layout ledger read in place. Each gives its rows (CALL_ROWS) and
the record at a row (`line`)."""

import os
from collections import OrderedDict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tasks.llm.compaction import read_compacted_rows
from tasks.llm.ledger_rows import CALL_ROWS, RECORD_COLUMN, rows_of_records
from tasks.llm.record import CallRecord
from tasks.llm.segments import SegmentIndex


class Segment:
    """A segment as indexed so far, and the lines this process appended to it since."""

    def __init__(self, path: Path, index: SegmentIndex) -> None:
        self.path = path
        self.index = index
        self.own: list[tuple[CallRecord, int, int]] = []  # (record, offset, length) written here
        self._descriptor: int | None = None

    @property
    def size(self) -> int:
        if self.own:
            _, offset, length = self.own[-1]
            return offset + length + 1
        return self.index.size

    def __len__(self) -> int:
        return self.index.rows.num_rows + len(self.own)

    def rows(self) -> pa.Table:
        """CALL_ROWS of every line indexed (the lines written here folded into the index)."""
        if self.own:
            records, offsets, lengths = zip(*self.own, strict=True)
            self.index = self.index.extended(
                SegmentIndex(
                    rows_of_records(list(records)),
                    np.array(offsets, np.int64),
                    np.array(lengths, np.int64),
                    self.size,
                    [],
                )
            )
            self.own = []
        return self.index.rows

    def line(self, position: int) -> bytes:
        indexed = self.index.rows.num_rows
        if position >= indexed:
            _, offset, length = self.own[position - indexed]
        else:
            offset, length = int(self.index.offsets[position]), int(self.index.lengths[position])
        if self._descriptor is None:
            self._descriptor = os.open(self.path, os.O_RDONLY)
        return os.pread(self._descriptor, length, offset)

    def close(self) -> None:
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None


class CompactedFile:
    """A compacted file: its rows, and its records read a row group at a time (the last few kept)."""

    KEPT_GROUPS = 4

    def __init__(self, path: Path) -> None:
        self.path = path
        self._rows = read_compacted_rows(path)
        self._file: pq.ParquetFile | None = None
        self._groups: OrderedDict[int, pa.ChunkedArray] = OrderedDict()
        self._group_starts: np.ndarray | None = None

    def __len__(self) -> int:
        return self._rows.num_rows

    def rows(self) -> pa.Table:
        return self._rows

    def line(self, position: int) -> str:
        if self._file is None:
            self._file = pq.ParquetFile(self.path)
            sizes = [self._file.metadata.row_group(i).num_rows for i in range(self._file.num_row_groups)]
            self._group_starts = np.concatenate(([0], np.cumsum(sizes)))
        assert self._group_starts is not None
        group = int(np.searchsorted(self._group_starts, position, side="right")) - 1
        records = self._groups.get(group)
        if records is None:
            records = self._file.read_row_group(group, columns=[RECORD_COLUMN])[RECORD_COLUMN]
            self._groups[group] = records
            if len(self._groups) > self.KEPT_GROUPS:
                self._groups.popitem(last=False)
        else:
            self._groups.move_to_end(group)
        return records[position - int(self._group_starts[group])].as_py()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._groups.clear()


class InPlace:
    """An old-layout ledger read as it is (its folder cannot be written, so it cannot be migrated)."""

    def __init__(self, table: pa.Table) -> None:
        self._rows = table.select(CALL_ROWS.names)
        self._records = table[RECORD_COLUMN]

    def __len__(self) -> int:
        return self._rows.num_rows

    def rows(self) -> pa.Table:
        return self._rows

    def line(self, position: int) -> str:
        return self._records[position].as_py()

    def close(self) -> None:
        pass


Source = Segment | CompactedFile | InPlace


class Vanished(Exception):
    """A file the store had listed was removed (another process compacted the folder): read it again."""


def source_name(source: Source) -> str:
    return source.path.name if isinstance(source, Segment | CompactedFile) else "the old layout"
