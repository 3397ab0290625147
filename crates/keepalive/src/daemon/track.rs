//! What moves an instance's priority or puts it in FAULT (keepalived's
//! semantics, [`vrrp::track`]): its own link (down or missing), an
//! interface without an address to send from, tracked interfaces and
//! tracked scripts. An object without a weight puts its instance in FAULT;
//! a weight moves the priority, and within a sync group the weights of
//! every member's objects move every member (see [`vrrp::sync`]).
//!
//! Other health signals that should move the priority (a BGP session, a
//! cluster store) become tracked objects here.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::{info, warn};

use super::Daemon;
use crate::config::{Config, TrackScript};
use crate::health::Debounce;
use crate::metrics::G;
use vrrp::machine::Input;
use vrrp::track::{effect, effective_priority, Effect};

/// One run of a tracked script (of a VRRP instance or a BGP group).
pub(super) struct ScriptResult {
    pub(super) instance: String,
    pub(super) index: usize,
    pub(super) ok: bool,
}

/// A tracked script's task and debounced state, of a VRRP instance or a
/// BGP group (`owner`).
pub(super) struct ScriptRt {
    pub(super) owner: String,
    index: usize,
    pub(super) def: Arc<TrackScript>,
    pub(super) debounce: Debounce,
    pub(super) task: JoinHandle<()>,
}

impl ScriptRt {
    /// Start running `def`; it starts healthy.
    pub(super) fn spawn(
        owner: &str,
        index: usize,
        def: &TrackScript,
        tx: &mpsc::UnboundedSender<ScriptResult>,
    ) -> ScriptRt {
        let def = Arc::new(def.clone());
        let task = tokio::spawn(run_script(
            owner.to_string(),
            index,
            def.clone(),
            tx.clone(),
        ));
        ScriptRt {
            owner: owner.to_string(),
            index,
            debounce: Debounce::new(def.rise.0, def.fall.0),
            def,
            task,
        }
    }
}

/// What a script's owner is, for its log lines.
#[derive(Clone, Copy)]
pub(super) enum Owner {
    Instance,
    Group,
}

/// Feed one run's result to its script's debounce; true when the script
/// turned healthy or failing (logged here).
pub(super) fn feed_script(scripts: &mut [ScriptRt], r: &ScriptResult, kind: Owner) -> bool {
    let Some(s) = scripts
        .iter_mut()
        .find(|s| s.owner == r.instance && s.index == r.index)
    else {
        return false;
    };
    let Some(up) = s.debounce.feed(r.ok) else {
        return false;
    };
    let script = s.def.label();
    let owner = &s.owner;
    match (kind, up) {
        (Owner::Instance, true) => {
            info!(instance = %owner, %script, "tracked script healthy again")
        }
        (Owner::Instance, false) => warn!(instance = %owner, %script, "tracked script failing"),
        (Owner::Group, true) => info!(group = %owner, %script, "tracked script healthy again"),
        (Owner::Group, false) => warn!(group = %owner, %script, "tracked script failing"),
    }
    true
}

pub(super) async fn run_script(
    instance: String,
    index: usize,
    def: Arc<TrackScript>,
    tx: mpsc::UnboundedSender<ScriptResult>,
) {
    let interval = Duration::from_millis(def.interval_ms.0);
    let timeout = Duration::from_millis(def.timeout_ms.0);
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let cmd = &def.command.0;
        let child = tokio::process::Command::new(&cmd[0])
            .args(&cmd[1..])
            .env("KEEPALIVE_INSTANCE", &instance)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .status();
        let ok = match tokio::time::timeout(timeout, child).await {
            Ok(Ok(s)) => s.success(),
            Ok(Err(e)) => {
                warn!(%instance, script = %def.label(), error = %e, "cannot run tracked script");
                false
            }
            Err(_) => false, // killed on drop
        };
        let r = ScriptResult {
            instance: instance.clone(),
            index,
            ok,
        };
        if tx.send(r).is_err() {
            return;
        }
    }
}

impl Daemon {
    /// (Re)start the tracked scripts of `cfg`, keeping the state of those
    /// whose instance and definition did not change.
    pub(super) fn start_scripts(&mut self, cfg: &Config) {
        let mut old: Vec<ScriptRt> = std::mem::take(&mut self.scripts);
        for ic in &cfg.vrrp {
            for (index, def) in ic.track_scripts.iter().enumerate() {
                let kept = old
                    .iter()
                    .position(|s| s.owner == ic.name && s.index == index && *s.def == *def)
                    .map(|p| old.swap_remove(p));
                let s =
                    kept.unwrap_or_else(|| ScriptRt::spawn(&ic.name, index, def, &self.script_tx));
                self.scripts.push(s);
            }
        }
        for s in old {
            s.task.abort();
        }
    }

    pub(super) fn stop_scripts(&mut self) {
        for s in &self.scripts {
            s.task.abort();
        }
    }

    pub(super) fn on_script(&mut self, r: ScriptResult) {
        if feed_script(&mut self.scripts, &r, Owner::Instance) {
            self.evaluate_all();
        }
    }

    fn script_up(&self, instance: &str, index: usize) -> bool {
        self.scripts
            .iter()
            .find(|s| s.owner == instance && s.index == index)
            .is_none_or(|s| s.debounce.up)
    }

