//! A full sync's snapshot written by a child process, as Redis writes its own: `fork` gives the
//! child the keyspace exactly as it stood at the cut, and the kernel copies a page only when the
//! server writes to it afterwards (4 KiB at a time, even in a filter backed by huge pages: since
//! Linux 5.8 a write to a shared huge page splits it rather than copying 2 MiB). Commands pause
//! only for the fork itself, where copying the keyspace in memory paused them for about half a
//! second per GiB; the price is the memory of the pages written while the child runs.
//!
//! The child runs with one thread, the one that forked, so it may not touch anything another
//! thread could have held at the fork: it does no logging and no async work, and reads the
//! keyspace only through locks that nobody held then. That is why the fork happens with every
//! command paused, and why whatever else writes to the keyspace (the expiry sweeper) holds
//! `Isolation::shared` while it does. The allocator is safe: glibc takes its own locks around
//! `fork` and resets them in the child.

use crate::persist::snapshot::{self, Expired};
use crate::store::Store;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Mutex};

/// The running child and the read end of its output. Dropping it kills the child if it is still
/// there, and reaps it.
pub(super) struct SnapshotChild {
    output: File,
    pid: Arc<Mutex<Option<libc::pid_t>>>,
}

/// Ends the child from another task (the replica's link went away, or the server stops) without
/// racing the reaping: a pid is only signalled while it is known not to have been reaped.
#[derive(Clone)]
pub(super) struct ChildHandle(Arc<Mutex<Option<libc::pid_t>>>);

impl ChildHandle {
    pub(super) fn kill(&self) {
        if let Some(pid) = *self.0.lock().unwrap_or_else(|p| p.into_inner()) {
            // SAFETY: kill only reads its integer arguments; the pid is our unreaped child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
    }
}

/// Forks a child that writes `store` as a snapshot and exits. The caller pauses every command
/// around this call.
pub(super) fn fork_snapshot(store: &Store) -> io::Result<SnapshotChild> {
    let mut ends = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just opened and are owned by nothing else.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) };
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the child only calls `child_main`, which keeps to what is safe after a fork in a
    // threaded process (see the module's comment) and never returns.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        child_main(store, parent, write_end.as_raw_fd());
    }
    drop(write_end);
    Ok(SnapshotChild {
        output: File::from(read_end),
        pid: Arc::new(Mutex::new(Some(pid))),
    })
}

/// The child: writes the snapshot into `out` and exits, 0 on success.
fn child_main(store: &Store, parent: libc::pid_t, out: libc::c_int) -> ! {
    // SAFETY: each call below is async-signal-safe and takes only integer arguments.
    unsafe {
        // The parent's handlers would only write to its signal pipe; a stop must end the child.
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        // A parent killed outright takes the child with it.
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != parent {
            libc::_exit(2);
        }
        // Every other descriptor is the parent's: a listener left open here would keep
        // accepting, and a client's socket would not close when the parent closes it.
        libc::close_range(3, (out - 1) as libc::c_uint, 0);
        libc::close_range((out + 1) as libc::c_uint, libc::c_uint::MAX, 0);
        libc::setpriority(libc::PRIO_PROCESS, 0, 10);
    }
    // SAFETY: `out` is the pipe's write end, open in this process and owned by nothing else here.
    let file = unsafe { File::from_raw_fd(out) };
    let status = match snapshot::write_to(file, store, 0, Expired::Keep, None) {
        Ok(_) => 0,
        Err(_) => 1,
    };
    // SAFETY: _exit ends the process without running the parent's destructors or atexit hooks.
    unsafe { libc::_exit(status) }
}

impl SnapshotChild {
    pub(super) fn handle(&self) -> ChildHandle {
        ChildHandle(self.pid.clone())
    }

    /// Reads the child's output to its end in pieces of up to `piece_len`, handing each to
    /// `deliver` (false: nobody wants the rest, so the child is killed); then reaps the child.
    /// Blocks. Returns the bytes read, or why the snapshot is not whole.
    pub(super) fn read_all(
        mut self,
        piece_len: usize,
        mut deliver: impl FnMut(Vec<u8>) -> bool,
    ) -> io::Result<u64> {
        let mut total = 0u64;
        let mut piece = Vec::with_capacity(piece_len);
        let finished = loop {
            let filled = piece.len();
            piece.resize(piece_len, 0);
            let read = match self.output.read(&mut piece[filled..]) {
                Ok(read) => read,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {
                    piece.truncate(filled);
                    continue;
                }
                Err(error) => break Err(error),
            };
            piece.truncate(filled + read);
            total += read as u64;
            // The range read into is never empty (a full piece goes at once), so 0 is the end.
            let ended = read == 0;
            if piece.len() == piece_len || (ended && !piece.is_empty()) {
                let full = std::mem::replace(&mut piece, Vec::with_capacity(piece_len));
                if !deliver(full) {
                    break Err(io::Error::other("the replica's link closed"));
                }
            }
            if ended {
                break Ok(total);
            }
        };
        if finished.is_err() {
            self.handle().kill();
        }
        let status = self.reap();
        match (finished, status) {
            (Ok(total), Some(0)) => Ok(total),
            (Ok(_), status) => Err(io::Error::other(format!(
                "the snapshot child failed ({})",
                describe(status)
            ))),
            (Err(error), _) => Err(error),
        }
    }

    /// Waits for the child to end; its exit code, or None when a signal ended it. Called once its
    /// output has ended or it was killed, so the wait is short (the lock is held across it).
    fn reap(&mut self) -> Option<i32> {
        let mut pid = self.pid.lock().unwrap_or_else(|p| p.into_inner());
        let child = pid.take()?;
        let mut status = 0;
        loop {
            // SAFETY: waitpid writes the child's status into the integer it is given.
            let reaped = unsafe { libc::waitpid(child, &mut status, 0) };
            if reaped == child {
                break;
            }
            if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
                return None;
            }
        }
        libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status))
    }
}

fn describe(status: Option<i32>) -> String {
    match status {
        Some(code) => format!("exit code {code}"),
        None => "killed".to_string(),
    }
}

impl Drop for SnapshotChild {
    fn drop(&mut self) {
        if self.pid.lock().unwrap_or_else(|p| p.into_inner()).is_some() {
            self.handle().kill();
            self.reap();
        }
    }
}
