//! The IO layer: sockets, timers, signals, role actions. Everything protocol
//! related is decided by [`vrrp::machine::Machine`]; this module only
//! carries packets in and executes the actions out.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};
use tokio::io::unix::AsyncFd;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::{debug, error, info, warn};

use crate::announce;
use crate::config::{Cidr, Command, Config, HealthCheck, Instance};
use crate::health::{self, Debounce, Probe};
use crate::ipvs::{DownDest, IpvsBackend, IpvsWorker, SyncRole};
use crate::metrics::{self, Shared};
use crate::rtnl::{Link, Rtnl};
use crate::sdnotify;
use crate::sys::{Icmp6Socket, PacketSocket, VrrpSocket};
use vrrp::machine::{Action, Input, Machine, Params, State, Time};
use vrrp::packet::{self, Advert, ChecksumForm, ParseError, MCAST_V4, MCAST_V6, VRRP_TTL};

type SockKey = (String, bool);

/// A packet as read by a socket task.
struct RxPacket {
    key: SockKey,
    data: Vec<u8>,
    /// IPv6 only (IPv4 carries its header in `data`).
    v6: Option<crate::sys::RecvV6>,
}

struct SockEntry {
    sock: Arc<AsyncFd<VrrpSocket>>,
    reader: JoinHandle<()>,
}

struct Inst {
    cfg: Instance,
    machine: Machine,
    link: Link,
    src: IpAddr,
    checksum: ChecksumForm,
    announcer: Option<JoinHandle<()>>,
}

impl Inst {
    fn key(&self) -> SockKey {
        (self.cfg.interface.0.clone(), self.cfg.is_ipv6())
    }
    fn multicast(&self) -> bool {
        self.cfg.unicast_peers.is_empty()
    }
}

struct CheckRt {
    hc: Arc<HealthCheck>,
    debounce: Debounce,
    task: JoinHandle<()>,
}

pub struct Daemon {
    cfg: Config,
    path: PathBuf,
    epoch: Instant,
    rtnl: Rtnl,
    insts: Vec<Inst>,
    sockets: HashMap<SockKey, SockEntry>,
    pkt_tx: mpsc::UnboundedSender<RxPacket>,
    pkt_rx: mpsc::UnboundedReceiver<RxPacket>,
    probe_tx: mpsc::UnboundedSender<Probe>,
    probe_rx: mpsc::UnboundedReceiver<Probe>,
    checks: Vec<CheckRt>,
    garp: Option<Arc<PacketSocket>>,
    icmp6: Option<Arc<Icmp6Socket>>,
    ipvs: IpvsWorker,
    stats: Shared,
    metrics_task: Option<(std::net::SocketAddr, JoinHandle<()>)>,
}

fn vip_key(c: &Cidr) -> (IpAddr, u8) {
    (c.addr, c.prefix)
}

impl Daemon {
    pub fn new(cfg: Config, path: PathBuf, ipvs: Box<dyn IpvsBackend>) -> anyhow::Result<Daemon> {
        let rtnl = Rtnl::new().context("opening rtnetlink socket")?;
        let (pkt_tx, pkt_rx) = mpsc::unbounded_channel();
        let (probe_tx, probe_rx) = mpsc::unbounded_channel();
        let ipvs = IpvsWorker::spawn(ipvs).context("starting the IPVS thread")?;
        Ok(Daemon {
            cfg,
            path,
            epoch: Instant::now(),
            rtnl,
            insts: vec![],
            sockets: HashMap::new(),
            pkt_tx,
            pkt_rx,
            probe_tx,
            probe_rx,
            checks: vec![],
            garp: None,
            icmp6: None,
            ipvs,
            stats: Default::default(),
            metrics_task: None,
        })
    }

    fn now(&self) -> Time {
        self.epoch.elapsed()
    }

