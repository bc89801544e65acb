//! Requests copied out of the read buffer, which moves on: a transaction's queue, and the writes
//! of one command or one EXEC on their way to the write log.

use super::Request;
use std::ops::Range;

/// Requests stored back to back, each with a number its owner gives it (the database a logged
/// write ran in; a transaction's queue leaves it 0).
#[derive(Debug, Clone, Default)]
pub struct RequestList {
    args: Vec<u8>,
    ranges: Vec<Range<usize>>,
    /// For each request: its number, and the span of its arguments in `ranges`.
    requests: Vec<(usize, Range<usize>)>,
}

impl RequestList {
    pub fn push(&mut self, number: usize, request: &Request) {
        self.push_args(number, request.args());
    }

    /// Stores a request given as its arguments.
    pub fn push_args<'a>(&mut self, number: usize, args: impl IntoIterator<Item = &'a [u8]>) {
        let first = self.ranges.len();
        for arg in args {
            let start = self.args.len();
            self.args.extend_from_slice(arg);
            self.ranges.push(start..self.args.len());
        }
        self.requests.push((number, first..self.ranges.len()));
    }

    /// Moves every request of `other` to the end of this list, leaving `other` empty.
    pub fn append(&mut self, other: &mut RequestList) {
        for (number, request) in other.iter() {
            self.push(number, &request);
        }
        other.clear();
    }

    pub fn len(&self) -> usize {
        self.requests.len()
    }

    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// Bytes of arguments held.
    pub fn arg_bytes(&self) -> usize {
        self.args.len()
    }

    /// Empties the list, keeping its buffers for reuse.
    pub fn clear(&mut self) {
        self.args.clear();
        self.ranges.clear();
        self.requests.clear();
    }

    pub fn iter(&self) -> impl Iterator<Item = (usize, Request<'_>)> {
        self.requests.iter().map(|(number, span)| {
            (
                *number,
                Request::new(&self.args, &self.ranges[span.clone()]),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_requests_and_numbers_in_order() {
        let base = b"SETkv";
        let first = [0..3, 3..4, 4..5];
        let second = [3..4, 4..5];
        let mut list = RequestList::default();
        list.push(2, &Request::new(base, &first));
        list.push(7, &Request::new(base, &second));
        let seen: Vec<(usize, Vec<Vec<u8>>)> = list
            .iter()
            .map(|(n, r)| (n, r.args().map(<[u8]>::to_vec).collect()))
            .collect();
        assert_eq!(
            seen,
            vec![
                (2, vec![b"SET".to_vec(), b"k".to_vec(), b"v".to_vec()]),
                (7, vec![b"k".to_vec(), b"v".to_vec()])
            ]
        );
        assert_eq!(list.arg_bytes(), 7);
        list.clear();
        assert!(list.is_empty());
    }
}
