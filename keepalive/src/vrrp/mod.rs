//! VRRP version 3: wire codec and sans-IO state machine.
pub mod machine;
pub mod packet;
