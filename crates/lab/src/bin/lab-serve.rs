//! lab-serve CONFIG.json: every VM's service of the lab in one process
//! (replaces the former lab/labsrv.py: same config, protocols, model, output).
//!
//! Per VM a listening socket is created inside the VM's network namespace
//! (setns around the socket() call: a socket keeps its namespace), sensor
//! VMs on sensor_port, web VMs on web_port (see vmwlch_lab::proto). Each
//! physical host is a processor-sharing server (vmwlch_lab::ps): a request's
//! work (jittered 0.5..1.5x) is served at capacity/n; the process sleeps the
//! computed delays, it burns no CPU. Prints {"ready": N}, then every second
//! {"t", "busy", "area", "n", "done"} per host and the "work" in force. A line
//! {"work": {"sensor_work": S, "web_work": W}} on stdin sets the work per
//! request from then on (the lab calibrates before it measures). Ends on
//! SIGTERM/SIGINT or when stdin closes. A VM's optional "listen" address
//! (e.g. 0.0.0.0 for direct routing, where requests arrive for the VIP)
//! replaces its "addr" for the listening socket; "conns" in the stats line
//! counts each host's open client connections.
//!
//! Load feedback (lab.py's `wlc_fb` phase): with "proc_dir" set, every
//! 250 ms each host's busy time is published as `PROC_DIR/HOST/stat` in
//! /proc/stat's format, for a host-agent started with `--proc-root` on that
//! directory (the hosts are models: their CPU is this file). The commands
//! {"antagonist": {"host": H, "on": true|false}} start or stop a CPU hog on
//! host H (a job that never ends, sharing the host like any other), and
//! {"move": {"vm": NAME, "host": H}} serves VM NAME's requests on host H
//! from then on (a live migration; its open connections stay counted
//! where they were opened).

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::rc::Rc;
use std::time::{Duration, Instant};

use nix::sched::{setns, CloneFlags};
use serde::Deserialize;
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{oneshot, Notify};
use vmwlch_lab::{proto, ps::Ps, rng::Rng, wall};

#[derive(Deserialize)]
struct HostCfg {
    name: String,
    capacity: f64,
}

#[derive(Deserialize)]
struct VmCfg {
    name: String,
    ns: String,
    addr: String,
    host: String,
    service: String,
    #[serde(default)]
    listen: Option<String>,
}

#[derive(Deserialize)]
struct Config {
    hosts: Vec<HostCfg>,
    vms: Vec<VmCfg>,
    sensor_port: u16,
    web_port: u16,
    sensor_work: f64,
    web_work: f64,
    #[serde(default)]
    proc_dir: Option<String>,
}

/// A host: the model, the waiting requests, and a wake-up for its timer task.
struct Host {
    ps: RefCell<Ps>,
    waiting: RefCell<HashMap<u64, oneshot::Sender<()>>>,
    changed: Notify,
    /// Open client connections.
    conns: Cell<u64>,
}

/// Counts a connection on its host while it is open.
struct Open(Rc<Host>);

impl Open {
    fn new(host: &Rc<Host>) -> Open {
        host.conns.set(host.conns.get() + 1);
        Open(host.clone())
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        self.0.conns.set(self.0.conns.get() - 1);
    }
}

struct Shared {
    t0: Instant,
    next_id: Cell<u64>,
    rng: RefCell<Rng>,
    cfg: Config,
    /// (sensor, web) work per request in seconds of a normal CPU.
    work: Cell<(f64, f64)>,
}

/// A command on stdin.
#[derive(Deserialize)]
struct Command {
    work: Option<Work>,
    antagonist: Option<Antagonist>,
    #[serde(rename = "move")]
    move_vm: Option<MoveVm>,
}

#[derive(Deserialize)]
struct Antagonist {
    host: String,
    on: bool,
}

#[derive(Deserialize)]
struct MoveVm {
    vm: String,
    host: String,
}

/// The job id of host number I's antagonist (request ids count up from 1).
fn antagonist_id(i: usize) -> u64 {
    u64::MAX - i as u64
}

