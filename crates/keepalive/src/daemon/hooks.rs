//! Notify hooks: spawned without waiting, reaped (and killed after 60 s) by
//! a task of their own, so a slow hook never holds up the event loop.

use std::time::Duration;

use tracing::warn;

use crate::config::Command;

/// Run `cmd` with `extra` arguments and the `KEEPALIVE_*` environment.
pub(super) fn run(cmd: &Command, extra: &[&str], instance: &str, state: &str, prio: &str) {
    let mut c = tokio::process::Command::new(&cmd.0[0]);
    c.args(&cmd.0[1..])
        .args(extra)
        .env("KEEPALIVE_INSTANCE", instance)
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
