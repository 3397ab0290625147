//! Running a parsed command: the kernel calls of each subcommand.

use super::*;

pub(super) fn run_modern(argv: Vec<String>) -> i32 {
    let cli = match Cli::try_parse_from(&argv) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { 2 } else { 0 };
        }
    };
    match dispatch(cli.cmd) {
        Ok(()) => 0,
        Err(Fail(code, msg)) => {
            if !msg.is_empty() {
                eprintln!("ipvsctl: {msg}");
            }
            code
        }
    }
}

pub(super) fn read_file(path: &PathBuf) -> Result<String, Fail> {
    if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| Fail(1, format!("stdin: {e}")))?;
        Ok(s)
    } else {
        std::fs::read_to_string(path).map_err(|e| Fail(1, format!("{}: {e}", path.display())))
    }
}

pub(super) fn load(path: &PathBuf, drain: bool) -> Result<cluster::Desired, Fail> {
    let (_, mut d) = load_text(path)?;
    if drain {
        d.remove = cluster::RemovePolicy::Drain;
    }
    Ok(d)
}

/// Read and validate a cluster file: its text and desired state.
pub(super) fn load_text(path: &PathBuf) -> Result<(String, cluster::Desired), Fail> {
    let text = read_file(path)?;
    match cluster::parse(&text) {
        Ok((_, d)) => Ok((text, d)),
        Err(errs) => {
            let name = path.display().to_string();
            let msgs: Vec<String> = errs.iter().map(|e| e.in_file(&name)).collect();
            Err(Fail(
                2,
                format!("invalid cluster file:\n{}", msgs.join("\n")),
            ))
        }
    }
}

/// One function per subcommand; each owns its kernel calls and output.
pub(super) fn dispatch(cmd: Cmd) -> Result<(), Fail> {
    match cmd {
        Cmd::Completions { shell } => completions(shell),
        Cmd::Man { out_dir, section } => man(out_dir, &section),
        Cmd::Service(sc) => service(sc),
        Cmd::Dest(dc) => dest(dc),
        Cmd::List(a) => list(a),
        Cmd::Conn(a) => conn(a),
        Cmd::Host(hc) => host(hc),
        Cmd::Plan(a) if a.etcd.etcd.is_some() => etcd::plan(&a),
        Cmd::Apply(a) if a.etcd.etcd.is_some() => etcd::apply(&a),
        Cmd::Save(a) if a.etcd.etcd.is_some() => etcd::save(&a),
        Cmd::Status(a) => etcd::status(&a),
        Cmd::Plan(a) => plan(a),
        Cmd::Apply(a) => apply(a),
        Cmd::Save(a) => save(a),
        Cmd::Timeout(a) => timeout(a),
        Cmd::Daemon(dc) => daemon(dc),
        Cmd::Zero(a) => zero(a),
        Cmd::Flush => Client::open()?.flush().map_err(kerr("flush")),
        Cmd::Info(o) => info(o),
    }
}

fn completions(shell: clap_complete::Shell) -> Result<(), Fail> {
    let mut c = Cli::command();
    clap_complete::generate(shell, &mut c, "ipvsctl", &mut std::io::stdout());
    Ok(())
}

fn man(out_dir: Option<PathBuf>, section: &str) -> Result<(), Fail> {
    let io = |e: std::io::Error| Fail(1, e.to_string());
    let mut c = Cli::command().disable_help_subcommand(true);
    c.build();
    match out_dir {
        None => clap_mangen::Man::new(c)
            .section(section)
            .render(&mut std::io::stdout())
            .map_err(io),
        Some(d) => {
            // clap_mangen::generate_to, with the section: one page per
            // (visible) subcommand, named ipvsctl-SUB.SECTION.
            fn pages(c: clap::Command, d: &std::path::Path, section: &str) -> std::io::Result<()> {
                for sub in c.get_subcommands().filter(|s| !s.is_hide_set()) {
                    pages(sub.clone(), d, section)?;
                }
                clap_mangen::Man::new(c).section(section).generate_to(d)?;
                Ok(())
            }
            std::fs::create_dir_all(&d).map_err(io)?;
            pages(c, &d, section).map_err(io)
        }
    }
}

