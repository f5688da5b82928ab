//! Division by a value fixed when a model is built (dies per group, planes
//! per die, LBAs per chunk): a shift and a mask when it is a power of two,
//! as most geometry is, else the machine's division. A 64-bit division by a
//! runtime value is a dozen instructions (a 32-bit fast-path check, the
//! division, the check for zero); address arithmetic runs several per
//! command.

/// A nonzero divisor, with the shift that replaces it when it is a power of two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Divisor {
    value: u64,
    /// log2 of `value` when it is a power of two, else `u32::MAX`.
    shift: u32,
}

impl Divisor {
    /// Divides by `value`, which must be nonzero.
    pub fn new(value: u64) -> Self {
        assert!(value > 0, "a divisor must be nonzero");
        let shift = if value.is_power_of_two() { value.trailing_zeros() } else { u32::MAX };
        Self { value, shift }
    }

    /// The divisor itself.
    #[inline]
    pub fn value(self) -> u64 {
        self.value
    }

    /// `x / value`.
    #[inline]
    pub fn quotient(self, x: u64) -> u64 {
        if self.shift != u32::MAX {
            x >> self.shift
        } else {
            x / self.value
        }
    }

    /// `x % value`.
    #[inline]
    pub fn remainder(self, x: u64) -> u64 {
        if self.shift != u32::MAX {
            x & (self.value - 1)
        } else {
            x % self.value
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_division_for_powers_of_two_and_others() {
        for d in [1u64, 2, 3, 4, 12, 16, 1152, 1 << 40, u64::MAX] {
            let div = Divisor::new(d);
            for x in [0u64, 1, 5, 11, 12, 13, 1023, 1 << 33, u64::MAX - 1, u64::MAX] {
                assert_eq!((div.quotient(x), div.remainder(x)), (x / d, x % d), "{x} / {d}");
            }
        }
    }

    #[test]
    #[should_panic(expected = "nonzero")]
    fn zero_is_refused() {
        Divisor::new(0);
    }
}
