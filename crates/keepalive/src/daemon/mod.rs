//! The daemon: the IO around the sans-IO [`vrrp::machine::Machine`]s. Every
//! protocol decision is the machine's; this module carries inputs in and
//! executes the actions out. One file per job:
//!
//! * `mod.rs`: the [`Daemon`], start-up, the event loop, shutdown;
//! * [`instance`]: a running VRRP instance (its machine, link, source address);
//! * [`sockets`]: the raw VRRP sockets per (interface, family) and their readers;
//! * [`rx`]: a received packet: IP layer, validation, counters, to the machine;
//! * [`tx`]: adverts out;
//! * [`role`]: the machine's actions, and what a role change does (sync daemon, hooks);
//! * [`vips`]: **seam** - the VIPs made reachable here or withdrawn, per role
//!   (addresses, gratuitous ARP / unsolicited NA); another announcer (BGP)
//!   goes next to them;
//! * [`checks`]: real-server health checks feeding the IPVS desired state;
//! * [`crate::source`]: **seam** - where the desired IPVS state comes from
//!   (the YAML file today);
//! * [`reload`]: SIGHUP, the configuration diff;
//! * [`hooks`]: notify commands.

mod checks;
mod hooks;
mod instance;
mod reload;
mod role;
mod rx;
mod sockets;
mod tx;
mod vips;

use std::path::PathBuf;
use std::sync::{Arc, MutexGuard};
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::signal::unix::{signal, SignalKind};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::info;

use crate::config::Config;
use crate::health::Probe;
use crate::ipvs::{IpvsBackend, IpvsWorker};
use crate::metrics::{self, Shared, Stats};
use crate::rtnl::Rtnl;
use crate::sdnotify;
use crate::source::{ClusterSource, Desired, FileSource};
use crate::sys::{Icmp6Socket, PacketSocket};
use vrrp::machine::{Input, Time};

use checks::CheckRt;
use instance::Inst;
use sockets::{RxPacket, Sockets};

pub struct Daemon {
    cfg: Config,
    path: PathBuf,
    epoch: Instant,
    rtnl: Rtnl,
    insts: Vec<Inst>,
    sockets: Sockets,
    pkt_rx: mpsc::UnboundedReceiver<RxPacket>,
    probe_tx: mpsc::UnboundedSender<Probe>,
    probe_rx: mpsc::UnboundedReceiver<Probe>,
    checks: Vec<CheckRt>,
    /// Desired IPVS state as last delivered by the source.
    desired: Desired,
    source: Box<dyn ClusterSource>,
    desired_rx: mpsc::UnboundedReceiver<Desired>,
    garp: Option<Arc<PacketSocket>>,
    icmp6: Option<Arc<Icmp6Socket>>,
    ipvs: IpvsWorker,
    stats: Shared,
    metrics_task: Option<(std::net::SocketAddr, JoinHandle<()>)>,
}

impl Daemon {
    pub fn new(cfg: Config, path: PathBuf, ipvs: Box<dyn IpvsBackend>) -> anyhow::Result<Daemon> {
        let rtnl = Rtnl::new().context("opening rtnetlink socket")?;
        let (pkt_tx, pkt_rx) = mpsc::unbounded_channel();
        let (probe_tx, probe_rx) = mpsc::unbounded_channel();
        let (desired_tx, desired_rx) = mpsc::unbounded_channel();
        let ipvs = IpvsWorker::spawn(ipvs).context("starting the IPVS thread")?;
        Ok(Daemon {
            cfg,
            path,
            epoch: Instant::now(),
            rtnl,
            insts: vec![],
            sockets: Sockets::new(pkt_tx),
            pkt_rx,
            probe_tx,
            probe_rx,
            checks: vec![],
            desired: None,
            source: Box::new(FileSource::new(desired_tx)),
            desired_rx,
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

    fn stats(&self) -> MutexGuard<'_, Stats> {
        self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Set up everything and run until SIGTERM/SIGINT.
    pub async fn run(mut self) -> anyhow::Result<()> {
        let mut hup = signal(SignalKind::hangup())?;
        let mut term = signal(SignalKind::terminate())?;
        let mut int = signal(SignalKind::interrupt())?;

        self.start().await?;
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
                Some(d) = self.desired_rx.recv() => self.on_desired(d),
            }
        }
        sdnotify::notify("STOPPING=1");
        self.shutdown();
        Ok(())
    }

    async fn start(&mut self) -> anyhow::Result<()> {
        let cfg = self.cfg.clone();
        // The file's desired state is there before anything else runs.
        self.source.configure(&cfg);
        if let Ok(d) = self.desired_rx.try_recv() {
            self.desired = d;
        }
        self.apply_ipvs();
        self.setup_metrics(&cfg).await?;
        let mut insts = Vec::new();
        for ic in &cfg.vrrp {
            insts.push(self.make_inst(ic)?);
        }
        for inst in &insts {
            self.sockets
                .ensure(&mut self.rtnl, &inst.key(), inst.multicast())?;
        }
        self.start_checks(&cfg);
        for inst in insts {
            self.start_inst(inst);
        }
        sdnotify::notify("READY=1");
        info!(
            instances = self.insts.len(),
            checks = self.checks.len(),
            "keepalive started"
        );
        Ok(())
    }

    /// Add a new instance and start its machine.
    fn start_inst(&mut self, mut inst: Inst) {
        // Addresses left behind by a killed predecessor must go before we
        // start as backup.
        if inst.cfg.priority.0 != 255 {
            vips::remove_addresses(&mut self.rtnl, &inst);
        }
        let acts = inst.machine.handle(self.now(), Input::Startup);
        self.insts.push(inst);
        let i = self.insts.len() - 1;
        self.update_stats(i);
        self.exec(i, acts);
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

    fn update_stats(&self, i: usize) {
        let inst = &self.insts[i];
        let mut st = self.stats();
        let s = st.instances.entry(inst.cfg.name.clone()).or_default();
        s.state = inst.machine.state().as_str();
        s.priority = inst.machine.params().priority;
        s.transitions = inst.machine.transitions();
    }

    fn shutdown(&mut self) {
        let now = self.now();
        for i in 0..self.insts.len() {
            let acts = self.insts[i].machine.handle(now, Input::Shutdown);
            self.exec(i, acts);
        }
        self.stop_checks();
        self.ipvs.finish(Duration::from_secs(5));
        info!("keepalive stopped");
    }
}
