//! lab-load: the lab's sensor and web clients (lab/lab.py drives it).
//!
//!   lab-load VIP SENSOR_PORT WEB_PORT SEED
//!
//! Commands on stdin, one JSON object a line:
//!   {"web": {"users": U, "idle": S}}        start U web users
//!   {"sensors": {"n": N, "ramp": S}}        connect N sensors over S seconds
//!   {"stop": true}                          end every client; then {"e":"stopped"}
//! EOF on stdin ends the process. Events on stdout, one JSON line each
//! (t = wall-clock seconds, d = response time in s):
//!   so {i,g}  sensor i connected (connection generation g)
//!   sr {i,t,d} sensor reading answered    sx {i,err} sensor connection failed
//!   wo {s,t}  web session s opened         wr {s,t,d} web request answered
//!   wx {s,err} web session failed          we {s} web session ended normally
//!   h  {lag_ms, lag_max_ms, connect_timeouts, conns}  health, every second
//! Errors after a stop are not reported (as in the Python clients).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::{sleep, timeout};
use vmwlch_lab::{proto, rng::Rng, wall};

const SENSOR_PERIOD: f64 = 5.0;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const ANSWER_TIMEOUT: Duration = Duration::from_secs(20);

struct Ctx {
    vip: String,
    sensor_port: u16,
    web_port: u16,
    seed: u64,
    stopping: Cell<bool>,
    next_sid: Cell<u64>,
    connect_timeouts: Cell<u64>,
    conns: Cell<i64>,
    stop_rx: watch::Receiver<u64>,
}

fn emit(v: Value) {
    println!("{v}");
}

/// Wall-clock seconds from now, as a sleep.
async fn sleep_s(s: f64) {
    sleep(Duration::from_secs_f64(s.max(0.0))).await
}

async fn connect(ctx: &Ctx, port: u16) -> Result<TcpStream, String> {
    match timeout(
        CONNECT_TIMEOUT,
        TcpStream::connect((ctx.vip.as_str(), port)),
    )
    .await
    {
        Ok(Ok(s)) => {
            let _ = s.set_nodelay(true);
            ctx.conns.set(ctx.conns.get() + 1);
            Ok(s)
        }
        Ok(Err(e)) => Err(format!("ConnectionError: {e}")),
        Err(_) => {
            ctx.connect_timeouts.set(ctx.connect_timeouts.get() + 1);
            Err("TimeoutError: connect".into())
        }
    }
}

/// One sensor connection: a reading every SENSOR_PERIOD until an error.
async fn sensor_conn(
    ctx: &Ctx,
    i: usize,
    gen: u64,
    seq: &mut u64,
    rng: &mut Rng,
) -> Result<(), String> {
    let s = connect(ctx, ctx.sensor_port).await?;
    emit(json!({"e": "so", "i": i, "g": gen}));
    let (r, mut w) = s.into_split();
    let mut r = BufReader::new(r);
    let mut line = Vec::with_capacity(32);
    let mut next = Instant::now() + Duration::from_secs_f64(rng.uniform(0.0, SENSOR_PERIOD));
    let res = async {
        loop {
            tokio::time::sleep_until(next.into()).await;
            next += Duration::from_secs_f64(SENSOR_PERIOD);
            *seq += 1;
            let t = wall();
            let t0 = Instant::now();
            w.write_all(&proto::sensor_reading(i, *seq, rng.uniform(15.0, 25.0)))
                .await
                .map_err(|e| e.to_string())?;
            line.clear();
            match timeout(ANSWER_TIMEOUT, r.read_until(b'\n', &mut line)).await {
                Err(_) => return Err("TimeoutError: no answer".to_string()),
                Ok(Err(e)) => return Err(format!("ConnectionError: {e}")),
                Ok(Ok(_)) if !proto::sensor_ok(&line, *seq) => {
                    return Err(format!(
                        "ConnectionError: bad answer {:?}",
                        String::from_utf8_lossy(&line)
                    ))
                }
                Ok(Ok(_)) => {
                    emit(json!({"e": "sr", "i": i, "t": t, "d": t0.elapsed().as_secs_f64()}))
                }
            }
        }
    }
    .await;
    ctx.conns.set(ctx.conns.get() - 1);
    res
}

