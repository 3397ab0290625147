//! VRRP without IO: the wire codec ([`packet`], versions 2 and 3), the
//! protocol state machine ([`machine`]), sync groups ([`sync`]) and the
//! tracking arithmetic ([`track`]). Nothing here reads a clock or touches
//! a socket; the `keepalive` daemon is the IO layer around it, and the
//! tests drive the machine in virtual time (`tests/scenarios/*.scn`).
pub mod machine;
pub mod packet;
pub mod sync;
pub mod track;
