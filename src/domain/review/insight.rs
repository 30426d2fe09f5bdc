//! Decision insights' arithmetic: times to decision kept as counts in fixed buckets (so a
//! window's median and p90 come from summed counts, whatever the number of decisions), and the
//! rubber-stamp floor: how long a proposal takes to read.

/// Upper bounds of the time-to-decision buckets, in seconds; a last bucket holds the rest.
pub const BUCKETS: [i64; 14] = [
    2, 5, 10, 30, 60, 120, 300, 600, 1_800, 3_600, 7_200, 14_400, 28_800, 86_400,
];

/// How many buckets a row of counts has (the last is open-ended).
pub const BUCKET_COUNT: usize = BUCKETS.len() + 1;

/// Reading speed the floor assumes, over the proposal as submitted (its JSON).
pub const READ_CHARS_PER_SEC: i64 = 50;
/// The floor is never below this many seconds.
pub const MIN_READ_SECS: i64 = 2;

/// The bucket of a decision taken `secs` after submission.
pub fn bucket(secs: i64) -> usize {
    BUCKETS
        .iter()
        .position(|&upper| secs <= upper)
        .unwrap_or(BUCKETS.len())
}

/// Whether a decision `secs` after submission came sooner than a proposal of `chars`
/// characters could be read.
pub fn too_fast(secs: i64, chars: usize) -> bool {
    let chars = i64::try_from(chars).unwrap_or(i64::MAX);
    secs < (chars / READ_CHARS_PER_SEC).max(MIN_READ_SECS)
}

/// The `p`-th percentile (0 to 100) of the decisions counted in `counts`, as its bucket's upper
/// bound in seconds (the open-ended last bucket reads as a day and more: `None` past it);
/// `None` when nothing was counted.
pub fn percentile(counts: &[i64], p: i64) -> Option<i64> {
    let total: i64 = counts.iter().sum();
    if total == 0 {
        return None;
    }
    let rank = (total * p + 99) / 100;
    let mut seen = 0;
    for (i, n) in counts.iter().enumerate() {
        seen += n;
        if seen >= rank.max(1) {
            return Some(BUCKETS.get(i).copied().unwrap_or(i64::MAX));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_fall_in_buckets_and_percentiles_read_their_bounds() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(2), 0);
        assert_eq!(bucket(3), 1);
        assert_eq!(bucket(120), 5);
        assert_eq!(bucket(100_000), BUCKETS.len());
        let mut counts = [0i64; BUCKET_COUNT];
        for secs in [0, 120, 600] {
            counts[bucket(secs)] += 1;
        }
        assert_eq!(percentile(&counts, 50), Some(120));
        assert_eq!(percentile(&counts, 90), Some(600));
        assert_eq!(percentile(&[0; BUCKET_COUNT], 50), None);
        counts[BUCKETS.len()] += 10;
        assert_eq!(percentile(&counts, 90), Some(i64::MAX));
    }

    #[test]
    fn the_floor_grows_with_the_text() {
        assert!(too_fast(1, 10), "never under 2 s");
        assert!(!too_fast(2, 10));
        assert!(too_fast(13, 700), "700 characters take 14 s");
        assert!(!too_fast(14, 700));
    }
}
