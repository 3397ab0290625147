//! A virtual network of VRRP machines for the scenario files: zero-latency
//! delivery of every advert to the routers that are up and in the sender's
//! partition, timers fired in virtual time, sync groups coordinated as the
//! daemon does it, and a log of every action.

use std::net::IpAddr;
use std::time::Duration;

use vrrp::machine::{Action, Input, Machine, Params, State, Time};
use vrrp::packet::Version;
use vrrp::sync;

pub struct Node {
    pub name: String,
    pub machine: Machine,
    pub params: Params,
    pub up: bool,
    pub partition: u32,
    /// Last transition time to each state.
    pub became: Vec<(State, Time)>,
    pub masters_ever: u32,
}

pub struct Group {
    pub name: String,
    pub members: Vec<usize>,
}

/// One logged action: (time, router index, text).
pub type LogLine = (Time, usize, String);

#[derive(Default)]
pub struct Net {
    pub nodes: Vec<Node>,
    pub groups: Vec<Group>,
    pub now: Time,
    pub log: Vec<LogLine>,
}

pub fn fmt_time(t: Time) -> String {
    let us = t.as_micros();
    format!("{}.{:03}ms", us / 1000, us % 1000)
}

fn fmt_action(a: &Action) -> String {
    match a {
        Action::SendAdvert { priority } => format!("send {priority}"),
        Action::AddVips => "add-vips".into(),
        Action::RemoveVips => "remove-vips".into(),
        Action::Announce => "announce".into(),
        Action::Transition { from, to } => format!("{}->{}", from.as_str(), to.as_str()),
    }
}

impl Net {
    pub fn add(&mut self, name: &str, params: Params) {
        self.nodes.push(Node {
            name: name.to_string(),
            machine: Machine::new(params.clone()),
            params,
            up: true,
            partition: 0,
            became: vec![],
            masters_ever: 0,
        });
    }

    pub fn index(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// Feed one input to router `i` and carry out what follows.
    pub fn input(&mut self, i: usize, input: Input) {
        let acts = self.nodes[i].machine.handle(self.now, input);
        self.apply(i, acts);
    }

    /// New parameters (a reload) for router `i`.
    pub fn reconfigure(&mut self, i: usize, p: Params) {
        self.nodes[i].params = p.clone();
        let acts = self.nodes[i].machine.reconfigure(self.now, p);
        self.apply(i, acts);
    }

    /// Fire router `i`'s timers now.
    pub fn poll(&mut self, i: usize) {
        let acts = self.nodes[i].machine.poll(self.now);
        self.apply(i, acts);
    }

    /// A router that is gone comes back as a fresh machine and starts.
    pub fn restart(&mut self, i: usize) {
        let p = self.nodes[i].params.clone();
        self.nodes[i].machine = Machine::new(p);
        self.nodes[i].up = true;
        self.input(i, Input::Startup);
    }

    fn apply(&mut self, from: usize, actions: Vec<Action>) {
        for a in actions {
            self.log.push((self.now, from, fmt_action(&a)));
            match a {
                Action::SendAdvert { priority } => self.deliver(from, priority),
                Action::Transition { to, .. } => {
                    let n = &mut self.nodes[from];
                    n.became.retain(|(s, _)| *s != to);
                    n.became.push((to, self.now));
                    if to == State::Master {
                        n.masters_ever += 1;
                    }
                }
                _ => {}
            }
        }
        self.coordinate(from);
    }

    fn deliver(&mut self, from: usize, priority: u8) {
        let p = self.nodes[from].machine.params().clone();
        let part = self.nodes[from].partition;
        for j in 0..self.nodes.len() {
            let n = &self.nodes[j];
            if j == from || !n.up || n.partition != part || n.params.vrid != p.vrid {
                continue;
            }
            // A router hears only adverts of its own version (the daemon
            // counts the others as bad_version).
            if n.params.version != p.version {
                continue;
            }
            self.input(
                j,
                Input::Advert {
                    src: p.primary_addr,
                    priority,
                    max_adver_int_cs: p.advert_interval_cs,
                },
            );
        }
    }

    /// An advert injected to router `i` alone.
    pub fn inject(&mut self, i: usize, src: IpAddr, priority: u8, int_cs: u16) {
        self.input(
            i,
            Input::Advert {
                src,
                priority,
                max_adver_int_cs: int_cs,
            },
        );
    }

    /// The sync groups of router `i`: hold or release members (repeated
    /// through the recursion until nothing changes).
    fn coordinate(&mut self, i: usize) {
        for g in 0..self.groups.len() {
            if !self.groups[g].members.contains(&i) {
                continue;
            }
            let members = self.groups[g].members.clone();
            let holds = {
                let ms: Vec<&Machine> = members.iter().map(|&m| &self.nodes[m].machine).collect();
                sync::holds(&ms)
            };
            for (&m, h) in members.iter().zip(holds) {
                if self.nodes[m].machine.held() != h && self.nodes[m].up {
                    self.input(m, Input::SetHold(h));
                }
            }
        }
    }

    pub fn group_state(&self, g: usize) -> State {
        let ms: Vec<&Machine> = self.groups[g]
            .members
            .iter()
            .map(|&m| &self.nodes[m].machine)
            .collect();
        sync::group_state(&ms)
    }

    /// Advance virtual time to `end`, firing timers on the way.
    pub fn run_until(&mut self, end: Time) {
        loop {
            let next = self
                .nodes
                .iter()
                .filter(|n| n.up)
                .filter_map(|n| n.machine.next_deadline())
                .min();
            match next {
                Some(t) if t <= end => {
                    self.now = self.now.max(t);
                    for i in 0..self.nodes.len() {
                        let due = self.nodes[i]
                            .machine
                            .next_deadline()
                            .is_some_and(|d| d <= self.now);
                        if self.nodes[i].up && due {
                            let a = self.nodes[i].machine.poll(self.now);
                            self.apply(i, a);
                        }
                    }
                }
                _ => break,
            }
        }
        self.now = self.now.max(end);
    }

    pub fn masters(&self) -> Vec<&str> {
        self.nodes
            .iter()
            .filter(|n| n.up && n.machine.state() == State::Master)
            .map(|n| n.name.as_str())
            .collect()
    }
}

/// Parameters with the scenario defaults: 10 cs, preempt, no delay, v3.
pub fn default_params(vrid: u8, priority: u8, addr: IpAddr) -> Params {
    Params {
        vrid,
        priority,
        advert_interval_cs: 10,
        preempt: true,
        preempt_delay: Duration::ZERO,
        primary_addr: addr,
        version: Version::V3,
    }
}
