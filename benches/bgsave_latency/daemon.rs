//! The two servers as child processes, each on a free loopback port with a data directory of its
//! own under the system's temp dir; dropping one stops it and deletes the directory (it holds GBs).

use std::fs;
use std::io;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

pub struct Daemon {
    pub name: &'static str,
    pub port: u16,
    pub dir: PathBuf,
    child: Child,
}

impl Daemon {
    /// Release sieved without periodic snapshots, allowing filters of `max_filter_bytes`;
    /// `SIEVED_BIN` runs another build instead of this work tree's.
    pub fn sieved(max_filter_bytes: u64) -> io::Result<Daemon> {
        let (port, dir) = prepare("sieved")?;
        let binary =
            std::env::var("SIEVED_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_sieved").to_owned());
        let child = Command::new(binary)
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .arg("--dir")
            .arg(&dir)
            .args(["--save", "", "--log-level", "warn"])
            .args(["--max-filter-memory", &max_filter_bytes.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()?;
        Ok(Daemon {
            name: "sieved",
            port,
            dir,
            child,
        })
    }

    /// Debian's redis-server without periodic snapshots or the append-only file. Compression is
    /// off so that its snapshot holds as many bytes as sieved's, which does not compress.
    pub fn redis() -> io::Result<Daemon> {
        let (port, dir) = prepare("redis")?;
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .arg("--dir")
            .arg(&dir)
            .args(["--save", "", "--appendonly", "no", "--rdbcompression", "no"])
            .args(["--daemonize", "no", "--loglevel", "warning"])
            .arg("--logfile")
            .arg(dir.join("redis.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .map_err(|error| {
                io::Error::new(
                    error.kind(),
                    format!("redis-server: {error} (apt-get install -y redis-server)"),
                )
            })?;
        Ok(Daemon {
            name: "redis",
            port,
            dir,
            child,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Resident memory, from /proc.
    pub fn rss_bytes(&self) -> io::Result<u64> {
        let status = fs::read_to_string(format!("/proc/{}/status", self.pid()))?;
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|value| {
                value
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .map(|kib| kib * 1024)
            .ok_or_else(|| io::Error::other("no VmRSS in /proc/<pid>/status"))
    }

    /// Size of the snapshot file the server wrote, if any.
    pub fn snapshot_bytes(&self) -> u64 {
        let file = if self.name == "redis" {
            "dump.rdb"
        } else {
            "sieved.snap"
        };
        fs::metadata(self.dir.join(file)).map_or(0, |meta| meta.len())
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// A loopback port nothing listens on (the OS picks it), and a fresh data directory.
fn prepare(name: &str) -> io::Result<(u16, PathBuf)> {
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let dir = std::env::temp_dir().join(format!("bgsave-latency-{}-{name}", std::process::id()));
    fs::create_dir_all(&dir)?;
    Ok((port, dir))
}