    /// Set up everything and run until SIGTERM/SIGINT.
    pub async fn run(mut self) -> anyhow::Result<()> {
        let mut hup = signal(SignalKind::hangup())?;
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;

        let cfg = self.cfg.clone();
        self.apply_ipvs();
        self.setup_metrics(&cfg).await?;
        let mut insts = Vec::new();
        for ic in &cfg.vrrp {
            insts.push(self.make_inst(ic)?);
        }
        for inst in &insts {
            self.ensure_socket(&inst.key(), inst.multicast())?;
        }
        self.start_checks(&cfg);
        let now = self.now();
        for mut inst in insts {
            // Addresses left behind by a killed predecessor must go before we
            // start as backup.
            if inst.cfg.priority.0 != 255 {
                remove_vips(&mut self.rtnl, &inst);
            }
            let acts = inst.machine.handle(now, Input::Startup);
            self.insts.push(inst);
            let i = self.insts.len() - 1;
            self.update_stats(i);
            self.exec(i, acts);
        }
        sdnotify::notify("READY=1");
        info!(
            instances = self.insts.len(),
            checks = self.checks.len(),
            "keepalive started"
        );

        loop {
            let deadline = self
                .insts
                .iter()
                .filter_map(|i| i.machine.next_deadline())
                .min();
            let sleep_until = deadline.map_or_else(
                || tokio::time::Instant::now() + Duration::from_secs(3600),
                |d| tokio::time::Instant::from_std(self.epoch + d),
            );
            tokio::select! {
                biased;
                _ = term.recv() => { info!("SIGTERM: handing over"); break; }
                _ = int.recv() => { info!("SIGINT: handing over"); break; }
                _ = tokio::time::sleep_until(sleep_until) => {
                    self.drain_pending();
                    self.poll_timers();
                }
                Some(p) = self.pkt_rx.recv() => self.on_packet(p),
                _ = hup.recv() => self.reload(),
                Some(p) = self.probe_rx.recv() => self.on_probe(p),
            }
        }
        sdnotify::notify("STOPPING=1");
        self.shutdown();
        Ok(())
    }

    async fn setup_metrics(&mut self, cfg: &Config) -> anyhow::Result<()> {
        let want = cfg.global.metrics_listen;
        if self.metrics_task.as_ref().map(|m| m.0) == want {
            return Ok(());
        }
        if let Some((_, t)) = self.metrics_task.take() {
            t.abort();
        }
        if let Some(addr) = want {
            let l = metrics::bind(addr)
                .await
                .with_context(|| format!("metrics_listen {addr}"))?;
            self.metrics_task = Some((addr, tokio::spawn(metrics::serve(l, self.stats.clone()))));
            info!(%addr, "metrics endpoint listening");
        }
        Ok(())
    }

    fn make_inst(&mut self, ic: &Instance) -> anyhow::Result<Inst> {
        let link = self
            .rtnl
            .link(&ic.interface.0)
            .with_context(|| format!("instance {}", ic.name))?;
        let v6 = ic.is_ipv6();
        let src = match ic.source_ip {
            Some(s) => s,
            None => {
                let vips: BTreeSet<IpAddr> = ic.virtual_ips.iter().map(|c| c.addr).collect();
                let addrs = self.rtnl.addrs(link.index, v6)?;
                let pick = addrs.iter().find(|a| {
                    !vips.contains(&a.addr)
                        && if v6 {
                            a.link_scope || is_link_local(a.addr)
                        } else {
                            !a.secondary
                        }
                });
                pick.map(|a| a.addr).ok_or_else(|| {
                    anyhow!(
                        "instance {}: interface {} has no {} address to send from",
                        ic.name,
                        ic.interface,
                        if v6 {
                            "IPv6 link-local"
                        } else {
                            "primary IPv4"
                        }
                    )
                })?
            }
        };
        let params = self.params(ic, src);
        Ok(Inst {
            cfg: ic.clone(),
            machine: Machine::new(params),
            link,
            src,
            checksum: ic.checksum.unwrap_or(self.cfg.global.checksum),
            announcer: None,
        })
    }