async fn sensor(ctx: Rc<Ctx>, i: usize) {
    let mut rng = Rng::new(ctx.seed.wrapping_mul(1_000_003).wrapping_add(i as u64));
    let (mut seq, mut gen) = (0u64, 0u64);
    while !ctx.stopping.get() {
        gen += 1;
        if let Err(err) = sensor_conn(&ctx, i, gen, &mut seq, &mut rng).await {
            if ctx.stopping.get() {
                break;
            }
            emit(json!({"e": "sx", "i": i, "err": err}));
            sleep(Duration::from_secs(1)).await;
        }
    }
}

async fn http_get(
    r: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
    w: &mut tokio::net::tcp::OwnedWriteHalf,
    host: &str,
    path: &str,
    close: bool,
) -> Result<(), String> {
    w.write_all(&proto::get(path, host, close))
        .await
        .map_err(|e| format!("ConnectionError: {e}"))?;
    let mut head = Vec::with_capacity(256);
    loop {
        let n = r
            .read_until(b'\n', &mut head)
            .await
            .map_err(|e| format!("ConnectionError: {e}"))?;
        if n == 0 {
            return Err("IncompleteReadError: connection closed".into());
        }
        if head.ends_with(b"\r\n\r\n") {
            break;
        }
        if head.len() > 65536 {
            return Err("LimitOverrunError: head too long".into());
        }
    }
    let mut body =
        vec![0u8; proto::response_len(&head).map_err(|e| format!("ConnectionError: {e}"))?];
    r.read_exact(&mut body)
        .await
        .map_err(|e| format!("IncompleteReadError: {e}"))?;
    Ok(())
}

async fn web_session(ctx: &Ctx, sid: u64, rng: &mut Rng) -> Result<(), String> {
    let s = connect(ctx, ctx.web_port).await?;
    emit(json!({"e": "wo", "s": sid, "t": wall()}));
    let (r, mut w) = s.into_split();
    let mut r = BufReader::new(r);
    let res = async {
        for _ in 0..rng.int(3, 8) {
            let t = wall();
            let t0 = Instant::now();
            match timeout(
                ANSWER_TIMEOUT,
                http_get(&mut r, &mut w, &ctx.vip, "/dashboard", false),
            )
            .await
            {
                Err(_) => return Err("TimeoutError: no answer".to_string()),
                Ok(Err(e)) => return Err(e),
                Ok(Ok(())) => {
                    emit(json!({"e": "wr", "s": sid, "t": t, "d": t0.elapsed().as_secs_f64()}))
                }
            }
            sleep_s(rng.uniform(0.5, 1.5)).await;
        }
        Ok(())
    }
    .await;
    ctx.conns.set(ctx.conns.get() - 1);
    res
}

async fn web_user(ctx: Rc<Ctx>, j: usize, idle: f64) {
    let mut rng = Rng::new(ctx.seed.wrapping_mul(7_000_003).wrapping_add(j as u64) ^ 0x5eed);
    sleep_s(rng.uniform(0.0, idle)).await;
    while !ctx.stopping.get() {
        let sid = ctx.next_sid.get() + 1;
        ctx.next_sid.set(sid);
        match web_session(&ctx, sid, &mut rng).await {
            Ok(()) => emit(json!({"e": "we", "s": sid})),
            Err(_) if ctx.stopping.get() => break,
            Err(err) => emit(json!({"e": "wx", "s": sid, "err": err})),
        }
        sleep_s(rng.expo(idle)).await;
    }
}

/// Runs FUT until the current stop generation changes.
async fn until_stop<F: std::future::Future<Output = ()>>(ctx: Rc<Ctx>, gen: u64, fut: F) {
    let mut rx = ctx.stop_rx.clone();
    tokio::select! {
        _ = fut => {}
        _ = rx.wait_for(|g| *g != gen) => {}
    }
}

