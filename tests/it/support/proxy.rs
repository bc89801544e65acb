//! A TCP proxy for tests of links between servers: it forwards every connection it accepts to
//! one upstream port and can hold, slow and cut what flows, in either direction, while the
//! servers at both ends are real. What a held direction receives is read and kept (the sender
//! sees its writes taken, as if the network had them in flight), then delivered in order on
//! release; a cut closes every connection at once, with whatever was held.
//!
//! Counts are in bytes delivered, so a test waits for "the replica has 1 MiB of the payload"
//! rather than for a time.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread;
use std::time::{Duration, Instant};

/// Which way bytes flow: from the connecting side to the upstream server, or back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Client to server (a replica's handshake and ACKs, when a replica connects through it).
    Up,
    /// Server to client (a primary's payload and stream).
    Down,
}

impl Flow {
    fn index(self) -> usize {
        self as usize
    }
}

/// What the test asks of one direction.
#[derive(Clone, Copy, Default)]
struct Rule {
    /// Deliver at most this many bytes in this direction (over all connections), keep the rest.
    hold_after: Option<u64>,
    /// Deliver at most this many bytes a second.
    bytes_per_sec: Option<u64>,
}

#[derive(Default)]
struct State {
    rules: [Rule; 2],
    /// Bytes delivered so far in each direction, over all connections.
    delivered: [u64; 2],
    /// Bytes read and not yet delivered, in each direction.
    held: [u64; 2],
    /// Directions whose sender ended them (closed its socket, or its writing half), in each
    /// direction: `Up` counts the connecting side's closes.
    ended: [u64; 2],
    /// Bumped by `cut`: pumps of an older number stop.
    cuts: u64,
    /// The sockets of every open connection, for `cut`.
    sockets: Vec<TcpStream>,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A proxy listening on a port of its own, forwarding to `upstream`; it stops with the test
/// process (its threads hold nothing a test waits for).
pub struct Proxy {
    pub port: u16,
    shared: Arc<Shared>,
}

impl Proxy {
    pub fn to(upstream: u16) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().expect("proxy address").port();
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Condvar::new(),
        });
        let accepting = shared.clone();
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let Ok(server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    // Upstream is down: the client sees its connection closed, as it would.
                    let _ = client.shutdown(Shutdown::Both);
                    continue;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let cut = {
                    let mut state = accepting.lock();
                    for socket in [&client, &server] {
                        state
                            .sockets
                            .push(socket.try_clone().expect("clone a socket"));
                    }
                    state.cuts
                };
                for (from, to, flow) in [
                    (client.try_clone(), server.try_clone(), Flow::Up),
                    (server.try_clone(), client.try_clone(), Flow::Down),
                ] {
                    let (from, to) = (from.expect("clone"), to.expect("clone"));
                    pump(accepting.clone(), from, to, flow, cut);
                }
                accepting.changed.notify_all();
            }
        });
        Proxy { port, shared }
    }

    /// Delivers at most `bytes` in total in `flow` (counting what was already delivered), and
    /// holds the rest until `release`.
    pub fn hold_after(&self, flow: Flow, bytes: u64) {
        self.shared.lock().rules[flow.index()].hold_after = Some(bytes);
        self.shared.changed.notify_all();
    }

    /// Holds everything from now on in `flow`.
    pub fn hold(&self, flow: Flow) {
        let mut state = self.shared.lock();
        state.rules[flow.index()].hold_after = Some(state.delivered[flow.index()]);
    }

    /// Delivers what is held in `flow`, and everything after it.
    pub fn release(&self, flow: Flow) {
        self.shared.lock().rules[flow.index()].hold_after = None;
        self.shared.changed.notify_all();
    }

    /// Delivers at most `bytes_per_sec` in `flow` (None: as fast as it comes).
    pub fn slow(&self, flow: Flow, bytes_per_sec: Option<u64>) {
        self.shared.lock().rules[flow.index()].bytes_per_sec = bytes_per_sec;
        self.shared.changed.notify_all();
    }

    /// Closes every connection open now, both ends, dropping what is held.
    pub fn cut(&self) {
        let mut state = self.shared.lock();
        state.cuts += 1;
        for socket in state.sockets.drain(..) {
            let _ = socket.shutdown(Shutdown::Both);
        }
        state.held = [0, 0];
        drop(state);
        self.shared.changed.notify_all();
    }

    /// Bytes delivered in `flow` so far, over all connections.
    pub fn delivered(&self, flow: Flow) -> u64 {
        self.shared.lock().delivered[flow.index()]
    }

    /// Bytes read in `flow` and held, not yet delivered.
    pub fn held(&self, flow: Flow) -> u64 {
        self.shared.lock().held[flow.index()]
    }

    /// How many times the sender of `flow` ended it: `Up`, the connecting side closed its
    /// connection.
    pub fn ended(&self, flow: Flow) -> u64 {
        self.shared.lock().ended[flow.index()]
    }

    /// Waits until `check` holds of the proxy's counts (delivered, held, accepted, ended),
    /// failing the test after `guard`.
    pub fn wait_until(&self, what: &str, guard: Duration, check: impl Fn(&Proxy) -> bool) {
        let deadline = Instant::now() + guard;
        while !check(self) {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            let state = self.shared.lock();
            let _ = self
                .shared
                .changed
                .wait_timeout(state, Duration::from_millis(50));
        }
    }
}