    fn params(&self, ic: &Instance, src: IpAddr) -> Params {
        Params {
            vrid: ic.vrid.0,
            priority: ic.priority.0,
            advert_interval_cs: ic.advert_interval_ms.centis(),
            preempt: ic.preempt,
            preempt_delay: ic.preempt_delay(),
            primary_addr: src,
        }
    }

    fn ensure_socket(&mut self, key: &SockKey, join: bool) -> anyhow::Result<()> {
        if self.sockets.contains_key(key) {
            return Ok(());
        }
        let index = self.rtnl.link(&key.0)?.index;
        let s = if key.1 {
            VrrpSocket::open_v6(&key.0, index, join)
        } else {
            VrrpSocket::open_v4(&key.0, index, join)
        }
        .with_context(|| format!("opening VRRP socket on {}", key.0))?;
        // SAFETY: VrrpSocket owns its descriptor (an OwnedFd that is never
        // replaced) and always returns it from as_raw_fd, so the fd stays open
        // and the same for the AsyncFd's whole lifetime.
        let afd = Arc::new(unsafe { AsyncFd::register(s) }.map_err(std::io::Error::from)?);
        let reader = tokio::spawn(read_loop(afd.clone(), key.clone(), self.pkt_tx.clone()));
        self.sockets
            .insert(key.clone(), SockEntry { sock: afd, reader });
        Ok(())
    }

    fn prune_sockets(&mut self) {
        let used: BTreeSet<SockKey> = self.insts.iter().map(|i| i.key()).collect();
        self.sockets.retain(|k, e| {
            let keep = used.contains(k);
            if !keep {
                e.reader.abort();
            }
            keep
        });
    }

    /// Feed every advert that has already arrived to the machines before a
    /// timer is judged. When the loop was held up (a slow notify spawn, a
    /// loaded machine), the master-down timer can be overdue while the
    /// master's adverts wait in the socket or the channel: handled timer
    /// first, the backup would take over and then fall back on the queued,
    /// stale advert (a spurious double transition, seen in the VM test).
    fn drain_pending(&mut self) {
        while let Ok(p) = self.pkt_rx.try_recv() {
            self.on_packet(p);
        }
        let keys: Vec<SockKey> = self.sockets.keys().cloned().collect();
        let mut buf = vec![0u8; 65_536];
        for key in keys {
            // Bounded: a flood must not keep the timers from running.
            for _ in 0..256 {
                let Some(e) = self.sockets.get(&key) else {
                    break;
                };
                let inner = e.sock.get_ref();
                let r = if inner.v6 {
                    inner.recv_v6(&mut buf).map(|r| (r.len, Some(r)))
                } else {
                    inner.recv_v4(&mut buf).map(|n| (n, None))
                };
                let Ok((n, v6)) = r else { break };
                let n = n.min(buf.len());
                self.on_packet(RxPacket {
                    key: key.clone(),
                    data: buf[..n].to_vec(),
                    v6,
                });
            }
        }
    }

    fn poll_timers(&mut self) {
        let now = self.now();
        for i in 0..self.insts.len() {
            if self.insts[i]
                .machine
                .next_deadline()
                .is_some_and(|d| d <= now)
            {
                let acts = self.insts[i].machine.poll(now);
                self.exec(i, acts);
            }
        }
    }

    fn count_invalid(&mut self, key: &SockKey, inst: Option<usize>, reason: &'static str) {
        let mut st = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        match inst {
            Some(i) => {
                let name = &self.insts[i].cfg.name;
                *st.instances
                    .entry(name.clone())
                    .or_default()
                    .invalid
                    .entry(reason)
                    .or_default() += 1;
            }
            None => st.count_invalid(&key.0, reason),
        }
        drop(st);
        debug!(interface = %key.0, reason, "dropped VRRP packet");
    }

    fn find(&self, key: &SockKey, vrid: u8) -> Option<usize> {
        self.insts
            .iter()
            .position(|i| i.cfg.vrid.0 == vrid && i.key() == *key)
    }

