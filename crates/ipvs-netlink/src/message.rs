//! The netlink message layer: walking a datagram's messages in place, and
//! the `NLMSG_ERROR`/`NLMSG_DONE` payloads with their extended ACK text.
//! Protocol-independent: the same code reads IPVS, VMWLCH and rtnetlink
//! replies.

use crate::attr::Attrs;
use crate::Error;

pub(crate) const NLMSG_NOOP: u16 = 1;
pub(crate) const NLMSG_ERROR: u16 = 2;
pub(crate) const NLMSG_DONE: u16 = 3;
pub(crate) const NLMSG_OVERRUN: u16 = 4;
pub(crate) const NLMSG_HDRLEN: usize = 16;
const NLM_F_CAPPED: u16 = 0x100;
const NLM_F_ACK_TLVS: u16 = 0x200;
const NLMSGERR_ATTR_MSG: u16 = 1;
const NLMSGERR_ATTR_OFFS: u16 = 2;

/// One message received from the kernel.
#[derive(Debug)]
pub(crate) enum Incoming {
    /// A family message.
    Data { seq: u32, bytes: Vec<u8> },
    /// NLMSG_ERROR (errno 0 = ACK).
    Ack {
        seq: u32,
        errno: i32,
        msg: Option<String>,
    },
    /// Anything else (NOOP, OVERRUN, and NLMSG_DONE: dumps are read by
    /// the dump loop).
    Other,
}

/// One netlink message of a datagram, borrowed from the receive buffer.
pub(crate) struct RawMsg<'a> {
    pub(crate) kind: u16,
    pub(crate) flags: u16,
    pub(crate) seq: u32,
    /// The whole message, header included.
    pub(crate) bytes: &'a [u8],
}

impl<'a> RawMsg<'a> {
    /// The payload after the netlink header.
    pub(crate) fn payload(&self) -> &'a [u8] {
        &self.bytes[NLMSG_HDRLEN..]
    }
}

/// The messages of a datagram, in order; a bad length ends the walk with an
/// error.
pub(crate) fn messages(buf: &[u8]) -> impl Iterator<Item = Result<RawMsg<'_>, Error>> {
    let mut off = 0;
    std::iter::from_fn(move || {
        if off + NLMSG_HDRLEN > buf.len() {
            return None;
        }
        let h = &buf[off..];
        let len = u32::from_ne_bytes([h[0], h[1], h[2], h[3]]) as usize;
        if len < NLMSG_HDRLEN || off + len > buf.len() {
            off = buf.len();
            return Some(Err(Error::Decode(format!(
                "bad netlink message length {len}"
            ))));
        }
        off += (len + 3) & !3;
        Some(Ok(RawMsg {
            kind: u16::from_ne_bytes([h[4], h[5]]),
            flags: u16::from_ne_bytes([h[6], h[7]]),
            seq: u32::from_ne_bytes([h[8], h[9], h[10], h[11]]),
            bytes: &h[..len],
        }))
    })
}

/// Split a datagram into owned messages.
pub(crate) fn split_datagram(buf: &[u8]) -> Result<Vec<Incoming>, Error> {
    let mut out = Vec::new();
    for m in messages(buf) {
        let m = m?;
        out.push(match m.kind {
            NLMSG_ERROR => {
                let (errno, msg) = parse_error_payload(m.payload(), m.flags)?;
                Incoming::Ack {
                    seq: m.seq,
                    errno,
                    msg,
                }
            }
            NLMSG_NOOP | NLMSG_DONE | NLMSG_OVERRUN => Incoming::Other,
            _ => Incoming::Data {
                seq: m.seq,
                bytes: m.bytes.to_vec(),
            },
        });
    }
    Ok(out)
}

/// Parse an `NLMSG_DONE` payload: errno (positive, 0 = success) and extack
/// message.
pub(crate) fn parse_done_payload(p: &[u8], flags: u16) -> (i32, Option<String>) {
    let errno = if p.len() >= 4 {
        -i32::from_ne_bytes([p[0], p[1], p[2], p[3]])
    } else {
        0
    };
    let msg = if flags & NLM_F_ACK_TLVS != 0 && p.len() > 4 {
        extack_msg(&p[4..])
    } else {
        None
    };
    (errno.max(0), msg)
}

/// Parse an `NLMSG_ERROR` payload: errno (positive) and extack message.
pub(crate) fn parse_error_payload(p: &[u8], flags: u16) -> Result<(i32, Option<String>), Error> {
    if p.len() < 4 {
        return Err(Error::Decode("short NLMSG_ERROR".into()));
    }
    let code = i32::from_ne_bytes([p[0], p[1], p[2], p[3]]);
    let errno = -code;
    let mut msg = None;
    if flags & NLM_F_ACK_TLVS != 0 && p.len() >= 4 + NLMSG_HDRLEN {
        let orig_len = u32::from_ne_bytes([p[4], p[5], p[6], p[7]]) as usize;
        let tlv_off = if flags & NLM_F_CAPPED != 0 {
            4 + NLMSG_HDRLEN
        } else {
            4 + ((orig_len + 3) & !3)
        };
        if tlv_off <= p.len() {
            msg = extack_msg(&p[tlv_off..]);
        }
    }
    Ok((errno, msg))
}

fn extack_msg(tlvs: &[u8]) -> Option<String> {
    let attrs = Attrs::parse(tlvs).ok()?;
    let _ = attrs.get(NLMSGERR_ATTR_OFFS);
    attrs.string(NLMSGERR_ATTR_MSG)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_ack_with_extack() {
        // NLMSG_ERROR, capped, with TLVs: errno -22 and message "bad".
        #[rustfmt::skip]
        let dg: Vec<u8> = vec![
            44, 0, 0, 0,  2, 0,  0x00, 0x03,  9, 0, 0, 0,  0, 0, 0, 0,
            0xea, 0xff, 0xff, 0xff,                               // -22
            36, 0, 0, 0, 0x20, 0, 5, 0, 9, 0, 0, 0, 0, 0, 0, 0,    // orig header
            8, 0, 1, 0, b'b', b'a', b'd', 0,                      // MSG
        ];
        let v = split_datagram(&dg).unwrap();
        match &v[0] {
            Incoming::Ack { seq, errno, msg } => {
                assert_eq!(*seq, 9);
                assert_eq!(*errno, 22);
                assert_eq!(msg.as_deref(), Some("bad"));
            }
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn bad_length_ends_the_walk() {
        let dg = [8u8, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0];
        let v: Vec<_> = messages(&dg).collect();
        assert_eq!(v.len(), 1);
        assert!(v[0].is_err());
    }
}
