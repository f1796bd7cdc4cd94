"""One error type for malformed data files, naming the file, the row or node, and the field."""
from __future__ import annotations


class DataError(ValueError):
    """A data file is malformed. ``str(err)`` reads ``FILE, row R, field F: what is wrong``."""

    def __init__(self, file: object, message: str, row: object = None, field: str | None = None):
        self.file, self.row, self.field, self.message = str(file), row, field, message
        where = [self.file]
        if row is not None:
            where.append(f"row {row}" if isinstance(row, int) else str(row))
        if field:
            where.append(f"field '{field}'")
        super().__init__(f"{', '.join(where)}: {message}")