    fn on_packet(&mut self, p: RxPacket) {
        // Unpack the IP layer.
        let (src, dst, ttl, msg): (IpAddr, IpAddr, Option<u8>, &[u8]) = match &p.v6 {
            None => match packet::split_ipv4(&p.data) {
                Ok((info, m)) => (
                    IpAddr::V4(info.src),
                    IpAddr::V4(info.dst),
                    Some(info.ttl),
                    m,
                ),
                Err(e) => return self.count_invalid(&p.key, None, e.reason()),
            },
            Some(r) => {
                let dst = r.dst.unwrap_or(MCAST_V6);
                (
                    IpAddr::V6(r.src),
                    IpAddr::V6(dst),
                    r.hops,
                    &p.data[..r.len.min(p.data.len())],
                )
            }
        };
        let inst = msg.get(1).and_then(|&vrid| self.find(&p.key, vrid));
        if let Some(i) = inst {
            if self.insts[i].src == src {
                return; // our own advert looped back
            }
        }
        let dec = match packet::decode(msg, src, dst) {
            Ok(d) => d,
            Err(e) => return self.count_invalid(&p.key, inst, e.reason()),
        };
        let Some(i) = inst else {
            return self.count_invalid(&p.key, None, "unknown_vrid");
        };
        let multicast = self.insts[i].multicast();
        if multicast && ttl != Some(VRRP_TTL) {
            return self.count_invalid(&p.key, Some(i), ParseError::BadTtl.reason());
        }
        if !multicast && !self.insts[i].cfg.unicast_peers.contains(&src) {
            return self.count_invalid(&p.key, Some(i), "unknown_unicast_source");
        }
        if dec.advert.max_adver_int_cs == 0 {
            return self.count_invalid(&p.key, Some(i), "bad_interval");
        }
        let inst = &self.insts[i];
        let ours: BTreeSet<IpAddr> = inst.cfg.virtual_ips.iter().map(|c| c.addr).collect();
        let theirs: BTreeSet<IpAddr> = dec.advert.addrs.iter().copied().collect();
        if ours != theirs && dec.advert.priority != 255 {
            // RFC 5798 §7.1: MAY log; the advert is still processed.
            debug!(instance = %inst.cfg.name, %src, "advertised addresses differ from ours");
        }
        {
            let mut st = self.stats.lock().unwrap_or_else(|e| e.into_inner());
            st.instances
                .entry(inst.cfg.name.clone())
                .or_default()
                .adverts_received += 1;
        }
        let now = self.now();
        let acts = self.insts[i].machine.handle(
            now,
            Input::Advert {
                src,
                priority: dec.advert.priority,
                max_adver_int_cs: dec.advert.max_adver_int_cs,
            },
        );
        self.exec(i, acts);
    }

    fn exec(&mut self, i: usize, acts: Vec<Action>) {
        for a in acts {
            match a {
                Action::SendAdvert { priority } => self.send_advert(i, priority),
                Action::AddVips => {
                    let inst = &self.insts[i];
                    for c in &inst.cfg.virtual_ips {
                        if let Err(e) = self.rtnl.add_addr(inst.link.index, c) {
                            error!(instance = %inst.cfg.name, vip = %c, error = %e, "adding virtual address failed");
                        }
                    }
                }
                Action::RemoveVips => {
                    if let Some(t) = self.insts[i].announcer.take() {
                        t.abort();
                    }
                    remove_vips(&mut self.rtnl, &self.insts[i]);
                }
                Action::Announce => self.announce(i),
                Action::Transition { from, to } => self.on_transition(i, from, to),
            }
        }
        self.update_stats(i);
    }