fn service(sc: ServiceCmd) -> Result<(), Fail> {
    let mut c = Client::open()?;
    match sc {
        ServiceCmd::Add { svc, params } => c
            .add_service(&service_from(&svc, &params)?)
            .map_err(kerr("add service")),
        ServiceCmd::Edit { svc, params } => c
            .edit_service(&service_from(&svc, &params)?)
            .map_err(kerr("edit service")),
        ServiceCmd::Del { svc } => c
            .del_service(&svc_key(&svc.kind, &svc.target, svc.ipv6)?)
            .map_err(kerr("delete service")),
        ServiceCmd::Show { svc, out } => {
            let key = svc_key(&svc.kind, &svc.target, svc.ipv6)?;
            let s = c.service(&key).map_err(kerr("service"))?;
            let d = c.dests(&key)?;
            let view = service_view(&s, &d);
            print_out(out.output, &view, || {
                format::list_service(&(s, d), format::FMT_NUMERIC, &crate::names::Numeric)
            })
        }
    }
}

fn dest(dc: DestCmd) -> Result<(), Fail> {
    let mut c = Client::open()?;
    match dc {
        DestCmd::Add {
            svc,
            server,
            params,
        } => {
            let key = svc_key(&svc.kind, &svc.target, svc.ipv6)?;
            c.add_dest(&key, &dest_from(&key, &server, &params)?)
                .map_err(kerr("add dest"))
        }
        DestCmd::Edit {
            svc,
            server,
            params,
        } => {
            let key = svc_key(&svc.kind, &svc.target, svc.ipv6)?;
            c.edit_dest(&key, &dest_from(&key, &server, &params)?)
                .map_err(kerr("edit dest"))
        }
        DestCmd::Del { svc, server } => {
            let key = svc_key(&svc.kind, &svc.target, svc.ipv6)?;
            let (addr, port) = parse_addr_port(&server)?;
            c.del_dest(&key, &Dest::new(addr, port.unwrap_or(key.port())))
                .map_err(kerr("delete dest"))
        }
    }
}

fn list(a: ListArgs) -> Result<(), Fail> {
    let mut c = Client::open()?;
    let info = c.info()?;
    let entries = c.services_with_dests()?;
    match a.out.output {
        OutFmt::Text => {
            let mut f = if a.resolve { 0 } else { format::FMT_NUMERIC };
            if a.stats {
                f |= format::FMT_STATS;
            }
            if a.rate {
                f |= format::FMT_RATE;
            }
            if a.exact {
                f |= format::FMT_EXACT;
            }
            let res: Box<dyn crate::names::Resolver> = if a.resolve {
                Box::new(crate::names::LibcResolver::new())
            } else {
                Box::new(crate::names::Numeric)
            };
            print!("{}", format::list_all(&info, &entries, f, &*res));
            Ok(())
        }
        fmt => {
            let mut v: Vec<&(Service, Vec<Dest>)> = entries.iter().collect();
            v.sort_by_key(|e| e.0.key);
            let view = ListView {
                version: info.version_string(),
                conn_tab_size: info.conn_tab_size,
                services: v.into_iter().map(|(s, d)| service_view(s, d)).collect(),
            };
            print_out(fmt, &view, String::new)
        }
    }
}

fn conn(a: ConnArgs) -> Result<(), Fail> {
    let text = match &a.file {
        Some(f) => std::fs::read_to_string(f),
        None => std::fs::read_to_string(conn::CONN_PROC_FILE),
    }
    .map_err(|e| Fail(1, format!("cannot read {}: {e}", conn::CONN_PROC_FILE)))?;
    let filter = conn::Filter {
        protocol: a.proto.clone(),
        client: a.client,
        virtual_addr: a.vip,
        virtual_port: a.vport,
        dest: a.dest,
        dest_port: a.dport,
        state: a.state.clone(),
    };
    let conns: Vec<conn::Conn> = conn::parse(&text)
        .into_iter()
        .filter(|c| filter.matches(c))
        .collect();
    print_out(a.out.output, &conns, || {
        let mut s = format!(
            "{:<4} {:<11} {:>7} {:<24} {:<24} {}\n",
            "PROT", "STATE", "EXPIRES", "CLIENT", "VIRTUAL", "DEST"
        );
        for c in &conns {
            s.push_str(&format!(
                "{:<4} {:<11} {:>7} {:<24} {:<24} {}\n",
                c.protocol,
                c.state,
                c.expires,
                ipvs_netlink::ipvs::fmt_addr_port(&c.client, c.client_port),
                ipvs_netlink::ipvs::fmt_addr_port(&c.virtual_addr, c.virtual_port),
                ipvs_netlink::ipvs::fmt_addr_port(&c.dest, c.dest_port)
            ));
        }
        s
    })
}

