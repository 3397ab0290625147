//! A small seeded PRNG (splitmix64): the lab needs repeatable jitter and
//! think times, not cryptographic quality, and no extra dependency.

#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }

    /// Integer in [lo, hi], both included.
    pub fn int(&mut self, lo: u32, hi: u32) -> u32 {
        lo + (self.next_u64() % u64::from(hi - lo + 1)) as u32
    }

    /// Exponential with the given mean.
    pub fn expo(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.unit()).ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_means() {
        let mut r = Rng::new(7);
        let (mut s, n) = (0.0, 20000);
        for _ in 0..n {
            let u = r.uniform(0.5, 1.5);
            assert!((0.5..1.5).contains(&u));
            let k = r.int(3, 8);
            assert!((3..=8).contains(&k));
            s += r.expo(3.0);
        }
        let m = s / f64::from(n);
        assert!((m - 3.0).abs() < 0.15, "exponential mean {m}");
    }

    #[test]
    fn seeded_is_repeatable() {
        let (mut a, mut b) = (Rng::new(1), Rng::new(1));
        assert_eq!(a.next_u64(), b.next_u64());
        assert_ne!(Rng::new(1).next_u64(), Rng::new(2).next_u64());
    }
}
