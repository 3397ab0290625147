//! Sans-IO VRRP state machine (RFC 5798 / RFC 9568 §6, RFC 3768 §6).
//!
//! The machine never reads a clock or touches a socket. The caller feeds it
//! inputs stamped with a monotonic time ([`Time`], a `Duration` since any
//! fixed epoch) and executes the returned [`Action`]s in order; it asks for a
//! wake-up at [`Machine::next_deadline`] and then calls [`Machine::poll`].
//! Tests drive it in virtual time (`tests/scenarios/`).
//!
//! Timers follow the formulas exactly, computed in microseconds so nothing
//! is rounded away at sub-second intervals:
//!
//! * v3: `Skew_Time = ((256 - Priority) * Master_Adver_Interval) / 256`,
//!   the interval learned from the master's adverts;
//! * v2: `Skew_Time = (256 - Priority) / 256` seconds, and the interval is
//!   our own: an advert with another interval is discarded (RFC 3768 §7.1);
//! * `Master_Down_Interval = 3 * Master_Adver_Interval + Skew_Time`.
//!
//! Beyond the RFC (keepalived's behaviour where the RFCs are silent):
//!
//! * FAULT ([`Input::SetFault`]): the link is down, the interface missing, or
//!   a tracked object without a weight failed. A master sends priority 0
//!   (where it still can) and removes its VIPs; adverts are ignored and no
//!   timer runs. When the fault clears the router starts again as on
//!   startup (BACKUP, or MASTER for an address owner).
//! * Hold ([`Input::SetHold`]): a BACKUP whose down timer expires while held
//!   stays BACKUP and remembers that it wants to be MASTER
//!   ([`Machine::wants_master`]); released, it becomes MASTER at once. A held
//!   MASTER hands over (priority 0) and becomes BACKUP. Sync groups
//!   ([`crate::sync`]) and "no IPVS table, no mastership" use it.
//! * A MASTER that receives a lower-priority advert answers with an advert
//!   and a fresh announcement at once, so a peer that took over in a split
//!   yields and stale ARP caches follow (RFC 9568 §6.4.3, keepalived).
//! * A MASTER whose priority changes advertises the new one at once.

use std::net::IpAddr;
use std::time::Duration;

use crate::packet::Version;

/// Monotonic time since an arbitrary epoch.
pub type Time = Duration;

/// Static parameters of one virtual router.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    pub vrid: u8,
    /// 1..=255; 255 means address owner. The effective priority (tracking
    /// applied), which is what the adverts carry.
    pub priority: u8,
    /// Our Advertisement_Interval in centiseconds (1..=4095; v2: a multiple of 100).
    pub advert_interval_cs: u16,
    pub preempt: bool,
    /// Lower-priority masters are tolerated this long (from the first such
    /// advert) before preemption is allowed to proceed.
    pub preempt_delay: Duration,
    /// Our primary address on the interface, used for the equal-priority tie-break.
    pub primary_addr: IpAddr,
    pub version: Version,
}

/// Protocol state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    Initialize,
    Backup,
    Master,
    /// Not taking part: link down, interface missing, tracked object failed.
    Fault,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Initialize => "init",
            State::Backup => "backup",
            State::Master => "master",
            State::Fault => "fault",
        }
    }
}

/// Events fed to the machine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// Start the router (RFC 5798 §6.4.1).
    Startup,
    /// Stop the router; a master sends priority 0 first.
    Shutdown,
    /// A received advertisement for our VRID that passed all packet checks.
    Advert {
        src: IpAddr,
        priority: u8,
        max_adver_int_cs: u16,
    },
    /// Priority change (reload, tracking).
    SetPriority(u8),
    /// Enter (true) or leave (false) FAULT.
    SetFault(bool),
    /// Hold in BACKUP (true) or release (false).
    SetHold(bool),
}

/// What the IO layer must do, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send an advertisement with this priority and our interval and VIPs.
    SendAdvert { priority: u8 },
    /// Install the virtual addresses.
    AddVips,
    /// Gratuitous ARP / unsolicited NA for the virtual addresses (with repeats).
    Announce,
    /// Remove the virtual addresses.
    RemoveVips,
    /// Role of this node changed; run the sync daemon / notify hooks accordingly.
    Transition { from: State, to: State },
}

/// Why an advertisement changed nothing (for metrics and tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ignored {
    /// Not started, or in FAULT.
    NotRunning,
    Owner,
    LowerPriority,
    /// VRRPv2: the advert's interval is not ours (RFC 3768 §7.1).
    IntervalMismatch,
}

