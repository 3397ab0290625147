//! The checks of `process_options` once the options are scanned, in
//! ipvsadm's order: the legality table (`generic_opt_check`), then the
//! command's own checks (virtual service, real server and its tunnel,
//! listing conflicts). The first failure is the error.

use super::*;

/// Every check of `low`, in ipvsadm's order.
pub(super) fn check(low: &LowArgs) -> Result<(), Exit> {
    generic_opt_check(low.cmd, low.options)?;
    match low.cmd {
        Cmd::Add | Cmd::Edit => {
            zero_port_check(&low.svc)?;
            one_packet_check(&low.svc)
        }
        Cmd::AddDest | Cmd::EditDest => {
            address_family_check(low)?;
            tunnel_conflict_check(low)?;
            tunnel_opt_check(low.dest.tun_type, low.options)
        }
        Cmd::List => list_conflict_check(low.options),
        _ => Ok(()),
    }
}

/// The first offence against a row of a legality table, in column order.
enum Offence {
    /// A `+` option not given.
    Missing(Opt),
    /// An `x` option given.
    Illegal(Opt),
    /// A second `1` option given, and the first.
    Conflict(Opt, Opt),
}

impl Offence {
    /// ipvsadm's message, for the `kind` ("command" or "tunnel type") `what`.
    fn fail(self, what: &str, kind: &str) -> Exit {
        fail(
            2,
            match self {
                Offence::Missing(opt) => format!(
                    "You need to supply the '{}' option for the '{what}' {kind}",
                    opt.name()
                ),
                Offence::Illegal(opt) => {
                    format!("Illegal '{}' option with the '{what}' {kind}", opt.name())
                }
                Offence::Conflict(opt, first) => format!(
                    "The option '{}' conflicts with the '{}' option in the '{what}' {kind}",
                    opt.name(),
                    first.name()
                ),
            },
        )
    }
}

/// Judges the `given` options against a legality row over `opts`: `+`
/// must be given, `x` must not be, at most one `1` may be.
fn judge(row: &[u8], opts: &[Opt], given: OptSet) -> Result<(), Offence> {
    let mut first_exclusive = None;
    for (&l, &opt) in row.iter().zip(opts) {
        if !given.contains(opt) {
            if l == b'+' {
                return Err(Offence::Missing(opt));
            }
        } else if l == b'x' {
            return Err(Offence::Illegal(opt));
        } else if l == b'1' {
            match first_exclusive {
                None => first_exclusive = Some(opt),
                Some(first) => return Err(Offence::Conflict(opt, first)),
            }
        }
    }
    Ok(())
}

/// ipvsadm's `generic_opt_check`: each option against the command's row
/// of the legality table.
fn generic_opt_check(cmd: Cmd, options: OptSet) -> Result<(), Exit> {
    judge(cmd.row(), &Opt::ALL, options).map_err(|o| o.fail(cmd.name(), "command"))
}

/// `-A`/`-E`: a service without a port must be persistent (or a fwmark).
fn zero_port_check(svc: &CSvc) -> Result<(), Exit> {
    if svc.fwmark == 0 && svc.port == 0 && svc.flags & IP_VS_SVC_F_PERSISTENT == 0 {
        return Err(fail(2, "Zero port specified for non-persistent service"));
    }
    Ok(())
}

/// `-A`/`-E`: `-o` only with UDP (or a fwmark).
fn one_packet_check(svc: &CSvc) -> Result<(), Exit> {
    if svc.flags & IP_VS_SVC_F_ONEPACKET != 0 && svc.fwmark == 0 && svc.protocol != IPPROTO_UDP {
        return Err(fail(
            2,
            "One-Packet Scheduling is only for UDP virtual services",
        ));
    }
    Ok(())
}

/// The real server's forwarding method (`IP_VS_CONN_F_*`).
pub(super) fn forward_method(dest: &CDest) -> u32 {
    dest.conn_flags & IP_VS_CONN_F_FWD_MASK
}

/// `-a`/`-e`: only a tunnel crosses address families.
fn address_family_check(low: &LowArgs) -> Result<(), Exit> {
    if low.dest.af != low.svc.af && forward_method(&low.dest) != IP_VS_CONN_F_TUNNEL {
        return Err(fail(
            2,
            "Different address family is allowed only for tunneling servers",
        ));
    }
    Ok(())
}

/// `-a`/`-e`: tunnel options need `-i`.
fn tunnel_conflict_check(low: &LowArgs) -> Result<(), Exit> {
    const TUN_OPTS: OptSet = OptSet::of(&[
        Opt::TunType,
        Opt::TunPort,
        Opt::TunNocsum,
        Opt::TunCsum,
        Opt::TunRemcsum,
    ]);
    if low.options.intersects(TUN_OPTS) && forward_method(&low.dest) != IP_VS_CONN_F_TUNNEL {
        return Err(fail(2, "Tunnel options conflict with forward method"));
    }
    Ok(())
}

/// ipvsadm's `tunnel_opt_check`: the tunnel options against the tunnel
/// type's row of `tunnel_types_v_options`.
fn tunnel_opt_check(tun_type: u8, options: OptSet) -> Result<(), Exit> {
    let ti = tun_type as usize;
    match TUN_V_OPT.get(ti) {
        Some(row) => judge(row, &TUNOPTS, options).map_err(|o| o.fail(TUNNAMES[ti], "tunnel type")),
        None => Ok(()),
    }
}

/// `-L`: connections, timeouts and the daemon take no counters; timeouts
/// and the daemon no persistent connections.
fn list_conflict_check(o: OptSet) -> Result<(), Exit> {
    const CONN_TIMEOUT_DAEMON: OptSet = OptSet::of(&[Opt::Connection, Opt::Timeout, Opt::Daemon]);
    const COUNTERS: OptSet = OptSet::of(&[Opt::Stats, Opt::Rate, Opt::Thresholds]);
    const TIMEOUT_DAEMON: OptSet = OptSet::of(&[Opt::Timeout, Opt::Daemon]);
    if (o.intersects(CONN_TIMEOUT_DAEMON) && o.intersects(COUNTERS))
        || (o.intersects(TIMEOUT_DAEMON) && o.contains(Opt::PersistentConn))
    {
        return Err(fail(2, "options conflicts in the list command"));
    }
    Ok(())
}
