//! Sans-IO VRRPv3 state machine (RFC 5798 §6, RFC 9568 §6).
//!
//! The machine never reads a clock or touches a socket. The caller feeds it
//! inputs stamped with a monotonic time ([`Time`], a `Duration` since any
//! fixed epoch) and executes the returned [`Action`]s in order; it asks for a
//! wake-up at [`Machine::next_deadline`] and then calls [`Machine::poll`].
//! Tests drive it in virtual time.
//!
//! Timers follow the VRRPv3 formulas exactly, computed in microseconds so
//! nothing is rounded away at sub-second intervals:
//!
//! * `Skew_Time = ((256 - Priority) * Master_Adver_Interval) / 256`
//! * `Master_Down_Interval = 3 * Master_Adver_Interval + Skew_Time`

use std::net::IpAddr;
use std::time::Duration;

/// Monotonic time since an arbitrary epoch.
pub type Time = Duration;

/// Static parameters of one virtual router.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Params {
    pub vrid: u8,
    /// 1..=255; 255 means address owner.
    pub priority: u8,
    /// Our Advertisement_Interval in centiseconds (1..=4095).
    pub advert_interval_cs: u16,
    pub preempt: bool,
    /// Lower-priority masters are tolerated this long (from the first such
    /// advert) before preemption is allowed to proceed.
    pub preempt_delay: Duration,
    /// Our primary address on the interface, used for the equal-priority tie-break.
    pub primary_addr: IpAddr,
}