impl Ignored {
    /// Stable label for metrics and logs.
    pub fn reason(self) -> &'static str {
        match self {
            Ignored::NotRunning => "not_running",
            Ignored::Owner => "owner",
            Ignored::LowerPriority => "lower_priority",
            Ignored::IntervalMismatch => "interval_mismatch",
        }
    }
}

/// The VRRP state machine of one virtual router.
#[derive(Debug, Clone)]
pub struct Machine {
    p: Params,
    state: State,
    master_adver_interval_cs: u16,
    /// Backup: when the master is declared down.
    down_at: Option<Time>,
    /// Master: when the next advert is due.
    advert_at: Option<Time>,
    /// Backup with preempt delay: until when lower-priority adverts are accepted.
    preempt_until: Option<Time>,
    /// FAULT requested (kept while not started, so that startup enters FAULT).
    fault: bool,
    hold: bool,
    /// Backup: the down timer expired while held.
    wants_master: bool,
    /// Why the last advert changed nothing.
    pub last_ignored: Option<Ignored>,
    transitions: u64,
}

fn cs(n: u64) -> Duration {
    Duration::from_micros(n * 10_000)
}

impl Machine {
    pub fn new(p: Params) -> Self {
        let mai = p.advert_interval_cs;
        Machine {
            p,
            state: State::Initialize,
            master_adver_interval_cs: mai,
            down_at: None,
            advert_at: None,
            preempt_until: None,
            fault: false,
            hold: false,
            wants_master: false,
            last_ignored: None,
            transitions: 0,
        }
    }

    pub fn params(&self) -> &Params {
        &self.p
    }
    pub fn state(&self) -> State {
        self.state
    }
    pub fn transitions(&self) -> u64 {
        self.transitions
    }
    /// The interval learned from the current master (centiseconds).
    pub fn master_adver_interval_cs(&self) -> u16 {
        self.master_adver_interval_cs
    }
    /// MASTER, or a BACKUP held back after its down timer expired.
    pub fn wants_master(&self) -> bool {
        self.state == State::Master || (self.state == State::Backup && self.wants_master)
    }
    pub fn held(&self) -> bool {
        self.hold
    }

    /// `Skew_Time` for our priority (and, v3, the learned master interval).
    pub fn skew_time(&self) -> Duration {
        let left = 256 - u64::from(self.p.priority);
        match self.p.version {
            Version::V3 => Duration::from_micros(
                left * u64::from(self.master_adver_interval_cs) * 10_000 / 256,
            ),
            Version::V2 => Duration::from_micros(left * 1_000_000 / 256),
        }
    }

    /// `Master_Down_Interval` = 3 * Master_Adver_Interval + Skew_Time.
    pub fn master_down_interval(&self) -> Duration {
        cs(3 * u64::from(self.master_adver_interval_cs)) + self.skew_time()
    }

    fn advert_interval(&self) -> Duration {
        cs(u64::from(self.p.advert_interval_cs))
    }

    /// The earliest time at which [`Machine::poll`] has something to do.
    pub fn next_deadline(&self) -> Option<Time> {
        match self.state {
            State::Initialize | State::Fault => None,
            State::Backup => self.down_at,
            State::Master => self.advert_at,
        }
    }

    fn transition(&mut self, to: State, out: &mut Vec<Action>) {
        let from = self.state;
        self.state = to;
        if from != to {
            self.transitions += 1;
            out.push(Action::Transition { from, to });
        }
    }

    fn become_master(&mut self, now: Time, out: &mut Vec<Action>) {
        out.push(Action::SendAdvert {
            priority: self.p.priority,
        });
        out.push(Action::AddVips);
        out.push(Action::Announce);
        self.down_at = None;
        self.preempt_until = None;
        self.wants_master = false;
        self.advert_at = Some(now + self.advert_interval());
        self.transition(State::Master, out);
    }

    fn become_backup(&mut self, now: Time, learned_cs: Option<u16>, out: &mut Vec<Action>) {
        let was_master = self.state == State::Master;
        self.advert_at = None;
        self.wants_master = false;
        self.master_adver_interval_cs = match self.p.version {
            Version::V3 => learned_cs.unwrap_or(self.p.advert_interval_cs),
            Version::V2 => self.p.advert_interval_cs,
        };
        self.down_at = Some(now + self.master_down_interval());
        if was_master {
            out.push(Action::RemoveVips);
        }
        self.transition(State::Backup, out);
    }

    /// Leave MASTER with priority 0 first, so a backup takes over after Skew_Time.
    fn hand_over(&mut self, out: &mut Vec<Action>) {
        self.advert_at = None;
        out.push(Action::SendAdvert { priority: 0 });
        out.push(Action::RemoveVips);
    }

