//! The modern command line (`ipvsctl service|dest|list|conn|host|apply|plan|save|...`)
//! and the dispatch between it and the ipvsadm-compatible syntax.
//!
//! Exit codes: 0 success; 1 a kernel or I/O error; 2 a usage error or an
//! invalid file; 3 an apply that failed part-way (the report says which
//! steps were applied).

#![allow(missing_docs)] // clap argument structs: their docs are the help texts

use std::io::Read;
use std::net::IpAddr;
use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use serde::Serialize;

use crate::format;
use ipvs_cluster as cluster;
use ipvs_netlink::conn;
use ipvs_netlink::ipvs::{
    Client, DaemonState, Dest, Error, Family, Forward, Netmask, Protocol, Service, ServiceKey,
    Stats, SyncDaemon, Timeouts, TunnelCsum, TunnelType,
};
use ipvs_netlink::vmwlch::{self, HostMap};
use ipvs_netlink::Netlink;

/// Words that select the modern interface when they come first.
const SUBCOMMANDS: &[&str] = &[
    "service",
    "dest",
    "list",
    "conn",
    "host",
    "apply",
    "plan",
    "save",
    "timeout",
    "daemon",
    "zero",
    "flush",
    "info",
    "completions",
    "man",
    "help",
    "--help",
    "--version",
    "-V",
];

/// Entry point of the binary: `ipvsadm` (by argv[0]) or ipvsadm-style
/// options run the compatible interface; subcommands the modern one.
pub fn main(argv: Vec<String>) -> i32 {
    let prog = argv
        .first()
        .map(|a| a.rsplit('/').next().unwrap_or(a).to_string())
        .unwrap_or_default();
    if prog.starts_with("ipvsadm") {
        return crate::compat::main(&argv);
    }
    match argv.get(1) {
        None => run_modern(vec![argv[0].clone(), "list".into()]),
        Some(a) if SUBCOMMANDS.contains(&a.as_str()) || a == "-h" => run_modern(argv),
        Some(_) => crate::compat::main(&argv),
    }
}

/// Output format of listings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum OutFmt {
    /// Human/ipvsadm text.
    #[default]
    Text,
    /// JSON.
    Json,
    /// YAML.
    Yaml,
}

