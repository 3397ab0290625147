//! The netlink engine: one socket with sequence numbers, the request/ACK
//! loop, dumps read in place, and pipelined batches. It is independent of
//! the netlink protocol and of the message types: any payload that
//! `netlink-packet-core` can frame (`NetlinkSerializable` +
//! `NetlinkDeserializable`) goes through the same loops, so the IPVS and
//! VMWLCH generic netlink families ([`crate::genl`]) and rtnetlink
//! (`netlink_packet_route::RouteNetlinkMessage`) share one implementation.
//!
//! ```no_run
//! use netlink_packet_core::NLM_F_DUMP;
//! use netlink_packet_route::{link::LinkMessage, RouteNetlinkMessage};
//! # fn main() -> Result<(), ipvs_netlink::Error> {
//! let mut nl = ipvs_netlink::Netlink::open_route()?;
//! // A dump ends at NLMSG_DONE; `request` (no NLM_F_DUMP) waits for the ACK.
//! for m in nl.dump(RouteNetlinkMessage::GetLink(LinkMessage::default()))? {
//!     if let RouteNetlinkMessage::NewLink(l) = m {
//!         println!("link {}", l.header.index);
//!     }
//! }
//! # Ok(()) }
//! ```

use std::collections::HashMap;
use std::fmt::Debug;
use std::io;
use std::os::fd::AsRawFd;

use netlink_packet_core::{
    NetlinkDeserializable, NetlinkHeader, NetlinkMessage, NetlinkPayload, NetlinkSerializable,
    NLM_F_ACK, NLM_F_DUMP, NLM_F_DUMP_INTR, NLM_F_REQUEST,
};
use netlink_sys::protocols::{NETLINK_GENERIC, NETLINK_ROUTE};
use netlink_sys::{Socket, SocketAddr};

use crate::message::{
    messages, parse_done_payload, parse_error_payload, split_datagram, Incoming, RawMsg,
    NLMSG_DONE, NLMSG_ERROR, NLMSG_HDRLEN, NLMSG_NOOP, NLMSG_OVERRUN,
};
use crate::Error;

/// Largest batch of requests put in one `sendmsg` (the kernel accepts up to
/// the socket send buffer; 64 KiB keeps well under the default).
const MAX_BATCH_BYTES: usize = 64 * 1024;

/// Datagrams taken per `recvmmsg` in dumps, and the room for each (the
/// kernel's dump messages stay under 32 KiB).
const RECV_BATCH: usize = 8;
const RECV_BUF: usize = 64 * 1024;

/// A netlink socket of one protocol (one per process and protocol is
/// enough: every request carries its own sequence number).
pub struct Netlink {
    sock: Socket,
    seq: u32,
    /// `RECV_BATCH` receive slots of `RECV_BUF` bytes; single receives use
    /// the first.
    buf: Vec<u8>,
    /// Resolved generic netlink family ids (see [`crate::genl`]).
    pub(crate) families: HashMap<String, u16>,
    window: usize,
    reply_timeout: Option<std::time::Duration>,
}

/// Serialize one message into `out` (appended, 4-byte aligned as netlink
/// batches must be).
pub fn encode<I: NetlinkSerializable + Debug>(out: &mut Vec<u8>, payload: I, flags: u16, seq: u32) {
    let mut header = NetlinkHeader::default();
    header.flags = flags;
    header.sequence_number = seq;
    let mut msg = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(payload));
    msg.finalize();
    let start = out.len();
    let len = msg.buffer_len();
    out.resize(start + len, 0);
    msg.serialize(&mut out[start..start + len]);
    while out.len() % 4 != 0 {
        out.push(0);
    }
}

/// Decode one whole message (header included) into its payload type.
fn decode<I: NetlinkDeserializable + Debug>(bytes: &[u8]) -> Result<I, Error> {
    if bytes.len() < NLMSG_HDRLEN {
        return Err(Error::Decode("short netlink message".into()));
    }
    match NetlinkMessage::<I>::deserialize(bytes)?.payload {
        NetlinkPayload::InnerMessage(m) => Ok(m),
        _ => Err(Error::Decode("unexpected netlink payload".into())),
    }
}

