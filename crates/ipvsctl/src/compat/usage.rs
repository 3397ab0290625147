//! The terminal exits (`Exit`: usage, version, failures, try-help) and the
//! usage text.

use super::*;

/// A terminal outcome: text for stdout and stderr and an exit status.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Exit {
    /// Exit status (as the process would report it, 0..=255).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
    /// Not an `exit()`: ipvsadm returns -1 from `process_options` (popt
    /// errors), so `-R` goes on with the next line.
    pub soft: bool,
}

pub(super) fn fail(code: i32, msg: impl Into<String>) -> Exit {
    let mut m = msg.into();
    m.push('\n');
    Exit {
        code,
        stdout: String::new(),
        stderr: m,
        soft: false,
    }
}

/// Exit 0 with `stdout` (`-h`, `-v`).
pub(super) fn exit_ok(stdout: String) -> Exit {
    Exit {
        code: 0,
        stdout,
        stderr: String::new(),
        soft: false,
    }
}

pub(super) fn tryhelp(program: &str) -> Exit {
    Exit {
        code: 255,
        stdout: String::new(),
        stderr: format!("Try `{program} -h' or '{program} --help' for more information.\n"),
        soft: false,
    }
}

/// The usage text (`usage_exit`).
pub fn usage(program: &str) -> String {
    let p = program;
    let mut s = format!("{VERSION_LINE}\n");
    s.push_str(&format!(
        "Usage:\n  {p} -A|E virtual-service [-s scheduler] [-p [timeout]] [-M netmask] [--pe persistence_engine] [-b sched-flags]\n  {p} -D virtual-service\n  {p} -C\n  {p} -R\n  {p} -S [-n]\n  {p} -a|e virtual-service -r server-address [options]\n  {p} -d virtual-service -r server-address\n  {p} -L|l [virtual-service] [options]\n  {p} -Z [virtual-service]\n  {p} --set tcp tcpfin udp\n  {p} --start-daemon {{master|backup}} [daemon-options]\n  {p} --stop-daemon {{master|backup}}\n  {p} -h\n\n"
    ));
    s.push_str(concat!(
        "Commands:\n",
        "Either long or short options are allowed.\n",
        "  --add-service     -A        add virtual service with options\n",
        "  --edit-service    -E        edit virtual service with options\n",
        "  --delete-service  -D        delete virtual service\n",
        "  --clear           -C        clear the whole table\n",
        "  --restore         -R        restore rules from stdin\n",
        "  --save            -S        save rules to stdout\n",
        "  --add-server      -a        add real server with options\n",
        "  --edit-server     -e        edit real server with options\n",
        "  --delete-server   -d        delete real server\n",
        "  --list            -L|-l     list the table\n",
        "  --zero            -Z        zero counters in a service or all services\n",
        "  --set tcp tcpfin udp        set connection timeout values\n",
        "  --start-daemon              start connection sync daemon\n",
        "  --stop-daemon               stop connection sync daemon\n",
        "  --help            -h        display this help message\n\n",
        "virtual-service:\n",
        "  --tcp-service|-t  service-address   service-address is host[:port]\n",
        "  --udp-service|-u  service-address   service-address is host[:port]\n",
        "  --sctp-service    service-address   service-address is host[:port]\n",
        "  --fwmark-service|-f fwmark          fwmark is an integer greater than zero\n",
        "\n",
        "Options:\n",
        "  --ipv6         -6                   fwmark entry uses IPv6\n",
        "  --scheduler    -s scheduler         one of rr|wrr|lc|wlc|lblc|lblcr|dh|sh|sed|nq|fo|ovf|mh,\n",
        "                                      the default scheduler is wlc.\n",
        "  --pe            engine              alternate persistence engine may be sip,\n",
        "                                      not set by default.\n",
        "  --persistent   -p [timeout]         persistent service\n",
        "  --netmask      -M netmask           persistent granularity mask\n",
        "  --real-server  -r server-address    server-address is host (and port)\n",
        "  --gatewaying   -g                   gatewaying (direct routing) (default)\n",
        "  --ipip         -i                   ipip encapsulation (tunneling)\n",
        "  --masquerading -m                   masquerading (NAT)\n",
        "  --tun-type      type                one of ipip|gue|gre,\n",
        "                                      the default tunnel type is ipip.\n",
        "  --tun-port      port                tunnel destination port\n",
        "  --tun-nocsum                        tunnel encapsulation without checksum\n",
        "  --tun-csum                          tunnel encapsulation with checksum\n",
        "  --tun-remcsum                       tunnel encapsulation with remote checksum\n",
        "  --weight       -w weight            capacity of real server\n",
        "  --u-threshold  -x uthreshold        upper threshold of connections\n",
        "  --l-threshold  -y lthreshold        lower threshold of connections\n",
        "  --connection   -c                   output of current IPVS connections\n",
        "  --timeout                           output of timeout (tcp tcpfin udp)\n",
        "  --daemon                            output of daemon information\n",
        "  --stats                             output of statistics information\n",
        "  --rate                              output of rate information\n",
        "  --exact                             expand numbers (display exact values)\n",
        "  --thresholds                        output of thresholds information\n",
        "  --persistent-conn                   output of persistent connection info\n",
        "  --tun-info                          output of tunnel information\n",
        "  --nosort                            disable sorting output of service/server entries\n",
        "  --sort                              does nothing, for backwards compatibility\n",
        "  --ops          -o                   one-packet scheduling\n",
        "  --numeric      -n                   numeric output of addresses and ports\n",
        "  --sched-flags  -b flags             scheduler flags (comma-separated)\n",
        "Daemon Options:\n",
        "  --syncid sid                        syncid for connection sync (default=255)\n",
        "  --sync-maxlen length                Max sync message length (default=1472)\n",
        "  --mcast-interface interface         multicast interface for connection sync\n",
        "  --mcast-group address               IPv4/IPv6 group (default=224.0.0.81)\n",
        "  --mcast-port port                   UDP port (default=8848)\n",
        "  --mcast-ttl ttl                     Multicast TTL (default=1)\n",
    ));
    s
}
