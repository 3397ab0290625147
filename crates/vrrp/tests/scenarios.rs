//! Replays every `tests/scenarios/*.scn` file against the state machine in
//! virtual time (the format is in `tests/scenarios/README.md`). A failure
//! names the file and line and prints the action log so far.
//!
//! `SCENARIO=name cargo test -p vrrp --test scenarios -- --nocapture`
//! replays one file and prints its whole log.

mod sim;

use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use sim::{fmt_time, Group, Net};
use vrrp::machine::{Input, State, Time};
use vrrp::packet::Version;

fn time(s: &str) -> Result<Time, String> {
    let mut total = Duration::ZERO;
    for part in s.split('+') {
        let (num, mul) = if let Some(n) = part.strip_suffix("us") {
            (n, 1)
        } else if let Some(n) = part.strip_suffix("ms") {
            (n, 1_000)
        } else if let Some(n) = part.strip_suffix('s') {
            (n, 1_000_000)
        } else if part == "0" {
            ("0", 1)
        } else {
            return Err(format!("time {part:?} needs a unit (us, ms, s)"));
        };
        let n: u64 = num.parse().map_err(|_| format!("bad time {part:?}"))?;
        total += Duration::from_micros(n * mul);
    }
    Ok(total)
}

fn state(s: &str) -> Result<State, String> {
    Ok(match s {
        "init" => State::Initialize,
        "backup" => State::Backup,
        "master" => State::Master,
        "fault" => State::Fault,
        _ => return Err(format!("unknown state {s:?}")),
    })
}

/// `key=value` options of a line.
fn opt<'a>(words: &[&'a str], key: &str) -> Option<&'a str> {
    words
        .iter()
        .find_map(|w| w.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
}

fn num<T: std::str::FromStr>(s: &str) -> Result<T, String> {
    s.parse().map_err(|_| format!("bad number {s:?}"))
}

struct Runner {
    net: Net,
    /// Per router: how much of the log `expect log` has consumed.
    seen: Vec<usize>,
}

impl Runner {
    fn node(&self, name: &str) -> Result<usize, String> {
        self.net
            .index(name)
            .ok_or_else(|| format!("unknown router {name:?}"))
    }

    fn nodes(&self, names: &[&str]) -> Result<Vec<usize>, String> {
        if names == ["*"] {
            return Ok((0..self.net.nodes.len()).collect());
        }
        names.iter().map(|n| self.node(n)).collect()
    }

    fn router(&mut self, w: &[&str]) -> Result<(), String> {
        let name = w.get(1).ok_or("router needs a name")?;
        let prio = num(opt(w, "prio").ok_or("router needs prio=")?)?;
        let addr: IpAddr = num(opt(w, "addr").ok_or("router needs addr=")?)?;
        let vrid = opt(w, "vrid").map_or(Ok(1), num)?;
        let mut p = sim::default_params(vrid, prio, addr);
        if let Some(v) = opt(w, "interval") {
            p.advert_interval_cs = num(v.strip_suffix("cs").ok_or("interval is in cs")?)?;
        }
        if let Some(v) = opt(w, "preempt") {
            p.preempt = v == "yes";
        }
        if let Some(v) = opt(w, "delay") {
            p.preempt_delay = time(v)?;
        }
        if let Some(v) = opt(w, "version") {
            p.version = match v {
                "2" => Version::V2,
                "3" => Version::V3,
                _ => return Err(format!("version {v:?}")),
            };
        }
        self.net.add(name, p);
        self.seen.push(0);
        Ok(())
    }

