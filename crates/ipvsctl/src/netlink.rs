//! One generic netlink socket per process, with family resolution,
//! request/ACK handling, dumps, extended ACK messages and pipelining.
//!
//! Built on the rust-netlink crates: [`netlink_sys::Socket`] for the socket,
//! [`netlink_packet_core`] for netlink headers and the NLA traits, and
//! [`netlink_packet_generic`] for the generic netlink header and the
//! controller (`CTRL_CMD_GETFAMILY`) used to resolve family ids.
//!
//! The family payloads themselves (IPVS, VMWLCH) are encoded with the small
//! [`Attr`] tree below, which implements `netlink_packet_core::Nla`: the
//! published `netlink-packet-*` crates have no IPVS or VMWLCH family (the
//! third-party `netlink-packet-ipvs` 0.0.1 panics on unknown scheduler names
//! and lacks daemons, config, info, zero and flush), so the attribute layout
//! is written here, on top of the crates' buffers and traits.

use std::collections::HashMap;
use std::fmt::Debug;
use std::io;
use std::marker::PhantomData;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use netlink_packet_core::{
    DecodeError, Emitable, NetlinkHeader, NetlinkMessage, NetlinkPayload, Nla, NlaBuffer,
    NlasIterator, ParseableParametrized, NLA_F_NESTED, NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST,
};
use netlink_packet_generic::ctrl::nlas::GenlCtrlAttrs;
use netlink_packet_generic::ctrl::{GenlCtrl, GenlCtrlCmd};
use netlink_packet_generic::{GenlFamily, GenlHeader, GenlMessage};
use netlink_sys::{protocols::NETLINK_GENERIC, Socket, SocketAddr};

const NLMSG_NOOP: u16 = 1;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLMSG_OVERRUN: u16 = 4;
const NLMSG_HDRLEN: usize = 16;
const NLM_F_CAPPED: u16 = 0x100;
const NLM_F_ACK_TLVS: u16 = 0x200;
const NLMSGERR_ATTR_MSG: u16 = 1;
const NLMSGERR_ATTR_OFFS: u16 = 2;
const GENL_HDRLEN: usize = 4;

/// Largest batch of requests put in one `sendmsg` (the kernel accepts up to
/// the socket send buffer; 64 KiB keeps well under the default).
const MAX_BATCH_BYTES: usize = 64 * 1024;

/// Datagrams taken per `recvmmsg` in dumps, and the room for each (the
/// kernel's dump messages stay under 32 KiB).
const RECV_BATCH: usize = 8;
const RECV_BUF: usize = 64 * 1024;

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

/// A netlink attribute tree, encoded through `netlink_packet_core::Nla`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attr {
    /// u8 value.
    U8(u16, u8),
    /// u16 in host order.
    U16(u16, u16),
    /// u16 in network order (ports).
    Be16(u16, u16),
    /// u32 in host order.
    U32(u16, u32),
    /// u64 in host order.
    U64(u16, u64),
    /// Raw bytes.
    Bytes(u16, Vec<u8>),
    /// NUL-terminated string.
    Str(u16, String),
    /// Nested attributes (sent with `NLA_F_NESTED`).
    Nested(u16, Vec<Attr>),
}

impl Nla for Attr {
    fn value_len(&self) -> usize {
        match self {
            Attr::U8(..) => 1,
            Attr::U16(..) | Attr::Be16(..) => 2,
            Attr::U32(..) => 4,
            Attr::U64(..) => 8,
            Attr::Bytes(_, v) => v.len(),
            Attr::Str(_, s) => s.len() + 1,
            Attr::Nested(_, v) => v.as_slice().buffer_len(),
        }
    }
    fn kind(&self) -> u16 {
        match self {
            Attr::U8(k, _)
            | Attr::U16(k, _)
            | Attr::Be16(k, _)
            | Attr::U32(k, _)
            | Attr::U64(k, _)
            | Attr::Bytes(k, _)
            | Attr::Str(k, _) => *k,
            Attr::Nested(k, _) => *k | NLA_F_NESTED,
        }
    }
    fn emit_value(&self, buf: &mut [u8]) {
        match self {
            Attr::U8(_, v) => buf[0] = *v,
            Attr::U16(_, v) => buf[..2].copy_from_slice(&v.to_ne_bytes()),
            Attr::Be16(_, v) => buf[..2].copy_from_slice(&v.to_be_bytes()),
            Attr::U32(_, v) => buf[..4].copy_from_slice(&v.to_ne_bytes()),
            Attr::U64(_, v) => buf[..8].copy_from_slice(&v.to_ne_bytes()),
            Attr::Bytes(_, v) => buf[..v.len()].copy_from_slice(v),
            Attr::Str(_, s) => {
                buf[..s.len()].copy_from_slice(s.as_bytes());
                buf[s.len()] = 0;
            }
            Attr::Nested(_, v) => v.as_slice().emit(buf),
        }
    }
}

