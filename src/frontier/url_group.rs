//! A URL's politeness group: the lowercased `scheme://host[:port]` of an absolute URL, the port
//! left out when it is the scheme's default, so that `HTTP://Example.COM:80/a` and
//! `http://example.com/b` wait for each other. Anything that is not an absolute URL (a relative
//! path, a bare fingerprint) belongs to the one group with the empty name.

/// Ports a group leaves out, as a browser does.
const DEFAULT_PORTS: &[(&[u8], &[u8])] = &[
    (b"http", b"80"),
    (b"https", b"443"),
    (b"ws", b"80"),
    (b"wss", b"443"),
    (b"ftp", b"21"),
];

/// The group of `url`, appended to `out` (which is cleared first).
pub fn group_of(url: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let Some(scheme_end) = url.windows(3).position(|w| w == b"://") else {
        return;
    };
    let scheme = &url[..scheme_end];
    let valid_scheme = scheme.first().is_some_and(u8::is_ascii_alphabetic)
        && scheme
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    if !valid_scheme {
        return;
    }
    let rest = &url[scheme_end + 3..];
    let authority_end = rest
        .iter()
        .position(|&b| matches!(b, b'/' | b'?' | b'#'))
        .unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    // user:password@ is not part of the host.
    let host_port = match authority.iter().rposition(|&b| b == b'@') {
        Some(at) => &authority[at + 1..],
        None => authority,
    };
    let (host, port) = split_port(host_port);
    out.extend(scheme.iter().map(u8::to_ascii_lowercase));
    out.extend_from_slice(b"://");
    out.extend(host.iter().map(u8::to_ascii_lowercase));
    let lower_scheme = &out[..scheme.len()];
    let port = port.map(|port| {
        // Leading zeros name the same port.
        let start = port
            .iter()
            .position(|&b| b != b'0')
            .unwrap_or(port.len().saturating_sub(1));
        &port[start..]
    });
    if let Some(port) = port.filter(|port| {
        !port.is_empty()
            && !DEFAULT_PORTS
                .iter()
                .any(|(scheme, default)| *scheme == lower_scheme && default == port)
    }) {
        out.push(b':');
        out.extend_from_slice(port);
    }
}

/// `host[:port]`, where an IPv6 literal is in brackets; a port must be all digits (else the
/// colon is part of the host, which no real URL has).
fn split_port(host_port: &[u8]) -> (&[u8], Option<&[u8]>) {
    let host_end = if host_port.first() == Some(&b'[') {
        match host_port.iter().position(|&b| b == b']') {
            Some(close) => close + 1,
            None => return (host_port, None),
        }
    } else {
        match host_port.iter().rposition(|&b| b == b':') {
            Some(colon) => colon,
            None => return (host_port, None),
        }
    };
    match host_port.get(host_end) {
        Some(b':') if host_port[host_end + 1..].iter().all(u8::is_ascii_digit) => {
            (&host_port[..host_end], Some(&host_port[host_end + 1..]))
        }
        _ => (host_port, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(url: &str) -> String {
        let mut out = Vec::new();
        group_of(url.as_bytes(), &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn absolute_urls_group_by_scheme_host_and_port() {
        for (url, expected) in [
            ("https://example.com/a?b#c", "https://example.com"),
            ("HTTPS://Example.COM", "https://example.com"),
            ("http://example.com:80/x", "http://example.com"),
            ("http://example.com:0080/x", "http://example.com"),
            ("http://example.com:8080/x", "http://example.com:8080"),
            ("https://example.com:80/", "https://example.com:80"),
            ("http://user:pw@Example.com:81/", "http://example.com:81"),
            ("http://[::1]:8080/a", "http://[::1]:8080"),
            ("http://[::1]/a", "http://[::1]"),
            ("http://a.b?x=1", "http://a.b"),
            ("http://a.b#top", "http://a.b"),
            ("http://a.b:/", "http://a.b"),
            ("file:///etc/passwd", "file://"),
            ("svn+ssh://host/x", "svn+ssh://host"),
        ] {
            assert_eq!(group(url), expected, "{url}");
        }
    }

    #[test]
    fn anything_else_is_the_empty_group() {
        for url in [
            "/relative/path",
            "example.com/a",
            "://x",
            "1http://x",
            "",
            "ab",
        ] {
            assert_eq!(group(url), "", "{url}");
        }
    }
}