fn host(hc: HostCmd) -> Result<(), Fail> {
    let mut nl = Netlink::open()?;
    let mut hm = HostMap::new(&mut nl)?;
    match hc {
        HostCmd::Set { name, weight, vms } => {
            if weight.is_some_and(|w| w > vmwlch::VMWLCH_MAX_WEIGHT) {
                return Err(usage(format!(
                    "weight out of range 0..{}",
                    vmwlch::VMWLCH_MAX_WEIGHT
                )));
            }
            hm.set_host(&name, weight, &vms).map_err(kerr("set host"))
        }
        HostCmd::Unmap { addrs } => hm.del_members(&addrs).map_err(kerr("unmap")),
        HostCmd::Del { name } => hm.del_host(&name).map_err(kerr("delete host")),
        HostCmd::Flush => hm.flush().map_err(kerr("flush hosts")),
        HostCmd::List(o) => {
            let mut hosts = hm.hosts()?;
            hosts.sort_by(|a, b| a.name.cmp(&b.name));
            print_out(o.output, &hosts, || {
                let mut s = format!(
                    "{:<20} {:>6} {:>10} {:>10} {:>5}  {}\n",
                    "HOST", "WEIGHT", "ACTIVE", "INACTIVE", "DESTS", "VMS"
                );
                for h in &hosts {
                    let vms: Vec<String> = h.members.iter().map(|a| a.to_string()).collect();
                    s.push_str(&format!(
                        "{:<20} {:>6} {:>10} {:>10} {:>5}  {}\n",
                        h.name,
                        h.weight,
                        h.activeconns,
                        h.inactconns,
                        h.dests,
                        vms.join(",")
                    ));
                }
                s
            })
        }
        HostCmd::Info(o) => {
            let i = hm.info()?;
            print_out(o.output, &i, || {
                let current = match i.snapshot_current {
                    Some(true) => "current",
                    Some(false) => "stale (plain wlc until rebuilt)",
                    None => "unknown",
                };
                format!(
                    "version {}\nhosts {}/{}\nmembers {}/{}\nservices {}\ndests {}\ndecisions {}\nno_dest {}\ngeneration {}\n\
                     snapshot {}\nhost_aware {}\nfallbacks {}\nrebuilds {}\ndeferred {}\nrebuild_failures {}\nrebuild_retries {}\ntrack_failures {}\nbuild_ms {}\n",
                    i.version, i.hosts, i.max_hosts, i.members, i.max_members, i.services, i.dests, i.decisions, i.no_dest, i.generation,
                    current, i.host_aware.map_or_else(|| "unknown".to_string(), |n| n.to_string()), i.fallbacks, i.rebuilds, i.deferred, i.rebuild_failures, i.rebuild_retries, i.track_failures, i.build_ns / 1_000_000
                )
            })
        }
    }
}

fn plan(a: PlanArgs) -> Result<(), Fail> {
    let d = load(&a.file, a.drain)?;
    let mut c = Client::open()?;
    let cur = cluster::read_current(&mut c, d.hosts.is_some())?;
    print!("{}", cluster::plan(&d, &cur));
    Ok(())
}