    /// RFC 5798 §6.4.1, also used when leaving FAULT.
    fn start(&mut self, now: Time, out: &mut Vec<Action>) {
        if self.fault {
            self.transition(State::Fault, out);
        } else if self.p.priority == 255 && !self.hold {
            self.become_master(now, out);
        } else {
            self.become_backup(now, None, out);
        }
    }

    /// Feed one event.
    pub fn handle(&mut self, now: Time, input: Input) -> Vec<Action> {
        let mut out = Vec::new();
        self.last_ignored = None;
        match input {
            Input::Startup => {
                if self.state == State::Initialize {
                    self.start(now, &mut out);
                }
            }
            Input::Shutdown => {
                if self.state == State::Master {
                    self.hand_over(&mut out);
                }
                self.down_at = None;
                self.wants_master = false;
                self.transition(State::Initialize, &mut out);
            }
            Input::SetPriority(p) => self.set_priority(now, p.max(1), &mut out),
            Input::SetFault(f) => self.set_fault(now, f, &mut out),
            Input::SetHold(h) => self.set_hold(now, h, &mut out),
            Input::Advert {
                src,
                priority,
                max_adver_int_cs,
            } => self.on_advert(now, src, priority, max_adver_int_cs.max(1), &mut out),
        }
        out
    }

    fn set_priority(&mut self, now: Time, p: u8, out: &mut Vec<Action>) {
        let old = self.p.priority;
        self.p.priority = p;
        match self.state {
            // An address owner does not wait for anybody.
            State::Backup if p == 255 && !self.hold => self.become_master(now, out),
            State::Master if p != old => {
                out.push(Action::SendAdvert { priority: p });
                self.advert_at = Some(now + self.advert_interval());
            }
            _ => {}
        }
    }

    fn set_fault(&mut self, now: Time, fault: bool, out: &mut Vec<Action>) {
        if self.fault == fault {
            return;
        }
        self.fault = fault;
        match (fault, self.state) {
            (true, State::Master) => {
                self.hand_over(out);
                self.transition(State::Fault, out);
            }
            (true, State::Backup) => {
                self.down_at = None;
                self.wants_master = false;
                self.transition(State::Fault, out);
            }
            (false, State::Fault) => self.start(now, out),
            _ => {}
        }
    }

    fn set_hold(&mut self, now: Time, hold: bool, out: &mut Vec<Action>) {
        if self.hold == hold {
            return;
        }
        self.hold = hold;
        match (hold, self.state) {
            (true, State::Master) => {
                out.push(Action::SendAdvert { priority: 0 });
                self.become_backup(now, None, out);
            }
            (false, State::Backup) if self.wants_master => self.become_master(now, out),
            _ => {}
        }
    }

    fn on_advert(&mut self, now: Time, src: IpAddr, prio: u8, int_cs: u16, out: &mut Vec<Action>) {
        if matches!(self.state, State::Initialize | State::Fault) {
            self.last_ignored = Some(Ignored::NotRunning);
            return;
        }
        if self.p.priority == 255 {
            // RFC 5798 §7.1: the address owner discards advertisements.
            self.last_ignored = Some(Ignored::Owner);
            return;
        }
        if self.p.version == Version::V2 && int_cs != self.p.advert_interval_cs {
            self.last_ignored = Some(Ignored::IntervalMismatch);
            return;
        }
        match self.state {
            State::Backup => self.backup_rx(now, prio, int_cs),
            State::Master => {
                if prio == 0 {
                    out.push(Action::SendAdvert {
                        priority: self.p.priority,
                    });
                    self.advert_at = Some(now + self.advert_interval());
                } else if prio > self.p.priority
                    || (prio == self.p.priority && addr_key(src) > addr_key(self.p.primary_addr))
                {
                    self.become_backup(now, Some(int_cs), out);
                } else {
                    // A lower-priority master (a split that healed): make it
                    // yield now, and have the segment's ARP caches follow.
                    self.last_ignored = Some(Ignored::LowerPriority);
                    out.push(Action::SendAdvert {
                        priority: self.p.priority,
                    });
                    out.push(Action::Announce);
                    self.advert_at = Some(now + self.advert_interval());
                }
            }
            State::Initialize | State::Fault => {}
        }
    }

