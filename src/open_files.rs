//! The process's limit on open files. Every client holds a descriptor, and the usual soft limit
//! of 1024 would turn clients away long before `maxclients`; so start-up raises it, as Redis
//! does, within the hard limit an unprivileged process may not cross.

use std::io;

/// Descriptors kept beyond `maxclients` for the listeners, the metrics endpoint, snapshot files
/// and the runtime's own, as Redis keeps 32.
pub const RESERVED: u64 = 32;

/// Raises the soft limit to `wanted` if it is lower, or as near as the hard limit allows, and
/// returns the soft limit now in force. Never lowers either limit.
#[cfg(target_os = "linux")]
pub fn raise_to(wanted: u64) -> io::Result<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into the struct it is given, which outlives the call.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // rlim_t is u64 on 64-bit targets only.
    #[allow(clippy::useless_conversion)]
    let (soft, hard) = (u64::from(limit.rlim_cur), u64::from(limit.rlim_max));
    let target = wanted.min(hard);
    if soft >= target {
        return Ok(soft);
    }
    let raised = libc::rlimit {
        rlim_cur: libc::rlim_t::try_from(target).unwrap_or(limit.rlim_max),
        rlim_max: limit.rlim_max,
    };
    // SAFETY: setrlimit only reads the struct it is given.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(target)
}

#[cfg(not(target_os = "linux"))]
pub fn raise_to(_wanted: u64) -> io::Result<u64> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "raising the open-files limit is implemented for Linux only",
    ))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn never_lowers_the_limit() {
        let now = raise_to(0).expect("getrlimit");
        assert!(now > 0);
        assert_eq!(raise_to(now).expect("same limit"), now);
    }
}
