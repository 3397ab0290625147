//! The validated desired state: typed values ready for the kernel, what
//! the planner compares with the kernel's state and what keepalive hands
//! its IPVS worker.

use ipvs_netlink::ipvs::{Dest, Service};
use ipvs_netlink::vmwlch;

use crate::spec::RemovePolicy;

/// A virtual service with its real servers.
pub type ServiceEntry = (Service, Vec<Dest>);

/// The desired state of a cluster file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Desired {
    /// Services with their destinations (None: unmanaged).
    pub services: Option<Vec<ServiceEntry>>,
    /// Host map (None: unmanaged).
    pub hosts: Option<Vec<vmwlch::Host>>,
    /// Removal policy.
    pub remove: RemovePolicy,
}

impl Desired {
    /// Does the file manage anything (services or the host map)?
    pub fn manages_anything(&self) -> bool {
        self.services.is_some() || self.hosts.is_some()
    }
}
