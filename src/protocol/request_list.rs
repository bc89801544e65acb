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
    /// Where each record but the last ends, as a count of requests (`end_record`).
    record_ends: Vec<usize>,
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
        self.record_ends.clear();
    }

    /// Closes the record that the requests pushed since the last one make up, for a write log
    /// given several records at once (a run of writes, `cmd::runs`); a list never closed is one
    /// record.
    pub fn end_record(&mut self) {
        let from = self.record_ends.last().copied().unwrap_or(0);
        if self.requests.len() > from {
            self.record_ends.push(self.requests.len());
        }
    }

    /// The records, in order, each as `iter` gives its requests; none is empty.
    pub fn records(
        &self,
    ) -> impl Iterator<Item = impl ExactSizeIterator<Item = (usize, Request<'_>)>> {
        let ends = self.record_ends.iter().copied();
        let mut start = 0;
        ends.chain(std::iter::once(self.requests.len()))
            .filter_map(move |end| {
                let record = start..end;
                start = end;
                (!record.is_empty()).then_some(record)
            })
            .map(|record| self.slice(record))
    }

    pub fn iter(&self) -> impl Iterator<Item = (usize, Request<'_>)> {
        self.slice(0..self.requests.len())
    }

    /// The requests in `range`, each with its number.
    fn slice(&self, range: Range<usize>) -> impl ExactSizeIterator<Item = (usize, Request<'_>)> {
        self.requests[range].iter().map(|(number, span)| {
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

    #[test]
    fn a_list_is_one_record_until_divided() {
        let base = b"abc";
        let ranges = [0..1, 1..2, 2..3];
        let (a, b, c) = (&ranges[0..1], &ranges[1..2], &ranges[2..3]);
        let mut list = RequestList::default();
        let records = |list: &RequestList| -> Vec<Vec<Vec<u8>>> {
            list.records()
                .map(|record| record.map(|(_, request)| request.arg(0).to_vec()).collect())
                .collect()
        };
        list.push(0, &Request::new(base, a));
        list.push(0, &Request::new(base, b));
        assert_eq!(records(&list), vec![vec![b"a".to_vec(), b"b".to_vec()]]);
        list.end_record();
        list.end_record();
        list.push(0, &Request::new(base, c));
        assert_eq!(
            records(&list),
            vec![vec![b"a".to_vec(), b"b".to_vec()], vec![b"c".to_vec()]]
        );
        list.end_record();
        assert_eq!(records(&list).len(), 2, "no empty record at the end");
        list.clear();
        assert!(records(&list).is_empty());
    }
}