/// An antagonist's work: it never finishes (about 30 years of a CPU).
const ANTAGONIST_WORK: f64 = 1e9;

/// Where a VM runs now (a `move` command changes it).
type Home = Rc<RefCell<Rc<Host>>>;

#[derive(Deserialize)]
struct Work {
    sensor_work: f64,
    web_work: f64,
}

impl Shared {
    fn now(&self) -> f64 {
        self.t0.elapsed().as_secs_f64()
    }
}

/// Leaves the host if the request is dropped before it is done (connection gone).
struct Job<'a> {
    host: &'a Host,
    sh: &'a Shared,
    id: u64,
}

impl Drop for Job<'_> {
    fn drop(&mut self) {
        if self.host.waiting.borrow_mut().remove(&self.id).is_some() {
            self.host.ps.borrow_mut().remove(self.id, self.sh.now());
            self.host.changed.notify_one();
        }
    }
}

async fn work(sh: &Shared, host: &Host, amount: f64) {
    let amount = amount * sh.rng.borrow_mut().uniform(0.5, 1.5);
    if amount <= 0.0 {
        return;
    }
    let id = sh.next_id.get() + 1;
    sh.next_id.set(id);
    let (tx, rx) = oneshot::channel();
    host.waiting.borrow_mut().insert(id, tx);
    host.ps.borrow_mut().add(id, amount, sh.now());
    host.changed.notify_one();
    let _job = Job { host, sh, id };
    let _ = rx.await;
}

/// The host's timer: completes jobs as they finish, re-planned on every change.
async fn host_timer(sh: Rc<Shared>, host: Rc<Host>) {
    loop {
        let due = host.ps.borrow().next_due();
        match due {
            Some(d) => tokio::select! {
                _ = tokio::time::sleep(Duration::from_secs_f64(d)) => {}
                _ = host.changed.notified() => {}
            },
            None => host.changed.notified().await,
        }
        let done = host.ps.borrow_mut().finish(sh.now());
        for id in done {
            if let Some(tx) = host.waiting.borrow_mut().remove(&id) {
                let _ = tx.send(());
            }
        }
    }
}

async fn sensor_conn(sh: Rc<Shared>, home: Home, s: TcpStream) {
    let _open = Open::new(&home.borrow());
    let (r, mut w) = s.into_split();
    let mut r = BufReader::new(r);
    let mut line = Vec::with_capacity(64);
    loop {
        line.clear();
        match r.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let Some(seq) = proto::sensor_seq(&line) else {
            return;
        };
        let reply = [b"OK ", seq, b"\n"].concat();
        let host = home.borrow().clone();
        work(&sh, &host, sh.work.get().0).await;
        if w.write_all(&reply).await.is_err() {
            return;
        }
    }
}

async fn web_conn(sh: Rc<Shared>, home: Home, vm: Rc<str>, s: TcpStream) {
    let _open = Open::new(&home.borrow());
    let (r, mut w) = s.into_split();
    let mut r = BufReader::new(r);
    let page = proto::page();
    let mut head = Vec::with_capacity(512);
    loop {
        head.clear();
        while !head.ends_with(b"\r\n\r\n") {
            match r.read_until(b'\n', &mut head).await {
                Ok(0) | Err(_) => return,
                Ok(_) if head.len() > 65536 => return,
                Ok(_) => {}
            }
        }
        let Some(req) = proto::parse_request(&head) else {
            let _ = w.write_all(proto::BAD_REQUEST).await;
            return;
        };
        let ping = req.path == b"/ping";
        if !ping {
            let host = home.borrow().clone();
            work(&sh, &host, sh.work.get().1).await;
        }
        let body: &[u8] = if ping { b"pong\n" } else { &page };
        if w.write_all(&proto::response(&vm, body, req.close))
            .await
            .is_err()
            || req.close
        {
            return;
        }
    }
}