/// Attribute types below this are looked up through an index; higher ones
/// (rare) by walking the attributes.
const INDEXED_KINDS: usize = 32;

/// Parsed attributes of one level. Parsing validates the whole run once and
/// indexes the last attribute of each type (the kernel's `nla_parse` keeps
/// the last), without allocating: listings parse several of these per real
/// server.
#[derive(Debug, Clone)]
pub struct Attrs<'a> {
    buf: &'a [u8],
    /// Offset + 1 of the last attribute of each low type (0 = absent).
    last: [u32; INDEXED_KINDS],
}

impl Default for Attrs<'_> {
    fn default() -> Self {
        Attrs {
            buf: &[],
            last: [0; INDEXED_KINDS],
        }
    }
}

impl<'a> Attrs<'a> {
    /// Parse a run of attributes.
    pub fn parse(buf: &'a [u8]) -> Result<Attrs<'a>, Error> {
        let mut last = [0u32; INDEXED_KINDS];
        let mut off = 0usize;
        for nla in NlasIterator::new(buf) {
            let nla: NlaBuffer<&'a [u8]> = nla.map_err(|e| Error::Decode(e.to_string()))?;
            let kind = nla.kind() as usize;
            if kind < INDEXED_KINDS {
                last[kind] = off as u32 + 1;
            }
            off += (nla.length() as usize + 3) & !3;
        }
        Ok(Attrs { buf, last })
    }
    /// `(type, value)` of every attribute, in wire order (already validated).
    fn iter(&self) -> impl Iterator<Item = (u16, &'a [u8])> + '_ {
        NlasIterator::new(self.buf).filter_map(|nla| {
            let nla: NlaBuffer<&'a [u8]> = nla.ok()?;
            let kind = nla.kind();
            let len = nla.value_length();
            Some((kind, &nla.into_inner()[4..4 + len]))
        })
    }
    /// The last attribute of a type (the kernel's `nla_parse` keeps the last).
    pub fn get(&self, kind: u16) -> Option<&'a [u8]> {
        if (kind as usize) < INDEXED_KINDS {
            let at = self.last[kind as usize] as usize;
            if at == 0 {
                return None;
            }
            let h = &self.buf[at - 1..];
            let len = u16::from_ne_bytes([h[0], h[1]]) as usize;
            return Some(&h[4..len]);
        }
        self.iter()
            .filter(|(k, _)| *k == kind)
            .last()
            .map(|(_, v)| v)
    }
    /// Does the attribute exist?
    pub fn has(&self, kind: u16) -> bool {
        self.get(kind).is_some()
    }
    /// All attributes of a type, in order.
    pub fn all(&self, kind: u16) -> impl Iterator<Item = &'a [u8]> + '_ {
        self.iter().filter(move |(k, _)| *k == kind).map(|(_, v)| v)
    }
    /// u8 value.
    pub fn u8(&self, kind: u16) -> Result<Option<u8>, Error> {
        self.get(kind)
            .map(|v| fixed::<1>(kind, v).map(|b| b[0]))
            .transpose()
    }
    /// u16 value, host order.
    pub fn u16(&self, kind: u16) -> Result<Option<u16>, Error> {
        self.get(kind)
            .map(|v| fixed::<2>(kind, v).map(u16::from_ne_bytes))
            .transpose()
    }
    /// u16 value, network order.
    pub fn be16(&self, kind: u16) -> Result<Option<u16>, Error> {
        self.get(kind)
            .map(|v| fixed::<2>(kind, v).map(u16::from_be_bytes))
            .transpose()
    }
    /// u32 value, host order.
    pub fn u32(&self, kind: u16) -> Result<Option<u32>, Error> {
        self.get(kind)
            .map(|v| fixed::<4>(kind, v).map(u32::from_ne_bytes))
            .transpose()
    }
    /// Raw 4 bytes.
    pub fn raw4(&self, kind: u16) -> Result<Option<[u8; 4]>, Error> {
        self.get(kind).map(|v| fixed::<4>(kind, v)).transpose()
    }
    /// u64 value, host order.
    pub fn u64(&self, kind: u16) -> Result<Option<u64>, Error> {
        self.get(kind)
            .map(|v| fixed::<8>(kind, v).map(u64::from_ne_bytes))
            .transpose()
    }
    /// NUL-terminated (or unterminated) string.
    pub fn string(&self, kind: u16) -> Option<String> {
        self.get(kind).map(|v| {
            let end = v.iter().position(|&b| b == 0).unwrap_or(v.len());
            String::from_utf8_lossy(&v[..end]).into_owned()
        })
    }
    /// Nested attributes.
    pub fn nested(&self, kind: u16) -> Result<Option<Attrs<'a>>, Error> {
        self.get(kind).map(Attrs::parse).transpose()
    }
}

