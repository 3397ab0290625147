//! The scanning pass of `process_options` (ipvsadm's `parse_options`): the
//! first option chooses the command; every further option popt returns is
//! recorded in [`LowArgs`] as ipvsadm records it (the C structures, the set
//! of given options, the listing format bits); then the leftover words
//! (`--set`'s three timeouts, or an unexpected argument); last the two
//! arguments interpreted once all options are known (`-b` needs the
//! scheduler, `-M` the final address family). Errors come out in that
//! order, and within the options in argv order: the first one met wins.

use super::*;

/// What the options said, in ipvsadm's own (C) terms.
#[derive(Debug, Clone)]
pub(super) struct LowArgs {
    /// The command (the first option).
    pub(super) cmd: Cmd,
    /// The options given (each at most once).
    pub(super) options: OptSet,
    /// `FMT_*` bits of the listing options.
    pub(super) format: u32,
    /// The virtual service.
    pub(super) svc: CSvc,
    /// The real server.
    pub(super) dest: CDest,
    /// `--set` values.
    pub(super) timeout: Timeouts,
    /// The sync daemon.
    pub(super) daemon: CDaemon,
    /// `-b`, interpreted after scanning (with the scheduler).
    pub(super) sched_flags_arg: String,
    /// `-M`, interpreted after scanning (with the final address family).
    pub(super) netmask_arg: Option<String>,
}

impl LowArgs {
    /// Scans `argv`: the command, the options, the leftover words, then
    /// `-b` and `-M`. Help, version and every scanning error are `Err`.
    pub(super) fn scan(argv: &[String], program: &str) -> Result<LowArgs, Exit> {
        let mut p = Popt::new(OPTIONS, argv);
        let mut low = first_command(&mut p, program)?;
        let last = loop {
            match p.next_opt() {
                Next::Opt(key, arg) => low.take(key, arg, &p)?,
                other => break other,
            }
        };
        if let Next::Err(e) = last {
            return Err(Exit {
                code: 255,
                stdout: String::new(),
                stderr: format!("{}: {}\n", p.bad_option(), e.text()),
                soft: true,
            });
        }
        low.leftovers(&mut p)?;
        low.interpret_sched_flags()?;
        low.interpret_netmask()?;
        Ok(low)
    }

    /// The C defaults: a full netmask, weight 1, direct routing.
    fn new(cmd: Cmd) -> LowArgs {
        LowArgs {
            cmd,
            options: OptSet::default(),
            format: FMT_NONE,
            svc: CSvc {
                netmask: [0xff; 4],
                ..Default::default()
            },
            dest: CDest {
                weight: 1,
                conn_flags: IP_VS_CONN_F_DROUTE,
                ..Default::default()
            },
            timeout: Timeouts::default(),
            daemon: CDaemon::default(),
            sched_flags_arg: String::new(),
            netmask_arg: None,
        }
    }

    /// One option after the command: ipvsadm's `switch` of its option loop.
    /// A command, `-h` or `-v` here is an invalid option.
    fn take(&mut self, key: Key, arg: Option<String>, p: &Popt<Key>) -> Result<(), Exit> {
        let a = arg.as_deref().unwrap_or_default();
        match key {
            Key::Cmd(_) | Key::Help | Key::Version => {
                return Err(fail(2, format!("invalid option `{}'", p.bad_option())))
            }
            Key::Service(protocol) => self.service(protocol, a)?,
            Key::Fwmark => self.fwmark(a)?,
            Key::Ipv6 => self.ipv6()?,
            Key::Scheduler => self.scheduler(a)?,
            Key::Persistent => self.persistent(arg.as_deref())?,
            Key::Netmask => self.netmask(a)?,
            Key::PersistenceEngine => self.persistence_engine(a)?,
            Key::OnePacket => self.one_packet()?,
            Key::SchedFlags => self.sched_flags(a)?,
            Key::RealServer => self.real_server(a)?,
            Key::Forward(conn_flags) => self.forward(conn_flags)?,
            Key::Number(num) => self.number(num, a)?,
            Key::McastInterface => self.mcast_interface(a)?,
            Key::McastGroup => self.mcast_group(a)?,
            Key::TunType => self.tun_type(a)?,
            Key::TunCsum(opt, flag) => self.tun_csum(opt, flag)?,
            Key::Listing(opt, bits) => self.listing(opt, bits)?,
            Key::Sort => {}
        }
        Ok(())
    }

