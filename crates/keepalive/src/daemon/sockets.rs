//! The raw VRRP sockets, one per (interface, family), each with a reader
//! task that forwards packets to the event loop.

use std::collections::{BTreeSet, HashMap};
use std::os::fd::AsRawFd;
use std::sync::Arc;

use anyhow::Context;
use tokio::io::unix::AsyncFd;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::{error, warn};

use super::Daemon;
use crate::sys::{RecvV6, VrrpSocket};

/// (interface name, IPv6).
pub(super) type SockKey = (String, bool);

/// A packet as read by a socket task.
pub(super) struct RxPacket {
    pub key: SockKey,
    pub data: Vec<u8>,
    /// IPv6 only (IPv4 carries its header in `data`).
    pub v6: Option<RecvV6>,
}

struct SockEntry {
    sock: Arc<AsyncFd<VrrpSocket>>,
    reader: JoinHandle<()>,
}

pub(super) struct Sockets {
    map: HashMap<SockKey, SockEntry>,
    tx: mpsc::UnboundedSender<RxPacket>,
}

impl Sockets {
    pub fn new(tx: mpsc::UnboundedSender<RxPacket>) -> Sockets {
        Sockets {
            map: HashMap::new(),
            tx,
        }
    }

    pub fn get(&self, key: &SockKey) -> Option<&VrrpSocket> {
        self.map.get(key).map(|e| e.sock.get_ref())
    }

    /// Open the socket for `key` on interface `index` unless it is open
    /// there (an interface that was re-created has a new index: the old
    /// socket is closed), and be a member of the VRRP group when `join`.
    pub fn ensure(&mut self, key: &SockKey, index: u32, join: bool) -> anyhow::Result<()> {
        if self
            .map
            .get(key)
            .is_some_and(|e| e.sock.get_ref().ifindex != index)
        {
            self.close(key);
        }
        if !self.map.contains_key(key) {
            let s = if key.1 {
                VrrpSocket::open_v6(&key.0, index, join)
            } else {
                VrrpSocket::open_v4(&key.0, index, join)
            }
            .with_context(|| format!("opening VRRP socket on {}", key.0))?;
            // SAFETY: VrrpSocket owns its descriptor (an OwnedFd that is never
            // replaced) and always returns it from as_raw_fd, so the fd stays open
            // and the same for the AsyncFd's whole lifetime.
            let afd = Arc::new(unsafe { AsyncFd::register(s) }.map_err(std::io::Error::from)?);
            let reader = tokio::spawn(read_loop(afd.clone(), key.clone(), self.tx.clone()));
            self.map
                .insert(key.clone(), SockEntry { sock: afd, reader });
        }
        if let Some(e) = self.map.get(key) {
            e.sock
                .get_ref()
                .set_membership(join)
                .with_context(|| format!("VRRP group membership on {}", key.0))?;
        }
        Ok(())
    }

    pub fn close(&mut self, key: &SockKey) {
        if let Some(e) = self.map.remove(key) {
            e.reader.abort();
        }
    }

    /// Close the sockets no instance uses any more.
    pub fn retain(&mut self, used: &BTreeSet<SockKey>) {
        let gone: Vec<SockKey> = self
            .map
            .keys()
            .filter(|k| !used.contains(*k))
            .cloned()
            .collect();
        for k in gone {
            self.close(&k);
        }
    }

    fn keys(&self) -> Vec<SockKey> {
        self.map.keys().cloned().collect()
    }
}

fn recv(sock: &VrrpSocket, key: &SockKey, buf: &mut [u8]) -> std::io::Result<RxPacket> {
    let (n, v6) = if sock.v6 {
        sock.recv_v6(buf).map(|r| (r.len, Some(r)))?
    } else {
        (sock.recv_v4(buf)?, None)
    };
    Ok(RxPacket {
        key: key.clone(),
        data: buf[..n.min(buf.len())].to_vec(),
        v6,
    })
}

async fn read_loop(
    sock: Arc<AsyncFd<VrrpSocket>>,
    key: SockKey,
    tx: mpsc::UnboundedSender<RxPacket>,
) {
    let mut buf = vec![0u8; 65_536];
    loop {
        let mut guard = match sock.readable().await {
            Ok(g) => g,
            Err(e) => {
                error!(interface = %key.0, error = %e, "VRRP socket");
                return;
            }
        };
        loop {
            let inner = guard.get_inner();
            match recv(inner, &key, &mut buf) {
                Ok(p) => {
                    if tx.send(p).is_err() {
                        return;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    guard.clear_ready();
                    break;
                }
                Err(e) => {
                    warn!(interface = %key.0, fd = inner.as_raw_fd(), error = %e, "VRRP receive");
                    guard.clear_ready();
                    break;
                }
            }
        }
    }
}

impl Daemon {
    /// Feed every advert that has already arrived to the machines before a
    /// timer is judged. When the loop was held up (a slow notify spawn, a
    /// loaded machine), the master-down timer can be overdue while the
    /// master's adverts wait in the socket or the channel: handled timer
    /// first, the backup would take over and then fall back on the queued,
    /// stale advert (a spurious double transition, seen in the VM test).
    pub(super) fn drain_pending(&mut self) {
        while let Ok(p) = self.pkt_rx.try_recv() {
            self.on_packet(p);
        }
        let mut buf = vec![0u8; 65_536];
        for key in self.sockets.keys() {
            // Bounded: a flood must not keep the timers from running.
            for _ in 0..256 {
                let Some(sock) = self.sockets.get(&key) else {
                    break;
                };
                let Ok(p) = recv(sock, &key, &mut buf) else {
                    break;
                };
                self.on_packet(p);
            }
        }
    }

    /// One socket per (interface, family) that an instance with a link
    /// uses, a member of the VRRP group while one of them is multicast.
    pub(super) fn sync_sockets(&mut self) {
        let mut want: std::collections::BTreeMap<SockKey, (u32, bool)> = Default::default();
        for inst in &self.insts {
            if let Some(index) = inst.ifindex() {
                let w = want.entry(inst.key()).or_insert((index, false));
                w.1 |= inst.multicast();
            }
        }
        for (key, (index, join)) in &want {
            if let Err(e) = self.sockets.ensure(key, *index, *join) {
                error!(interface = %key.0, error = format!("{e:#}"), "VRRP socket");
            }
        }
        self.sockets.retain(&want.into_keys().collect());
    }
}
