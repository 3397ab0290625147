//! The driver: the kernel client, running actions, listings and `-R`.

use super::*;

/// Output sinks (stdout/stderr), so the driver is testable.
pub trait Out {
    /// Write to standard output.
    fn out(&mut self, s: &str);
    /// Write to standard error.
    fn err(&mut self, s: &str);
}

/// The process's real stdout/stderr.
pub struct StdOut;

impl Out for StdOut {
    fn out(&mut self, s: &str) {
        let mut o = std::io::stdout().lock();
        let _ = o.write_all(s.as_bytes());
        let _ = o.flush();
    }
    fn err(&mut self, s: &str) {
        let _ = std::io::stderr().lock().write_all(s.as_bytes());
    }
}

/// Why the driver stops: an `exit()` with a status.
#[derive(Debug)]
pub struct ExitCode(pub i32);

/// The ipvsadm driver: one client, one info snapshot.
pub struct Compat<'a> {
    client: Client,
    info: Info,
    program: String,
    out: &'a mut dyn Out,
}

pub(super) const INIT_FAIL: &str =
    "Are you sure that IP Virtual Server is built in the kernel or as module?";

pub(super) fn modprobe_ipvs() -> bool {
    std::process::Command::new("/sbin/modprobe")
        .args(["--", "ip_vs"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

pub(super) fn open_client() -> Result<(Client, Info), Error> {
    let mut c = Client::open()?;
    let info = c.info()?;
    Ok((c, info))
}

/// Run ipvsadm with `argv` (`argv[0]` is the program name); returns the exit status.
pub fn main(argv: &[String]) -> i32 {
    let mut out = StdOut;
    run(argv, &mut out, &mut std::io::stdin().lock())
}

/// [`main`] with explicit output and input.
pub fn run(argv: &[String], out: &mut dyn Out, input: &mut dyn BufRead) -> i32 {
    let program = argv.first().cloned().unwrap_or_else(|| "ipvsadm".into());
    // -h/-v need no kernel (ipvsadm initialises first; being helpful here
    // changes nothing where IPVS exists).
    if argv.len() > 1 {
        if let Err(e) = process_options(argv, false) {
            if e.code == 0 {
                out.out(&e.stdout);
                return 0;
            }
        }
    }
    let (client, info) = match open_client() {
        Ok(v) => v,
        Err(_) => {
            let retry = if modprobe_ipvs() {
                open_client()
            } else {
                Err(Error::FamilyNotFound("IPVS".into()))
            };
            match retry {
                Ok(v) => v,
                Err(e) => {
                    let errno = match &e {
                        Error::FamilyNotFound(_) => libc::ENOPROTOOPT,
                        other => err_errno(other),
                    };
                    out.err(&format!(
                        "Can't initialize ipvs: {}\n{INIT_FAIL}\n",
                        ipvs_strerror(errno, Func::Other)
                    ));
                    return 2;
                }
            }
        }
    };
    if info.version < 0x010104 {
        out.err(&format!(
            "Warning: IPVS version mismatch: \n  Kernel compiled with IPVS version {}\n  ipvsadm v1.31  requires minimum IPVS version 1.1.4\n\n",
            info.version_string()
        ));
    }
    let mut c = Compat {
        client,
        info,
        program,
        out,
    };
    if argv.len() == 1 {
        return match c.list(&ListReq::All(FMT_NONE)) {
            Ok(()) => 0,
            Err(ExitCode(n)) => n,
        };
    }
    match c.process(argv, false, input) {
        Ok(n) => n,
        Err(ExitCode(n)) => n,
    }
}

impl Compat<'_> {
    fn exit_with(&mut self, e: Exit) -> ExitCode {
        self.out.out(&e.stdout);
        self.out.err(&e.stderr);
        ExitCode(e.code)
    }

    /// `process_options` + action; `Ok(result)` is the return value
    /// (0 or 255), `Err` an immediate exit.
    fn process(
        &mut self,
        argv: &[String],
        reading_stdin: bool,
        input: &mut dyn BufRead,
    ) -> Result<i32, ExitCode> {
        match process_options(argv, reading_stdin) {
            Err(e) => Err(self.exit_with(e)),
            Ok(Action::List(l)) => self.list(&l).map(|_| 0),
            Ok(Action::Save(f)) => self.list(&ListReq::All(f)).map(|_| 0),
            Ok(Action::Restore) => self.restore(input),
            Ok(Action::Kernel(k)) => {
                let r = match self.client.execute(std::slice::from_ref(&k.op)) {
                    Ok(mut v) => v.pop().unwrap_or(Ok(())),
                    Err(e) => Err(e),
                };
                match r {
                    Ok(()) => Ok(0),
                    Err(e) => {
                        self.out
                            .err(&format!("{}\n", ipvs_strerror(err_errno(&e), k.func)));
                        Ok(255)
                    }
                }
            }
        }
    }

    fn resolver(format: u32) -> Box<dyn Resolver> {
        if format & FMT_NUMERIC != 0 {
            Box::new(Numeric)
        } else {
            Box::new(LibcResolver::new())
        }
    }

    fn fail_get(&mut self, e: &Error) -> ExitCode {
        self.out
            .err(&format!("{}\n", ipvs_strerror(err_errno(e), Func::Get)));
        ExitCode(1)
    }

    fn list(&mut self, req: &ListReq) -> Result<(), ExitCode> {
        match req {
            ListReq::Conn(f) => match conn_format::list_ipvsadm(*f, &*Self::resolver(*f)) {
                Ok(s) => {
                    self.out.out(&s);
                    Ok(())
                }
                Err(msg) => {
                    self.out.err(&msg);
                    Err(ExitCode(1))
                }
            },
            ListReq::Timeout => match self.client.timeouts() {
                Ok(t) => {
                    self.out.out(&format::timeouts(&t));
                    Ok(())
                }
                Err(_) => Err(ExitCode(1)),
            },
            ListReq::Daemon => match self.client.daemons() {
                Ok(d) => {
                    self.out.out(&format::daemons(&d));
                    Ok(())
                }
                Err(_) => Err(ExitCode(1)),
            },
            ListReq::Service(key, f) => {
                let svc = match self.client.service(key) {
                    Ok(s) => s,
                    Err(e) => return Err(self.fail_get(&e)),
                };
                let counters = f & (FMT_STATS | FMT_RATE) != 0;
                let dests = match self.client.dests_with(&svc.key, counters) {
                    Ok(d) => d,
                    Err(e) => return Err(self.fail_get(&e)),
                };
                let res = Self::resolver(*f);
                self.out
                    .out(&format::list_service(&(svc, dests), *f, &*res));
                Ok(())
            }
            ListReq::All(f) => {
                if f & FMT_RULE == 0 {
                    let h = format::header(&self.info);
                    self.out.out(&h);
                }
                let counters = f & (FMT_STATS | FMT_RATE) != 0;
                let entries = match self.client.services_with_dests_with(counters) {
                    Ok(e) => e,
                    Err(e) => return Err(self.fail_get(&e)),
                };
                let res = Self::resolver(*f);
                let mut v: Vec<&format::Entry> = entries.iter().collect();
                format::sort_entries(&mut v, *f);
                let mut s = format::title(*f);
                // Roughly a service line and four real server lines each.
                s.reserve(v.len() * 400);
                for (svc, d) in v {
                    format::write_service_entry(&mut s, svc, d, *f, &*res);
                }
                self.out.out(&s);
                Ok(())
            }
        }
    }

    /// Send the queued kernel operations; print their errors in order.
    /// Returns the result of the last one.
    fn flush_queue(&mut self, q: &mut Vec<KOp>) -> Result<Option<i32>, ExitCode> {
        if q.is_empty() {
            return Ok(None);
        }
        let ops: Vec<Op> = q.iter().map(|k| k.op.clone()).collect();
        let results = match self.client.execute(&ops) {
            Ok(r) => r,
            Err(e) => {
                self.out.err(&format!("{e}\n"));
                return Err(ExitCode(255));
            }
        };
        let mut last = 0;
        let mut errs = String::new();
        for (k, r) in q.iter().zip(results) {
            last = match r {
                Ok(()) => 0,
                Err(e) => {
                    errs.push_str(&ipvs_strerror(err_errno(&e), k.func));
                    errs.push('\n');
                    255
                }
            };
        }
        if !errs.is_empty() {
            self.out.err(&errs);
        }
        q.clear();
        Ok(Some(last))
    }

    /// `-R`: one command per line; consecutive kernel changes are pipelined.
    fn restore(&mut self, input: &mut dyn BufRead) -> Result<i32, ExitCode> {
        let mut result = 0;
        let mut queue: Vec<KOp> = Vec::new();
        let mut line = Vec::new();
        loop {
            line.clear();
            match input.read_until(b'\n', &mut line) {
                Ok(0) => break,
                Ok(_) => {}
                Err(_) => break,
            }
            let text = String::from_utf8_lossy(&line);
            let mut argv = vec![self.program.clone()];
            argv.extend(
                text.split([' ', '\t', '\r', '\n'])
                    .filter(|t| !t.is_empty() && *t != "ipvsadm")
                    .map(String::from),
            );
            if argv.len() <= 1 {
                continue;
            }
            match process_options(&argv, true) {
                Ok(Action::Kernel(k)) => {
                    queue.push(k);
                    if queue.len() >= 4096 {
                        if let Some(r) = self.flush_queue(&mut queue)? {
                            result = r;
                        }
                    }
                }
                other => {
                    self.flush_queue(&mut queue)?;
                    result = match other {
                        Err(e) if e.soft => {
                            self.out.err(&e.stderr);
                            255
                        }
                        Err(e) => return Err(self.exit_with(e)),
                        Ok(Action::List(l)) => self.list(&l).map(|_| 0)?,
                        Ok(Action::Save(f)) => self.list(&ListReq::All(f)).map(|_| 0)?,
                        Ok(Action::Restore) | Ok(Action::Kernel(_)) => 0,
                    };
                }
            }
        }
        if let Some(r) = self.flush_queue(&mut queue)? {
            result = r;
        }
        Ok(result)
    }
}