/// ipvsctl: netlink IPVS administration (ipvsadm-compatible; run with
/// ipvsadm options, or as `ipvsadm`, for the classic interface).
#[derive(Debug, Parser)]
#[command(name = "ipvsctl", version, about, long_about = None, disable_help_subcommand = false)]
pub struct Cli {
    /// Command.
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Add, edit, delete or show virtual services.
    #[command(subcommand)]
    Service(ServiceCmd),
    /// Add, edit or delete real servers.
    #[command(subcommand)]
    Dest(DestCmd),
    /// List services and real servers.
    List(ListArgs),
    /// List connections (from /proc/net/ip_vs_conn).
    Conn(ConnArgs),
    /// Manage the VMWLCH host map (ip_vs_vmwlch module).
    #[command(subcommand)]
    Host(HostCmd),
    /// Converge the kernel to a cluster YAML file.
    Apply(ApplyArgs),
    /// Show what `apply` would change.
    Plan(PlanArgs),
    /// Print the running configuration.
    Save(SaveArgs),
    /// Show or set connection timeouts.
    Timeout(TimeoutArgs),
    /// Show, start or stop connection sync daemons.
    #[command(subcommand)]
    Daemon(DaemonCmd),
    /// Zero counters (all services, or one).
    Zero(OptSvcArgs),
    /// Delete all virtual services.
    Flush,
    /// IPVS version and connection table size.
    Info(OutArgs),
    /// Print a shell completion script.
    Completions {
        /// Shell.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff), or write man pages to a directory.
    Man {
        /// Write ipvsctl.1 (and one page per subcommand) here.
        #[arg(long)]
        out_dir: Option<PathBuf>,
    },
}

/// Service identity: `tcp ADDR:PORT`, `udp ...`, `sctp ...`, `fwmark MARK [--ipv6]`.
#[derive(Debug, Clone, Args)]
pub struct SvcArgs {
    /// tcp, udp, sctp or fwmark.
    pub kind: String,
    /// ADDR:PORT (IPv6 as [ADDR]:PORT), or the mark for fwmark.
    pub target: String,
    /// The fwmark service is IPv6.
    #[arg(long)]
    pub ipv6: bool,
}

/// An optional service identity.
#[derive(Debug, Clone, Args)]
pub struct OptSvcArgs {
    /// tcp, udp, sctp or fwmark.
    pub kind: Option<String>,
    /// ADDR:PORT or mark.
    pub target: Option<String>,
    /// The fwmark service is IPv6.
    #[arg(long)]
    pub ipv6: bool,
}

/// Service parameters.
#[derive(Debug, Clone, Args)]
pub struct SvcParams {
    /// Scheduler (default wlc).
    #[arg(short, long, default_value = "wlc")]
    pub scheduler: String,
    /// Persistence timeout in seconds.
    #[arg(short, long)]
    pub persistent: Option<u32>,
    /// Persistence granularity (IPv4 mask or IPv6 prefix length).
    #[arg(short = 'M', long)]
    pub netmask: Option<String>,
    /// Persistence engine (e.g. sip).
    #[arg(long)]
    pub pe: Option<String>,
    /// Scheduler flags, comma separated (flag-1..3, sh-*, mh-*).
    #[arg(short = 'b', long)]
    pub sched_flags: Option<String>,
    /// One-packet scheduling (UDP).
    #[arg(short, long)]
    pub ops: bool,
}

/// `service ...`.
#[derive(Debug, Subcommand)]
pub enum ServiceCmd {
    /// Add a service.
    Add {
        #[command(flatten)]
        svc: SvcArgs,
        #[command(flatten)]
        params: SvcParams,
    },
    /// Replace a service's parameters.
    Edit {
        #[command(flatten)]
        svc: SvcArgs,
        #[command(flatten)]
        params: SvcParams,
    },
    /// Delete a service.
    Del {
        #[command(flatten)]
        svc: SvcArgs,
    },
    /// Show one service.
    Show {
        #[command(flatten)]
        svc: SvcArgs,
        #[command(flatten)]
        out: OutArgs,
    },
}

/// Real server parameters.
#[derive(Debug, Clone, Args)]
pub struct DestParams {
    /// Forwarding: route (default), masq, tunnel, local.
    #[arg(short = 'f', long = "forward", default_value = "route")]
    pub forward: String,
    /// Weight.
    #[arg(short, long, default_value_t = 1)]
    pub weight: u32,
    /// Upper connection threshold.
    #[arg(short = 'x', long, default_value_t = 0)]
    pub u_threshold: u32,
    /// Lower connection threshold.
    #[arg(short = 'y', long, default_value_t = 0)]
    pub l_threshold: u32,
    /// Tunnel type (ipip, gue, gre).
    #[arg(long)]
    pub tun_type: Option<String>,
    /// Tunnel port (gue).
    #[arg(long)]
    pub tun_port: Option<u16>,
    /// Tunnel checksum (nocsum, csum, remcsum).
    #[arg(long)]
    pub tun_csum: Option<String>,
}

/// `dest ...`.
#[derive(Debug, Subcommand)]
pub enum DestCmd {
    /// Add a real server.
    Add {
        #[command(flatten)]
        svc: SvcArgs,
        /// Real server ADDR[:PORT].
        server: String,
        #[command(flatten)]
        params: DestParams,
    },
    /// Replace a real server's parameters.
    Edit {
        #[command(flatten)]
        svc: SvcArgs,
        /// Real server ADDR[:PORT].
        server: String,
        #[command(flatten)]
        params: DestParams,
    },
    /// Delete a real server.
    Del {
        #[command(flatten)]
        svc: SvcArgs,
        /// Real server ADDR[:PORT].
        server: String,
    },
}

/// Output selection.
#[derive(Debug, Clone, Args)]
pub struct OutArgs {
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = OutFmt::Text)]
    pub output: OutFmt,
}