    /// A command after `at T`.
    fn command(&mut self, w: &[&str]) -> Result<(), String> {
        let args = &w[1..];
        match w[0] {
            "start" | "stop" | "kill" | "restart" => {
                for i in self.nodes(args)? {
                    match w[0] {
                        "start" => self.net.input(i, Input::Startup),
                        "stop" => {
                            self.net.input(i, Input::Shutdown);
                            self.net.nodes[i].up = false;
                        }
                        "kill" => self.net.nodes[i].up = false,
                        _ => self.net.restart(i),
                    }
                }
            }
            "partition" => {
                let i = self.node(args.first().ok_or("partition R N")?)?;
                self.net.nodes[i].partition = num(args.get(1).ok_or("partition R N")?)?;
            }
            "fault" | "hold" => {
                let i = self.node(args.first().ok_or("fault R on|off")?)?;
                let on = match args.get(1).copied() {
                    Some("on") => true,
                    Some("off") => false,
                    _ => return Err("on or off".into()),
                };
                let input = if w[0] == "fault" {
                    Input::SetFault(on)
                } else {
                    Input::SetHold(on)
                };
                self.net.input(i, input);
            }
            "priority" => {
                let i = self.node(args.first().ok_or("priority R P")?)?;
                let p = num(args.get(1).ok_or("priority R P")?)?;
                self.net.input(i, Input::SetPriority(p));
            }
            "reconfigure" => {
                let i = self.node(args.first().ok_or("reconfigure R ...")?)?;
                let mut p = self.net.nodes[i].machine.params().clone();
                if let Some(v) = opt(args, "prio") {
                    p.priority = num(v)?;
                }
                if let Some(v) = opt(args, "interval") {
                    p.advert_interval_cs = num(v.strip_suffix("cs").ok_or("interval is in cs")?)?;
                }
                if let Some(v) = opt(args, "preempt") {
                    p.preempt = v == "yes";
                }
                self.net.reconfigure(i, p);
            }
            "advert" => {
                let i = self.node(args.first().ok_or("advert R from=A prio=P")?)?;
                let src = num(opt(args, "from").ok_or("advert needs from=")?)?;
                let prio = num(opt(args, "prio").ok_or("advert needs prio=")?)?;
                let int = match opt(args, "interval") {
                    Some(v) => num(v.strip_suffix("cs").ok_or("interval is in cs")?)?,
                    None => self.net.nodes[i].params.advert_interval_cs,
                };
                self.net.inject(i, src, prio, int);
            }
            other => return Err(format!("unknown command {other:?}")),
        }
        Ok(())
    }

    fn expect(
        &mut self,
        w: &[&str],
        lines: &mut std::iter::Peekable<impl Iterator<Item = (usize, String)>>,
    ) -> Result<(), String> {
        let what = *w.get(1).ok_or("expect what?")?;
        let args = &w[2..];
        match what {
            "masters" => {
                let want: Vec<&str> = if args == ["none"] {
                    vec![]
                } else {
                    args.to_vec()
                };
                let got = self.net.masters();
                if got != want {
                    return Err(format!("masters: expected {want:?}, got {got:?}"));
                }
            }
            "state" => {
                let i = self.node(args.first().ok_or("expect state R S")?)?;
                let want = state(args.get(1).ok_or("expect state R S")?)?;
                let got = self.net.nodes[i].machine.state();
                if got != want {
                    return Err(format!(
                        "state of {}: expected {want:?}, got {got:?}",
                        args[0]
                    ));
                }
            }
            "group" => {
                let g = args.first().ok_or("expect group G S")?;
                let gi = self
                    .net
                    .groups
                    .iter()
                    .position(|x| x.name == *g)
                    .ok_or("unknown group")?;
                let want = state(args.get(1).ok_or("expect group G S")?)?;
                let got = self.net.group_state(gi);
                if got != want {
                    return Err(format!("group {g}: expected {want:?}, got {got:?}"));
                }
            }
            "deadline" => {
                let i = self.node(args.first().ok_or("expect deadline R T")?)?;
                let want = match args.get(1).copied() {
                    Some("none") => None,
                    Some(t) => Some(time(t)?),
                    None => return Err("expect deadline R T".into()),
                };
                let got = self.net.nodes[i].machine.next_deadline();
                if got != want {
                    return Err(format!(
                        "deadline of {}: expected {want:?}, got {got:?}",
                        args[0]
                    ));
                }
            }
            "masters-ever" => {
                let i = self.node(args.first().ok_or("expect masters-ever R N")?)?;
                let want: u32 = num(args.get(1).ok_or("expect masters-ever R N")?)?;
                let got = self.net.nodes[i].masters_ever;
                if got != want {
                    return Err(format!(
                        "{} became master {got} times, expected {want}",
                        args[0]
                    ));
                }
            }
            "became" => {
                // became R STATE between T1 T2
                let i = self.node(args.first().ok_or("expect became R S between T1 T2")?)?;
                let s = state(args.get(1).ok_or("state")?)?;
                let (lo, hi) = (
                    time(args.get(3).ok_or("T1")?)?,
                    time(args.get(4).ok_or("T2")?)?,
                );
                let at = self.net.nodes[i]
                    .became
                    .iter()
                    .find(|(x, _)| *x == s)
                    .map(|x| x.1);
                match at {
                    Some(t) if t >= lo && t <= hi => {}
                    Some(t) => {
                        return Err(format!(
                            "{} became {s:?} at {}, not in [{}, {}]",
                            args[0],
                            fmt_time(t),
                            fmt_time(lo),
                            fmt_time(hi)
                        ))
                    }
                    None => return Err(format!("{} never became {s:?}", args[0])),
                }
            }
            "log" => {
                let i = self.node(args.first().ok_or("expect log R")?)?;
                let got: Vec<String> = self.net.log[self.seen[i]..]
                    .iter()
                    .filter(|l| l.1 == i)
                    .map(|l| format!("{} {}", fmt_time(l.0), l.2))
                    .collect();
                self.seen[i] = self.net.log.len();
                let mut want = Vec::new();
                while let Some((_, l)) = lines.next_if(|(_, l)| l.trim_start().starts_with('>')) {
                    want.push(l.trim_start()[1..].trim().to_string());
                }
                if got != want {
                    return Err(format!(
                        "log of {}:\n  expected {want:#?}\n  got {got:#?}",
                        args[0]
                    ));
                }
            }
            other => return Err(format!("unknown expectation {other:?}")),
        }
        Ok(())
    }

