"""A row-cursor table whose rows are keyed, so a refill keeps the cursor on the same row."""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import DataTable
from textual.widgets.data_table import RowDoesNotExist

__all__ = ["KeyedTable"]


class KeyedTable(DataTable):
    BINDINGS = [  # rows matter more than columns here: home and end go to the first and last row
        Binding("home", "scroll_top", "First row", show=False),
        Binding("end", "scroll_bottom", "Last row", show=False),
    ]

    def __init__(self, **kwargs: object) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)  # type: ignore[arg-type]

    def current_key(self) -> str | None:
        """The key of the row under the cursor, or None for an empty table."""
        if not self.row_count:
            return None
        return self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value

    def restore(self, key: str | None) -> None:
        """Put the cursor back on row ``key`` if it is still there."""
        if key is None:
            return
        try:
            self.move_cursor(row=self.get_row_index(key), animate=False)
        except RowDoesNotExist:
            pass