impl Netlink {
    /// A generic netlink socket (the IPVS and VMWLCH families).
    pub fn open() -> Result<Netlink, Error> {
        Netlink::open_protocol(NETLINK_GENERIC)
    }

    /// An rtnetlink socket (links, addresses, routes), for messages of
    /// `netlink_packet_route`.
    pub fn open_route() -> Result<Netlink, Error> {
        Netlink::open_protocol(NETLINK_ROUTE)
    }

    /// Open and configure a socket of a netlink protocol: extended and
    /// capped ACKs, and a large receive buffer for pipelined ACKs.
    pub fn open_protocol(protocol: isize) -> Result<Netlink, Error> {
        let mut sock = Socket::new(protocol)?;
        sock.bind_auto()?;
        sock.connect(&SocketAddr::new(0, 0))?;
        let _ = sock.set_ext_ack(true);
        let _ = sock.set_cap_ack(true);
        let window = if force_rcvbuf(&sock, 4 << 20) {
            1024
        } else {
            let _ = sock.set_rx_buf_sz(1 << 20);
            128
        };
        let seq = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as u32)
            .unwrap_or(1);
        Ok(Netlink {
            sock,
            seq,
            buf: vec![0u8; RECV_BATCH * RECV_BUF],
            families: HashMap::new(),
            window,
            reply_timeout: None,
        })
    }

    /// Maximum number of unacknowledged pipelined requests.
    pub fn window(&self) -> usize {
        self.window
    }

    /// Bound every wait for the kernel's answer (`SO_RCVTIMEO`; `None`
    /// waits for ever, the default). A daemon sets it so that a lost reply
    /// becomes an error it can retry on a fresh socket instead of a request
    /// that never returns.
    pub fn set_reply_timeout(&mut self, t: Option<std::time::Duration>) -> Result<(), Error> {
        // A zero timeval means no timeout: a zero Duration waits 1 µs.
        let d = t.map_or(std::time::Duration::ZERO, |d| {
            d.max(std::time::Duration::from_micros(1))
        });
        let tv = libc::timeval {
            tv_sec: d.as_secs().min(i32::MAX as u64) as libc::time_t,
            tv_usec: d.subsec_micros() as libc::suseconds_t,
        };
        // SAFETY: the fd is this socket's, open for the call; `tv` is a
        // valid timeval that outlives it and its size is passed.
        let rc = unsafe {
            libc::setsockopt(
                self.sock.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&tv as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as libc::socklen_t,
            )
        };
        if rc != 0 {
            return Err(Error::Io(io::Error::last_os_error()));
        }
        self.reply_timeout = t;
        Ok(())
    }

    /// The error of a wait that hit [`Netlink::set_reply_timeout`].
    fn timed_out(&self, e: io::Error) -> Error {
        match (e.kind(), self.reply_timeout) {
            (io::ErrorKind::WouldBlock, Some(t)) => Error::Io(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("the kernel did not answer within {} ms", t.as_millis()),
            )),
            _ => Error::Io(e),
        }
    }

    /// Override the pipelining window (at least 1).
    pub fn set_window(&mut self, w: usize) {
        self.window = w.max(1);
    }

    fn next_seq(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1);
        if self.seq == 0 {
            self.seq = 1;
        }
        self.seq
    }

    /// Send one request (`NLM_F_REQUEST | NLM_F_ACK` plus `flags`) and
    /// return the replies received before its ACK (for `GET` commands).
    pub fn request<I>(&mut self, payload: I, flags: u16) -> Result<Vec<I>, Error>
    where
        I: NetlinkSerializable + NetlinkDeserializable + Debug,
    {
        let seq = self.next_seq();
        let mut bytes = Vec::new();
        encode(&mut bytes, payload, NLM_F_REQUEST | NLM_F_ACK | flags, seq);
        self.send(&bytes)?;
        let mut replies = Vec::new();
        loop {
            for m in self.recv()? {
                match m {
                    Incoming::Data { seq: s, bytes } if s == seq => replies.push(decode(&bytes)?),
                    Incoming::Ack { seq: s, errno, msg } if s == seq => {
                        return if errno == 0 {
                            Ok(replies)
                        } else {
                            Err(Error::Kernel { errno, msg })
                        };
                    }
                    _ => {}
                }
            }
        }
    }

    /// Run a dump request (`NLM_F_REQUEST | NLM_F_DUMP`) and decode every
    /// reply.
    pub fn dump<I>(&mut self, payload: I) -> Result<Vec<I>, Error>
    where
        I: NetlinkSerializable + NetlinkDeserializable + Debug,
    {
        let mut out = Vec::new();
        self.dump_each(payload, |m| {
            out.push(decode(m)?);
            Ok(())
        })?;
        Ok(out)
    }

    /// Run a dump request and hand each reply (the whole message, header
    /// included) to `f` straight from the receive buffer: listings of tens
    /// of thousands of real servers copy nothing per message. The first
    /// error of `f` ends the dump (the rest is still drained from the
    /// socket).
    pub fn dump_each<I>(
        &mut self,
        payload: I,
        mut f: impl FnMut(&[u8]) -> Result<(), Error>,
    ) -> Result<(), Error>
    where
        I: NetlinkSerializable + Debug,
    {
        let seq = self.next_seq();
        let mut bytes = Vec::new();
        encode(&mut bytes, payload, NLM_F_REQUEST | NLM_F_DUMP, seq);
        self.send(&bytes)?;
        let mut failed: Option<Error> = None;
        let mut intr = false;
        let mut lens = [0usize; RECV_BATCH];
        loop {
            let got = self.recv_batch(&mut lens)?;
            for (i, &n) in lens[..got].iter().enumerate() {
                for m in messages(&self.buf[i * RECV_BUF..i * RECV_BUF + n]) {
                    let m = m?;
                    if m.seq != seq {
                        continue;
                    }
                    intr |= m.flags & NLM_F_DUMP_INTR != 0;
                    if let Some(end) = dump_end(&m)? {
                        return match (failed, end) {
                            (Some(e), _) => Err(e),
                            (None, Ok(())) if intr => Err(Error::DumpInterrupted),
                            (None, end) => end,
                        };
                    }
                    if failed.is_none() && is_data(m.kind) {
                        if let Err(e) = f(m.bytes) {
                            failed = Some(e);
                        }
                    }
                }
            }
        }
    }

    /// Send many requests pipelined: batches of requests go out in single
    /// `sendmsg` calls with distinct sequence numbers, at most `window()`
    /// unacknowledged at a time; each ACK is mapped back to its request.
    /// Returns one result per request, in order. The kernel processes the
    /// requests in order and keeps going after a failed one.
    pub fn pipeline<I>(&mut self, payloads: Vec<I>) -> Result<Vec<Result<(), Error>>, Error>
    where
        I: NetlinkSerializable + Debug,
    {
        let n = payloads.len();
        let mut results: Vec<Option<Result<(), Error>>> = (0..n).map(|_| None).collect();
        if n == 0 {
            return Ok(Vec::new());
        }
        // Reserve a contiguous block of sequence numbers.
        let base = self.seq.wrapping_add(1);
        self.seq = self.seq.wrapping_add(n as u32);
        let mut iter = payloads.into_iter().enumerate();
        let mut inflight = 0usize;
        let mut done = 0usize;
        let mut batch = Vec::with_capacity(MAX_BATCH_BYTES + 4096);
        let mut pending = true; // requests left to send
        while done < n {
            // Refill only once half the window is acknowledged, so requests
            // go out in large batches (one sendmsg each).
            if pending && inflight <= self.window / 2 {
                while inflight < self.window {
                    batch.clear();
                    while inflight < self.window && batch.len() < MAX_BATCH_BYTES {
                        let Some((i, payload)) = iter.next() else {
                            pending = false;
                            break;
                        };
                        let seq = base.wrapping_add(i as u32);
                        encode(&mut batch, payload, NLM_F_REQUEST | NLM_F_ACK, seq);
                        inflight += 1;
                    }
                    if !batch.is_empty() {
                        self.send(&batch)?;
                    }
                    if !pending {
                        break;
                    }
                }
            }
            if inflight == 0 {
                break;
            }
            // One blocking receive, then whatever else is already queued.
            let mut msgs = self.recv()?;
            while let Some(more) = self.try_recv()? {
                msgs.extend(more);
                if msgs.len() >= inflight {
                    break;
                }
            }
            for m in msgs {
                if let Incoming::Ack { seq, errno, msg } = m {
                    let idx = seq.wrapping_sub(base) as usize;
                    if idx < n && results[idx].is_none() {
                        results[idx] = Some(if errno == 0 {
                            Ok(())
                        } else {
                            Err(Error::Kernel { errno, msg })
                        });
                        inflight -= 1;
                        done += 1;
                    }
                }
            }
        }
        Ok(results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(Error::Decode("no acknowledgement received".into()))))
            .collect())
    }

    fn recv(&mut self) -> Result<Vec<Incoming>, Error> {
        loop {
            match self
                .sock
                .recv(&mut &mut self.buf[..RECV_BUF], libc::MSG_TRUNC)
            {
                Ok(n) if n > RECV_BUF => {
                    // Larger than a slot (the kernel's replies stay under 32 KiB).
                    return Err(Error::Decode(format!(
                        "netlink message of {n} bytes truncated"
                    )));
                }
                Ok(n) => return split_datagram(&self.buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.timed_out(e)),
            }
        }
    }

    /// Receive without blocking: `None` when nothing is queued.
    fn try_recv(&mut self) -> Result<Option<Vec<Incoming>>, Error> {
        loop {
            match self.sock.recv(
                &mut &mut self.buf[..RECV_BUF],
                libc::MSG_TRUNC | libc::MSG_DONTWAIT,
            ) {
                Ok(n) if n > RECV_BUF => {
                    return Err(Error::Decode(format!(
                        "netlink message of {n} bytes truncated"
                    )))
                }
                Ok(n) => return split_datagram(&self.buf[..n]).map(Some),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(None),
                Err(e) => return Err(Error::Io(e)),
            }
        }
    }

    fn send(&self, bytes: &[u8]) -> Result<(), Error> {
        let mut off = 0;
        while off < bytes.len() {
            match self.sock.send(&bytes[off..], 0) {
                Ok(n) => off += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::Io(e)),
            }
        }
        Ok(())
    }

    /// Receive the queued datagrams, up to `RECV_BATCH`, with one
    /// `recvmmsg` that blocks for the first one only; returns how many, with
    /// their lengths in `lens` and their bytes in the `buf` slots. A dump's last
    /// data and its NLMSG_DONE come in separate datagrams (the kernel writes
    /// DONE while the data is being read), so this halves a small dump's
    /// receive calls.
    fn recv_batch(&mut self, lens: &mut [usize; RECV_BATCH]) -> Result<usize, Error> {
        let base = self.buf.as_mut_ptr();
        // SAFETY: an all-zero iovec/mmsghdr is a valid value (null pointers,
        // zero lengths) that is filled in below.
        let mut iov: [libc::iovec; RECV_BATCH] = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut hdrs: [libc::mmsghdr; RECV_BATCH] = unsafe { std::mem::zeroed() };
        for (i, (v, h)) in iov.iter_mut().zip(hdrs.iter_mut()).enumerate() {
            // SAFETY: slot i lies inside buf, which holds RECV_BATCH slots.
            v.iov_base = unsafe { base.add(i * RECV_BUF) }.cast();
            v.iov_len = RECV_BUF;
            h.msg_hdr.msg_iov = v;
            h.msg_hdr.msg_iovlen = 1;
        }
        loop {
            // SAFETY: hdrs holds RECV_BATCH headers, each pointing at its own
            // live iovec and buf slot; nothing else touches them meanwhile.
            let rc = unsafe {
                libc::recvmmsg(
                    self.sock.as_raw_fd(),
                    hdrs.as_mut_ptr(),
                    RECV_BATCH as libc::c_uint,
                    libc::MSG_WAITFORONE,
                    std::ptr::null_mut(),
                )
            };
            if rc < 0 {
                let e = io::Error::last_os_error();
                if e.kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(self.timed_out(e));
            }
            let got = rc as usize;
            for (len, h) in lens.iter_mut().zip(&hdrs[..got]) {
                if h.msg_hdr.msg_flags & libc::MSG_TRUNC != 0 {
                    return Err(Error::Decode(format!(
                        "netlink message over {RECV_BUF} bytes truncated"
                    )));
                }
                *len = h.msg_len as usize;
            }
            return Ok(got);
        }
    }
}