    fn line(
        &mut self,
        w: &[&str],
        lines: &mut std::iter::Peekable<impl Iterator<Item = (usize, String)>>,
    ) -> Result<(), String> {
        match w[0] {
            "router" => self.router(w),
            "group" => {
                let members = self.nodes(&w[2..])?;
                self.net.groups.push(Group {
                    name: w[1].to_string(),
                    members,
                });
                Ok(())
            }
            "at" => {
                let t = time(w.get(1).ok_or("at T COMMAND")?)?;
                if t < self.net.now {
                    return Err(format!("time goes back to {}", fmt_time(t)));
                }
                self.net.run_until(t);
                self.command(&w[2..])
            }
            "run" => {
                self.net.run_until(time(w.get(1).ok_or("run T")?)?);
                Ok(())
            }
            // The process was held off: time passes, no timer fires.
            "stall" => {
                self.net.now = time(w.get(1).ok_or("stall T")?)?;
                Ok(())
            }
            // A wake-up by hand (after a stall), due or not.
            "poll" => {
                for i in self.nodes(&w[1..])? {
                    self.net.poll(i);
                }
                Ok(())
            }
            "expect" => self.expect(w, lines),
            // The actions so far are not checked by the next `expect log R`.
            "skip-log" => {
                for i in self.nodes(&w[1..])? {
                    self.seen[i] = self.net.log.len();
                }
                Ok(())
            }
            other => Err(format!("unknown line {other:?}")),
        }
    }
}

fn replay(path: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let mut r = Runner {
        net: Net::default(),
        seen: vec![],
    };
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(n, l)| (n + 1, l.split('#').next().unwrap_or("").to_string()))
        .filter(|(_, l)| !l.trim().is_empty())
        .peekable();
    while let Some((n, l)) = lines.next() {
        let w: Vec<&str> = l.split_whitespace().collect();
        if let Err(e) = r.line(&w, &mut lines) {
            let log: Vec<String> = r
                .net
                .log
                .iter()
                .map(|(t, i, a)| format!("  {} {} {a}", fmt_time(*t), r.net.nodes[*i].name))
                .collect();
            return Err(format!(
                "{}:{n}: {e}\nlog:\n{}",
                path.display(),
                log.join("\n")
            ));
        }
    }
    Ok(r.net
        .log
        .iter()
        .map(|(t, i, a)| format!("{} {} {a}", fmt_time(*t), r.net.nodes[*i].name))
        .collect::<Vec<_>>()
        .join("\n"))
}

#[test]
fn scenarios() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios");
    let only = std::env::var("SCENARIO").ok();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "scn"))
        .filter(|p| {
            only.as_deref()
                .is_none_or(|o| p.file_stem().is_some_and(|s| s == o))
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no scenario files in {}", dir.display());
    let mut failed = Vec::new();
    for f in &files {
        match replay(f) {
            Ok(log) => {
                if only.is_some() {
                    println!("{log}");
                }
            }
            Err(e) => failed.push(e),
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} scenarios failed:\n{}",
        failed.len(),
        files.len(),
        failed.join("\n\n")
    );
    println!("{} scenarios passed", files.len());
}