/// A listening socket on ADDR:PORT created in network namespace NS.
fn listen_in(home: &File, ns: &str, addr: &str, port: u16) -> Result<TcpListener, String> {
    let f = File::open(format!("/run/netns/{ns}")).map_err(|e| format!("namespace {ns}: {e}"))?;
    setns(&f, CloneFlags::CLONE_NEWNET).map_err(|e| format!("setns {ns}: {e}"))?;
    let sock = TcpSocket::new_v4();
    setns(home, CloneFlags::CLONE_NEWNET).map_err(|e| format!("setns back: {e}"))?;
    let sock = sock.map_err(|e| format!("socket in {ns}: {e}"))?;
    let sa = format!("{addr}:{port}")
        .parse()
        .map_err(|e| format!("{addr}: {e}"))?;
    sock.set_reuseaddr(true).map_err(|e| e.to_string())?;
    sock.bind(sa)
        .map_err(|e| format!("bind {sa} in {ns}: {e}"))?;
    sock.listen(1024)
        .map_err(|e| format!("listen {sa} in {ns}: {e}"))
}

fn stats(sh: &Shared, hosts: &BTreeMap<String, Rc<Host>>) -> serde_json::Value {
    let (mut busy, mut area, mut n, mut done) = (json!({}), json!({}), json!({}), json!({}));
    let mut conns = json!({});
    for (name, h) in hosts {
        let mut ps = h.ps.borrow_mut();
        ps.advance(sh.now());
        busy[name] = json!((ps.busy * 1e4).round() / 1e4);
        area[name] = json!((ps.area * 1e4).round() / 1e4);
        n[name] = json!(ps.len());
        done[name] = json!(ps.done);
        conns[name] = json!(h.conns.get());
    }
    let (sensor_work, web_work) = sh.work.get();
    json!({"t": wall(), "busy": busy, "area": area, "n": n, "done": done, "conns": conns,
           "work": {"sensor_work": sensor_work, "web_work": web_work}})
}

async fn serve(sh: Rc<Shared>) -> Result<(), String> {
    let t = sh.now();
    let hosts: BTreeMap<String, Rc<Host>> = sh
        .cfg
        .hosts
        .iter()
        .map(|h| {
            let host = Host {
                ps: RefCell::new(Ps::new(h.capacity, t)),
                waiting: RefCell::default(),
                changed: Notify::new(),
                conns: Cell::new(0),
            };
            (h.name.clone(), Rc::new(host))
        })
        .collect();
    for h in hosts.values() {
        tokio::task::spawn_local(host_timer(sh.clone(), h.clone()));
    }
    let own_ns = File::open("/proc/self/ns/net").map_err(|e| format!("own namespace: {e}"))?;
    let mut homes: HashMap<String, Home> = HashMap::new();
    for vm in &sh.cfg.vms {
        let host = hosts
            .get(&vm.host)
            .ok_or_else(|| format!("VM {}: no host {}", vm.name, vm.host))?
            .clone();
        let home: Home = Rc::new(RefCell::new(host));
        homes.insert(vm.name.clone(), home.clone());
        let sensor = vm.service == "sensor";
        let port = if sensor {
            sh.cfg.sensor_port
        } else {
            sh.cfg.web_port
        };
        let l = listen_in(
            &own_ns,
            &vm.ns,
            vm.listen.as_deref().unwrap_or(&vm.addr),
            port,
        )?;
        let (sh, name): (_, Rc<str>) = (sh.clone(), vm.name.as_str().into());
        tokio::task::spawn_local(async move {
            while let Ok((s, _)) = l.accept().await {
                let _ = s.set_nodelay(true);
                if sensor {
                    tokio::task::spawn_local(sensor_conn(sh.clone(), home.clone(), s));
                } else {
                    tokio::task::spawn_local(web_conn(sh.clone(), home.clone(), name.clone(), s));
                }
            }
        });
    }
    println!("{}", json!({"ready": sh.cfg.vms.len()}));
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| e.to_string())?;
    let mut stdin = BufReader::new(tokio::io::stdin()).lines();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut proc_tick = tokio::time::interval(Duration::from_millis(250));
    let mut proc_failed = false;
    loop {
        tokio::select! {
            _ = tick.tick() => println!("{}", stats(&sh, &hosts)),
            _ = proc_tick.tick(), if sh.cfg.proc_dir.is_some() => {
                if let Err(e) = publish_stat(&sh, &hosts) {
                    if !std::mem::replace(&mut proc_failed, true) {
                        eprintln!("lab-serve: publishing the hosts' CPU: {e}");
                    }
                }
            }
            _ = term.recv() => return Ok(()),
            _ = tokio::signal::ctrl_c() => return Ok(()),
            r = stdin.next_line() => match r {
                Ok(Some(line)) => command(&sh, &hosts, &homes, &line),
                Ok(None) | Err(_) => return Ok(()),
            },
        }
    }
}

