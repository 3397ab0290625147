//! The daemon: the IO around the sans-IO [`vrrp::machine::Machine`]s. Every
//! protocol decision is the machine's; this module carries inputs in and
//! executes the actions out. One file per job:
//!
//! * `mod.rs`: the [`Daemon`], start-up, the event loop, shutdown;
//! * [`instance`]: a running VRRP instance (its machine, link, source address);
//! * [`links`]: the host's interfaces and addresses as rtnetlink reports
//!   them: links up and down, interfaces gone and back, VIPs put back;
//! * [`sockets`]: the raw VRRP sockets per (interface, family) and their readers;
//! * [`rx`]: a received packet: IP layer, validation, counters, to the machine;
//! * [`tx`]: adverts out;
//! * [`role`]: the machine's actions, and what a role change does (sync daemon, hooks);
//! * [`vips`]: **seam** - the VIPs made reachable here or withdrawn, per role
//!   (addresses, gratuitous ARP / unsolicited NA); another announcer (BGP)
//!   goes next to them;
//! * [`track`]: **seam** - what moves an instance's priority or puts it in
//!   FAULT: its link, tracked interfaces and scripts;
//! * [`sync`]: sync groups, and holding instances in BACKUP (no IPVS table);
//! * [`checks`]: real-server health checks and the IPVS worker's results;
//! * [`feedback`]: host agents' load reports turned into weights (`load_feedback:`);
//! * [`crate::source`]: **seam** - where the desired IPVS state comes from
//!   (the YAML file, or etcd);
//! * [`reload`]: SIGHUP, the configuration diff;
//! * [`hooks`]: notify commands;
//! * [`bgp`]: the `bgp:` groups announced through BIRD while healthy; drain;
//! * [`mesh`]: full-mesh IPVS connection sync (`bgp.ipvs_sync`): both sync
//!   daemon roles at once, from start to shutdown.

mod bgp;
mod checks;
mod feedback;
mod hooks;
mod instance;
mod links;
mod mesh;
mod reload;
mod role;
mod rx;
mod sockets;
mod sync;
mod track;
mod tx;
mod vips;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::info;

use crate::config::Config;
use crate::health::Probe;
use crate::ipvs::{IpvsBackend, IpvsEvent, IpvsWorker};
use crate::metrics::Metrics;
use crate::rtnl::{self, Link, Rtnl};
use crate::sdnotify;
use crate::source::{ClusterSource, Desired, Selector};
use crate::sys::{Icmp6Socket, PacketSocket};
use vrrp::machine::{Input, Time};

use checks::CheckRt;
use instance::Inst;
use rx::RateLimit;
use sockets::{RxPacket, Sockets};
use sync::GroupRt;
use track::{ScriptResult, ScriptRt};

/// The signals the daemon handles. Registered before anything announces
/// the process (the pid file that `keepalive drain` reads): from then on
/// SIGUSR1/SIGUSR2 cannot kill it, and one that arrives during the start is
/// kept for the event loop. Needs a running tokio runtime.
pub struct Signals {
    hup: Signal,
    term: Signal,
    int: Signal,
    usr1: Signal,
    usr2: Signal,
}

impl Signals {
    pub fn new() -> std::io::Result<Signals> {
        Ok(Signals {
            hup: signal(SignalKind::hangup())?,
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
            usr1: signal(SignalKind::user_defined1())?,
            usr2: signal(SignalKind::user_defined2())?,
        })
    }
}