    fn send_advert(&mut self, i: usize, priority: u8) {
        let inst = &self.insts[i];
        let adv = Advert {
            vrid: inst.cfg.vrid.0,
            priority,
            max_adver_int_cs: inst.cfg.advert_interval_ms.centis(),
            addrs: inst.cfg.virtual_ips.iter().map(|c| c.addr).collect(),
        };
        let Some(entry) = self.sockets.get(&inst.key()) else {
            return;
        };
        let sock = entry.sock.get_ref();
        let dsts: Vec<IpAddr> = if inst.multicast() {
            vec![if inst.cfg.is_ipv6() {
                IpAddr::V6(MCAST_V6)
            } else {
                IpAddr::V4(MCAST_V4)
            }]
        } else {
            inst.cfg.unicast_peers.clone()
        };
        let mut sent = 0;
        for dst in dsts {
            let r = match (inst.src, dst) {
                (IpAddr::V4(s), IpAddr::V4(d)) => {
                    sock.send_v4(&packet::encode_ipv4_packet(&adv, s, d, inst.checksum), d)
                }
                (IpAddr::V6(s), IpAddr::V6(d)) => sock.send_v6(
                    &packet::encode(&adv, inst.src, dst, ChecksumForm::PseudoHeader),
                    s,
                    d,
                ),
                _ => continue,
            };
            match r {
                Ok(()) => sent += 1,
                Err(e) => {
                    warn!(instance = %inst.cfg.name, %dst, error = %e, "sending advertisement failed")
                }
            }
        }
        let mut st = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        st.instances
            .entry(inst.cfg.name.clone())
            .or_default()
            .adverts_sent += sent;
    }

    fn announce(&mut self, i: usize) {
        if let Some(t) = self.insts[i].announcer.take() {
            t.abort();
        }
        let inst = &self.insts[i];
        let Some(mac) = inst.link.mac else { return };
        let g = &self.cfg.global;
        let repeat = g.garp_repeat.0;
        let spacing = Duration::from_millis(g.garp_interval_ms.0);
        let refresh = Duration::from_millis(g.garp_master_delay_ms.0);
        let ifindex = inst.link.index;
        let name = inst.cfg.name.clone();
        if inst.cfg.is_ipv6() {
            if self.icmp6.is_none() {
                self.icmp6 = Icmp6Socket::open()
                    .map(Arc::new)
                    .map_err(|e| warn!(error = %e, "ICMPv6 socket"))
                    .ok();
            }
            let Some(sock) = self.icmp6.clone() else {
                return;
            };
            let IpAddr::V6(src) = inst.src else { return };
            let router = std::fs::read_to_string("/proc/sys/net/ipv6/conf/all/forwarding")
                .is_ok_and(|s| s.trim() == "1");
            let bodies: Vec<[u8; 32]> = inst
                .cfg
                .virtual_ips
                .iter()
                .filter_map(|c| match c.addr {
                    IpAddr::V6(a) => Some(announce::na_body(mac, a, router)),
                    _ => None,
                })
                .collect();
            self.insts[i].announcer = Some(tokio::spawn(repeat_bursts(
                repeat,
                spacing,
                refresh,
                move || {
                    for b in &bodies {
                        if let Err(e) = sock.send_na(b, src, ifindex) {
                            warn!(instance = %name, error = %e, "unsolicited NA failed");
                        }
                    }
                },
            )));
        } else {
            if self.garp.is_none() {
                self.garp = PacketSocket::open()
                    .map(Arc::new)
                    .map_err(|e| warn!(error = %e, "packet socket"))
                    .ok();
            }
            let Some(sock) = self.garp.clone() else {
                return;
            };
            let frames: Vec<[u8; 42]> = inst
                .cfg
                .virtual_ips
                .iter()
                .filter_map(|c| match c.addr {
                    IpAddr::V4(a) => Some(announce::garp_frame(mac, a)),
                    _ => None,
                })
                .collect();
            self.insts[i].announcer = Some(tokio::spawn(repeat_bursts(
                repeat,
                spacing,
                refresh,
                move || {
                    for f in &frames {
                        if let Err(e) = sock.send_frame(ifindex, f) {
                            warn!(instance = %name, error = %e, "gratuitous ARP failed");
                        }
                    }
                },
            )));
        }
    }