fn apply(a: ApplyArgs) -> Result<(), Fail> {
    let d = load(&a.file, a.drain)?;
    let mut c = Client::open()?;
    let cur = cluster::read_current(&mut c, d.hosts.is_some())?;
    let p = cluster::plan(&d, &cur);
    if a.dry_run || p.is_empty() {
        print!("{p}");
        return Ok(());
    }
    let report = cluster::apply(&mut c, &p)?;
    print!("{report}");
    for n in &p.notes {
        println!("# {n}");
    }
    if report.ok() {
        Ok(())
    } else {
        Err(Fail(
            3,
            format!(
                "apply failed part-way: {} of {} steps applied",
                report.done(),
                report.steps.len()
            ),
        ))
    }
}

fn save(a: SaveArgs) -> Result<(), Fail> {
    let mut c = Client::open()?;
    let entries = c.services_with_dests()?;
    match a.output.as_str() {
        "ipvsadm" => {
            print!(
                "{}",
                format::list_all(
                    &Default::default(),
                    &entries,
                    format::FMT_NUMERIC | format::FMT_RULE,
                    &crate::names::Numeric
                )
            );
            Ok(())
        }
        "yaml" | "json" => {
            let hosts = match HostMap::new(c.netlink()) {
                Ok(mut hm) => Some(hm.hosts()?),
                Err(Error::FamilyNotFound(_)) => None,
                Err(e) => return Err(e.into()),
            };
            let cfg = cluster::from_state(Some(&entries), hosts.as_deref());
            print_out(
                if a.output == "json" {
                    OutFmt::Json
                } else {
                    OutFmt::Yaml
                },
                &cfg,
                String::new,
            )
        }
        o => Err(usage(format!(
            "unknown save format `{o}' (yaml, json, ipvsadm)"
        ))),
    }
}

fn timeout(a: TimeoutArgs) -> Result<(), Fail> {
    let mut c = Client::open()?;
    if let Some(v) = a.set {
        c.set_timeouts(&Timeouts {
            tcp: v[0],
            tcp_fin: v[1],
            udp: v[2],
        })
        .map_err(kerr("set timeouts"))
    } else {
        let t = c.timeouts()?;
        print_out(a.out.output, &t, || format::timeouts(&t))
    }
}

fn daemon(dc: DaemonCmd) -> Result<(), Fail> {
    let mut c = Client::open()?;
    let state = |s: &str| match s {
        "master" => Ok(DaemonState::Master),
        "backup" => Ok(DaemonState::Backup),
        o => Err(usage(format!("daemon state `{o}': master or backup"))),
    };
    match dc {
        DaemonCmd::List(o) => {
            let d = c.daemons()?;
            print_out(o.output, &d, || format::daemons(&d))
        }
        DaemonCmd::Start {
            state: s,
            mcast_interface,
            syncid,
            sync_maxlen,
            mcast_group,
            mcast_port,
            mcast_ttl,
        } => {
            let d = SyncDaemon {
                state: state(&s)?,
                mcast_ifn: mcast_interface,
                sync_id: syncid,
                sync_maxlen,
                mcast_group,
                mcast_port,
                mcast_ttl,
            };
            c.start_daemon(&d).map_err(kerr("start daemon"))
        }
        DaemonCmd::Stop { state: s } => c.stop_daemon(state(&s)?).map_err(kerr("stop daemon")),
    }
}

fn zero(a: OptSvcArgs) -> Result<(), Fail> {
    let mut c = Client::open()?;
    let key = match (a.kind, a.target) {
        (Some(k), Some(t)) => Some(svc_key(&k, &t, a.ipv6)?),
        (None, None) => None,
        _ => return Err(usage("zero: give KIND and TARGET, or nothing")),
    };
    c.zero(key.as_ref()).map_err(kerr("zero"))
}

fn info(o: OutArgs) -> Result<(), Fail> {
    let i = Client::open()?.info()?;
    #[derive(Serialize)]
    struct V {
        version: String,
        conn_tab_size: u32,
    }
    let v = V {
        version: i.version_string(),
        conn_tab_size: i.conn_tab_size,
    };
    print_out(o.output, &v, || {
        format!(
            "IPVS {} (connection table size {})\n",
            v.version, v.conn_tab_size
        )
    })
}

pub(super) fn kerr(what: &'static str) -> impl Fn(Error) -> Fail {
    move |e| {
        let f: Fail = e.into();
        Fail(f.0, format!("{what}: {}", f.1))
    }
}