/// `list`.
#[derive(Debug, Clone, Args)]
pub struct ListArgs {
    #[command(flatten)]
    pub out: OutArgs,
    /// Resolve names (text output).
    #[arg(long)]
    pub resolve: bool,
    /// Statistics (text output).
    #[arg(long)]
    pub stats: bool,
    /// Rates (text output).
    #[arg(long)]
    pub rate: bool,
    /// Exact numbers (text output).
    #[arg(long)]
    pub exact: bool,
}

/// `conn`.
#[derive(Debug, Clone, Args)]
pub struct ConnArgs {
    #[command(flatten)]
    pub out: OutArgs,
    /// Only this protocol.
    #[arg(long)]
    pub proto: Option<String>,
    /// Only this client address.
    #[arg(long)]
    pub client: Option<IpAddr>,
    /// Only this virtual address.
    #[arg(long)]
    pub vip: Option<IpAddr>,
    /// Only this virtual port.
    #[arg(long)]
    pub vport: Option<u16>,
    /// Only this real server address.
    #[arg(long)]
    pub dest: Option<IpAddr>,
    /// Only this real server port.
    #[arg(long)]
    pub dport: Option<u16>,
    /// Only this state (e.g. ESTABLISHED).
    #[arg(long)]
    pub state: Option<String>,
    /// Read this file instead of /proc/net/ip_vs_conn.
    #[arg(long, hide = true)]
    pub file: Option<PathBuf>,
}

/// `host ...`.
#[derive(Debug, Subcommand)]
pub enum HostCmd {
    /// Create or update a host (weight, VMs to add or move here).
    Set {
        /// Host name.
        name: String,
        /// Host weight (0 drains the host).
        #[arg(short, long)]
        weight: Option<u32>,
        /// VM address (repeatable).
        #[arg(long = "vm")]
        vms: Vec<IpAddr>,
    },
    /// Unmap VM addresses.
    Unmap {
        /// Addresses.
        #[arg(required = true)]
        addrs: Vec<IpAddr>,
    },
    /// Delete a host.
    Del {
        /// Host name.
        name: String,
    },
    /// Delete every host.
    Flush,
    /// List hosts with members and live load.
    List(OutArgs),
    /// Module version, limits and counters.
    Info(OutArgs),
}

/// `apply`.
#[derive(Debug, Clone, Args)]
pub struct ApplyArgs {
    /// Cluster YAML file (`-` for stdin).
    #[arg(short, long)]
    pub file: PathBuf,
    /// Only show the plan.
    #[arg(long)]
    pub dry_run: bool,
    /// Drain removed real servers (weight 0) instead of deleting them.
    #[arg(long)]
    pub drain: bool,
}

/// `plan`.
#[derive(Debug, Clone, Args)]
pub struct PlanArgs {
    /// Cluster YAML file (`-` for stdin).
    #[arg(short, long)]
    pub file: PathBuf,
    /// Drain removed real servers instead of deleting them.
    #[arg(long)]
    pub drain: bool,
}

/// `save`.
#[derive(Debug, Clone, Args)]
pub struct SaveArgs {
    /// yaml (cluster file), json, or ipvsadm (`-S -n` rules).
    #[arg(short, long, default_value = "yaml")]
    pub output: String,
}

/// `timeout`.
#[derive(Debug, Clone, Args)]
pub struct TimeoutArgs {
    /// Set: TCP TCPFIN UDP seconds (0 = unchanged).
    #[arg(num_args = 3, value_names = ["TCP", "TCPFIN", "UDP"])]
    pub set: Option<Vec<u32>>,
    #[command(flatten)]
    pub out: OutArgs,
}

