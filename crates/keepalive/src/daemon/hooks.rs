//! Notify hooks: spawned without waiting, reaped (and killed after 60 s) by
//! a task of their own, so a slow hook never holds up the event loop.

use std::time::Duration;

use tracing::warn;

use super::role::hook_state;
use crate::config::{Command, Notify};
use vrrp::machine::State;

/// The hooks of a transition of an instance (`kind` "INSTANCE") or a sync
/// group ("GROUP") to `to`: the state's own hook, then `any`.
pub(super) fn notify(n: &Notify, kind: &str, name: &str, to: State, prio: &str) {
    let specific = match to {
        State::Master => &n.master,
        State::Backup => &n.backup,
        State::Fault => &n.fault,
        State::Initialize => &n.stop,
    };
    let state = hook_state(to);
    if let Some(c) = specific {
        run(c, &[], kind, name, state, prio);
    }
    if let Some(c) = &n.any {
        run(c, &[kind, name, state, prio], kind, name, state, prio);
    }
}

/// Run `cmd` with `extra` arguments and the `KEEPALIVE_*` environment
/// (`KEEPALIVE_INSTANCE` or `KEEPALIVE_GROUP`).
fn run(cmd: &Command, extra: &[&str], kind: &str, name: &str, state: &str, prio: &str) {
    let var = if kind == "GROUP" {
        "KEEPALIVE_GROUP"
    } else {
        "KEEPALIVE_INSTANCE"
    };
    let mut c = tokio::process::Command::new(&cmd.0[0]);
    c.args(&cmd.0[1..])
        .args(extra)
        .env(var, name)
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
