//! fio's number formatting for its text reports: `num2str` (a number in at
//! most N digits with a unit prefix, "61.5k", "128KiB", "8002.3k") and the
//! shares of its distributions (`stat_calc_dist`).

/// What a number counts, as fio's `num2str` suffixes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A plain count ("61.5k").
    None,
    /// Bytes ("128KiB").
    Bytes,
    /// Bytes per second ("240MiB/s").
    BytesPerSec,
    /// Bits per second, from a byte rate ("1920Mibit/s"): fio's `unit_base=1`.
    BitsPerSec,
}

impl Unit {
    fn suffix(self) -> &'static str {
        match self {
            Unit::None => "",
            Unit::Bytes => "B",
            Unit::BytesPerSec => "B/s",
            Unit::BitsPerSec => "bit/s",
        }
    }
}

const SI_PREFIXES: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
const IEC_PREFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

/// fio's `num2str(num, maxlen, 1, pow2, unit)`: `num` divided by 1000 (1024
/// with `pow2`) until it has at most `max_digits` digits, then as many
/// decimals of the remainder as fit in `max_digits` (the point counts), the
/// last one rounded; without room for decimals the remainder rounds the
/// number. fio rounds only from the last division's remainder, and so does this.
pub fn num2str(num: u64, max_digits: usize, pow2: bool, unit: Unit) -> String {
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let prefixes = if pow2 { &IEC_PREFIXES } else { &SI_PREFIXES };
    let mut num = if unit == Unit::BitsPerSec { num.saturating_mul(8) } else { num };
    let mut prefix = 0;
    let mut remainder = None;
    while prefix < prefixes.len() && digits(num) > max_digits {
        remainder = Some(num % thousand);
        num /= thousand;
        prefix += 1;
    }
    let prefix = if prefix >= prefixes.len() { 0 } else { prefix };
    let tail = format!("{}{}", prefixes[prefix], unit.suffix());
    let Some(remainder) = remainder else {
        return format!("{num}{tail}");
    };
    let room = max_digits as i64 - digits(num) as i64 - 1;
    if room <= 0 {
        let carry = remainder >= thousand / 2;
        return format!("{}{tail}", num + u64::from(carry));
    }
    let fraction = format!("{:.*}", room as usize, remainder as f64 / thousand as f64);
    // "1.00": the remainder rounded up to a whole unit.
    if fraction.starts_with('1') {
        num += 1;
    }
    format!("{num}.{}{tail}", &fraction[2..])
}

fn digits(num: u64) -> usize {
    num.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// fio's `stat_calc_dist`: each count's share of `total` in percent, a
/// non-empty bucket below 0.1% shown as 0.1%.
pub fn dist_shares<const N: usize>(counts: &[u64; N], total: u64) -> [f64; N] {
    std::array::from_fn(|i| match total {
        0 => 0.0,
        total => {
            let share = 100.0 * counts[i] as f64 / total as f64;
            if counts[i] > 0 && share < 0.1 {
                0.1
            } else {
                share
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn num2str_matches_what_fio_prints() {
        // Values and strings read off fio 3.33 reports.
        assert_eq!(num2str(4096, 4, true, Unit::Bytes), "4096B");
        assert_eq!(num2str(131_072, 4, true, Unit::Bytes), "128KiB");
        assert_eq!(num2str(61_500, 4, false, Unit::None), "61.5k");
        assert_eq!(num2str(256_000, 4, false, Unit::None), "256k");
        assert_eq!(num2str(8_002_300, 6, false, Unit::None), "8002.3k");
        assert_eq!(num2str(550, 6, false, Unit::None), "550");
        assert_eq!(num2str(1_048_576_000, 4, true, Unit::BytesPerSec), "1000MiB/s");
        assert_eq!(num2str(1_048_576_000, 4, false, Unit::BytesPerSec), "1049MB/s");
        assert_eq!(num2str(503_316_480, 4, true, Unit::Bytes), "480MiB");
        assert_eq!(num2str(1_048_576, 4, false, Unit::Bytes), "1049kB");
        assert_eq!(num2str(1_048_576, 4, true, Unit::Bytes), "1024KiB");
        assert_eq!(num2str(51_200_000_000, 4, true, Unit::Bytes), "47.7GiB");
        assert_eq!(num2str(1_000, 4, true, Unit::BitsPerSec), "8000bit/s");
        // The remainder rounds the last digit, or the number without room for one.
        assert_eq!(num2str(1_999_999, 4, false, Unit::None), "2000k");
        assert_eq!(num2str(99_960, 3, false, Unit::None), "100k");
        assert_eq!(num2str(0, 4, false, Unit::None), "0");
    }

    #[test]
    fn distribution_shares_floor_at_a_tenth_of_a_percent() {
        assert_eq!(dist_shares(&[1, 9_999, 0], 10_000), [0.1, 99.99, 0.0]);
        assert_eq!(dist_shares(&[0, 0], 0), [0.0, 0.0]);
    }
}