/// `daemon ...`.
#[derive(Debug, Subcommand)]
pub enum DaemonCmd {
    /// List running daemons.
    List(OutArgs),
    /// Start a daemon.
    Start {
        /// master or backup.
        state: String,
        /// Multicast interface.
        #[arg(long, default_value = "eth0")]
        mcast_interface: String,
        /// Sync id.
        #[arg(long, default_value_t = 0)]
        syncid: u32,
        /// Max sync message length.
        #[arg(long)]
        sync_maxlen: Option<u16>,
        /// Multicast group.
        #[arg(long)]
        mcast_group: Option<IpAddr>,
        /// Multicast port.
        #[arg(long)]
        mcast_port: Option<u16>,
        /// Multicast TTL.
        #[arg(long)]
        mcast_ttl: Option<u8>,
    },
    /// Stop a daemon.
    Stop {
        /// master or backup.
        state: String,
    },
}

/// A user-facing failure with an exit status.
#[derive(Debug)]
pub struct Fail(pub i32, pub String);

impl From<Error> for Fail {
    fn from(e: Error) -> Self {
        match e {
            Error::FamilyNotFound(f) if f == vmwlch::VMWLCH_GENL_NAME => {
                Fail(1, vmwlch::NOT_LOADED.into())
            }
            Error::FamilyNotFound(f) => Fail(
                1,
                format!("netlink family {f} not found: is IPVS in the kernel? (modprobe ip_vs)"),
            ),
            Error::Invalid(m) => Fail(2, m),
            e => Fail(1, e.to_string()),
        }
    }
}

fn usage(m: impl Into<String>) -> Fail {
    Fail(2, m.into())
}

