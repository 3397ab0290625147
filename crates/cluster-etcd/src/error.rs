//! Errors that say what went wrong and what to do about it.

use std::time::Duration;

/// An etcd request failed, or what etcd holds cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No answer from any endpoint.
    #[error(
        "cannot reach etcd at {endpoints}: {detail} (is etcd running? --etcd takes comma-separated endpoints)"
    )]
    Unreachable {
        /// The endpoints as given.
        endpoints: String,
        /// The transport's reason.
        detail: String,
    },
    /// etcd answered with an error.
    #[error("etcd at {endpoints}: {what}: {detail}")]
    Request {
        /// The endpoints as given.
        endpoints: String,
        /// The request that failed.
        what: &'static str,
        /// etcd's reason.
        detail: String,
    },
    /// The endpoint list or prefix cannot be used.
    #[error("{0}")]
    Usage(String),
    /// A key holds something this version cannot read.
    #[error("etcd key {key}: {detail} (rewrite it with `ipvsctl apply --etcd`)")]
    Corrupt {
        /// The key.
        key: String,
        /// What is wrong with its value.
        detail: String,
    },
}

impl Error {
    /// From an etcd-client error: transport problems are "unreachable".
    pub(crate) fn from_etcd(endpoints: &str, what: &'static str, e: etcd_client::Error) -> Error {
        use etcd_client::Error as E;
        if matches!(e, E::InvalidUri(_) | E::InvalidArgs(_)) {
            return Error::Usage(format!(
                "etcd endpoints {endpoints:?}: {e} (give http://HOST:PORT, comma-separated)"
            ));
        }
        let unreachable = match &e {
            E::TransportError(_) | E::IoError(_) => true,
            E::GRpcStatus(s) => matches!(
                s.code(),
                tonic::Code::Unavailable | tonic::Code::DeadlineExceeded
            ),
            _ => false,
        };
        let detail = match &e {
            E::GRpcStatus(s) => chain(s.message(), s),
            _ => chain(&e.to_string(), &e),
        };
        if unreachable {
            Error::Unreachable {
                endpoints: endpoints.to_string(),
                detail,
            }
        } else {
            Error::Request {
                endpoints: endpoints.to_string(),
                what,
                detail,
            }
        }
    }

    /// A request that got no answer within `t`.
    pub(crate) fn timeout(endpoints: &str, t: Duration) -> Error {
        Error::Unreachable {
            endpoints: endpoints.to_string(),
            detail: format!("no answer within {} s", t.as_secs()),
        }
    }
}

/// `first` and the deepest of `e`'s sources ("tcp connect error:
/// Connection refused (os error 111)"): the reason is usually deepest, the
/// layers between repeat it.
fn chain(first: &str, e: &dyn std::error::Error) -> String {
    let mut deepest = None;
    let mut src = e.source();
    while let Some(s) = src {
        deepest = Some(s.to_string());
        src = s.source();
    }
    match deepest {
        Some(d) if d != first => format!("{first}: {d}"),
        _ => first.to_string(),
    }
}
