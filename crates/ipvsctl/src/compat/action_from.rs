//! The high-level result of `process_options`: scanned and checked
//! [`LowArgs`] become an [`Action`], with ipvsadm's defaults filled in
//! (the `wlc` scheduler, the `eth0` sync interface, the service's port for
//! direct-routed and tunnelled servers).

use super::*;

impl LowArgs {
    /// The action of the command. `-R` while reading `-R` input is not one.
    pub(super) fn into_action(self, program: &str, reading_stdin: bool) -> Result<Action, Exit> {
        let kop = |op: Op, func: Func| Ok(Action::Kernel(KOp { op, func }));
        let key = svc_key(&self.svc);
        match self.cmd {
            Cmd::List => Ok(Action::List(self.list_request())),
            Cmd::Restore if reading_stdin => Err(tryhelp(program)),
            Cmd::Restore => Ok(Action::Restore),
            Cmd::Save => Ok(Action::Save(self.format | FMT_RULE)),
            Cmd::Flush => kop(Op::Flush, Func::Other),
            Cmd::Add => kop(Op::AddService(self.new_service()), Func::AddService),
            Cmd::Edit => kop(Op::EditService(self.new_service()), Func::UpdateService),
            Cmd::Del => kop(Op::DelService(key), Func::DelService),
            Cmd::Zero => kop(Op::Zero(self.zero_key()), Func::ZeroService),
            Cmd::AddDest => kop(Op::AddDest(key, self.new_server()), Func::AddDest),
            Cmd::EditDest => kop(Op::EditDest(key, self.new_server()), Func::UpdateDest),
            Cmd::DelDest => kop(Op::DelDest(key, to_dest(&self.dest)), Func::DelDest),
            Cmd::Timeout => kop(Op::SetTimeouts(self.timeout), Func::Other),
            Cmd::StartDaemon => kop(Op::StartDaemon(self.sync_daemon()), Func::StartDaemon),
            Cmd::StopDaemon => kop(Op::StopDaemon(self.daemon_state()), Func::StopDaemon),
        }
    }

    /// `-L`: connections, one service, timeouts, the daemon, or everything.
    fn list_request(&self) -> ListReq {
        let (o, format) = (self.options, self.format);
        if o.contains(Opt::Connection) {
            ListReq::Conn(format)
        } else if o.contains(Opt::Service) {
            ListReq::Service(svc_key(&self.svc), format)
        } else if o.contains(Opt::Timeout) {
            ListReq::Timeout
        } else if o.contains(Opt::Daemon) {
            ListReq::Daemon
        } else {
            ListReq::All(format)
        }
    }

    /// The service of `-A`/`-E`; the scheduler defaults to `wlc`.
    fn new_service(&self) -> Service {
        let mut svc = self.svc.clone();
        if svc.sched_name.is_empty() {
            svc.sched_name = DEF_SCHED.into();
        }
        to_service(&svc)
    }

    /// `-Z`: one service if one is given (not the unspecified address
    /// without a port), else all.
    fn zero_key(&self) -> Option<ServiceKey> {
        let svc = &self.svc;
        let unspecified = svc.addr.map(|a| a.is_unspecified()).unwrap_or(true);
        (svc.fwmark != 0 || !unspecified || svc.port != 0).then(|| svc_key(svc))
    }

    /// The server of `-a`/`-e`: direct routing and tunnels to an address
    /// service use the service's port.
    fn new_server(&self) -> Dest {
        let mut dest = self.dest.clone();
        let fwd = forward_method(&dest);
        if self.svc.fwmark == 0 && (fwd == IP_VS_CONN_F_TUNNEL || fwd == IP_VS_CONN_F_DROUTE) {
            dest.port = self.svc.port;
        }
        to_dest(&dest)
    }

    /// `--start-daemon`; the interface defaults to `eth0`, the numbers left
    /// at 0 to the kernel's defaults.
    fn sync_daemon(&self) -> SyncDaemon {
        let d = &self.daemon;
        SyncDaemon {
            state: self.daemon_state(),
            mcast_ifn: if d.mcast_ifn.is_empty() {
                DEF_MCAST_IFN.into()
            } else {
                d.mcast_ifn.clone()
            },
            sync_id: d.syncid,
            sync_maxlen: (d.sync_maxlen != 0).then_some(d.sync_maxlen),
            mcast_group: d.mcast_group,
            mcast_port: (d.mcast_port != 0).then_some(d.mcast_port),
            mcast_ttl: (d.mcast_ttl != 0).then_some(d.mcast_ttl),
        }
    }

    fn daemon_state(&self) -> DaemonState {
        if self.daemon.state == IP_VS_STATE_MASTER {
            DaemonState::Master
        } else {
            DaemonState::Backup
        }
    }
}