pub struct Daemon {
    cfg: Config,
    path: PathBuf,
    epoch: Instant,
    rtnl: Rtnl,
    /// Every interface of the host, by name, as rtnetlink last reported it.
    links: BTreeMap<String, Link>,
    link_rx: mpsc::UnboundedReceiver<rtnl::Event>,
    monitor: Option<JoinHandle<()>>,
    insts: Vec<Inst>,
    groups: Vec<GroupRt>,
    sockets: Sockets,
    pkt_rx: mpsc::UnboundedReceiver<RxPacket>,
    probe_tx: mpsc::UnboundedSender<Probe>,
    probe_rx: mpsc::UnboundedReceiver<Probe>,
    checks: Vec<CheckRt>,
    feedback: Option<feedback::FeedbackRt>,
    feedback_tx: mpsc::UnboundedSender<crate::feedback::Round>,
    feedback_rx: mpsc::UnboundedReceiver<crate::feedback::Round>,
    script_tx: mpsc::UnboundedSender<ScriptResult>,
    script_rx: mpsc::UnboundedReceiver<ScriptResult>,
    scripts: Vec<ScriptRt>,
    /// Desired IPVS state as last delivered by the source.
    desired: Desired,
    source: Box<dyn ClusterSource>,
    desired_rx: mpsc::UnboundedReceiver<Desired>,
    ipvs: IpvsWorker,
    ipvs_rx: mpsc::UnboundedReceiver<IpvsEvent>,
    /// The desired IPVS state is applied (false until the first success).
    ipvs_ok: bool,
    garp: Option<Arc<PacketSocket>>,
    icmp6: Option<Arc<Icmp6Socket>>,
    metrics: Metrics,
    metrics_task: Option<(std::net::SocketAddr, JoinHandle<()>)>,
    warn_limit: RateLimit,
    /// The BIRD supervisor (with a `bgp:` section).
    bird: Option<crate::bird::Bird>,
    bgp_scripts: Vec<ScriptRt>,
    bgp_script_tx: mpsc::UnboundedSender<ScriptResult>,
    bgp_script_rx: mpsc::UnboundedReceiver<ScriptResult>,
    bgp_drained: bool,
    /// The groups last handed to BIRD.
    bgp_healthy: BTreeSet<String>,
    /// The mesh sync daemons asked of the IPVS worker (`bgp.ipvs_sync`).
    mesh: Option<crate::config::MeshSync>,
}

impl Daemon {
    pub fn new(cfg: Config, path: PathBuf, ipvs: Box<dyn IpvsBackend>) -> anyhow::Result<Daemon> {
        let rtnl = Rtnl::new().context("opening rtnetlink socket")?;
        let (pkt_tx, pkt_rx) = mpsc::unbounded_channel();
        let (probe_tx, probe_rx) = mpsc::unbounded_channel();
        let (feedback_tx, feedback_rx) = mpsc::unbounded_channel();
        let (script_tx, script_rx) = mpsc::unbounded_channel();
        let (bgp_script_tx, bgp_script_rx) = mpsc::unbounded_channel();
        let (desired_tx, desired_rx) = mpsc::unbounded_channel();
        let (ipvs_tx, ipvs_rx) = mpsc::unbounded_channel();
        let (_, link_rx) = mpsc::unbounded_channel();
        let ipvs = IpvsWorker::spawn(ipvs, Some(ipvs_tx)).context("starting the IPVS thread")?;
        let metrics = Metrics::new();
        Ok(Daemon {
            cfg,
            path,
            epoch: Instant::now(),
            rtnl,
            links: BTreeMap::new(),
            link_rx,
            monitor: None,
            insts: vec![],
            groups: vec![],
            sockets: Sockets::new(pkt_tx),
            pkt_rx,
            probe_tx,
            probe_rx,
            checks: vec![],
            feedback: None,
            feedback_tx,
            feedback_rx,
            script_tx,
            script_rx,
            scripts: vec![],
            desired: None,
            source: Box::new(Selector::new(desired_tx, metrics.clone())),
            desired_rx,
            ipvs,
            ipvs_rx,
            ipvs_ok: false,
            garp: None,
            icmp6: None,
            metrics,
            metrics_task: None,
            warn_limit: RateLimit::default(),
            bird: None,
            bgp_scripts: vec![],
            bgp_script_tx,
            bgp_script_rx,
            bgp_drained: false,
            bgp_healthy: BTreeSet::new(),
            mesh: None,
        })
    }

    fn now(&self) -> Time {
        self.epoch.elapsed()
    }

    /// Set up everything and run until SIGTERM/SIGINT.
    pub async fn run(self) -> anyhow::Result<()> {
        let signals = Signals::new()?;
        self.run_with(signals).await
    }