/// Loop lag: how late a 100 ms timer fires (a VM short of CPU), per second.
async fn health(ctx: Rc<Ctx>) {
    let (mut sum, mut max, mut n) = (0.0f64, 0.0f64, 0u32);
    let mut tick = Instant::now();
    loop {
        let t = Instant::now();
        sleep(Duration::from_millis(100)).await;
        let late = (t.elapsed().as_secs_f64() - 0.1).max(0.0);
        sum += late;
        max = max.max(late);
        n += 1;
        if tick.elapsed() >= Duration::from_secs(1) {
            tick = Instant::now();
            emit(
                json!({"e": "h", "lag_ms": 1000.0 * sum / f64::from(n), "lag_max_ms": 1000.0 * max,
                        "connect_timeouts": ctx.connect_timeouts.get(), "conns": ctx.conns.get()}),
            );
            (sum, max, n) = (0.0, 0.0, 0);
        }
    }
}

fn arg<T: std::str::FromStr>(a: &[String], k: usize, what: &str) -> T {
    a.get(k).and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        eprintln!("usage: lab-load VIP SENSOR_PORT WEB_PORT SEED ({what} missing or bad)");
        std::process::exit(2)
    })
}

async fn run(ctx: Rc<Ctx>, stop_tx: watch::Sender<u64>) {
    tokio::task::spawn_local(health(ctx.clone()));
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    let mut handles = Vec::new();
    let sensors: Rc<RefCell<Vec<tokio::task::JoinHandle<()>>>> = Rc::default();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(cmd) = serde_json::from_str::<Value>(&line) else {
            eprintln!("lab-load: bad command {line:?}");
            continue;
        };
        let gen = *stop_tx.borrow();
        if let Some(w) = cmd.get("web") {
            ctx.stopping.set(false);
            let users = w["users"].as_u64().unwrap_or(0) as usize;
            let idle = w["idle"].as_f64().unwrap_or(3.0);
            for j in 0..users {
                let c = ctx.clone();
                handles.push(tokio::task::spawn_local(until_stop(
                    ctx.clone(),
                    gen,
                    web_user(c, j, idle),
                )));
            }
        } else if let Some(s) = cmd.get("sensors") {
            ctx.stopping.set(false);
            let n = s["n"].as_u64().unwrap_or(0) as usize;
            let ramp = s["ramp"].as_f64().unwrap_or(0.0);
            let (c, inner) = (ctx.clone(), sensors.clone());
            // a steady pace over the ramp: a slow VM delays connections, it does not stretch the ramp
            handles.push(tokio::task::spawn_local(until_stop(
                ctx.clone(),
                gen,
                async move {
                    let t0 = Instant::now();
                    for i in 0..n {
                        tokio::time::sleep_until(
                            (t0 + Duration::from_secs_f64(ramp * i as f64 / n as f64)).into(),
                        )
                        .await;
                        // each sensor is a task of its own that ends at the stop too
                        let h = tokio::task::spawn_local(until_stop(
                            c.clone(),
                            gen,
                            sensor(c.clone(), i),
                        ));
                        inner.borrow_mut().push(h);
                    }
                },
            )));
        } else if cmd.get("stop").is_some() {
            ctx.stopping.set(true);
            stop_tx.send_modify(|g| *g += 1);
            let all: Vec<_> = handles
                .drain(..)
                .chain(sensors.borrow_mut().drain(..))
                .collect();
            for h in all {
                let _ = h.await; // their sockets are closed when this returns
            }
            emit(json!({"e": "stopped"}));
        }
    }
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let (stop_tx, stop_rx) = watch::channel(0u64);
    let ctx = Rc::new(Ctx {
        vip: arg::<String>(&a, 1, "VIP"),
        sensor_port: arg(&a, 2, "SENSOR_PORT"),
        web_port: arg(&a, 3, "WEB_PORT"),
        seed: arg(&a, 4, "SEED"),
        stopping: Cell::new(false),
        next_sid: Cell::new(0),
        connect_timeouts: Cell::new(0),
        conns: Cell::new(0),
        stop_rx,
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, run(ctx, stop_tx));
}