    fn on_transition(&mut self, i: usize, from: State, to: State) {
        let inst = &self.insts[i];
        info!(
            instance = %inst.cfg.name,
            from = from.as_str(),
            to = to.as_str(),
            priority = inst.machine.params().priority,
            "VRRP transition"
        );
        if let Some(s) = &inst.cfg.ipvs_sync {
            let syncid = s.syncid.map_or(inst.cfg.vrid.0, |x| x.0);
            match to {
                State::Master => self
                    .ipvs
                    .sync_role(SyncRole::Master, &s.interface.0, syncid),
                State::Backup => self
                    .ipvs
                    .sync_role(SyncRole::Backup, &s.interface.0, syncid),
                State::Initialize => self.ipvs.sync_stop(),
            }
        }
        let n = &inst.cfg.notify;
        let specific = match to {
            State::Master => &n.master,
            State::Backup => &n.backup,
            State::Initialize => &n.stop,
        };
        let state = match to {
            State::Master => "MASTER",
            State::Backup => "BACKUP",
            State::Initialize => "STOP",
        };
        let prio = inst.machine.params().priority.to_string();
        if let Some(c) = specific {
            run_hook(c, &[], &inst.cfg.name, state, &prio);
        }
        if let Some(c) = &n.any {
            run_hook(
                c,
                &["INSTANCE", &inst.cfg.name, state, &prio],
                &inst.cfg.name,
                state,
                &prio,
            );
        }
    }

    fn update_stats(&self, i: usize) {
        let inst = &self.insts[i];
        let mut st = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        let s = st.instances.entry(inst.cfg.name.clone()).or_default();
        s.state = inst.machine.state().as_str();
        s.priority = inst.machine.params().priority;
        s.transitions = inst.machine.transitions();
    }

    // ---- health checks and IPVS ----

    fn down_dests(&self) -> Vec<DownDest> {
        self.checks
            .iter()
            .filter(|c| !c.debounce.up)
            .map(|c| DownDest {
                dest: c.hc.real_server,
                service: c.hc.service,
                action: c.hc.on_failure,
            })
            .collect()
    }

    fn apply_ipvs(&mut self) {
        let doc = self.cfg.ipvs_document();
        let down = self.down_dests();
        self.ipvs.apply(doc, down);
    }

    fn start_checks(&mut self, cfg: &Config) {
        // Keep the state of checks whose definition did not change (reload).
        let mut old: BTreeMap<String, Vec<CheckRt>> = BTreeMap::new();
        for c in self.checks.drain(..) {
            old.entry(format!("{:?}", c.hc)).or_default().push(c);
        }
        for (index, hc) in cfg.health_checks.iter().enumerate() {
            let prev = old.get_mut(&format!("{hc:?}")).and_then(|v| v.pop());
            let debounce = match prev {
                Some(p) => {
                    p.task.abort();
                    p.debounce
                }
                None => Debounce::new(hc.rise.0, hc.fall.0),
            };
            let hc = Arc::new(hc.clone());
            let task = tokio::spawn(health::run(index, hc.clone(), self.probe_tx.clone()));
            self.checks.push(CheckRt { hc, debounce, task });
        }
        for v in old.into_values() {
            for c in v {
                c.task.abort();
            }
        }
        let mut st = self.stats.lock().unwrap_or_else(|e| e.into_inner());
        st.checks.clear();
        for c in &self.checks {
            st.checks.entry(c.hc.label()).or_default().up = c.debounce.up;
        }
    }

    fn on_probe(&mut self, p: Probe) {
        let Some(c) = self.checks.get_mut(p.index) else {
            return;
        };
        let label = c.hc.label();
        let change = c.debounce.feed(p.ok);
        {
            let mut st = self.stats.lock().unwrap_or_else(|e| e.into_inner());
            let s = st.checks.entry(label.clone()).or_default();
            if !p.ok {
                s.failures += 1;
            }
            s.up = c.debounce.up;
            if change.is_some() {
                s.transitions += 1;
            }
        }
        if !p.ok {
            debug!(check = %label, detail = %p.detail, "probe failed");
        }
        if let Some(up) = change {
            if up {
                info!(check = %label, "real server up: restoring");
            } else {
                warn!(check = %label, detail = %p.detail, action = ?c.hc.on_failure, "real server down");
            }
            self.apply_ipvs();
        }
    }

