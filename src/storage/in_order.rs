//! Reading a row's columns by position, in order: for a statement that selects two tables'
//! columns side by side (a proposal and its command), whose names repeat (`id`, `status`),
//! so a row struct cannot be read by name. A leaf.

use sqlx::{ColumnIndex, Decode, Row, Type};

/// The columns of `row` from a position on, each read once, in order.
pub(crate) struct InOrder<'r, R> {
    row: &'r R,
    next: usize,
}

impl<'r, R: Row> InOrder<'r, R>
where
    usize: ColumnIndex<R>,
{
    /// The columns of `row` from `at` on.
    pub(crate) fn new(row: &'r R, at: usize) -> Self {
        Self { row, next: at }
    }

    /// The next column's value.
    pub(crate) fn next<T>(&mut self) -> sqlx::Result<T>
    where
        T: Decode<'r, R::Database> + Type<R::Database>,
    {
        let value = self.row.try_get(self.next);
        self.next += 1;
        value
    }
}
