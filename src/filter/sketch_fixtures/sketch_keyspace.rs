//! The keys a transcript works on and the commands that are not a family's own (SET, DEL,
//! EXISTS, TYPE, DUMP, RESTORE), then each family's commands in its own file.

use super::rdb_module_value::{decode, DumpedValue};
use super::reply_model::{integer, Reply};
use crate::filter::{
    CountMinShape, CountMinSketch, GlibcRandom, ModuleField, TDigest, TDigestShape, TopK,
    TopKShape, COUNT_MIN_ENCODING_VERSION, COUNT_MIN_TYPE_NAME, TOP_K_ENCODING_VERSION,
    TOP_K_TYPE_NAME, T_DIGEST_ENCODING_VERSION, T_DIGEST_TYPE_NAME,
};
use std::collections::HashMap;

/// The memory limit the sketches are created under: far above anything the transcripts
/// create, far below what their too-large requests ask for.
pub(super) const LIMIT_BYTES: u64 = 1 << 30;

pub(super) enum Value {
    CountMin(CountMinSketch),
    TopK(TopK),
    TDigest(TDigest),
    /// A plain string.
    Text,
}

/// What the interpreter makes of a command.
pub(super) enum Outcome {
    /// The reply the sketches give, to compare with RedisBloom's.
    Reply(Reply),
    /// Refused before any sketch is involved (arity, argument syntax, a missing key or one of
    /// another type): RedisBloom's reply must be an error, and nothing changed.
    Refused,
    /// Not about a sketch (DUMP of a plain string), or on the keys only (SET, DEL, EXISTS,
    /// TYPE, a RESTORE's bookkeeping): not counted.
    Bookkeeping(Option<Reply>),
    /// A DUMP of a sketch: whether its fields matched RedisBloom's, or how they differ.
    Dumped(Result<(), String>),
}

pub(super) struct Keyspace {
    pub(super) values: HashMap<Vec<u8>, Value>,
    pub(super) draws: GlibcRandom,
}

impl Keyspace {
    pub(super) fn new() -> Keyspace {
        Keyspace {
            values: HashMap::new(),
            draws: GlibcRandom::new(1),
        }
    }

    /// Runs `args` against the keys; `recorded` is RedisBloom's reply, which only a DUMP
    /// (to compare payloads) and a RESTORE (whose payload checks are Redis's) look at.
    pub(super) fn run(&mut self, args: &[Vec<u8>], recorded: &[u8]) -> Outcome {
        let name = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
        let family = name.split('.').next().unwrap_or("");
        match (family, name.as_str()) {
            ("CMS", _) => self.count_min(&name, args),
            ("TOPK", _) => self.top_k(&name, args),
            ("TDIGEST", _) => self.t_digest(&name, args),
            (_, "SET") if args.len() == 3 => {
                self.values.insert(args[1].clone(), Value::Text);
                Outcome::Bookkeeping(Some(Reply::Status("OK")))
            }
            (_, "DEL") if args.len() >= 2 => {
                let removed = args[1..]
                    .iter()
                    .filter(|key| self.values.remove(*key).is_some())
                    .count();
                Outcome::Bookkeeping(Some(Reply::Int(removed as i64)))
            }
            (_, "EXISTS") if args.len() >= 2 => {
                let found = args[1..]
                    .iter()
                    .filter(|key| self.values.contains_key(*key))
                    .count();
                Outcome::Bookkeeping(Some(Reply::Int(found as i64)))
            }
            (_, "TYPE") if args.len() == 2 => {
                let type_name = match self.values.get(&args[1]) {
                    None => "none",
                    Some(Value::Text) => "string",
                    Some(Value::CountMin(_)) => COUNT_MIN_TYPE_NAME,
                    Some(Value::TopK(_)) => TOP_K_TYPE_NAME,
                    Some(Value::TDigest(_)) => T_DIGEST_TYPE_NAME,
                };
                Outcome::Reply(Reply::Status(type_name))
            }
            (_, "DUMP") if args.len() == 2 => self.dump(&args[1], recorded),
            (_, "RESTORE") => self.restore(args),
            _ => Outcome::Refused,
        }
    }