/// Protocol state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    Initialize,
    Backup,
    Master,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Initialize => "init",
            State::Backup => "backup",
            State::Master => "master",
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
    /// Administrative priority change (e.g. on reload).
    SetPriority(u8),
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
    NotRunning,
    Owner,
    LowerPriority,
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
    /// Count of adverts that changed nothing, by reason.
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

    /// `Skew_Time` for our priority and the learned master interval.
    pub fn skew_time(&self) -> Duration {
        Duration::from_micros(
            (256 - u64::from(self.p.priority)) * u64::from(self.master_adver_interval_cs) * 10_000
                / 256,
        )
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
            State::Initialize => None,
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
        self.advert_at = Some(now + self.advert_interval());
        self.transition(State::Master, out);
    }

    fn become_backup(&mut self, now: Time, learned_cs: Option<u16>, out: &mut Vec<Action>) {
        let was_master = self.state == State::Master;
        self.advert_at = None;
        self.master_adver_interval_cs = learned_cs.unwrap_or(self.p.advert_interval_cs);
        self.down_at = Some(now + self.master_down_interval());
        if was_master {
            out.push(Action::RemoveVips);
        }
        self.transition(State::Backup, out);
    }

    /// Feed one event.
    pub fn handle(&mut self, now: Time, input: Input) -> Vec<Action> {
        let mut out = Vec::new();
        self.last_ignored = None;
        match input {
            Input::Startup => {
                if self.state == State::Initialize {
                    if self.p.priority == 255 {
                        self.become_master(now, &mut out);
                    } else {
                        self.become_backup(now, None, &mut out);
                    }
                }
            }
            Input::Shutdown => match self.state {
                State::Master => {
                    self.advert_at = None;
                    out.push(Action::SendAdvert { priority: 0 });
                    out.push(Action::RemoveVips);
                    self.transition(State::Initialize, &mut out);
                }
                State::Backup => {
                    self.down_at = None;
                    self.transition(State::Initialize, &mut out);
                }
                State::Initialize => {}
            },
            Input::SetPriority(p) => {
                let p = p.max(1);
                self.p.priority = p;
                if self.state == State::Backup && p == 255 {
                    // An address owner does not wait for anybody.
                    self.become_master(now, &mut out);
                }
            }
            Input::Advert {
                src,
                priority,
                max_adver_int_cs,
            } => self.on_advert(now, src, priority, max_adver_int_cs.max(1), &mut out),
        }
        out
    }

    fn on_advert(&mut self, now: Time, src: IpAddr, prio: u8, int_cs: u16, out: &mut Vec<Action>) {
        if self.state == State::Initialize {
            self.last_ignored = Some(Ignored::NotRunning);
            return;
        }
        if self.p.priority == 255 {
            // RFC 5798 §7.1: the address owner discards advertisements.
            self.last_ignored = Some(Ignored::Owner);
            return;
        }
        match self.state {
            State::Backup => {
                if prio == 0 {
                    // Master is leaving: take over after Skew_Time.
                    self.down_at = Some(now + self.skew_time());
                } else if !self.p.preempt || prio >= self.p.priority || self.preempt_delayed(now) {
                    self.master_adver_interval_cs = int_cs;
                    self.down_at = Some(now + self.master_down_interval());
                    if prio >= self.p.priority {
                        self.preempt_until = None;
                    }
                } else {
                    // Lower priority master and we preempt: let the down timer run out.
                    self.last_ignored = Some(Ignored::LowerPriority);
                }
            }
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
                    self.last_ignored = Some(Ignored::LowerPriority);
                }
            }
            State::Initialize => {}
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
                    self.become_master(now, &mut out);
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
            State::Initialize => {}
        }
        out
    }

    /// Apply new parameters (reload) without leaving the current role.
    /// Changes of VRID or address family need a fresh machine instead.
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
        if self.state != State::Backup && self.state != State::Master {
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

    const MS: fn(u64) -> Duration = Duration::from_millis;

    fn params(prio: u8, addr: &str) -> Params {
        Params {
            vrid: 1,
            priority: prio,
            advert_interval_cs: 10,
            preempt: true,
            preempt_delay: Duration::ZERO,
            primary_addr: addr.parse().unwrap(),
        }
    }

    fn advert(src: &str, priority: u8, cs: u16) -> Input {
        Input::Advert {
            src: src.parse().unwrap(),
            priority,
            max_adver_int_cs: cs,
        }
    }

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn skew_and_down_interval_formula() {
        let m = Machine::new(params(100, "10.0.0.1"));
        // (256-100)*10cs/256 = 6.09375 cs = 60937 us
        assert_eq!(m.skew_time(), us(60_937));
        assert_eq!(m.master_down_interval(), us(360_937));
        let m = Machine::new(Params {
            advert_interval_cs: 100,
            ..params(100, "10.0.0.1")
        });
        assert_eq!(m.master_down_interval(), us(3_609_375));
        let m = Machine::new(Params {
            advert_interval_cs: 1,
            ..params(254, "10.0.0.1")
        });
        assert_eq!(m.skew_time(), us(78)); // 2*10000/256 = 78.125
        let m = Machine::new(params(1, "10.0.0.1"));
        assert_eq!(m.skew_time(), us(99_609));
    }

    #[test]
    fn owner_starts_as_master_immediately() {
        let mut m = Machine::new(params(255, "10.0.0.1"));
        let a = m.handle(MS(0), Input::Startup);
        assert_eq!(
            a,
            vec![
                Action::SendAdvert { priority: 255 },
                Action::AddVips,
                Action::Announce,
                Action::Transition {
                    from: State::Initialize,
                    to: State::Master
                }
            ]
        );
        assert_eq!(m.next_deadline(), Some(MS(100)));
        // owner ignores adverts, even a higher address at 255
        assert!(m.handle(MS(10), advert("10.0.0.9", 255, 10)).is_empty());
        assert_eq!(m.last_ignored, Some(Ignored::Owner));
        assert_eq!(m.state(), State::Master);
    }

    #[test]
    fn backup_startup_waits_master_down_interval() {
        let mut m = Machine::new(params(100, "10.0.0.1"));
        let a = m.handle(MS(0), Input::Startup);
        assert_eq!(
            a,
            vec![Action::Transition {
                from: State::Initialize,
                to: State::Backup
            }]
        );
        assert_eq!(m.next_deadline(), Some(us(360_937)));
        assert!(m.poll(us(360_936)).is_empty());
        let a = m.poll(us(360_937));
        assert_eq!(a[0], Action::SendAdvert { priority: 100 });
        assert!(a.contains(&Action::AddVips) && a.contains(&Action::Announce));
        assert_eq!(m.state(), State::Master);
    }

    #[test]
    fn master_sends_adverts_every_interval() {
        let mut m = Machine::new(params(255, "10.0.0.1"));
        m.handle(MS(0), Input::Startup);
        for i in 1..=5u64 {
            assert_eq!(m.next_deadline(), Some(MS(100 * i)));
            assert_eq!(
                m.poll(MS(100 * i)),
                vec![Action::SendAdvert { priority: 255 }]
            );
        }
        // a late wake-up does not cause a burst
        assert_eq!(m.poll(MS(900)), vec![Action::SendAdvert { priority: 255 }]);
        assert_eq!(m.next_deadline(), Some(MS(1000)));
        assert!(m.poll(MS(950)).is_empty());
    }

    #[test]
    fn backup_resets_down_timer_on_adverts() {
        let mut m = Machine::new(params(100, "10.0.0.1"));
        m.handle(MS(0), Input::Startup);
        for t in (100..2000).step_by(100) {
            assert!(m.poll(MS(t)).is_empty());
            assert!(m.handle(MS(t), advert("10.0.0.2", 200, 10)).is_empty());
            assert_eq!(m.next_deadline(), Some(MS(t) + us(360_937)));
        }
        assert_eq!(m.state(), State::Backup);
        // master dies after the advert at 1900 ms
        assert!(m.poll(MS(1900) + us(360_936)).is_empty());
        assert!(!m.poll(MS(1900) + us(360_937)).is_empty());
        assert_eq!(m.state(), State::Master);
    }

    #[test]
    fn backup_learns_master_interval() {
        let mut m = Machine::new(params(100, "10.0.0.1"));
        m.handle(MS(0), Input::Startup);
        m.handle(MS(50), advert("10.0.0.2", 200, 100)); // master advertises 1 s
        assert_eq!(m.master_adver_interval_cs(), 100);
        assert_eq!(m.skew_time(), us(609_375));
        assert_eq!(m.next_deadline(), Some(MS(50) + us(3_609_375)));
        // and follows a change
        m.handle(MS(1050), advert("10.0.0.2", 200, 5));
        assert_eq!(m.next_deadline(), Some(MS(1050) + MS(150) + us(30_468)));
    }

    #[test]
    fn priority_zero_backup_takes_over_after_skew() {
        let mut m = Machine::new(params(100, "10.0.0.1"));
        m.handle(MS(0), Input::Startup);
        m.handle(MS(100), advert("10.0.0.2", 200, 10));
        assert!(m.handle(MS(150), advert("10.0.0.2", 0, 10)).is_empty());
        assert_eq!(m.next_deadline(), Some(MS(150) + us(60_937)));
        assert!(m.poll(MS(150) + us(60_936)).is_empty());
        assert!(m.poll(MS(150) + us(60_937)).contains(&Action::AddVips));
    }

    #[test]
    fn master_shutdown_sends_priority_zero() {
        let mut m = Machine::new(params(255, "10.0.0.1"));
        m.handle(MS(0), Input::Startup);
        let a = m.handle(MS(10), Input::Shutdown);
        assert_eq!(
            a,
            vec![
                Action::SendAdvert { priority: 0 },
                Action::RemoveVips,
                Action::Transition {
                    from: State::Master,
                    to: State::Initialize
                }
            ]
        );
        assert_eq!(m.next_deadline(), None);
        // backup shutdown sends nothing
        let mut b = Machine::new(params(100, "10.0.0.1"));
        b.handle(MS(0), Input::Startup);
        assert_eq!(
            b.handle(MS(1), Input::Shutdown),
            vec![Action::Transition {
                from: State::Backup,
                to: State::Initialize
            }]
        );
        assert!(b.handle(MS(2), advert("10.0.0.2", 200, 10)).is_empty());
        assert_eq!(b.last_ignored, Some(Ignored::NotRunning));
    }

    #[test]
    fn master_answers_priority_zero_with_advert() {
        let mut m = Machine::new(params(150, "10.0.0.1"));
        m.handle(MS(0), Input::Startup);
        m.poll(MS(1000));
        assert_eq!(m.state(), State::Master);
        assert_eq!(
            m.handle(MS(1010), advert("10.0.0.2", 0, 10)),
            vec![Action::SendAdvert { priority: 150 }]
        );
        assert_eq!(m.next_deadline(), Some(MS(1110)));
    }

    fn master_at(prio: u8, addr: &str) -> Machine {
        let mut m = Machine::new(params(prio, addr));
        m.handle(MS(0), Input::Startup);
        m.poll(MS(5000));
        assert_eq!(m.state(), State::Master);
        m
    }

    #[test]
    fn master_ignores_lower_priority() {
        let mut m = master_at(150, "10.0.0.1");
        assert!(m.handle(MS(5010), advert("10.0.0.9", 100, 10)).is_empty());
        assert_eq!(m.last_ignored, Some(Ignored::LowerPriority));
        assert_eq!(m.state(), State::Master);
    }

    #[test]
    fn master_yields_to_higher_priority_and_learns_interval() {
        let mut m = master_at(150, "10.0.0.1");
        let a = m.handle(MS(5010), advert("10.0.0.0", 200, 20));
        assert_eq!(
            a,
            vec![
                Action::RemoveVips,
                Action::Transition {
                    from: State::Master,
                    to: State::Backup
                }
            ]
        );
        assert_eq!(m.master_adver_interval_cs(), 20);
        assert_eq!(m.next_deadline(), Some(MS(5010) + MS(600) + us(82_812)));
    }

    #[test]
    fn equal_priority_tie_break_on_address() {
        let mut m = master_at(100, "10.0.0.5");
        // lower address: we stay
        assert!(m.handle(MS(5010), advert("10.0.0.4", 100, 10)).is_empty());
        assert_eq!(m.state(), State::Master);
        // higher address: we yield
        m.handle(MS(5020), advert("10.0.0.6", 100, 10));
        assert_eq!(m.state(), State::Backup);
        // IPv6 compares as 128-bit numbers
        let mut m6 = master_at(100, "fe80::5");
        m6.handle(MS(5010), advert("fe80::1:0", 100, 10));
        assert_eq!(m6.state(), State::Backup);
    }

    #[test]
    fn preemption_on_lower_priority_master_times_out() {
        let mut m = Machine::new(params(200, "10.0.0.1"));
        m.handle(MS(0), Input::Startup);
        // a lower-priority master keeps advertising; we discard them
        let mut t = 100;
        while m.state() == State::Backup {
            m.handle(MS(t), advert("10.0.0.2", 100, 10));
            m.poll(MS(t));
            t += 10;
        }
        // we took over at our own Master_Down_Interval from startup
        let down = Machine::new(params(200, "10.0.0.1")).master_down_interval();
        assert!(MS(t - 10) >= down && MS(t - 10) < down + MS(10));
    }

    #[test]
    fn no_preempt_keeps_lower_priority_master() {
        let mut m = Machine::new(Params {
            preempt: false,
            ..params(200, "10.0.0.1")
        });
        m.handle(MS(0), Input::Startup);
        for t in (100..10_000).step_by(100) {
            m.handle(MS(t), advert("10.0.0.2", 100, 10));
            assert!(m.poll(MS(t)).is_empty());
        }
        assert_eq!(m.state(), State::Backup);
    }

    #[test]
    fn preempt_delay_postpones_takeover() {
        let p = Params {
            preempt_delay: MS(2000),
            ..params(200, "10.0.0.1")
        };
        let mut m = Machine::new(p);
        m.handle(MS(0), Input::Startup);
        let mut t = 100;
        while m.state() == State::Backup && t < 20_000 {
            m.handle(MS(t), advert("10.0.0.2", 100, 10));
            m.poll(MS(t));
            t += 10;
        }
        let took = MS(t - 10);
        // first lower advert at 100 ms, accepted until 2100 ms, then the down interval
        let down = Machine::new(params(200, "10.0.0.1")).master_down_interval();
        assert!(
            took >= MS(2100) + down - MS(10) && took <= MS(2100) + down + MS(10),
            "{took:?}"
        );
    }

    #[test]
    fn backup_with_higher_priority_accepts_when_no_preempt_but_not_otherwise() {
        // preempt on, equal priority: accept (>=)
        let mut m = Machine::new(params(100, "10.0.0.9"));
        m.handle(MS(0), Input::Startup);
        m.handle(MS(100), advert("10.0.0.1", 100, 10));
        assert_eq!(m.next_deadline(), Some(MS(100) + us(360_937)));
        assert_eq!(m.last_ignored, None);
    }

    #[test]
    fn set_priority_to_owner_takes_over() {
        let mut m = Machine::new(params(100, "10.0.0.1"));
        m.handle(MS(0), Input::Startup);
        m.handle(MS(0), advert("10.0.0.2", 200, 10));
        let a = m.handle(MS(10), Input::SetPriority(255));
        assert!(a.contains(&Action::AddVips));
        assert_eq!(m.state(), State::Master);
    }

    #[test]
    fn reconfigure_keeps_role() {
        let mut m = master_at(150, "10.0.0.1");
        let a = m.reconfigure(
            MS(5050),
            Params {
                priority: 120,
                advert_interval_cs: 20,
                ..params(150, "10.0.0.1")
            },
        );
        assert!(a.is_empty());
        assert_eq!(m.state(), State::Master);
        assert_eq!(m.params().priority, 120);
        assert_eq!(m.next_deadline(), Some(MS(5250)));
        assert_eq!(m.poll(MS(5250)), vec![Action::SendAdvert { priority: 120 }]);
    }

    /// A tiny virtual network: zero-latency multicast among routers that are
    /// up and in the same partition.
    struct Net {
        nodes: Vec<(Machine, bool, u8)>, // machine, up, partition
        now: Time,
        log: Vec<(Time, usize, State)>,
    }

    impl Net {
        fn new(specs: &[(u8, &str)]) -> Net {
            let nodes = specs
                .iter()
                .map(|(p, a)| (Machine::new(params(*p, a)), true, 0))
                .collect();
            Net {
                nodes,
                now: Time::ZERO,
                log: vec![],
            }
        }
        fn start_all(&mut self) {
            for i in 0..self.nodes.len() {
                let a = self.nodes[i].0.handle(self.now, Input::Startup);
                self.apply(i, a);
            }
        }
        fn apply(&mut self, from: usize, actions: Vec<Action>) {
            for a in actions {
                match a {
                    Action::SendAdvert { priority } => {
                        let src = self.nodes[from].0.params().primary_addr;
                        let int = self.nodes[from].0.params().advert_interval_cs;
                        let part = self.nodes[from].2;
                        for j in 0..self.nodes.len() {
                            if j != from && self.nodes[j].1 && self.nodes[j].2 == part {
                                let r = self.nodes[j].0.handle(
                                    self.now,
                                    Input::Advert {
                                        src,
                                        priority,
                                        max_adver_int_cs: int,
                                    },
                                );
                                self.apply(j, r);
                            }
                        }
                    }
                    Action::Transition { to, .. } => self.log.push((self.now, from, to)),
                    _ => {}
                }
            }
        }
        fn run_until(&mut self, end: Time) {
            loop {
                let next = self
                    .nodes
                    .iter()
                    .filter(|n| n.1)
                    .filter_map(|n| n.0.next_deadline())
                    .min();
                match next {
                    Some(t) if t <= end => {
                        self.now = t;
                        for i in 0..self.nodes.len() {
                            if self.nodes[i].1 {
                                let a = self.nodes[i].0.poll(t);
                                self.apply(i, a);
                            }
                        }
                    }
                    _ => break,
                }
            }
            self.now = end;
        }
        fn masters(&self) -> Vec<usize> {
            (0..self.nodes.len())
                .filter(|&i| self.nodes[i].1 && self.nodes[i].0.state() == State::Master)
                .collect()
        }
    }

    #[test]
    fn sim_two_routers_elect_higher_priority() {
        let mut n = Net::new(&[(100, "10.0.0.1"), (200, "10.0.0.2")]);
        n.start_all();
        n.run_until(MS(5000));
        assert_eq!(n.masters(), vec![1]);
        // exactly one transition to master ever happened
        assert_eq!(n.log.iter().filter(|l| l.2 == State::Master).count(), 1);
    }

    #[test]
    fn sim_equal_priority_simultaneous_start_one_master() {
        let mut n = Net::new(&[(100, "10.0.0.2"), (100, "10.0.0.1"), (100, "10.0.0.3")]);
        n.start_all();
        n.run_until(MS(5000));
        assert_eq!(n.masters().len(), 1);
    }

    #[test]
    fn sim_equal_priority_masters_meet_higher_address_wins() {
        let mut n = Net::new(&[(100, "10.0.0.2"), (100, "10.0.0.1"), (100, "10.0.0.3")]);
        for (i, node) in n.nodes.iter_mut().enumerate() {
            node.2 = i as u8; // all isolated: every one becomes master
        }
        n.start_all();
        n.run_until(MS(1000));
        assert_eq!(n.masters(), vec![0, 1, 2]);
        for node in n.nodes.iter_mut() {
            node.2 = 0;
        }
        n.run_until(MS(1200));
        assert_eq!(n.masters(), vec![2]);
    }

    #[test]
    fn sim_kill_master_fails_over_within_down_interval() {
        let mut n = Net::new(&[(100, "10.0.0.1"), (200, "10.0.0.2")]);
        n.start_all();
        n.run_until(MS(2000));
        n.nodes[1].1 = false; // SIGKILL: silently gone (last advert at <= 2000 ms)
        let killed = n.now;
        n.run_until(MS(4000));
        assert_eq!(n.masters(), vec![0]);
        let took = n.log.last().unwrap().0 - killed;
        assert!(took <= us(360_937), "{took:?}");
    }

    #[test]
    fn sim_graceful_shutdown_hands_over_after_skew() {
        let mut n = Net::new(&[(100, "10.0.0.1"), (200, "10.0.0.2")]);
        n.start_all();
        n.run_until(MS(2050));
        let a = n.nodes[1].0.handle(n.now, Input::Shutdown);
        n.apply(1, a);
        n.nodes[1].1 = false;
        let t0 = n.now;
        n.run_until(MS(3000));
        assert_eq!(n.masters(), vec![0]);
        assert_eq!(n.log.last().unwrap().0 - t0, us(60_937));
    }

    #[test]
    fn sim_partition_and_heal_converge_to_one_master() {
        let mut n = Net::new(&[(100, "10.0.0.1"), (200, "10.0.0.2")]);
        n.start_all();
        n.run_until(MS(2000));
        n.nodes[0].2 = 1; // partition
        n.run_until(MS(4000));
        assert_eq!(n.masters(), vec![0, 1]);
        n.nodes[0].2 = 0; // heal
        n.run_until(MS(4200));
        assert_eq!(n.masters(), vec![1]);
    }

    #[test]
    fn sim_higher_priority_returning_preempts_back() {
        let mut n = Net::new(&[(100, "10.0.0.1"), (200, "10.0.0.2")]);
        n.start_all();
        n.run_until(MS(2000));
        n.nodes[1].1 = false;
        n.run_until(MS(3000));
        assert_eq!(n.masters(), vec![0]);
        // restart the high-priority router
        n.nodes[1] = (Machine::new(params(200, "10.0.0.2")), true, 0);
        let a = n.nodes[1].0.handle(n.now, Input::Startup);
        n.apply(1, a);
        n.run_until(MS(5000));
        assert_eq!(n.masters(), vec![1]);
    }
}