/// Pieces read and not yet delivered, and whether the sender has ended.
type Pending = (VecDeque<Vec<u8>>, bool);

/// Forwards `from` to `to` in `flow` on two threads: one reads into a queue as fast as the
/// sender writes, the other delivers from it as the rules allow, and passes the end on.
fn pump(shared: Arc<Shared>, mut from: TcpStream, mut to: TcpStream, flow: Flow, cut: u64) {
    let queue: Arc<(Mutex<Pending>, Condvar)> = Arc::default();
    let reading = queue.clone();
    let read_shared = shared.clone();
    thread::spawn(move || {
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            let read = from.read(&mut chunk).unwrap_or(0);
            let (lock, ready) = &*reading;
            let mut pending = lock.lock().unwrap_or_else(|p| p.into_inner());
            if read == 0 || read_shared.lock().cuts != cut {
                read_shared.lock().ended[flow.index()] += 1;
                read_shared.changed.notify_all();
                pending.1 = true;
                ready.notify_all();
                return;
            }
            pending.0.push_back(chunk[..read].to_vec());
            read_shared.lock().held[flow.index()] += read as u64;
            ready.notify_all();
            drop(pending);
            read_shared.changed.notify_all();
        }
    });
    thread::spawn(move || {
        let (lock, ready) = &*queue;
        let mut window = (Instant::now(), 0u64);
        loop {
            let mut piece = {
                let mut pending = lock.lock().unwrap_or_else(|p| p.into_inner());
                loop {
                    if let Some(piece) = pending.0.pop_front() {
                        break Some(piece);
                    }
                    if pending.1 {
                        break None;
                    }
                    pending = ready
                        .wait_timeout(pending, Duration::from_millis(50))
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
            };
            let Some(piece) = piece.take() else { break };
            let mut sent = 0;
            while sent < piece.len() {
                let allowed = {
                    let mut state = shared.lock();
                    loop {
                        if state.cuts != cut {
                            break 0;
                        }
                        let rule = state.rules[flow.index()];
                        let room = rule.hold_after.map_or(u64::MAX, |limit| {
                            limit.saturating_sub(state.delivered[flow.index()])
                        });
                        if room > 0 {
                            break room.min((piece.len() - sent) as u64) as usize;
                        }
                        state = shared
                            .changed
                            .wait_timeout(state, Duration::from_millis(50))
                            .unwrap_or_else(|p| p.into_inner())
                            .0;
                    }
                };
                if allowed == 0 {
                    break;
                }
                let rate = shared.lock().rules[flow.index()].bytes_per_sec;
                // Slowing: small pieces, each after the time its bytes take at the rate.
                let take = match rate {
                    Some(rate) => allowed.min((rate / 20).max(1) as usize),
                    None => allowed,
                };
                if let Some(rate) = rate {
                    let due = window.0 + Duration::from_secs_f64(window.1 as f64 / rate as f64);
                    if let Some(wait) = due.checked_duration_since(Instant::now()) {
                        thread::sleep(wait);
                    }
                    window.1 += take as u64;
                } else {
                    window = (Instant::now(), 0);
                }
                if to.write_all(&piece[sent..sent + take]).is_err() {
                    break;
                }
                sent += take;
                let mut state = shared.lock();
                state.delivered[flow.index()] += take as u64;
                state.held[flow.index()] = state.held[flow.index()].saturating_sub(take as u64);
                drop(state);
                shared.changed.notify_all();
            }
            if sent < piece.len() {
                break;
            }
        }
        // This direction is over: the receiver sees the end.
        let _ = to.shutdown(Shutdown::Write);
    });
}