    fn backup_rx(&mut self, now: Time, prio: u8, int_cs: u16) {
        if prio == 0 {
            // Master is leaving: take over after Skew_Time.
            self.down_at = Some(now + self.skew_time());
        } else if !self.p.preempt || prio >= self.p.priority || self.preempt_delayed(now) {
            if self.p.version == Version::V3 {
                self.master_adver_interval_cs = int_cs;
            }
            self.down_at = Some(now + self.master_down_interval());
            self.wants_master = false;
            if prio >= self.p.priority {
                self.preempt_until = None;
            }
        } else {
            // Lower priority master and we preempt: let the down timer run out.
            self.last_ignored = Some(Ignored::LowerPriority);
        }
    }

    /// With a preempt delay, accept lower-priority adverts until the delay
    /// (started by the first such advert) has passed.
    fn preempt_delayed(&mut self, now: Time) -> bool {
        if self.p.preempt_delay.is_zero() {
            return false;
        }
        let until = *self.preempt_until.get_or_insert(now + self.p.preempt_delay);
        now < until
    }

    /// Fire due timers.
    pub fn poll(&mut self, now: Time) -> Vec<Action> {
        let mut out = Vec::new();
        match self.state {
            State::Backup => {
                if self.down_at.is_some_and(|t| now >= t) {
                    if self.hold {
                        // Keep the timer going: the reason to hold may pass.
                        self.wants_master = true;
                        self.down_at = Some(now + self.master_down_interval());
                    } else {
                        self.become_master(now, &mut out);
                    }
                }
            }
            State::Master => {
                if let Some(t) = self.advert_at {
                    if now >= t {
                        out.push(Action::SendAdvert {
                            priority: self.p.priority,
                        });
                        // Keep the cadence; if we were stalled, restart from now.
                        let next = t + self.advert_interval();
                        self.advert_at = Some(if next > now {
                            next
                        } else {
                            now + self.advert_interval()
                        });
                    }
                }
            }
            State::Initialize | State::Fault => {}
        }
        out
    }

    /// Apply new parameters (reload) without leaving the current role.
    /// Changes of VRID, version or address family need a fresh machine.
    pub fn reconfigure(&mut self, now: Time, p: Params) -> Vec<Action> {
        let prio = p.priority;
        let old_int = self.p.advert_interval_cs;
        self.p = Params {
            priority: self.p.priority,
            ..p
        };
        if self.state == State::Master && old_int != self.p.advert_interval_cs {
            self.advert_at = Some(now + self.advert_interval());
        }
        if self.state != State::Backup && self.state != State::Master
            || self.p.version == Version::V2
        {
            self.master_adver_interval_cs = self.p.advert_interval_cs;
        }
        if !self.p.preempt || self.p.preempt_delay.is_zero() {
            self.preempt_until = None;
        }
        if prio != self.p.priority {
            self.handle(now, Input::SetPriority(prio))
        } else {
            Vec::new()
        }
    }
}

fn addr_key(a: IpAddr) -> u128 {
    match a {
        IpAddr::V4(v) => u128::from(u32::from(v)),
        IpAddr::V6(v) => u128::from(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(prio: u8, cs: u16, version: Version) -> Params {
        Params {
            vrid: 1,
            priority: prio,
            advert_interval_cs: cs,
            preempt: true,
            preempt_delay: Duration::ZERO,
            primary_addr: "10.0.0.1".parse().unwrap(),
            version,
        }
    }

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn skew_and_down_interval_formula_v3() {
        let m = Machine::new(params(100, 10, Version::V3));
        // (256-100)*10cs/256 = 6.09375 cs = 60937 us
        assert_eq!(m.skew_time(), us(60_937));
        assert_eq!(m.master_down_interval(), us(360_937));
        let m = Machine::new(params(100, 100, Version::V3));
        assert_eq!(m.master_down_interval(), us(3_609_375));
        let m = Machine::new(params(254, 1, Version::V3));
        assert_eq!(m.skew_time(), us(78)); // 2*10000/256 = 78.125
        let m = Machine::new(params(1, 10, Version::V3));
        assert_eq!(m.skew_time(), us(99_609));
    }

    #[test]
    fn skew_and_down_interval_formula_v2() {
        // RFC 3768 §6.1: the skew does not scale with the interval
        let m = Machine::new(params(100, 100, Version::V2));
        assert_eq!(m.skew_time(), us(609_375));
        assert_eq!(m.master_down_interval(), us(3_609_375));
        let m = Machine::new(params(100, 300, Version::V2));
        assert_eq!(m.skew_time(), us(609_375));
        assert_eq!(m.master_down_interval(), us(9_609_375));
        let m = Machine::new(params(254, 100, Version::V2));
        assert_eq!(m.skew_time(), us(7_812));
    }
}