    /// The tracked objects of instance `i`: (label, weight, healthy).
    fn objects(&self, i: usize) -> Vec<(String, Option<i32>, bool)> {
        let cfg = &self.insts[i].cfg;
        let ifaces = cfg.track_interfaces.iter().map(|t| {
            let up = self.links.get(&t.interface.0).is_some_and(|l| l.up);
            (
                format!("interface:{}", t.interface),
                t.weight.map(|w| w.0),
                up,
            )
        });
        let scripts = cfg.track_scripts.iter().enumerate().map(|(k, t)| {
            let up = self.script_up(&cfg.name, k);
            (format!("script:{}", t.label()), t.weight.map(|w| w.0), up)
        });
        ifaces.chain(scripts).collect()
    }

    /// Why instance `i` must be in FAULT, and its priority change.
    fn track_state(&self, i: usize) -> (Vec<String>, i32) {
        let inst = &self.insts[i];
        let mut reasons = Vec::new();
        match &inst.link {
            None => reasons.push(format!("interface {} missing", inst.cfg.interface)),
            Some(l) if !l.up => reasons.push(format!("link {} down", inst.cfg.interface)),
            Some(_) if inst.src.is_none() => {
                reasons.push(format!("no address to send from on {}", inst.cfg.interface))
            }
            Some(_) => {}
        }
        let members = match inst.group {
            Some(g) => self.groups[g].members.clone(),
            None => vec![i],
        };
        let mut delta = 0i32;
        for m in members {
            for (label, weight, up) in self.objects(m) {
                match effect(weight, up) {
                    // A member's own FAULT moves the others through the group.
                    Effect::Fault if m == i => reasons.push(format!("{label} failing")),
                    Effect::Weight(w) => delta = delta.saturating_add(w),
                    _ => {}
                }
            }
        }
        (reasons, delta)
    }

    /// The effective priority of instance `i` now.
    pub(super) fn effective_priority(&self, i: usize) -> u8 {
        effective_priority(self.insts[i].cfg.priority.0, self.track_state(i).1)
    }

    /// Bring instance `i`'s FAULT and priority up to date.
    pub(super) fn evaluate(&mut self, i: usize) {
        for (label, _, up) in self.objects(i) {
            let l = vec![
                ("instance", self.insts[i].cfg.name.clone()),
                ("object", label),
            ];
            self.metrics.set(G::TrackUp, l, i64::from(up));
        }
        let (reasons, delta) = self.track_state(i);
        let prio = effective_priority(self.insts[i].cfg.priority.0, delta);
        let now = self.now();
        let inst = &mut self.insts[i];
        if reasons != inst.faults {
            if reasons.is_empty() {
                info!(instance = %inst.cfg.name, "fault cleared");
            } else {
                warn!(instance = %inst.cfg.name, reasons = %reasons.join("; "), "fault");
            }
            inst.faults = reasons;
        }
        let mut acts = inst
            .machine
            .handle(now, Input::SetFault(!inst.faults.is_empty()));
        if inst.machine.params().priority != prio {
            info!(instance = %inst.cfg.name, priority = prio, base = inst.cfg.priority.0, "effective priority");
            acts.extend(inst.machine.handle(now, Input::SetPriority(prio)));
        }
        self.exec(i, acts);
    }

    pub(super) fn evaluate_all(&mut self) {
        for i in 0..self.insts.len() {
            self.evaluate(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn script(owner: &str, fall: u32) -> ScriptRt {
        let def: TrackScript = crate::config::Config::parse(
            &format!(
                "bgp:\n  local_as: 1\n  router_id: 10.0.0.1\n  neighbors: [{{ address: 10.0.0.2, \
                 remote_as: 2 }}]\n  groups:\n    - name: g\n      vips: [192.0.2.1]\n      \
                 track_scripts: [{{ command: /bin/true, fall: {fall} }}]\n"
            ),
            "t.yaml",
        )
        .expect("valid")
        .bgp
        .expect("bgp")
        .groups[0]
            .track_scripts[0]
            .clone();
        ScriptRt {
            owner: owner.into(),
            index: 0,
            debounce: Debounce::new(def.rise.0, def.fall.0),
            def: Arc::new(def),
            task: tokio::spawn(async {}),
        }
    }

    fn result(owner: &str, ok: bool) -> ScriptResult {
        ScriptResult {
            instance: owner.into(),
            index: 0,
            ok,
        }
    }

    /// Shared by VRRP instances and BGP groups: only a debounced change
    /// counts, and only for the script's own owner.
    #[tokio::test]
    async fn feed_script_reports_debounced_changes() {
        let mut s = vec![script("a", 2), script("b", 1)];
        assert!(!feed_script(&mut s, &result("a", false), Owner::Group));
        assert!(feed_script(&mut s, &result("a", false), Owner::Group));
        assert!(!s[0].debounce.up && s[1].debounce.up);
        assert!(feed_script(&mut s, &result("b", false), Owner::Instance));
        assert!(!feed_script(&mut s, &result("c", false), Owner::Instance));
        assert!(feed_script(&mut s, &result("a", true), Owner::Group));
        assert!(s[0].debounce.up);
    }
}
