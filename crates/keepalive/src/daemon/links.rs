//! The host's interfaces and addresses, as rtnetlink reports them: an
//! instance's link going down, its interface removed or created, its source
//! address gone or back ([`super::track`] turns these into FAULT), and a
//! VIP deleted behind a master's back, which is put back at once.

use std::sync::Arc;

use anyhow::Context;
use tokio::io::unix::AsyncFd;
use tokio::sync::mpsc;
use tracing::{error, info, warn};

use super::instance::{params, source_address};
use super::Daemon;
use crate::metrics::{self, C};
use crate::rtnl::{Event, Link, Monitor};
use vrrp::machine::State;

async fn monitor_loop(m: Arc<AsyncFd<Monitor>>, tx: mpsc::UnboundedSender<Event>) {
    let mut events = Vec::new();
    loop {
        let Ok(mut guard) = m.readable().await else {
            return;
        };
        let r = guard.try_io(|inner| {
            inner.get_ref().read(&mut events)?;
            // Read until the socket would block, then wait for readiness again.
            Err::<(), _>(std::io::ErrorKind::WouldBlock.into())
        });
        if let Ok(Err(e)) = &r {
            if e.kind() != std::io::ErrorKind::WouldBlock {
                error!(error = %e, "rtnetlink events");
                let _ = tx.send(Event::Overrun);
            }
        }
        for e in events.drain(..) {
            if tx.send(e).is_err() {
                return;
            }
        }
    }
}

impl Daemon {
    pub(super) fn start_monitor(&mut self) -> anyhow::Result<()> {
        let m = Monitor::open().context("subscribing to rtnetlink link and address events")?;
        // SAFETY: Monitor owns its socket's descriptor (netlink-sys closes it
        // on drop, never earlier) and always returns the same one from
        // as_raw_fd, so the fd stays open and the same while registered.
        let afd = Arc::new(unsafe { AsyncFd::register(m) }.map_err(std::io::Error::from)?);
        let (tx, rx) = mpsc::unbounded_channel();
        self.link_rx = rx;
        self.monitor = Some(tokio::spawn(monitor_loop(afd, tx)));
        Ok(())
    }

    /// Read every link again (at start, and after lost events).
    pub(super) fn read_links(&mut self) {
        match self.rtnl.links() {
            Ok(l) => self.links = l.into_iter().collect(),
            Err(e) => error!(error = %e, "reading the interfaces"),
        }
    }

    pub(super) fn on_link_event(&mut self, e: Event) {
        match e {
            Event::Link { name, link } => self.link_changed(&name, Some(link)),
            Event::LinkGone { name, .. } => self.link_changed(&name, None),
            Event::Addr {
                index,
                addr,
                prefix,
                added,
            } => self.addr_changed(index, addr, prefix, added),
            Event::Overrun => {
                warn!("rtnetlink events lost: reading interfaces and addresses again");
                let old = self.links.clone();
                self.read_links();
                let new = std::mem::replace(&mut self.links, old);
                let names: std::collections::BTreeSet<String> =
                    self.links.keys().chain(new.keys()).cloned().collect();
                for name in names {
                    self.link_changed(&name, new.get(&name).cloned());
                }
                for i in 0..self.insts.len() {
                    self.refresh_source(i);
                    if self.insts[i].machine.state() == State::Master {
                        self.add_vips(i);
                    }
                }
                self.evaluate_all();
            }
        }
    }

    fn link_changed(&mut self, name: &str, link: Option<Link>) {
        let old = match &link {
            Some(l) => self.links.insert(name.to_string(), l.clone()),
            None => self.links.remove(name),
        };
        if old == link {
            return;
        }
        match (&old, &link) {
            (None, Some(_)) => info!(interface = name, "interface appeared"),
            (Some(_), None) => info!(interface = name, "interface removed"),
            (Some(a), Some(b)) if a.up != b.up => {
                info!(interface = name, up = b.up, "link state changed")
            }
            _ => {}
        }
        let index_changed = old.as_ref().map(|l| l.index) != link.as_ref().map(|l| l.index);
        for i in 0..self.insts.len() {
            if self.insts[i].cfg.interface.0 != name {
                continue;
            }
            self.insts[i].link = link.clone();
            if index_changed || self.insts[i].src.is_none() {
                self.refresh_source(i);
            }
        }
        self.sync_sockets();
        self.evaluate_all();
    }

    fn addr_changed(&mut self, index: u32, addr: std::net::IpAddr, prefix: u8, added: bool) {
        for i in 0..self.insts.len() {
            if self.insts[i].ifindex() != Some(index) {
                continue;
            }
            if added {
                if self.insts[i].src.is_none() {
                    self.refresh_source(i);
                }
                continue;
            }
            if self.insts[i].src == Some(addr) {
                self.refresh_source(i);
            }
            let inst = &self.insts[i];
            let vip = inst
                .cfg
                .virtual_ips
                .iter()
                .find(|c| c.addr == addr && c.prefix == prefix)
                .copied();
            if let (Some(c), State::Master) = (vip, inst.machine.state()) {
                warn!(instance = %inst.cfg.name, vip = %c, "virtual address removed behind our back: putting it back");
                let name = inst.cfg.name.clone();
                if let Err(e) = self.rtnl.add_addr(index, &c) {
                    error!(instance = %name, vip = %c, error = %e, "re-adding virtual address failed");
                }
                self.metrics.inc(C::VipReadds, metrics::inst(&name));
                self.announce(i);
            }
        }
        self.evaluate_all();
    }

    /// Look the instance's source address up again; a new one goes to the
    /// machine (the equal-priority tie-break uses it).
    pub(super) fn refresh_source(&mut self, i: usize) {
        let inst = &self.insts[i];
        let src = inst
            .link
            .as_ref()
            .and_then(|l| source_address(&mut self.rtnl, &inst.cfg, l));
        if src == self.insts[i].src {
            return;
        }
        let now = self.now();
        let inst = &mut self.insts[i];
        info!(instance = %inst.cfg.name, source = ?src, "source address");
        inst.src = src;
        let p = params(&inst.cfg, src, inst.machine.params().priority);
        let acts = inst.machine.reconfigure(now, p);
        self.exec(i, acts);
    }
}
