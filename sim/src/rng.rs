//! A small seeded PRNG (xoshiro256**, seeded through SplitMix64) and the
//! few distributions the workload needs. No dependency, fully deterministic:
//! the same seed gives the same stream on every platform (the variates use
//! only `ln`, which is correctly rounded in practice on the targets we run).

/// SplitMix64 step: used to expand seeds and to derive independent streams.
#[must_use]
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// xoshiro256** generator.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator for `seed`.
    #[must_use]
    pub fn new(seed: u64) -> Self {
        let mut sm = seed;
        let s = [
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
            splitmix64(&mut sm),
        ];
        Self { s }
    }

    /// An independent stream `stream` of the experiment seeded `seed`.
    #[must_use]
    pub fn stream(seed: u64, stream: u64) -> Self {
        let mut m = seed ^ stream.wrapping_mul(0xd1b5_4a32_d192_ed03);
        let mixed = splitmix64(&mut m);
        Self::new(mixed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = self.s[1] << 17;
        self.s[2] ^= self.s[0];
        self.s[3] ^= self.s[1];
        self.s[1] ^= self.s[2];
        self.s[0] ^= self.s[3];
        self.s[2] ^= t;
        self.s[3] = self.s[3].rotate_left(45);
        result
    }

    /// Next 32 random bits (the high half, the better one).
    pub fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    /// Uniform on `[0, 1)` with 53 bits of precision.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Exponential with the given mean (`mean <= 0` gives 0).
    pub fn exp(&mut self, mean: f64) -> f64 {
        if mean <= 0.0 {
            return 0.0;
        }
        // 1 - U is in (0, 1]: ln is finite.
        -mean * (1.0 - self.uniform()).ln()
    }

    /// Geometric on `{1, 2, ...}` with the given mean (>= 1), capped at `cap`.
    pub fn geometric(&mut self, mean: f64, cap: u32) -> u32 {
        if mean <= 1.0 {
            return 1;
        }
        let q = 1.0 - 1.0 / mean; // probability of one more
        let mut n = 1;
        while n < cap && self.uniform() < q {
            n += 1;
        }
        n
    }
}

/// A service-demand distribution (core-seconds of work at speed 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Demand {
    /// Always the same demand.
    Const(f64),
    /// Exponential with mean `mean` (squared coefficient of variation 1).
    Exp {
        /// Mean demand.
        mean: f64,
    },
    /// `min` plus an exponential: mean `mean`, never below `min`
    /// (`0 <= min <= mean`); SCV = ((mean - min) / mean)^2.
    ShiftedExp {
        /// Minimum demand.
        min: f64,
        /// Mean demand.
        mean: f64,
    },
    /// Two-phase hyperexponential with balanced means: mean `mean`, squared
    /// coefficient of variation `scv` (>= 1): many light requests, a few heavy.
    Hyper2 {
        /// Mean demand.
        mean: f64,
        /// Squared coefficient of variation (variance / mean^2).
        scv: f64,
    },
}

impl Demand {
    /// The distribution's mean.
    #[must_use]
    pub fn mean(&self) -> f64 {
        match *self {
            Demand::Const(m) | Demand::Exp { mean: m } => m,
            Demand::ShiftedExp { mean, .. } | Demand::Hyper2 { mean, .. } => mean,
        }
    }

    /// The same distribution scaled to a new mean.
    #[must_use]
    pub fn with_mean(&self, m: f64) -> Demand {
        match *self {
            Demand::Const(_) => Demand::Const(m),
            Demand::Exp { .. } => Demand::Exp { mean: m },
            Demand::ShiftedExp { min, mean } => Demand::ShiftedExp {
                min: if mean > 0.0 { min * m / mean } else { 0.0 },
                mean: m,
            },
            Demand::Hyper2 { scv, .. } => Demand::Hyper2 { mean: m, scv },
        }
    }

