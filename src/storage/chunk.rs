//! The fixed sizes of multi-row inserts: a group's audit rows, staged proposals and queued
//! notifications go in a few statements of known sizes, not one statement per batch length.

/// Rows per insert statement where several rows go in together on SQLite (a group's audit
/// events, and on both backends its staged proposals and notifications): fixed sizes, so the
/// connection's prepared-statement cache holds one statement per size instead of one per batch
/// length (17 binds a row; 64 rows stay well under SQLite's limit of 32,766). Powers of two,
/// so `n` rows take as many statements as `n` has bits set (seven took four with sizes 64, 16,
/// 4 and 1). PostgreSQL inserts any number of audit rows in one statement ([`super::audit`]).
const CHUNKS: [usize; 7] = [64, 32, 16, 8, 4, 2, 1];

/// The largest fixed chunk that fits in `remaining` rows.
pub(super) fn chunk_len(remaining: usize) -> usize {
    CHUNKS.into_iter().find(|&n| n <= remaining).unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::chunk_len;

    #[test]
    fn batches_split_into_fixed_sizes() {
        let split = |mut n: usize| {
            let mut sizes = Vec::new();
            while n > 0 {
                let c = chunk_len(n);
                sizes.push(c);
                n -= c;
            }
            sizes
        };
        assert_eq!(split(1), vec![1]);
        assert_eq!(split(70), vec![64, 4, 2]);
        assert_eq!(split(128), vec![64, 64]);
        assert_eq!(split(21), vec![16, 4, 1]);
        // As many statements as the count has bits set, up to 127.
        assert_eq!(split(7), vec![4, 2, 1]);
        assert_eq!(split(127).len(), 7);
    }
}
