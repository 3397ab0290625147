//! The scheduler flags (`IP_VS_SVC_F_SCHED1..3`) by name: the one table
//! behind ipvsadm's `-b`, the modern command line, the cluster file's
//! `sched_flags` and every listing. `sh` and `mh` give the first two bits
//! their own names; the generic `flag-N` names work with any scheduler.

use super::consts::{IP_VS_SVC_F_SCHED1, IP_VS_SVC_F_SCHED2, IP_VS_SVC_F_SCHED3};

/// Name, bit, and the scheduler the name belongs to (None: any).
pub const SCHED_FLAGS: [(&str, u32, Option<&str>); 7] = [
    ("flag-1", IP_VS_SVC_F_SCHED1, None),
    ("flag-2", IP_VS_SVC_F_SCHED2, None),
    ("flag-3", IP_VS_SVC_F_SCHED3, None),
    ("sh-fallback", IP_VS_SVC_F_SCHED1, Some("sh")),
    ("sh-port", IP_VS_SVC_F_SCHED2, Some("sh")),
    ("mh-fallback", IP_VS_SVC_F_SCHED1, Some("mh")),
    ("mh-port", IP_VS_SVC_F_SCHED2, Some("mh")),
];

/// Why a scheduler flag name was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedFlagError {
    /// No flag has this name.
    Unknown,
    /// The flag belongs to another scheduler.
    Incompatible {
        /// The scheduler it needs.
        needs: &'static str,
    },
}

/// The bit of a flag name for a service using `scheduler`.
pub fn sched_flag(scheduler: &str, name: &str) -> Result<u32, SchedFlagError> {
    let (_, bit, only) = SCHED_FLAGS
        .iter()
        .find(|(n, ..)| *n == name)
        .ok_or(SchedFlagError::Unknown)?;
    match only {
        Some(s) if *s != scheduler => Err(SchedFlagError::Incompatible { needs: s }),
        _ => Ok(*bit),
    }
}

/// The names of the scheduler flags set in `flags`, lowest bit first, as
/// a service using `scheduler` calls them (`sh-port` for `sh`, else
/// `flag-2`).
pub fn sched_flag_names(scheduler: &str, flags: u32) -> Vec<&'static str> {
    [IP_VS_SVC_F_SCHED1, IP_VS_SVC_F_SCHED2, IP_VS_SVC_F_SCHED3]
        .into_iter()
        .filter(|bit| flags & bit != 0)
        .filter_map(|bit| {
            let own = SCHED_FLAGS
                .iter()
                .find(|(_, b, only)| *b == bit && *only == Some(scheduler));
            let generic = SCHED_FLAGS
                .iter()
                .find(|(_, b, only)| *b == bit && only.is_none());
            own.or(generic).map(|(n, ..)| *n)
        })
        .collect()
}

/// All flag names, for help and error texts.
pub fn sched_flag_list() -> String {
    SCHED_FLAGS.map(|(n, ..)| n).join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_bits_round_trip() {
        assert_eq!(sched_flag("rr", "flag-3"), Ok(IP_VS_SVC_F_SCHED3));
        assert_eq!(sched_flag("sh", "sh-port"), Ok(IP_VS_SVC_F_SCHED2));
        assert_eq!(
            sched_flag("rr", "mh-port"),
            Err(SchedFlagError::Incompatible { needs: "mh" })
        );
        assert_eq!(sched_flag("rr", "port"), Err(SchedFlagError::Unknown));
        let all = IP_VS_SVC_F_SCHED1 | IP_VS_SVC_F_SCHED2 | IP_VS_SVC_F_SCHED3;
        assert_eq!(
            sched_flag_names("sh", all),
            ["sh-fallback", "sh-port", "flag-3"]
        );
        assert_eq!(sched_flag_names("wlc", all), ["flag-1", "flag-2", "flag-3"]);
        for sched in ["sh", "mh", "rr"] {
            for name in sched_flag_names(sched, all) {
                assert!(sched_flag(sched, name).is_ok(), "{sched} {name}");
            }
        }
    }
}
