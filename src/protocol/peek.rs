//! A look at requests not yet run, for hints only: the connection reads ahead in what it has
//! received to start loading the memory later commands will touch (see `cmd::prefetch`), and
//! runs them through the real parser afterwards. Anything unusual (an inline request, a bare
//! LF, an incomplete or malformed request, more arguments than asked for) is not a request here:
//! the look stops there, and the parser reports whatever is wrong when execution reaches it.

/// A complete request of at most `args.len()` bulk strings at the start of `buf`: fills the
/// front of `args` with them and returns how many there are and how many bytes the request
/// takes. Reads nothing past `buf` and allocates nothing.
pub fn peek_request<'a>(buf: &'a [u8], args: &mut [&'a [u8]]) -> Option<(usize, usize)> {
    let (count, mut pos) = header(buf, 0, b'*')?;
    if count == 0 || count > args.len() {
        return None;
    }
    for slot in &mut args[..count] {
        let (len, start) = header(buf, pos, b'$')?;
        let end = start.checked_add(len)?;
        if buf.get(end..end + 2)? != b"\r\n" {
            return None;
        }
        *slot = &buf[start..end];
        pos = end + 2;
    }
    Some((count, pos))
}

/// The number on a `<marker><digits>\r\n` line at `pos`, and where the line ends.
fn header(buf: &[u8], pos: usize, marker: u8) -> Option<(usize, usize)> {
    if *buf.get(pos)? != marker {
        return None;
    }
    let mut value = 0usize;
    // Twelve digits cover any length a buffer on this machine can hold.
    for (offset, &byte) in buf.get(pos + 1..)?.iter().enumerate().take(13) {
        match byte {
            b'0'..=b'9' => value = value * 10 + usize::from(byte - b'0'),
            b'\r' if offset > 0 => {
                return (buf.get(pos + 2 + offset) == Some(&b'\n'))
                    .then_some((value, pos + 3 + offset));
            }
            _ => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peek(buf: &[u8]) -> Option<(Vec<&[u8]>, usize)> {
        let mut args = [&[][..]; 3];
        let (count, len) = peek_request(buf, &mut args)?;
        Some((args[..count].to_vec(), len))
    }

    #[test]
    fn reads_a_complete_request_and_its_length() {
        let buf = b"*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$0\r\n\r\n*1\r\n";
        let (args, len) = peek(buf).unwrap();
        assert_eq!(args, [&b"BF.ADD"[..], b"k", b""]);
        assert_eq!(&buf[len..], b"*1\r\n");
    }

    #[test]
    fn anything_unusual_is_no_request() {
        for buf in [
            &b""[..],
            b"*",
            b"*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$1\r\nx",
            b"*3\r\n$6\r\nBF.ADD\r\n$1\r\nk\r\n$1\r\nx\r",
            b"*4\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n",
            b"*0\r\n",
            b"*-1\r\n",
            b"*1\n$1\r\na\r\n",
            b"*1\r\n$1\r\nab\r\n",
            b"*1\r\n$\r\na\r\n",
            b"*1\r\n$99999999999999999999\r\na\r\n",
            b"*1\r\n$18446744073709551615\r\na\r\n",
            b"BF.ADD k x\r\n",
            b"*1\r\n:1\r\n",
        ] {
            assert_eq!(peek(buf), None, "{:?}", String::from_utf8_lossy(buf));
        }
    }

    #[test]
    fn every_prefix_of_a_request_is_incomplete() {
        let buf = b"*2\r\n$3\r\nGET\r\n$10\r\n0123456789\r\n";
        for end in 0..buf.len() {
            assert_eq!(peek(&buf[..end]), None);
        }
        assert_eq!(peek(buf).unwrap().1, buf.len());
    }
}
