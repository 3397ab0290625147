//! Running a plan against the kernel, phase by phase.

use std::fmt;

use ipvs_netlink::ipvs::{Client, Error, Op};
use ipvs_netlink::vmwlch::HostMap;

use crate::plan::{Change, HostOp, Plan, Step};

/// Outcome of one step.
#[derive(Debug)]
pub enum Outcome {
    /// Applied.
    Done,
    /// The kernel refused it.
    Failed(Error),
    /// Not attempted (an earlier phase failed).
    Skipped,
}

/// What [`apply`] did, step by step.
#[derive(Debug)]
pub struct Report {
    /// Each step with its outcome, in plan order.
    pub steps: Vec<(Step, Outcome)>,
}

impl Report {
    /// Did everything apply?
    pub fn ok(&self) -> bool {
        self.steps.iter().all(|(_, o)| matches!(o, Outcome::Done))
    }
    /// Number of steps applied.
    pub fn done(&self) -> usize {
        self.steps
            .iter()
            .filter(|(_, o)| matches!(o, Outcome::Done))
            .count()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (s, o) in &self.steps {
            match o {
                Outcome::Done => writeln!(f, "ok      {}", s.text)?,
                Outcome::Failed(e) => writeln!(f, "FAILED  {}: {e}", s.text)?,
                Outcome::Skipped => writeln!(f, "skipped {}", s.text)?,
            }
        }
        Ok(())
    }
}

/// Apply a plan phase by phase (IPVS operations of a phase pipelined). If a
/// phase has a failure, the later phases are not attempted, so nothing is
/// deleted after an addition failed. The report says exactly which steps
/// were applied, failed or skipped.
pub fn apply(client: &mut Client, plan: &Plan) -> Result<Report, Error> {
    let mut out: Vec<(Step, Outcome)> = Vec::with_capacity(plan.steps.len());
    let mut failed = false;
    let mut i = 0;
    let steps = &plan.steps;
    while i < steps.len() {
        let ph = steps[i].phase;
        let mut j = i;
        while j < steps.len() && steps[j].phase == ph {
            j += 1;
        }
        let group = &steps[i..j];
        if failed {
            out.extend(group.iter().map(|s| (s.clone(), Outcome::Skipped)));
            i = j;
            continue;
        }
        // IPVS ops of the phase in one pipelined batch; host ops one by one.
        let ops: Vec<Op> = group
            .iter()
            .filter_map(|s| {
                if let Change::Ipvs(op) = &s.change {
                    Some(op.clone())
                } else {
                    None
                }
            })
            .collect();
        let mut results = client.execute(&ops)?.into_iter();
        let needs_hosts = group.iter().any(|s| matches!(s.change, Change::Host(_)));
        let mut host_results: Vec<Result<(), Error>> = Vec::new();
        if needs_hosts {
            let mut hm = HostMap::new(client.netlink())?;
            for s in group {
                if let Change::Host(h) = &s.change {
                    host_results.push(match h {
                        HostOp::Set {
                            name,
                            weight,
                            members,
                        } => hm.set_host(name, Some(*weight), members),
                        HostOp::DelMembers(m) => hm.del_members(m),
                        HostOp::Del(n) => hm.del_host(n),
                    });
                }
            }
        }
        let mut hres = host_results.into_iter();
        for s in group {
            let r = match s.change {
                Change::Ipvs(_) => results.next(),
                Change::Host(_) => hres.next(),
            }
            .unwrap_or(Ok(()));
            let o = match r {
                Ok(()) => Outcome::Done,
                Err(e) => {
                    failed = true;
                    Outcome::Failed(e)
                }
            };
            out.push((s.clone(), o));
        }
        i = j;
    }
    Ok(Report { steps: out })
}
