//! `appendfsync`: when the append-only file is synced to disk.

/// When the append-only file is synced to disk, as Redis's `appendfsync`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fsync {
    /// After every write, before any of the writes it holds is acknowledged.
    Always,
    /// Once a second: at most about a second of acknowledged writes is at risk.
    EverySec,
    /// When the operating system decides.
    No,
}

impl Fsync {
    pub fn parse(text: &str) -> Option<Fsync> {
        match text.to_ascii_lowercase().as_str() {
            "always" => Some(Fsync::Always),
            "everysec" => Some(Fsync::EverySec),
            "no" => Some(Fsync::No),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Fsync::Always => "always",
            Fsync::EverySec => "everysec",
            Fsync::No => "no",
        }
    }
}