fn fixed<const N: usize>(kind: u16, v: &[u8]) -> Result<[u8; N], Error> {
    if v.len() < N {
        return Err(Error::Decode(format!(
            "attribute {kind}: {} bytes, expected {N}",
            v.len()
        )));
    }
    let mut a = [0u8; N];
    a.copy_from_slice(&v[..N]);
    Ok(a)
}

/// Decode an address of a family from a 4- or 16-byte attribute.
pub fn addr_from_bytes(v6: bool, v: &[u8]) -> Result<IpAddr, Error> {
    if v6 {
        let b: [u8; 16] = fixed::<16>(0, v)?;
        Ok(IpAddr::V6(Ipv6Addr::from(b)))
    } else {
        let b: [u8; 4] = fixed::<4>(0, v)?;
        Ok(IpAddr::V4(Ipv4Addr::from(b)))
    }
}

/// 16-byte `union nf_inet_addr` encoding of an address.
pub fn addr_to_bytes16(a: &IpAddr) -> Vec<u8> {
    match a {
        IpAddr::V4(a) => {
            let mut v = a.octets().to_vec();
            v.resize(16, 0);
            v
        }
        IpAddr::V6(a) => a.octets().to_vec(),
    }
}

/// A generic netlink family identified by name.
pub trait FamilyName: Debug + Clone + Default {
    /// The registered family name, e.g. `"IPVS"`.
    const NAME: &'static str;
    /// Protocol version sent in the generic netlink header.
    const VERSION: u8;
}

/// A generic netlink message body of family `F`: the command and the
/// attributes (built when sending, raw bytes when received).
#[derive(Debug, Clone, Default)]
pub struct GenlBody<F: FamilyName> {
    /// Command.
    pub cmd: u8,
    /// Attributes to send.
    pub attrs: Vec<Attr>,
    /// Received attribute bytes.
    pub raw: Vec<u8>,
    _f: PhantomData<F>,
}

impl<F: FamilyName> GenlBody<F> {
    /// A request body.
    pub fn new(cmd: u8, attrs: Vec<Attr>) -> Self {
        GenlBody {
            cmd,
            attrs,
            raw: Vec::new(),
            _f: PhantomData,
        }
    }
    /// Parse the received attributes.
    pub fn attrs(&self) -> Result<Attrs<'_>, Error> {
        Attrs::parse(&self.raw)
    }
}

impl<F: FamilyName> GenlFamily for GenlBody<F> {
    fn family_name() -> &'static str {
        F::NAME
    }
    fn command(&self) -> u8 {
        self.cmd
    }
    fn version(&self) -> u8 {
        F::VERSION
    }
}

impl<F: FamilyName> Emitable for GenlBody<F> {
    fn buffer_len(&self) -> usize {
        self.attrs.as_slice().buffer_len()
    }
    fn emit(&self, buffer: &mut [u8]) {
        self.attrs.as_slice().emit(buffer)
    }
}