    /// `set_option`: records `opt`, which may be given once.
    fn set(&mut self, opt: Opt) -> Result<(), Exit> {
        if !self.options.insert(opt) {
            return Err(fail(
                2,
                format!("multiple '{}' options specified", opt.name()),
            ));
        }
        Ok(())
    }

    /// `-w`, `-x`, `-y`, `--syncid`, `--mcast-port`, `--mcast-ttl`,
    /// `--sync-maxlen`, `--tun-port`: a number within the option's bounds.
    fn number(&mut self, num: Num, arg: &str) -> Result<(), Exit> {
        let (opt, min, max, what) = num.spec();
        self.set(opt)?;
        let v = string_to_number(arg, min, max)
            .ok_or_else(|| fail(2, format!("illegal {what} specified")))?;
        match num {
            Num::Weight => self.dest.weight = v,
            Num::UThreshold => self.dest.u_threshold = v as u32,
            Num::LThreshold => self.dest.l_threshold = v as u32,
            Num::SyncId => self.daemon.syncid = v as u32,
            Num::McastPort => self.daemon.mcast_port = v as u16,
            Num::McastTtl => self.daemon.mcast_ttl = v as u8,
            Num::SyncMaxlen => self.daemon.sync_maxlen = v as u16,
            Num::TunPort => self.dest.tun_port = v as u16,
        }
        Ok(())
    }
}

/// The first option: the command (`--start-daemon`/`--stop-daemon` with
/// master or backup), or `-h`/`-v`; anything else sends to `--help`.
fn first_command(p: &mut Popt<Key>, program: &str) -> Result<LowArgs, Exit> {
    let (cmd, arg) = match p.next_opt() {
        Next::Opt(Key::Cmd(cmd), arg) => (cmd, arg),
        Next::Opt(Key::Help, _) => return Err(exit_ok(usage(program))),
        Next::Opt(Key::Version, _) => return Err(exit_ok(format!("{VERSION_LINE}\n"))),
        _ => return Err(tryhelp(program)),
    };
    let mut low = LowArgs::new(cmd);
    if let Cmd::StartDaemon | Cmd::StopDaemon = cmd {
        low.daemon.state = match arg.as_deref() {
            Some("master") => IP_VS_STATE_MASTER,
            Some("backup") => IP_VS_STATE_BACKUP,
            _ if cmd == Cmd::StartDaemon => {
                return Err(fail(2, "illegal start-daemon parameter specified"))
            }
            _ => return Err(fail(2, "illegal start_daemon specified")),
        };
    }
    Ok(low)
}

/// A timeout in `min..=MAX_TIMEOUT` seconds (`-p`, `--set`).
fn timeout_value(s: &str, min: i64) -> Result<u32, Exit> {
    string_to_number(s, min, MAX_TIMEOUT)
        .map(|v| v as u32)
        .ok_or_else(|| fail(2, format!("invalid timeout value `{s}' specified")))
}

/// The virtual service: `-t`/`-u`/`--sctp-service`, `-f`, `-6`.
impl LowArgs {
    fn service(&mut self, protocol: u16, arg: &str) -> Result<(), Exit> {
        self.set(Opt::Service)?;
        self.svc.protocol = protocol;
        if parse_service(arg, &mut self.svc) & SERVICE_ADDR == 0 {
            return Err(fail(2, "illegal virtual server address[:port] specified"));
        }
        Ok(())
    }