/// Each host's busy time as `PROC_DIR/HOST/stat` in /proc/stat's format
/// (USER_HZ 100: busy as user time, the rest idle), replaced atomically.
fn publish_stat(sh: &Shared, hosts: &BTreeMap<String, Rc<Host>>) -> std::io::Result<()> {
    let Some(dir) = &sh.cfg.proc_dir else {
        return Ok(());
    };
    let now = sh.now();
    for (name, h) in hosts {
        let mut ps = h.ps.borrow_mut();
        ps.advance(now);
        let total = (now * 100.0) as u64;
        let busy = ((ps.busy * 100.0) as u64).min(total);
        let line = format!("{busy} 0 0 {} 0 0 0 0 0 0", total - busy);
        let d = std::path::Path::new(dir).join(name);
        std::fs::create_dir_all(&d)?;
        let tmp = d.join("stat.tmp");
        std::fs::write(&tmp, format!("cpu  {line}\ncpu0 {line}\n"))?;
        std::fs::rename(&tmp, d.join("stat"))?;
    }
    Ok(())
}

/// Applies one stdin command; a bad one is reported and ignored.
fn command(
    sh: &Shared,
    hosts: &BTreeMap<String, Rc<Host>>,
    homes: &HashMap<String, Home>,
    line: &str,
) {
    let bad = || eprintln!("lab-serve: bad command {line:?}");
    let Ok(c) = serde_json::from_str::<Command>(line) else {
        return bad();
    };
    match c {
        Command {
            work: Some(w),
            antagonist: None,
            move_vm: None,
        } if w.sensor_work >= 0.0 && w.web_work >= 0.0 => sh.work.set((w.sensor_work, w.web_work)),
        Command {
            work: None,
            antagonist: Some(a),
            move_vm: None,
        } => {
            let Some((i, h)) = hosts.iter().enumerate().find(|(_, (n, _))| **n == a.host) else {
                return bad();
            };
            let h = h.1;
            let id = antagonist_id(i);
            if a.on {
                h.ps.borrow_mut().add(id, ANTAGONIST_WORK, sh.now());
            } else {
                h.ps.borrow_mut().remove(id, sh.now());
            }
            h.changed.notify_one();
        }
        Command {
            work: None,
            antagonist: None,
            move_vm: Some(m),
        } => match (homes.get(&m.vm), hosts.get(&m.host)) {
            (Some(home), Some(h)) => *home.borrow_mut() = h.clone(),
            _ => bad(),
        },
        _ => bad(),
    }
}

fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| {
        eprintln!("usage: lab-serve CONFIG.json");
        std::process::exit(2)
    });
    let cfg: Config = match std::fs::read(&path)
        .map_err(|e| e.to_string())
        .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
    {
        Ok(c) => c,
        Err(e) => {
            eprintln!("lab-serve: {path}: {e}");
            std::process::exit(2)
        }
    };
    let sh = Rc::new(Shared {
        t0: Instant::now(),
        next_id: Cell::new(0),
        rng: RefCell::new(Rng::new(1)),
        work: Cell::new((cfg.sensor_work, cfg.web_work)),
        cfg,
    });
    // one thread: setns applies to the calling thread, and the model needs no locks
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let local = tokio::task::LocalSet::new();
    if let Err(e) = local.block_on(&rt, serve(sh)) {
        eprintln!("lab-serve: {e}");
        std::process::exit(1);
    }
}