    /// [`Daemon::run`] with the signals registered beforehand.
    pub async fn run_with(mut self, signals: Signals) -> anyhow::Result<()> {
        let Signals {
            mut hup,
            mut term,
            mut int,
            mut usr1,
            mut usr2,
        } = signals;
        // WATCHDOG=1 from the event loop itself: a loop that is stuck
        // stops feeding the service manager, which restarts the daemon.
        let mut watchdog = sdnotify::watchdog_interval().map(tokio::time::interval);

        self.start().await?;
        loop {
            let deadline = self
                .insts
                .iter()
                .filter_map(|i| i.machine.next_deadline())
                .chain(self.bgp_hold_deadline())
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
                Some(e) = self.link_rx.recv() => self.on_link_event(e),
                _ = hup.recv() => self.reload(),
                Some(p) = self.probe_rx.recv() => self.on_probe(p),
                Some(r) = self.feedback_rx.recv() => self.on_feedback(r),
                Some(s) = self.script_rx.recv() => self.on_script(s),
                Some(d) = self.desired_rx.recv() => self.on_desired(d),
                Some(e) = self.ipvs_rx.recv() => self.on_ipvs(e),
                Some(s) = self.bgp_script_rx.recv() => self.on_bgp_script(s),
                _ = usr1.recv() => self.set_drained(true),
                _ = usr2.recv() => self.set_drained(false),
                _ = async { watchdog.as_mut().expect("guarded").tick().await }, if watchdog.is_some() => {
                    sdnotify::notify("WATCHDOG=1");
                }
            }
            // Every input may change a group's health; unchanged is a no-op.
            self.update_bgp();
        }
        sdnotify::notify("STOPPING=1");
        self.stop_bgp().await;
        self.shutdown();
        Ok(())
    }

    async fn start(&mut self) -> anyhow::Result<()> {
        let cfg = self.cfg.clone();
        // The file's desired state is there before anything else runs.
        self.source.configure(&cfg);
        self.take_desired();
        self.start_feedback(&cfg);
        // From etcd the state comes later: not applied until it has been.
        self.ipvs_ok = self.desired.is_none() && cfg.cluster_source.is_none();
        self.metrics.set(
            crate::metrics::G::IpvsApplied,
            vec![],
            i64::from(self.ipvs_ok),
        );
        self.apply_ipvs();
        self.setup_metrics(&cfg).await?;
        // Subscribe before reading the links, so that no change falls between.
        self.start_monitor()?;
        self.read_links();
        // After the steps that can fail (nothing would stop the daemons),
        // before BGP announces: this director learns the others' flows
        // before ECMP sends it any of them.
        self.start_mesh(&cfg);
        for ic in &cfg.vrrp {
            let inst = self.make_inst(ic);
            self.insts.push(inst);
        }
        self.rebuild_groups();
        self.sync_sockets();
        self.start_checks(&cfg);
        self.start_scripts(&cfg);
        self.start_bgp(&cfg);
        for i in 0..self.insts.len() {
            self.start_inst(i);
        }
        sdnotify::notify("READY=1");
        info!(
            instances = self.insts.len(),
            checks = self.checks.len(),
            "keepalive started"
        );
        Ok(())
    }

    /// Start the machine of instance `i` (already in `insts`).
    fn start_inst(&mut self, i: usize) {
        // Addresses left behind by a killed predecessor must go before we
        // start as backup.
        if self.insts[i].cfg.priority.0 != 255 {
            vips::remove_addresses(&mut self.rtnl, &self.insts[i]);
        }
        // FAULT and the tracked priority are known before the start.
        self.evaluate(i);
        self.coordinate(i);
        let now = self.now();
        let acts = self.insts[i].machine.handle(now, Input::Startup);
        self.exec(i, acts);
    }

    fn take_desired(&mut self) {
        while let Ok(d) = self.desired_rx.try_recv() {
            self.desired = d;
        }
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
            let l = crate::http::bind(addr)
                .await
                .with_context(|| format!("metrics_listen {addr}"))?;
            let task = tokio::spawn(crate::http::serve(l, self.metrics.clone()));
            self.metrics_task = Some((addr, task));
            info!(%addr, "metrics endpoint listening");
        }
        Ok(())
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

    fn shutdown(&mut self) {
        let now = self.now();
        for i in 0..self.insts.len() {
            let acts = self.insts[i].machine.handle(now, Input::Shutdown);
            self.run_actions(i, acts);
        }
        for i in 0..self.insts.len() {
            self.coordinate(i);
        }
        self.stop_checks();
        self.stop_feedback();
        self.stop_scripts();
        if let Some(m) = self.monitor.take() {
            m.abort();
        }
        self.stop_mesh();
        self.ipvs.finish(Duration::from_secs(5));
        info!("keepalive stopped");
    }
}