    /// `-f`: a mark in 1..=u32::MAX, IPv4 unless `-6` follows.
    fn fwmark(&mut self, arg: &str) -> Result<(), Exit> {
        self.set(Opt::Service)?;
        self.svc.af = AF_INET;
        self.svc.protocol = IPPROTO_TCP;
        self.svc.fwmark = match strtol_full(arg) {
            Some(l) if l > 0 && l <= u32::MAX as i64 => l as u32,
            _ => return Err(fail(2, format!("invalid fwmark value `{arg}' specified"))),
        };
        Ok(())
    }

    /// `-6`: only after `-f` (not an option of the legality table).
    fn ipv6(&mut self) -> Result<(), Exit> {
        if self.svc.fwmark == 0 {
            return Err(fail(2, "-6 used before -f\n"));
        }
        self.svc.af = AF_INET6;
        self.svc.netmask = 128u32.to_ne_bytes();
        Ok(())
    }
}

/// Scheduling and persistence: `-s`, `-b`, `-p [timeout]`, `-M`, `--pe`, `-o`.
impl LowArgs {
    fn scheduler(&mut self, arg: &str) -> Result<(), Exit> {
        self.set(Opt::Scheduler)?;
        self.svc.sched_name = truncate_bytes(arg, IP_VS_SCHEDNAME_MAXLEN - 1);
        Ok(())
    }

    /// `-b`: kept for [`Self::interpret_sched_flags`].
    fn sched_flags(&mut self, arg: &str) -> Result<(), Exit> {
        self.set(Opt::SchedFlags)?;
        self.sched_flags_arg = truncate_bytes(arg, 127);
        Ok(())
    }

    /// `-p`, with six minutes when the timeout is left out.
    fn persistent(&mut self, arg: Option<&str>) -> Result<(), Exit> {
        self.set(Opt::Persistent)?;
        self.svc.flags |= IP_VS_SVC_F_PERSISTENT;
        self.svc.timeout = match arg {
            None => PERSISTENT_TIMEOUT,
            Some(a) => timeout_value(a, 1)?,
        };
        Ok(())
    }

    /// `-M`: kept for [`Self::interpret_netmask`].
    fn netmask(&mut self, arg: &str) -> Result<(), Exit> {
        self.set(Opt::Netmask)?;
        self.netmask_arg = Some(arg.to_string());
        Ok(())
    }

    fn persistence_engine(&mut self, arg: &str) -> Result<(), Exit> {
        self.set(Opt::PersistenceEngine)?;
        self.svc.pe_name = truncate_bytes(arg, IP_VS_PENAME_MAXLEN);
        Ok(())
    }

    fn one_packet(&mut self) -> Result<(), Exit> {
        self.set(Opt::OnePacket)?;
        self.svc.flags |= IP_VS_SVC_F_ONEPACKET;
        Ok(())
    }
}

/// The real server: `-r`, `-g`/`-i`/`-m` (its numbers: [`LowArgs::number`]).
impl LowArgs {
    /// `-r`: parsed into a copy of the service (ipvsadm reuses its protocol
    /// for port names); without a port the server takes the service's.
    fn real_server(&mut self, arg: &str) -> Result<(), Exit> {
        self.set(Opt::Server)?;
        let mut t = self.svc.clone();
        let parse = parse_service(arg, &mut t);
        self.dest.af = t.af;
        self.dest.addr = t.addr;
        self.dest.port = t.port;
        if parse & SERVICE_ADDR == 0 {
            return Err(fail(2, "illegal real server address[:port] specified"));
        }
        if parse == SERVICE_ADDR {
            self.dest.port = self.svc.port;
        }
        Ok(())
    }

    fn forward(&mut self, conn_flags: u32) -> Result<(), Exit> {
        self.set(Opt::Forward)?;
        self.dest.conn_flags = conn_flags;
        Ok(())
    }
}

/// The sync daemon: `--mcast-interface`, `--mcast-group` (its numbers:
/// [`LowArgs::number`]).
impl LowArgs {
    fn mcast_interface(&mut self, arg: &str) -> Result<(), Exit> {
        self.set(Opt::Mcast)?;
        self.daemon.mcast_ifn = truncate_bytes(arg, IP_VS_IFNAME_MAXLEN - 1);
        Ok(())
    }

