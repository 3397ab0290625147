//! VRRP version 3 without IO: the wire codec ([`packet`]) and the protocol
//! state machine ([`machine`]). Nothing here reads a clock or touches a
//! socket; the `keepalive` daemon is the IO layer around it, and the tests
//! drive the machine in virtual time.
pub mod machine;
pub mod packet;