impl<F: FamilyName> ParseableParametrized<[u8], GenlHeader> for GenlBody<F> {
    fn parse_with_param(buf: &[u8], header: GenlHeader) -> Result<Self, DecodeError> {
        Ok(GenlBody {
            cmd: header.cmd,
            attrs: Vec::new(),
            raw: buf.to_vec(),
            _f: PhantomData,
        })
    }
}

/// Serialize a request into netlink bytes (appended to `out`).
pub fn encode_request<F: FamilyName>(
    out: &mut Vec<u8>,
    family_id: u16,
    body: GenlBody<F>,
    flags: u16,
    seq: u32,
) {
    let mut genl = GenlMessage::from_payload(body);
    genl.set_resolved_family_id(family_id);
    let mut header = NetlinkHeader::default();
    header.flags = flags;
    header.sequence_number = seq;
    let mut msg = NetlinkMessage::new(header, NetlinkPayload::from(genl));
    msg.finalize();
    let start = out.len();
    let len = msg.buffer_len();
    out.resize(start + len, 0);
    msg.serialize(&mut out[start..start + len]);
    // Netlink messages are 4-byte aligned in a batch.
    while out.len() % 4 != 0 {
        out.push(0);
    }
}

/// One message received from the kernel.
#[derive(Debug)]
enum Incoming {
    /// A family message.
    Data { seq: u32, bytes: Vec<u8> },
    /// NLMSG_ERROR (errno 0 = ACK).
    Ack {
        seq: u32,
        errno: i32,
        msg: Option<String>,
    },
    /// Anything else (NOOP, OVERRUN, and NLMSG_DONE: dumps are read by
    /// `dump_each`).
    Other,
}

/// One netlink message of a datagram, borrowed from the receive buffer.
struct RawMsg<'a> {
    kind: u16,
    flags: u16,
    seq: u32,
    /// The whole message, header included.
    bytes: &'a [u8],
}

impl<'a> RawMsg<'a> {
    /// The payload after the netlink header.
    fn payload(&self) -> &'a [u8] {
        &self.bytes[NLMSG_HDRLEN..]
    }
}

