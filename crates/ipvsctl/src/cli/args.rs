//! The clap definitions of the modern command line: subcommands and
//! their arguments (their doc comments are the help texts).
// Help texts show ADDR[:PORT] literally, which rustdoc reads as links.
#![allow(rustdoc::broken_intra_doc_links)]

use super::*;

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
    /// Converge the kernel to a cluster YAML file (with --etcd: store it
    /// for the directors that watch etcd).
    Apply(ApplyArgs),
    /// Show what `apply` would change (with --etcd: from the stored file).
    Plan(PlanArgs),
    /// Print the running configuration (with --etcd: the stored file).
    Save(SaveArgs),
    /// The fleet in etcd: the stored revision and the one each director
    /// runs, how long ago it applied it, and its error if any.
    Status(StatusArgs),
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
        /// Manual section of the pages (8 for an administrator's command, as packaged).
        #[arg(long, default_value = "1")]
        section: String,
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
    #[command(flatten)]
    pub etcd: EtcdArgs,
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
    #[command(flatten)]
    pub etcd: EtcdArgs,
}

/// `save`.
#[derive(Debug, Clone, Args)]
pub struct SaveArgs {
    /// yaml (cluster file), json, or ipvsadm (`-S -n` rules).
    #[arg(short, long, default_value = "yaml")]
    pub output: String,
    #[command(flatten)]
    pub etcd: EtcdArgs,
}

/// Where the cluster state lives in etcd (apply, plan, save, status).
#[derive(Debug, Clone, Args)]
pub struct EtcdArgs {
    /// Use the cluster file stored in etcd at these endpoints
    /// (comma-separated, e.g. http://10.0.0.1:2379,http://10.0.0.2:2379)
    /// instead of the local kernel. An invalid file is refused (exit 2)
    /// and nothing is written.
    #[arg(long, value_name = "ENDPOINTS")]
    pub etcd: Option<String>,
    /// Key prefix of the cluster in etcd: the file is at PREFIX/cluster,
    /// each director's applied revision at PREFIX/directors/NAME.
    #[arg(
        long,
        value_name = "PREFIX",
        default_value = "/ipvs",
        requires = "etcd"
    )]
    pub prefix: String,
}

/// `status`.
#[derive(Debug, Clone, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub etcd: EtcdArgs,
    #[command(flatten)]
    pub out: OutArgs,
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