fn run_modern(argv: Vec<String>) -> i32 {
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

/// Parse `ADDR:PORT`, `[V6]:PORT`, `ADDR` (port None), `V6`.
pub fn parse_addr_port(s: &str) -> Result<(IpAddr, Option<u16>), Fail> {
    let bad = || {
        usage(format!(
            "invalid address `{s}' (ADDR[:PORT], [IPV6][:PORT])"
        ))
    };
    if let Some(rest) = s.strip_prefix('[') {
        let (a, after) = rest.split_once(']').ok_or_else(bad)?;
        let addr: IpAddr = a.parse().map_err(|_| bad())?;
        let port = match after {
            "" => None,
            p => Some(
                p.strip_prefix(':')
                    .ok_or_else(bad)?
                    .parse()
                    .map_err(|_| bad())?,
            ),
        };
        return Ok((addr, port));
    }
    if let Ok(a) = s.parse::<IpAddr>() {
        return Ok((a, None));
    }
    let (a, p) = s.rsplit_once(':').ok_or_else(bad)?;
    Ok((
        a.parse().map_err(|_| bad())?,
        Some(p.parse().map_err(|_| bad())?),
    ))
}

fn svc_key(kind: &str, target: &str, ipv6: bool) -> Result<ServiceKey, Fail> {
    if kind.eq_ignore_ascii_case("fwmark") {
        let mark: u32 = target
            .parse()
            .ok()
            .filter(|m| *m > 0)
            .ok_or_else(|| usage(format!("invalid fwmark `{target}'")))?;
        return Ok(ServiceKey::Fwmark {
            family: if ipv6 { Family::Inet6 } else { Family::Inet },
            mark,
        });
    }
    let protocol = match Protocol::parse(kind) {
        Some(p @ (Protocol::Tcp | Protocol::Udp | Protocol::Sctp)) => p,
        _ => {
            return Err(usage(format!(
                "invalid service kind `{kind}' (tcp, udp, sctp, fwmark)"
            )))
        }
    };
    let (addr, port) = parse_addr_port(target)?;
    Ok(ServiceKey::Addr {
        protocol,
        addr,
        port: port.unwrap_or(0),
    })
}

fn service_from(svc: &SvcArgs, p: &SvcParams) -> Result<Service, Fail> {
    // Build a one-service cluster spec and reuse the file validation.
    let key = svc_key(&svc.kind, &svc.target, svc.ipv6)?;
    let mut spec = cluster::ServiceSpec::for_key(key);
    spec.scheduler = p.scheduler.clone();
    spec.persistent = p.persistent;
    spec.netmask = p.netmask.as_ref().map(|m| match m.parse::<u32>() {
        Ok(n) => cluster::NetmaskSpec::Prefix(n),
        Err(_) => cluster::NetmaskSpec::Mask(m.clone()),
    });
    spec.pe = p.pe.clone();
    spec.sched_flags = p
        .sched_flags
        .as_deref()
        .map(|f| f.split(',').map(String::from).collect())
        .unwrap_or_default();
    spec.one_packet = p.ops;
    let cfg = cluster::ClusterSpec {
        services: Some(vec![spec]),
        ..Default::default()
    };
    let d = cluster::validate(&cfg).map_err(|errs| {
        usage(
            errs.into_iter()
                .map(|(_, m)| m)
                .collect::<Vec<_>>()
                .join("; "),
        )
    })?;
    let mut list = d.services.unwrap_or_default();
    list.pop()
        .map(|(s, _)| s)
        .ok_or_else(|| usage("invalid service"))
}

fn dest_from(key: &ServiceKey, server: &str, p: &DestParams) -> Result<Dest, Fail> {
    let (addr, port) = parse_addr_port(server)?;
    let fwd = Forward::parse(&p.forward)
        .ok_or_else(|| usage(format!("invalid forwarding method `{}'", p.forward)))?;
    let mut port = port.unwrap_or(key.port());
    if key.mark() == 0 && matches!(fwd, Forward::Route | Forward::Tunnel) {
        port = key.port();
    }
    let mut d = Dest::new(addr, port).with_fwd(fwd).with_weight(p.weight);
    d.u_threshold = p.u_threshold;
    d.l_threshold = p.l_threshold;
    if let Some(t) = &p.tun_type {
        d.tun_type =
            TunnelType::parse(t).ok_or_else(|| usage(format!("invalid tunnel type `{t}'")))?;
    }
    d.tun_port = p.tun_port.unwrap_or(0);
    if let Some(c) = &p.tun_csum {
        d.tun_flags =
            TunnelCsum::parse(c).ok_or_else(|| usage(format!("invalid tunnel checksum `{c}'")))?;
    }
    if (p.tun_type.is_some() || p.tun_port.is_some() || p.tun_csum.is_some())
        && fwd != Forward::Tunnel
    {
        return Err(usage("tunnel options need --forward tunnel"));
    }
    if d.tun_type == TunnelType::Gue && d.tun_port == 0 && fwd == Forward::Tunnel {
        return Err(usage("gue tunnels need --tun-port"));
    }
    Ok(d)
}

fn print_out<T: Serialize>(fmt: OutFmt, v: &T, text: impl FnOnce() -> String) -> Result<(), Fail> {
    let s = match fmt {
        OutFmt::Text => text(),
        OutFmt::Json => serde_json::to_string_pretty(v).map_err(|e| Fail(1, e.to_string()))? + "\n",
        OutFmt::Yaml => ipvs_cluster::yaml::to_string(v).map_err(|e| Fail(1, e))?,
    };
    print!("{s}");
    Ok(())
}

/// JSON/YAML view of a service.
#[derive(Debug, Serialize)]
pub struct ServiceView {
    /// tcp/udp/sctp or absent for fwmark.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// Address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<IpAddr>,
    /// Port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Firewall mark.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fwmark: Option<u32>,
    /// Family.
    pub family: Family,
    /// Scheduler.
    pub scheduler: String,
    /// Persistence timeout, if persistent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persistent: Option<u32>,
    /// Netmask (mask or prefix).
    pub netmask: String,
    /// Persistence engine.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pe: Option<String>,
    /// Scheduler flag names.
    pub sched_flags: Vec<String>,
    /// One-packet scheduling.
    pub one_packet: bool,
    /// Raw flags.
    pub flags: u32,
    /// Counters.
    pub stats: Stats,
    /// Real servers.
    pub dests: Vec<DestView>,
}

/// JSON/YAML view of a real server.
#[derive(Debug, Serialize)]
pub struct DestView {
    /// Address.
    pub address: IpAddr,
    /// Port.
    pub port: u16,
    /// Forwarding method.
    pub forward: Forward,
    /// Weight.
    pub weight: u32,
    /// Upper threshold.
    pub u_threshold: u32,
    /// Lower threshold.
    pub l_threshold: u32,
    /// Tunnel type (tunnel forwarding).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tunnel: Option<TunnelView>,
    /// Active connections.
    pub active_conns: u32,
    /// Inactive connections.
    pub inact_conns: u32,
    /// Persistent templates.
    pub persist_conns: u32,
    /// Counters.
    pub stats: Stats,
}

/// Tunnel parameters.
#[derive(Debug, Serialize)]
pub struct TunnelView {
    /// Type.
    #[serde(rename = "type")]
    pub kind: TunnelType,
    /// Port.
    pub port: u16,
    /// Checksum mode.
    pub csum: TunnelCsum,
}

/// The view of a service and its real servers.
pub fn service_view(s: &Service, ds: &[Dest]) -> ServiceView {
    let sched_flags = cluster::kernel::service_spec(s, &[]).sched_flags;
    let (protocol, address, port, fwmark) = match s.key {
        ServiceKey::Addr {
            protocol,
            addr,
            port,
        } => (Some(protocol), Some(addr), Some(port), None),
        ServiceKey::Fwmark { mark, .. } => (None, None, None, Some(mark)),
    };
    let mut ds: Vec<&Dest> = ds.iter().collect();
    ds.sort_by_key(|d| (d.addr, d.port));
    ServiceView {
        protocol,
        address,
        port,
        fwmark,
        family: s.key.family(),
        scheduler: s.scheduler.clone(),
        persistent: s.persistent().then_some(s.timeout),
        netmask: match s.netmask {
            Netmask::V4(a) => a.to_string(),
            Netmask::V6(p) => p.to_string(),
        },
        pe: s.pe_name.clone(),
        sched_flags,
        one_packet: s.one_packet(),
        flags: s.flags,
        stats: s.stats,
        dests: ds
            .into_iter()
            .map(|d| DestView {
                address: d.addr,
                port: d.port,
                forward: d.fwd,
                weight: d.weight,
                u_threshold: d.u_threshold,
                l_threshold: d.l_threshold,
                tunnel: (d.fwd == Forward::Tunnel).then_some(TunnelView {
                    kind: d.tun_type,
                    port: d.tun_port,
                    csum: d.tun_flags,
                }),
                active_conns: d.active_conns,
                inact_conns: d.inact_conns,
                persist_conns: d.persist_conns,
                stats: d.stats,
            })
            .collect(),
    }
}

#[derive(Serialize)]
struct ListView {
    version: String,
    conn_tab_size: u32,
    services: Vec<ServiceView>,
}

fn read_file(path: &PathBuf) -> Result<String, Fail> {
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

fn load(path: &PathBuf, drain: bool) -> Result<cluster::Desired, Fail> {
    let text = read_file(path)?;
    match cluster::parse(&text) {
        Ok((_, mut d)) => {
            if drain {
                d.remove = cluster::RemovePolicy::Drain;
            }
            Ok(d)
        }
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

fn dispatch(cmd: Cmd) -> Result<(), Fail> {
    match cmd {
        Cmd::Completions { shell } => {
            let mut c = Cli::command();
            clap_complete::generate(shell, &mut c, "ipvsctl", &mut std::io::stdout());
            Ok(())
        }
        Cmd::Man { out_dir } => {
            let c = Cli::command();
            match out_dir {
                None => clap_mangen::Man::new(c)
                    .render(&mut std::io::stdout())
                    .map_err(|e| Fail(1, e.to_string())),
                Some(d) => {
                    std::fs::create_dir_all(&d).map_err(|e| Fail(1, e.to_string()))?;
                    clap_mangen::generate_to(c, &d).map_err(|e| Fail(1, e.to_string()))
                }
            }
        }
        Cmd::Service(sc) => {
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
        Cmd::Dest(dc) => {
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
        Cmd::List(a) => {
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
        Cmd::Conn(a) => {
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
        Cmd::Host(hc) => {
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
                            let vms: Vec<String> =
                                h.members.iter().map(|a| a.to_string()).collect();
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
                        format!(
                            "version {}\nhosts {}/{}\nmembers {}/{}\nservices {}\ndests {}\ndecisions {}\nno_dest {}\ngeneration {}\n",
                            i.version, i.hosts, i.max_hosts, i.members, i.max_members, i.services, i.dests, i.decisions, i.no_dest, i.generation
                        )
                    })
                }
            }
        }
        Cmd::Plan(a) => {
            let d = load(&a.file, a.drain)?;
            let mut c = Client::open()?;
            let cur = cluster::read_current(&mut c, d.hosts.is_some())?;
            print!("{}", cluster::plan(&d, &cur));
            Ok(())
        }
        Cmd::Apply(a) => {
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
        Cmd::Save(a) => {
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
        Cmd::Timeout(a) => {
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
        Cmd::Daemon(dc) => {
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
                DaemonCmd::Stop { state: s } => {
                    c.stop_daemon(state(&s)?).map_err(kerr("stop daemon"))
                }
            }
        }
        Cmd::Zero(a) => {
            let mut c = Client::open()?;
            let key = match (a.kind, a.target) {
                (Some(k), Some(t)) => Some(svc_key(&k, &t, a.ipv6)?),
                (None, None) => None,
                _ => return Err(usage("zero: give KIND and TARGET, or nothing")),
            };
            c.zero(key.as_ref()).map_err(kerr("zero"))
        }
        Cmd::Flush => Client::open()?.flush().map_err(kerr("flush")),
        Cmd::Info(o) => {
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
    }
}

fn kerr(what: &'static str) -> impl Fn(Error) -> Fail {
    move |e| {
        let f: Fail = e.into();
        Fail(f.0, format!("{what}: {}", f.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_definition_is_valid() {
        Cli::command().debug_assert();
    }

    #[test]
    fn addr_port_forms() {
        assert_eq!(
            parse_addr_port("10.0.0.1:80").unwrap(),
            ("10.0.0.1".parse().unwrap(), Some(80))
        );
        assert_eq!(
            parse_addr_port("[2001:db8::1]:53").unwrap(),
            ("2001:db8::1".parse().unwrap(), Some(53))
        );
        assert_eq!(
            parse_addr_port("2001:db8::1").unwrap(),
            ("2001:db8::1".parse().unwrap(), None)
        );
        assert!(parse_addr_port("nope:80").is_err());
    }

    #[test]
    fn modern_service_validation() {
        let svc = SvcArgs {
            kind: "udp".into(),
            target: "10.0.0.1:53".into(),
            ipv6: false,
        };
        let p = SvcParams {
            scheduler: "sh".into(),
            persistent: Some(60),
            netmask: Some("24".into()),
            pe: None,
            sched_flags: Some("sh-port".into()),
            ops: true,
        };
        let s = service_from(&svc, &p).unwrap();
        assert_eq!(s.netmask, Netmask::V4("255.255.255.0".parse().unwrap()));
        let p2 = SvcParams {
            scheduler: "rr".into(),
            sched_flags: Some("sh-port".into()),
            ..p
        };
        assert!(service_from(&svc, &p2).is_err());
    }

    #[test]
    fn json_view() {
        let s = Service::new(ServiceKey::tcp("10.0.0.1".parse().unwrap(), 80));
        let v = service_view(&s, &[Dest::new("192.168.1.1".parse().unwrap(), 80)]);
        let j = serde_json::to_value(&v).unwrap();
        assert_eq!(j["protocol"], "tcp");
        assert_eq!(j["dests"][0]["forward"], "route");
        assert_eq!(j["netmask"], "255.255.255.255");
    }
}