    fn dump(&mut self, key: &[u8], recorded: &[u8]) -> Outcome {
        let (name, version, mut fields) = match self.values.get_mut(key) {
            None => return Outcome::Reply(Reply::Null),
            Some(Value::Text) => return Outcome::Bookkeeping(None),
            Some(Value::CountMin(sketch)) => (
                COUNT_MIN_TYPE_NAME,
                COUNT_MIN_ENCODING_VERSION,
                sketch.to_shape().to_fields(),
            ),
            Some(Value::TopK(top_k)) => (
                TOP_K_TYPE_NAME,
                TOP_K_ENCODING_VERSION,
                top_k.to_shape().to_fields(),
            ),
            Some(Value::TDigest(digest)) => (
                T_DIGEST_TYPE_NAME,
                T_DIGEST_ENCODING_VERSION,
                digest.to_shape().to_fields(),
            ),
        };
        let Some(payload) = bulk_payload(recorded) else {
            return Outcome::Dumped(Err("RedisBloom's reply is no payload".into()));
        };
        let Some(DumpedValue::Module {
            name: dumped_name,
            version: dumped_version,
            fields: mut dumped,
        }) = decode(payload)
        else {
            return Outcome::Dumped(Err("RedisBloom's payload holds no module value".into()));
        };
        if name == TOP_K_TYPE_NAME {
            // The heap's item addresses differ per process; RedisBloom ignores them on load.
            for fields in [&mut fields, &mut dumped] {
                if let Some(ModuleField::Buffer(heap)) = fields.get_mut(5) {
                    for entry in heap.chunks_mut(24) {
                        entry[8..16].fill(0);
                    }
                }
            }
        }
        if (dumped_name.as_str(), dumped_version) != (name, version) {
            return Outcome::Dumped(Err(format!("{dumped_name} {dumped_version}")));
        }
        match dumped.iter().zip(&fields).position(|(a, b)| a != b) {
            None if dumped.len() == fields.len() => Outcome::Dumped(Ok(())),
            None => Outcome::Dumped(Err(format!(
                "{} fields, RedisBloom's {}",
                fields.len(),
                dumped.len()
            ))),
            Some(at) => Outcome::Dumped(Err(format!(
                "field {at}: ours {:?}, RedisBloom's {:?}",
                abbreviated(&fields[at]),
                abbreviated(&dumped[at])
            ))),
        }
    }

    /// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f], as Redis 7.4 checks
    /// it; the value through the sketches' saved forms.
    fn restore(&mut self, args: &[Vec<u8>]) -> Outcome {
        if args.len() < 4 {
            return Outcome::Refused;
        }
        let (mut replace, mut absolute) = (false, false);
        let mut options = args[4..].iter();
        while let Some(option) = options.next() {
            match option.to_ascii_uppercase().as_slice() {
                b"REPLACE" => replace = true,
                b"ABSTTL" => absolute = true,
                b"IDLETIME" | b"FREQ" => {
                    if options
                        .next()
                        .and_then(|n| integer(n))
                        .is_none_or(|n| n < 0)
                    {
                        return Outcome::Refused;
                    }
                }
                _ => return Outcome::Refused,
            }
        }
        let Some(ttl) = integer(&args[2]).filter(|&ttl| ttl >= 0) else {
            return Outcome::Refused;
        };
        let key = &args[1];
        if !replace && self.values.contains_key(key) {
            return Outcome::Refused;
        }
        let value = match decode(&args[3]) {
            None => return Outcome::Refused,
            Some(DumpedValue::Other) => Ok(Value::Text),
            Some(DumpedValue::Module {
                name,
                version,
                fields,
            }) => restored(&name, version, fields),
        };
        match value {
            Ok(value) => {
                self.values.remove(key);
                // An absolute TTL in the past deletes the key.
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .expect("after 1970")
                    .as_millis();
                if !(absolute && ttl > 0 && (ttl as u128) < now) {
                    self.values.insert(key.clone(), value);
                }
                Outcome::Bookkeeping(Some(Reply::Status("OK")))
            }
            Err(text) => Outcome::Reply(Reply::Error(text.into())),
        }
    }
}

/// A module value from its saved fields, through the sketch's shape.
fn restored(name: &str, version: u64, fields: Vec<ModuleField>) -> Result<Value, &'static str> {
    let wrong = crate::filter::BAD_SAVED_FORM;
    match (name, version) {
        (COUNT_MIN_TYPE_NAME, COUNT_MIN_ENCODING_VERSION) => CountMinShape::from_fields(fields)
            .and_then(|shape| CountMinSketch::from_shape(&shape, LIMIT_BYTES))
            .map(Value::CountMin)
            .map_err(|error| error.text()),
        (TOP_K_TYPE_NAME, TOP_K_ENCODING_VERSION) => TopKShape::from_fields(fields)
            .and_then(|shape| TopK::from_shape(&shape, LIMIT_BYTES))
            .map(Value::TopK)
            .map_err(|error| error.text()),
        (T_DIGEST_TYPE_NAME, T_DIGEST_ENCODING_VERSION) => TDigestShape::from_fields(fields)
            .and_then(|shape| TDigest::from_shape(&shape, LIMIT_BYTES))
            .map(Value::TDigest)
            .map_err(|error| error.text()),
        _ => Err(wrong),
    }
}

fn abbreviated(field: &ModuleField) -> String {
    let text = format!("{field:?}");
    text.chars().take(300).collect()
}

/// The payload of a RESP bulk string reply.
fn bulk_payload(reply: &[u8]) -> Option<&[u8]> {
    let rest = reply.strip_prefix(b"$")?;
    let end = rest.iter().position(|&b| b == b'\r')?;
    let length: usize = std::str::from_utf8(&rest[..end]).ok()?.parse().ok()?;
    rest.get(end + 2..end + 2 + length)
}