/// The messages of a datagram, in order; a bad length ends the walk with an
/// error.
fn messages(buf: &[u8]) -> impl Iterator<Item = Result<RawMsg<'_>, Error>> {
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
fn split_datagram(buf: &[u8]) -> Result<Vec<Incoming>, Error> {
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
fn parse_done_payload(p: &[u8], flags: u16) -> (i32, Option<String>) {
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
fn parse_error_payload(p: &[u8], flags: u16) -> Result<(i32, Option<String>), Error> {
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

/// The process's generic netlink socket.
pub struct Netlink {
    sock: Socket,
    seq: u32,
    /// `RECV_BATCH` receive slots of `RECV_BUF` bytes; single receives use
    /// the first.
    buf: Vec<u8>,
    families: HashMap<String, u16>,
    window: usize,
}

impl Netlink {
    /// Open and configure the socket (extended ACKs, capped ACKs, a large
    /// receive buffer for pipelined ACKs).
    pub fn open() -> Result<Netlink, Error> {
        let mut sock = Socket::new(NETLINK_GENERIC)?;
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
        })
    }

    /// Maximum number of unacknowledged pipelined requests.
    pub fn window(&self) -> usize {
        self.window
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
                Err(e) => return Err(Error::Io(e)),
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

    /// Resolve a generic netlink family id (cached).
    pub fn resolve(&mut self, name: &str) -> Result<u16, Error> {
        if let Some(id) = self.families.get(name) {
            return Ok(*id);
        }
        let mut genl = GenlMessage::from_payload(GenlCtrl {
            cmd: GenlCtrlCmd::GetFamily,
            nlas: vec![GenlCtrlAttrs::FamilyName(name.to_owned())],
        });
        genl.finalize();
        let seq = self.next_seq();
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | NLM_F_ACK;
        header.sequence_number = seq;
        let mut msg = NetlinkMessage::new(header, NetlinkPayload::from(genl));
        msg.finalize();
        let mut bytes = vec![0u8; msg.buffer_len()];
        msg.serialize(&mut bytes);
        self.send(&bytes)?;
        let mut id = None;
        loop {
            for m in self.recv()? {
                match m {
                    Incoming::Data { seq: s, bytes, .. } if s == seq => {
                        let parsed = NetlinkMessage::<GenlMessage<GenlCtrl>>::deserialize(&bytes)?;
                        if let NetlinkPayload::InnerMessage(g) = parsed.payload {
                            for nla in g.payload.nlas {
                                if let GenlCtrlAttrs::FamilyId(v) = nla {
                                    id = Some(v);
                                }
                            }
                        }
                    }
                    Incoming::Ack { seq: s, errno, msg } if s == seq => {
                        if errno == libc::ENOENT {
                            return Err(Error::FamilyNotFound(name.to_owned()));
                        }
                        if errno != 0 {
                            return Err(Error::Kernel { errno, msg });
                        }
                        return match id {
                            Some(v) => {
                                self.families.insert(name.to_owned(), v);
                                Ok(v)
                            }
                            None => Err(Error::FamilyNotFound(name.to_owned())),
                        };
                    }
                    _ => {}
                }
            }
        }
    }

    /// Send one request and wait for its ACK; returns the replies received
    /// before the ACK (for `GET` doit commands).
    pub fn request<F: FamilyName>(
        &mut self,
        family: u16,
        body: GenlBody<F>,
    ) -> Result<Vec<GenlBody<F>>, Error> {
        let seq = self.next_seq();
        let mut bytes = Vec::new();
        encode_request(&mut bytes, family, body, NLM_F_REQUEST | NLM_F_ACK, seq);
        self.send(&bytes)?;
        let mut replies = Vec::new();
        loop {
            for m in self.recv()? {
                match m {
                    Incoming::Data { seq: s, bytes, .. } if s == seq => {
                        replies.push(decode_body::<F>(&bytes)?)
                    }
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

    /// Run a dump request and collect every message.
    pub fn dump<F: FamilyName>(
        &mut self,
        family: u16,
        body: GenlBody<F>,
    ) -> Result<Vec<GenlBody<F>>, Error> {
        let mut replies = Vec::new();
        self.dump_each(family, body, |cmd, attrs| {
            replies.push(GenlBody {
                cmd,
                attrs: Vec::new(),
                raw: attrs.to_vec(),
                _f: PhantomData,
            });
            Ok(())
        })?;
        Ok(replies)
    }

    /// Run a dump request and hand each reply's command and attribute bytes
    /// to `f`, straight from the receive buffer (listings of tens of
    /// thousands of real servers copy nothing per message). The first error
    /// of `f` ends the dump (the rest is still drained from the socket).
    pub fn dump_each<F: FamilyName>(
        &mut self,
        family: u16,
        body: GenlBody<F>,
        mut f: impl FnMut(u8, &[u8]) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let seq = self.next_seq();
        let mut bytes = Vec::new();
        encode_request(&mut bytes, family, body, NLM_F_REQUEST | NLM_F_DUMP, seq);
        self.send(&bytes)?;
        let mut failed: Option<Error> = None;
        let mut lens = [0usize; RECV_BATCH];
        loop {
            let got = self.recv_batch(&mut lens)?;
            for (i, &n) in lens[..got].iter().enumerate() {
                for m in messages(&self.buf[i * RECV_BUF..i * RECV_BUF + n]) {
                    let m = m?;
                    if m.seq != seq {
                        continue;
                    }
                    match m.kind {
                        NLMSG_DONE | NLMSG_ERROR => {
                            let (errno, msg) = if m.kind == NLMSG_ERROR {
                                parse_error_payload(m.payload(), m.flags)?
                            } else {
                                parse_done_payload(m.payload(), m.flags)
                            };
                            if m.kind == NLMSG_ERROR && errno == 0 {
                                continue;
                            }
                            if let Some(e) = failed {
                                return Err(e);
                            }
                            return if errno == 0 {
                                Ok(())
                            } else {
                                Err(Error::Kernel { errno, msg })
                            };
                        }
                        NLMSG_NOOP | NLMSG_OVERRUN => {}
                        _ if failed.is_some() => {}
                        _ => {
                            let p = m.payload();
                            if p.len() < GENL_HDRLEN {
                                return Err(Error::Decode("short generic netlink message".into()));
                            }
                            if let Err(e) = f(p[0], &p[GENL_HDRLEN..]) {
                                failed = Some(e);
                            }
                        }
                    }
                }
            }
        }
    }

    /// Receive the queued datagrams, up to `RECV_BATCH`, with one
    /// `recvmmsg` that blocks for the first one only; returns how many, with
    /// their lengths in `lens` and their bytes in the `buf` slots. A dump's last
    /// data and its NLMSG_DONE come in separate datagrams (the kernel writes
    /// DONE while the data is being read), so this halves a small dump's
    /// receive calls.
    fn recv_batch(&mut self, lens: &mut [usize; RECV_BATCH]) -> Result<usize, Error> {
        use std::os::fd::AsRawFd;
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
                return Err(Error::Io(e));
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

    /// Send many requests pipelined: batches of requests go out in single
    /// `sendmsg` calls with distinct sequence numbers, at most `window()`
    /// unacknowledged at a time; each ACK is mapped back to its request.
    /// Returns one result per request, in order. The kernel processes the
    /// requests in order and keeps going after a failed one.
    pub fn pipeline<F: FamilyName>(
        &mut self,
        family: u16,
        bodies: Vec<GenlBody<F>>,
    ) -> Result<Vec<Result<(), Error>>, Error> {
        let n = bodies.len();
        let mut results: Vec<Option<Result<(), Error>>> = (0..n).map(|_| None).collect();
        if n == 0 {
            return Ok(Vec::new());
        }
        // Reserve a contiguous block of sequence numbers.
        let base = self.seq.wrapping_add(1);
        self.seq = self.seq.wrapping_add(n as u32);
        let mut iter = bodies.into_iter().enumerate().peekable();
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
                        let Some((i, body)) = iter.next() else {
                            pending = false;
                            break;
                        };
                        encode_request(
                            &mut batch,
                            family,
                            body,
                            NLM_F_REQUEST | NLM_F_ACK,
                            base.wrapping_add(i as u32),
                        );
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
}

fn decode_body<F: FamilyName>(bytes: &[u8]) -> Result<GenlBody<F>, Error> {
    if bytes.len() < NLMSG_HDRLEN + GENL_HDRLEN {
        return Err(Error::Decode("short generic netlink message".into()));
    }
    let msg = NetlinkMessage::<GenlMessage<GenlBody<F>>>::deserialize(bytes)?;
    match msg.payload {
        NetlinkPayload::InnerMessage(g) => Ok(g.payload),
        _ => Err(Error::Decode("unexpected netlink payload".into())),
    }
}

fn force_rcvbuf(sock: &Socket, size: i32) -> bool {
    use std::os::fd::AsRawFd;
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

    #[derive(Debug, Clone, Default)]
    struct T;
    impl FamilyName for T {
        const NAME: &'static str = "T";
        const VERSION: u8 = 1;
    }

    #[test]
    fn encode_nested_and_strings() {
        let mut out = Vec::new();
        let body: GenlBody<T> = GenlBody::new(
            5,
            vec![Attr::Nested(
                1,
                vec![Attr::U16(1, 2), Attr::Str(6, "rr".into())],
            )],
        );
        encode_request(&mut out, 0x20, body, NLM_F_REQUEST | NLM_F_ACK, 7);
        #[rustfmt::skip]
        let want: Vec<u8> = vec![
            40, 0, 0, 0,  0x20, 0,  5, 0,  7, 0, 0, 0,  0, 0, 0, 0, // nlmsghdr
            5, 1, 0, 0,                                             // genlmsghdr
            20, 0, 1, 0x80,                                         // nested 1
            6, 0, 1, 0, 2, 0, 0, 0,                                 // u16 AF=2
            7, 0, 6, 0, b'r', b'r', 0, 0,                           // "rr\0"
        ];
        assert_eq!(out, want);
    }

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
    fn strerror_text() {
        assert_eq!(strerror(libc::ENOENT), "No such file or directory");
    }

    #[test]
    fn attrs_reject_short_values() {
        let buf = [5u8, 0, 1, 0, 9, 0, 0, 0];
        let a = Attrs::parse(&buf).unwrap();
        assert_eq!(a.u8(1).unwrap(), Some(9));
        assert!(a.u32(1).is_err());
    }
}