/// `Some` when `m` ends a dump: `NLMSG_DONE`, or an `NLMSG_ERROR` with an
/// error (an ACK with errno 0 inside a dump does not end it).
fn dump_end(m: &RawMsg<'_>) -> Result<Option<Result<(), Error>>, Error> {
    let (errno, msg) = match m.kind {
        NLMSG_DONE => parse_done_payload(m.payload(), m.flags),
        NLMSG_ERROR => match parse_error_payload(m.payload(), m.flags)? {
            (0, _) => return Ok(None),
            e => e,
        },
        _ => return Ok(None),
    };
    Ok(Some(if errno == 0 {
        Ok(())
    } else {
        Err(Error::Kernel { errno, msg })
    }))
}

/// A message carrying data (not one of netlink's control messages).
fn is_data(kind: u16) -> bool {
    !matches!(kind, NLMSG_NOOP | NLMSG_ERROR | NLMSG_DONE | NLMSG_OVERRUN)
}

fn force_rcvbuf(sock: &Socket, size: i32) -> bool {
    let fd = sock.as_raw_fd();
    // SAFETY: setsockopt with a valid fd, a pointer to a live i32 and its size.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            &size as *const i32 as *const libc::c_void,
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    rc == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_route::link::{LinkAttribute, LinkMessage};
    use netlink_packet_route::RouteNetlinkMessage;

    /// rtnetlink through the same loops, unprivileged: a link dump and a
    /// `GET` request with its ACK find the loopback interface; a request
    /// the kernel refuses comes back as its errno.
    #[test]
    fn rtnetlink_link_dump_and_get() {
        let mut nl = Netlink::open_route().unwrap();
        let links = nl
            .dump(RouteNetlinkMessage::GetLink(LinkMessage::default()))
            .unwrap();
        let lo = links
            .iter()
            .find_map(|m| match m {
                RouteNetlinkMessage::NewLink(l)
                    if l.attributes.contains(&LinkAttribute::IfName("lo".into())) =>
                {
                    Some(l.header.index)
                }
                _ => None,
            })
            .expect("lo in the link dump");
        let mut get = LinkMessage::default();
        get.header.index = lo;
        let r = nl.request(RouteNetlinkMessage::GetLink(get), 0).unwrap();
        assert!(matches!(&r[..], [RouteNetlinkMessage::NewLink(l)] if l.header.index == lo));
        let mut missing = LinkMessage::default();
        missing.header.index = 0x7fff_fff0;
        let e = nl
            .request(RouteNetlinkMessage::GetLink(missing), 0)
            .unwrap_err();
        assert_eq!(e.errno(), Some(libc::ENODEV), "{e}");
    }

    /// With a reply timeout, a wait with nothing coming (no request sent)
    /// ends in a TimedOut error that says so, for both receive paths; the
    /// socket still works afterwards.
    #[test]
    fn reply_timeout_ends_a_wait_for_nothing() {
        let mut nl = Netlink::open_route().unwrap();
        nl.set_reply_timeout(Some(std::time::Duration::from_millis(20)))
            .unwrap();
        let t = std::time::Instant::now();
        let e = nl.recv().unwrap_err();
        let Error::Io(io) = &e else { panic!("{e}") };
        assert_eq!(io.kind(), io::ErrorKind::TimedOut, "{e}");
        assert!(e.to_string().contains("within 20 ms"), "{e}");
        let mut lens = [0; RECV_BATCH];
        assert!(
            matches!(nl.recv_batch(&mut lens), Err(Error::Io(e)) if e.kind() == io::ErrorKind::TimedOut)
        );
        assert!(t.elapsed() < std::time::Duration::from_secs(5));
        assert!(!nl
            .dump(RouteNetlinkMessage::GetLink(LinkMessage::default()))
            .unwrap()
            .is_empty());
    }
}
