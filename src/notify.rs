//! systemd's readiness protocol (sd_notify): one datagram of `KEY=value` lines to the socket
//! named by `$NOTIFY_SOCKET`. Written out here because it is a dozen lines and a crate would add
//! a dependency for it. Without the variable (not started by systemd) every call does nothing.

use std::io;
use std::os::unix::net::UnixDatagram;

/// Sends `state` (e.g. `READY=1`) to the service manager; Ok(false) when there is none.
pub fn notify(state: &str) -> io::Result<bool> {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return Ok(false);
    };
    let socket = UnixDatagram::unbound()?;
    let path = path.to_string_lossy();
    // A leading '@' names a socket in Linux's abstract namespace, where systemd usually puts it.
    if let Some(name) = path.strip_prefix('@') {
        #[cfg(target_os = "linux")]
        {
            use std::os::linux::net::SocketAddrExt;
            let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
            socket.send_to_addr(state.as_bytes(), &addr)?;
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = name;
            return Err(io::Error::other("abstract sockets exist only on Linux"));
        }
    } else {
        socket.send_to(state.as_bytes(), &*path)?;
    }
    Ok(true)
}

/// `notify`, with a failure logged rather than returned: a lost status message must not stop
/// the server.
pub fn tell(state: &str) {
    if let Err(error) = notify(state) {
        tracing::warn!(%error, "cannot notify the service manager");
    }
}