    // ---- reload and shutdown ----

    fn reload(&mut self) {
        sdnotify::notify("RELOADING=1");
        let new = match Config::load(&self.path) {
            Ok(c) => c,
            Err(e) => {
                error!(error = %e, "reload failed; keeping the running configuration");
                sdnotify::notify("READY=1");
                return;
            }
        };
        info!(file = %self.path.display(), "reloading configuration");
        self.stats.lock().unwrap_or_else(|e| e.into_inner()).reloads += 1;
        let now = self.now();
        // Instances that are gone or changed identity (interface, VRID, family) stop.
        let mut old: Vec<Inst> = std::mem::take(&mut self.insts);
        let mut kept: Vec<Inst> = Vec::new();
        let mut to_start: Vec<Instance> = Vec::new();
        for ic in &new.vrrp {
            let pos = old.iter().position(|o| {
                o.cfg.name == ic.name
                    && o.cfg.interface == ic.interface
                    && o.cfg.vrid == ic.vrid
                    && o.cfg.is_ipv6() == ic.is_ipv6()
                    && o.cfg.source_ip == ic.source_ip
            });
            match pos {
                Some(p) => kept.push(old.swap_remove(p)),
                None => to_start.push(ic.clone()),
            }
        }
        for mut o in old {
            info!(instance = %o.cfg.name, "instance removed or changed identity: stopping");
            let acts = o.machine.handle(now, Input::Shutdown);
            self.insts.push(o);
            let i = self.insts.len() - 1;
            self.exec(i, acts);
            self.insts.pop();
        }
        self.cfg = Config {
            vrrp: vec![],
            ..new.clone()
        };
        for mut k in kept {
            let Some(ic) = new.vrrp.iter().find(|c| c.name == k.cfg.name).cloned() else {
                continue;
            };
            let was_master = k.machine.state() == State::Master;
            let old_vips: BTreeSet<(IpAddr, u8)> = k.cfg.virtual_ips.iter().map(vip_key).collect();
            let new_vips: BTreeSet<(IpAddr, u8)> = ic.virtual_ips.iter().map(vip_key).collect();
            if was_master && old_vips != new_vips {
                for c in k
                    .cfg
                    .virtual_ips
                    .iter()
                    .filter(|c| !new_vips.contains(&vip_key(c)))
                {
                    let _ = self.rtnl.del_addr(k.link.index, c);
                }
            }
            let params = self.params(&ic, k.src);
            k.checksum = ic.checksum.unwrap_or(new.global.checksum);
            k.cfg = ic;
            let acts = k.machine.reconfigure(now, params);
            self.insts.push(k);
            let i = self.insts.len() - 1;
            if was_master && old_vips != new_vips {
                self.exec(i, vec![Action::AddVips, Action::Announce]);
            }
            self.exec(i, acts);
            info!(instance = %self.insts[i].cfg.name, state = self.insts[i].machine.state().as_str(), "instance kept its role");
        }
        for ic in to_start {
            match self.make_inst(&ic).and_then(|inst| {
                self.ensure_socket(&inst.key(), inst.multicast())?;
                Ok(inst)
            }) {
                Ok(mut inst) => {
                    if inst.cfg.priority.0 != 255 {
                        remove_vips(&mut self.rtnl, &inst);
                    }
                    let acts = inst.machine.handle(now, Input::Startup);
                    self.insts.push(inst);
                    let i = self.insts.len() - 1;
                    self.exec(i, acts);
                    info!(instance = %ic.name, "instance started");
                }
                Err(e) => {
                    error!(instance = %ic.name, error = format!("{e:#}"), "cannot start instance")
                }
            }
        }
        // Keep the config order.
        self.insts
            .sort_by_key(|i| new.vrrp.iter().position(|c| c.name == i.cfg.name));
        self.cfg = new.clone();
        self.prune_sockets();
        {
            let names: BTreeSet<String> = self.insts.iter().map(|i| i.cfg.name.clone()).collect();
            let mut st = self.stats.lock().unwrap_or_else(|e| e.into_inner());
            st.instances.retain(|n, _| names.contains(n));
        }
        self.start_checks(&new);
        self.apply_ipvs();
        sdnotify::notify("READY=1");
    }