    /// Probability of the first (light) phase of [`Demand::Hyper2`].
    fn h2_p(scv: f64) -> f64 {
        let scv = scv.max(1.0);
        0.5 * (1.0 + ((scv - 1.0) / (scv + 1.0)).sqrt())
    }

    /// Draws one demand.
    pub fn sample(&self, rng: &mut Rng) -> f64 {
        match *self {
            Demand::Const(m) => m.max(0.0),
            Demand::Exp { mean } => rng.exp(mean),
            Demand::ShiftedExp { min, mean } => {
                let min = min.clamp(0.0, mean.max(0.0));
                min + rng.exp(mean - min)
            }
            Demand::Hyper2 { mean, scv } => {
                // Balanced means: p / mu1 = (1 - p) / mu2 = mean / 2.
                let p = Self::h2_p(scv);
                if rng.uniform() < p {
                    rng.exp(mean / (2.0 * p))
                } else {
                    rng.exp(mean / (2.0 * (1.0 - p)))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_deterministic_and_distinct() {
        let a: Vec<u64> = (0..4).map(|_| Rng::new(7).next_u64()).collect();
        assert!(a.windows(2).all(|w| w[0] == w[1]));
        let mut s1 = Rng::stream(1, 1);
        let mut s2 = Rng::stream(1, 2);
        let v1: Vec<u64> = (0..8).map(|_| s1.next_u64()).collect();
        let v2: Vec<u64> = (0..8).map(|_| s2.next_u64()).collect();
        assert_ne!(v1, v2);
        let mut r = Rng::stream(1, 1);
        assert_eq!(v1, (0..8).map(|_| r.next_u64()).collect::<Vec<_>>());
    }

    fn moments(d: Demand, n: usize) -> (f64, f64) {
        let mut r = Rng::new(42);
        let xs: Vec<f64> = (0..n).map(|_| d.sample(&mut r)).collect();
        assert!(xs.iter().all(|x| x.is_finite() && *x >= 0.0));
        let m = xs.iter().sum::<f64>() / n as f64;
        let v = xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n as f64;
        (m, v / (m * m))
    }

    #[test]
    fn demand_moments() {
        let (m, scv) = moments(Demand::Exp { mean: 2.0 }, 200_000);
        assert!((m - 2.0).abs() < 0.03, "{m}");
        assert!((scv - 1.0).abs() < 0.05, "{scv}");
        let (m, scv) = moments(
            Demand::ShiftedExp {
                min: 0.5,
                mean: 1.0,
            },
            200_000,
        );
        assert!((m - 1.0).abs() < 0.01, "{m}");
        assert!((scv - 0.25).abs() < 0.02, "{scv}");
        let (m, scv) = moments(
            Demand::Hyper2 {
                mean: 0.3,
                scv: 4.0,
            },
            400_000,
        );
        assert!((m - 0.3).abs() < 0.01, "{m}");
        assert!((scv - 4.0).abs() < 0.4, "{scv}");
        assert_eq!(Demand::Const(0.2).sample(&mut Rng::new(1)), 0.2);
        let d = Demand::ShiftedExp {
            min: 0.5,
            mean: 1.0,
        }
        .with_mean(2.0);
        assert_eq!(
            d,
            Demand::ShiftedExp {
                min: 1.0,
                mean: 2.0
            }
        );
    }

    #[test]
    fn geometric_mean_and_cap() {
        let mut r = Rng::new(3);
        let n = 100_000;
        let s: u64 = (0..n).map(|_| u64::from(r.geometric(3.0, 1000))).sum();
        let m = s as f64 / n as f64;
        assert!((m - 3.0).abs() < 0.05, "{m}");
        assert!((0..1000).all(|_| r.geometric(50.0, 4) <= 4));
        assert_eq!(r.geometric(0.5, 10), 1);
    }

    #[test]
    fn uniform_range() {
        let mut r = Rng::new(9);
        for _ in 0..10_000 {
            let u = r.uniform();
            assert!((0.0..1.0).contains(&u));
        }
        assert_eq!(r.exp(0.0), 0.0);
    }
}
