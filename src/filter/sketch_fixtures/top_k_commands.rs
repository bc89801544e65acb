//! TOPK.* as RedisBloom's src/rm_topk.c parses them, applied to `TopK`.

use super::reply_model::{double, integer, Reply};
use super::sketch_keyspace::{Keyspace, Outcome, Value, LIMIT_BYTES};
use crate::filter::TopK;

impl Keyspace {
    pub(super) fn top_k(&mut self, name: &str, args: &[Vec<u8>]) -> Outcome {
        match name {
            "TOPK.RESERVE" => self.top_k_reserve(args),
            "TOPK.ADD" if args.len() >= 3 => {
                let Some(Value::TopK(top_k)) = self.values.get_mut(&args[1]) else {
                    return Outcome::Refused;
                };
                let draws = &mut self.draws;
                Outcome::Reply(Reply::Array(
                    args[2..]
                        .iter()
                        .map(|item| expelled(top_k.add(item, 1, draws)))
                        .collect(),
                ))
            }
            "TOPK.INCRBY" if args.len() >= 4 && args.len() % 2 == 0 => {
                let Some(Value::TopK(top_k)) = self.values.get_mut(&args[1]) else {
                    return Outcome::Refused;
                };
                // RedisBloom answers the pairs before a bad increment, then its error.
                let mut replies = Vec::new();
                for pair in args[2..].chunks(2) {
                    let increment = integer(&pair[1])
                        .ok_or(crate::filter::SketchError::TopKInvalidIncrement)
                        .and_then(TopK::checked_increment);
                    match increment {
                        Ok(increment) => {
                            replies.push(expelled(top_k.add(&pair[0], increment, &mut self.draws)))
                        }
                        Err(error) => {
                            replies.push(Reply::Error(error.text().into()));
                            break;
                        }
                    }
                }
                Outcome::Reply(Reply::Array(replies))
            }
            "TOPK.QUERY" if args.len() >= 3 => match self.top_k_at(&args[1]) {
                Some(top_k) => Outcome::Reply(Reply::Array(
                    args[2..]
                        .iter()
                        .map(|item| Reply::Bool(top_k.query(item)))
                        .collect(),
                )),
                None => Outcome::Refused,
            },
            "TOPK.COUNT" if args.len() >= 3 => match self.top_k_at(&args[1]) {
                Some(top_k) => Outcome::Reply(Reply::Array(
                    args[2..]
                        .iter()
                        .map(|item| Reply::Int(i64::from(top_k.count(item))))
                        .collect(),
                )),
                None => Outcome::Refused,
            },
            "TOPK.LIST" if args.len() == 2 || args.len() == 3 => {
                // Any prefix of WITHCOUNT, in any case, the empty one included.
                let with_count = match args.get(2) {
                    None => false,
                    Some(arg)
                        if arg.len() <= 9
                            && b"WITHCOUNT"[..arg.len()].eq_ignore_ascii_case(arg) =>
                    {
                        true
                    }
                    Some(_) => return Outcome::Refused,
                };
                let Some(top_k) = self.top_k_at(&args[1]) else {
                    return Outcome::Refused;
                };
                let mut replies = Vec::new();
                for listed in top_k.list() {
                    replies.push(
                        listed
                            .item
                            .map_or(Reply::Null, |item| Reply::Bulk(item.to_vec())),
                    );
                    if with_count {
                        replies.push(Reply::Int(i64::from(listed.count)));
                    }
                }
                Outcome::Reply(Reply::Array(replies))
            }
            "TOPK.INFO" if args.len() == 2 => match self.top_k_at(&args[1]) {
                Some(top_k) => {
                    let info = top_k.info();
                    Outcome::Reply(Reply::Map(vec![
                        ("k", Reply::Int(info.k as i64)),
                        ("width", Reply::Int(info.width as i64)),
                        ("depth", Reply::Int(info.depth as i64)),
                        ("decay", Reply::Double(info.decay)),
                    ]))
                }
                None => Outcome::Refused,
            },
            _ => Outcome::Refused,
        }
    }

    fn top_k_at(&self, key: &[u8]) -> Option<&TopK> {
        match self.values.get(key) {
            Some(Value::TopK(top_k)) => Some(top_k),
            _ => None,
        }
    }

    fn top_k_reserve(&mut self, args: &[Vec<u8>]) -> Outcome {
        if !(args.len() == 3 || args.len() == 6) || self.values.contains_key(&args[1]) {
            return Outcome::Refused;
        }
        let Some(k) = integer(&args[2]) else {
            return Outcome::Refused;
        };
        let created = if args.len() == 6 {
            let (Some(width), Some(depth), Some(decay)) =
                (integer(&args[3]), integer(&args[4]), double(&args[5]))
            else {
                return Outcome::Refused;
            };
            TopK::new(k, width, depth, decay, LIMIT_BYTES)
        } else {
            TopK::with_defaults(k, LIMIT_BYTES)
        };
        match created {
            Ok(top_k) => {
                self.values.insert(args[1].clone(), Value::TopK(top_k));
                Outcome::Reply(Reply::Status("OK"))
            }
            Err(error) => Outcome::Reply(Reply::Error(error.text().into())),
        }
    }
}

fn expelled(item: Option<Vec<u8>>) -> Reply {
    item.map_or(Reply::Null, Reply::Bulk)
}