    /// `--mcast-group`: a multicast address, IPv6 if it has a colon.
    fn mcast_group(&mut self, arg: &str) -> Result<(), Exit> {
        self.set(Opt::McastGroup)?;
        let group = if arg.contains(':') {
            inet_pton6(arg)
                .filter(Ipv6Addr::is_multicast)
                .map(IpAddr::V6)
                .ok_or_else(|| fail(2, format!("invalid IPv6 mcast-group `{arg}'")))?
        } else {
            inet_pton4(arg)
                .filter(Ipv4Addr::is_multicast)
                .map(IpAddr::V4)
                .ok_or_else(|| fail(2, format!("invalid IPv4 mcast-group `{arg}'")))?
        };
        self.daemon.mcast_group = Some(group);
        Ok(())
    }
}

/// Tunnels (`--tun-type`, the checksum options; `--tun-port`:
/// [`LowArgs::number`]) and the listing options.
impl LowArgs {
    fn tun_type(&mut self, arg: &str) -> Result<(), Exit> {
        self.set(Opt::TunType)?;
        self.dest.tun_type = match TunnelType::parse(arg) {
            Some(t) => t.to_raw(),
            None => return Err(fail(2, "illegal tunnel type specified")),
        };
        Ok(())
    }

    fn tun_csum(&mut self, opt: Opt, flag: u16) -> Result<(), Exit> {
        self.set(opt)?;
        self.dest.tun_flags |= flag;
        Ok(())
    }

    /// `-n`, `-c`, `--stats`, ...: the option and its `FMT_*` bits.
    fn listing(&mut self, opt: Opt, bits: u32) -> Result<(), Exit> {
        self.set(opt)?;
        self.format |= bits;
        Ok(())
    }
}

/// After the options: leftover words, then `-b` and `-M`.
impl LowArgs {
    /// popt's leftover words: `--set tcp tcpfin udp`; any other is an error.
    fn leftovers(&mut self, p: &mut Popt<Key>) -> Result<(), Exit> {
        if self.cmd == Cmd::Timeout {
            match (p.get_arg(), p.get_arg(), p.get_arg()) {
                (Some(a), Some(b), Some(c)) => {
                    self.timeout.tcp = timeout_value(&a, 0)?;
                    self.timeout.tcp_fin = timeout_value(&b, 0)?;
                    self.timeout.udp = timeout_value(&c, 0)?;
                }
                _ => return Err(fail(2, "--set option requires 3 timeout values")),
            }
        }
        if let Some(extra) = p.get_arg() {
            return Err(fail(2, format!("unexpected argument {extra}")));
        }
        Ok(())
    }

    /// `-b`, with the scheduler given (or the default one).
    fn interpret_sched_flags(&mut self) -> Result<(), Exit> {
        if !self.sched_flags_arg.is_empty() {
            self.svc.flags &= !IP_VS_SVC_F_SCHED_MASK;
            self.svc.flags |= parse_sched_flags(&self.svc.sched_name, &self.sched_flags_arg)?;
        }
        Ok(())
    }

    /// `-M`, interpreted with the final address family (ipvsadm bug fix):
    /// an IPv4 mask (address or host name), or an IPv6 prefix length.
    fn interpret_netmask(&mut self) -> Result<(), Exit> {
        let Some(m) = &self.netmask_arg else {
            return Ok(());
        };
        if self.svc.af != AF_INET6 {
            match inet_aton(m).or_else(|| names::host_to_addr(m)) {
                Some(a) => self.svc.netmask = a.octets(),
                None => return Err(fail(2, "illegal virtual server persistent mask specified")),
            }
        } else {
            let n = atoi(m);
            if !(1..=128).contains(&n) {
                return Err(fail(2, "illegal ipv6 netmask specified"));
            }
            self.svc.netmask = (n as u32).to_ne_bytes();
        }
        Ok(())
    }
}
