//! The errors of the netlink layer and of the kernel's answers.

use std::io;

use netlink_packet_core::DecodeError;

/// Errors from the netlink layer and the kernel.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A socket error.
    #[error("netlink socket: {0}")]
    Io(#[from] io::Error),
    /// The generic netlink family is not registered in this kernel.
    #[error("netlink family {0} not found")]
    FamilyNotFound(String),
    /// The kernel rejected a request: errno and the extended ACK message.
    #[error("{}", kernel_msg(*errno, msg.as_deref()))]
    Kernel {
        /// Positive errno value.
        errno: i32,
        /// Extended ACK message, if the kernel gave one.
        msg: Option<String>,
    },
    /// The kernel sent something we cannot decode.
    #[error("malformed netlink message: {0}")]
    Decode(String),
    /// The table changed while the kernel dumped it (`NLM_F_DUMP_INTR`):
    /// the listing may miss or repeat entries; dump again.
    #[error("the kernel's table changed during the listing; list it again")]
    DumpInterrupted,
    /// The request itself is invalid (caught before sending).
    #[error("{0}")]
    Invalid(String),
}

impl Error {
    /// The errno of a kernel error.
    pub fn errno(&self) -> Option<i32> {
        match self {
            Error::Kernel { errno, .. } => Some(*errno),
            Error::Io(e) => e.raw_os_error(),
            _ => None,
        }
    }
    /// The kernel's extended ACK message, if any.
    pub fn extack(&self) -> Option<&str> {
        match self {
            Error::Kernel { msg, .. } => msg.as_deref(),
            _ => None,
        }
    }
}

impl From<DecodeError> for Error {
    fn from(e: DecodeError) -> Self {
        Error::Decode(e.to_string())
    }
}

fn kernel_msg(errno: i32, msg: Option<&str>) -> String {
    match msg {
        Some(m) if !m.is_empty() => format!("{} ({m})", strerror(errno)),
        _ => strerror(errno),
    }
}

/// The C library's text for an errno (`strerror`).
pub fn strerror(errno: i32) -> String {
    let s = io::Error::from_raw_os_error(errno).to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strerror_text() {
        assert_eq!(strerror(libc::ENOENT), "No such file or directory");
    }
}
