//! The demo lab's request path in Rust (see lab/lab.py and docs/demo.md):
//! the hosts' processor-sharing model and the two wire protocols, kept free
//! of IO so that they can be tested; the binaries are `lab-serve` and
//! `lab-load`.

pub mod proto;
pub mod ps;
pub mod rng;

/// Seconds since the Unix epoch: lab.py compares these with `time.time()`.
pub fn wall() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}
