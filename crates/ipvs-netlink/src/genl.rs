//! Generic netlink on the engine: a family's message body ([`GenlBody`]
//! over the [`Attr`] tree), family resolution through the controller, and
//! the request, dump and pipeline calls of a resolved family.

use std::fmt::Debug;
use std::marker::PhantomData;

use netlink_packet_core::{DecodeError, Emitable, ParseableParametrized};
use netlink_packet_generic::ctrl::nlas::GenlCtrlAttrs;
use netlink_packet_generic::ctrl::{GenlCtrl, GenlCtrlCmd};
use netlink_packet_generic::{GenlFamily, GenlHeader, GenlMessage};

use crate::attr::{Attr, Attrs};
use crate::{Error, Netlink};

const GENL_HDRLEN: usize = 4;
const NLMSG_HDRLEN: usize = 16;

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

/// Serialize a request of a resolved family into `out` (appended; as sent,
/// for golden-byte tests).
pub fn encode_request<F: FamilyName>(
    out: &mut Vec<u8>,
    family: u16,
    body: GenlBody<F>,
    flags: u16,
    seq: u32,
) {
    crate::engine::encode(out, genl_msg(family, body), flags, seq);
}

/// The message of a body for a resolved family id.
fn genl_msg<F: FamilyName>(family: u16, body: GenlBody<F>) -> GenlMessage<GenlBody<F>> {
    let mut g = GenlMessage::from_payload(body);
    g.set_resolved_family_id(family);
    g
}

impl Netlink {
    /// Resolve a generic netlink family id (cached per socket).
    pub fn resolve(&mut self, name: &str) -> Result<u16, Error> {
        if let Some(id) = self.families.get(name) {
            return Ok(*id);
        }
        let mut genl = GenlMessage::from_payload(GenlCtrl {
            cmd: GenlCtrlCmd::GetFamily,
            nlas: vec![GenlCtrlAttrs::FamilyName(name.to_owned())],
        });
        genl.finalize();
        let replies = match self.request(genl, 0) {
            Err(Error::Kernel { errno, .. }) if errno == libc::ENOENT => {
                return Err(Error::FamilyNotFound(name.to_owned()))
            }
            r => r?,
        };
        let id = replies
            .into_iter()
            .flat_map(|g| g.payload.nlas)
            .filter_map(|a| match a {
                GenlCtrlAttrs::FamilyId(v) => Some(v),
                _ => None,
            })
            .next_back()
            .ok_or_else(|| Error::FamilyNotFound(name.to_owned()))?;
        self.families.insert(name.to_owned(), id);
        Ok(id)
    }

    /// Send one request of a family and wait for its ACK; returns the
    /// replies received before the ACK (for `GET` doit commands).
    pub fn genl_request<F: FamilyName>(
        &mut self,
        family: u16,
        body: GenlBody<F>,
    ) -> Result<Vec<GenlBody<F>>, Error> {
        let r = self.request(genl_msg(family, body), 0)?;
        Ok(r.into_iter().map(|g| g.payload).collect())
    }

    /// Run a dump request of a family and collect every reply.
    pub fn genl_dump<F: FamilyName>(
        &mut self,
        family: u16,
        body: GenlBody<F>,
    ) -> Result<Vec<GenlBody<F>>, Error> {
        let mut out = Vec::new();
        self.genl_dump_each(family, body, |cmd, attrs| {
            out.push(GenlBody {
                cmd,
                attrs: Vec::new(),
                raw: attrs.to_vec(),
                _f: PhantomData,
            });
            Ok(())
        })?;
        Ok(out)
    }

    /// Run a dump request of a family and hand each reply's command and
    /// attribute bytes to `f`, straight from the receive buffer (see
    /// [`Netlink::dump_each`]).
    pub fn genl_dump_each<F: FamilyName>(
        &mut self,
        family: u16,
        body: GenlBody<F>,
        mut f: impl FnMut(u8, &[u8]) -> Result<(), Error>,
    ) -> Result<(), Error> {
        self.dump_each(genl_msg(family, body), |m| {
            let p = &m[NLMSG_HDRLEN..];
            if p.len() < GENL_HDRLEN {
                return Err(Error::Decode("short generic netlink message".into()));
            }
            f(p[0], &p[GENL_HDRLEN..])
        })
    }

    /// Pipeline many requests of a family (see [`Netlink::pipeline`]).
    pub fn genl_pipeline<F: FamilyName>(
        &mut self,
        family: u16,
        bodies: Vec<GenlBody<F>>,
    ) -> Result<Vec<Result<(), Error>>, Error> {
        let msgs = bodies.into_iter().map(|b| genl_msg(family, b)).collect();
        self.pipeline(msgs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use netlink_packet_core::{NLM_F_ACK, NLM_F_REQUEST};

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

    /// The controller itself resolves through the engine, unprivileged.
    #[test]
    fn resolves_the_controller_family() {
        let mut nl = Netlink::open().unwrap();
        assert_eq!(nl.resolve("nlctrl").unwrap(), 0x10);
        assert!(matches!(
            nl.resolve("no-such-family"),
            Err(Error::FamilyNotFound(_))
        ));
    }
}