    fn shutdown(&mut self) {
        let now = self.now();
        for i in 0..self.insts.len() {
            let acts = self.insts[i].machine.handle(now, Input::Shutdown);
            self.exec(i, acts);
        }
        for c in &self.checks {
            c.task.abort();
        }
        self.ipvs.finish(Duration::from_secs(5));
        info!("keepalive stopped");
    }
}

fn remove_vips(rtnl: &mut Rtnl, inst: &Inst) {
    for c in &inst.cfg.virtual_ips {
        if let Err(e) = rtnl.del_addr(inst.link.index, c) {
            error!(instance = %inst.cfg.name, vip = %c, error = %e, "removing virtual address failed");
        }
    }
}

fn is_link_local(a: IpAddr) -> bool {
    matches!(a, IpAddr::V6(v) if v.segments()[0] & 0xffc0 == 0xfe80)
}

async fn repeat_bursts<F: Fn() + Send + 'static>(
    repeat: u32,
    spacing: Duration,
    refresh: Duration,
    send: F,
) {
    for k in 0..repeat {
        if k > 0 {
            tokio::time::sleep(spacing).await;
        }
        send();
    }
    if !refresh.is_zero() {
        tokio::time::sleep(refresh).await;
        for k in 0..repeat {
            if k > 0 {
                tokio::time::sleep(spacing).await;
            }
            send();
        }
    }
}

async fn read_loop(
    sock: Arc<AsyncFd<VrrpSocket>>,
    key: SockKey,
    tx: mpsc::UnboundedSender<RxPacket>,
) {
    let mut buf = vec![0u8; 65_536];
    loop {
        let mut guard = match sock.readable().await {
            Ok(g) => g,
            Err(e) => {
                error!(interface = %key.0, error = %e, "VRRP socket");
                return;
            }
        };
        loop {
            let inner = guard.get_inner();
            let r = if inner.v6 {
                inner.recv_v6(&mut buf).map(|r| (r.len, Some(r)))
            } else {
                inner.recv_v4(&mut buf).map(|n| (n, None))
            };
            match r {
                Ok((n, v6)) => {
                    let n = n.min(buf.len());
                    if tx
                        .send(RxPacket {
                            key: key.clone(),
                            data: buf[..n].to_vec(),
                            v6,
                        })
                        .is_err()
                    {
                        return;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    guard.clear_ready();
                    break;
                }
                Err(e) => {
                    warn!(interface = %key.0, fd = inner.as_raw_fd(), error = %e, "VRRP receive");
                    guard.clear_ready();
                    break;
                }
            }
        }
    }
}

fn run_hook(cmd: &Command, extra: &[&str], instance: &str, state: &str, prio: &str) {
    let mut c = tokio::process::Command::new(&cmd.0[0]);
    c.args(&cmd.0[1..])
        .args(extra)
        .env("KEEPALIVE_INSTANCE", instance)
        .env("KEEPALIVE_STATE", state)
        .env("KEEPALIVE_PRIORITY", prio)
        .stdin(std::process::Stdio::null());
    match c.spawn() {
        Ok(mut child) => {
            let name = cmd.0[0].clone();
            tokio::spawn(async move {
                match tokio::time::timeout(Duration::from_secs(60), child.wait()).await {
                    Ok(Ok(s)) if !s.success() => {
                        warn!(hook = %name, status = %s, "notify hook failed")
                    }
                    Ok(_) => {}
                    Err(_) => {
                        warn!(hook = %name, "notify hook still running after 60 s; killing it");
                        let _ = child.kill().await;
                    }
                }
            });
        }
        Err(e) => warn!(hook = %cmd.0[0], error = %e, "cannot run notify hook"),
    }
}
