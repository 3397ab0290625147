//! Tracking (keepalived's semantics): a tracked interface or script either
//! moves the priority by its weight or, without one, puts the router in
//! FAULT. A negative weight is added while the object fails, a positive
//! one while it is healthy. The effective priority is clamped to 1..=254,
//! so tracking never makes an address owner of a backup, and an owner
//! (255) is never tracked down.

/// What one tracked object does to the router.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Nothing (healthy without weight, or its weight does not apply now).
    None,
    /// Add this to the priority.
    Weight(i32),
    /// FAULT.
    Fault,
}

/// The effect of an object with `weight` (none or 0: FAULT when failing).
pub fn effect(weight: Option<i32>, healthy: bool) -> Effect {
    match (weight.filter(|&w| w != 0), healthy) {
        (None, true) => Effect::None,
        (None, false) => Effect::Fault,
        (Some(w), false) if w < 0 => Effect::Weight(w),
        (Some(w), true) if w > 0 => Effect::Weight(w),
        (Some(_), _) => Effect::None,
    }
}

/// The priority adverts carry: `base` moved by `delta`, within 1..=254
/// (`base` 255, the address owner, stays 255).
pub fn effective_priority(base: u8, delta: i32) -> u8 {
    if base == 255 {
        return 255;
    }
    (i32::from(base) + delta).clamp(1, 254) as u8
}

/// The combined effect of several objects: FAULT if any says so, else the
/// sum of the weights.
pub fn combine(effects: impl IntoIterator<Item = Effect>) -> (bool, i32) {
    let mut fault = false;
    let mut delta = 0i32;
    for e in effects {
        match e {
            Effect::Fault => fault = true,
            Effect::Weight(w) => delta = delta.saturating_add(w),
            Effect::None => {}
        }
    }
    (fault, delta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_and_clamping() {
        assert_eq!(effect(None, false), Effect::Fault);
        assert_eq!(effect(Some(0), false), Effect::Fault);
        assert_eq!(effect(None, true), Effect::None);
        assert_eq!(effect(Some(-50), false), Effect::Weight(-50));
        assert_eq!(effect(Some(-50), true), Effect::None);
        assert_eq!(effect(Some(20), true), Effect::Weight(20));
        assert_eq!(effect(Some(20), false), Effect::None);
        assert_eq!(effective_priority(100, -150), 1);
        assert_eq!(effective_priority(200, 100), 254);
        assert_eq!(effective_priority(255, -100), 255);
        assert_eq!(effective_priority(100, -30), 70);
        let (f, d) = combine([Effect::Weight(-10), Effect::None, Effect::Weight(-20)]);
        assert!(!f);
        assert_eq!(d, -30);
        assert!(combine([Effect::Weight(5), Effect::Fault]).0);
    }
}
