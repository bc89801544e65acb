//! TDIGEST.* as RedisBloom's src/rm_tdigest.c parses them, applied to `TDigest`.

use super::reply_model::{double, integer, Reply};
use super::sketch_keyspace::{Keyspace, Outcome, Value, LIMIT_BYTES};
use crate::filter::{merge_compression, SketchError, TDigest, T_DIGEST_DEFAULT_COMPRESSION};

/// RMUtil_ArgIndex: the first argument equal to `word` in any case.
fn position_of(args: &[Vec<u8>], word: &[u8]) -> Option<usize> {
    args.iter().position(|arg| arg.eq_ignore_ascii_case(word))
}

fn doubles(args: &[Vec<u8>]) -> Option<Vec<f64>> {
    args.iter().map(|arg| double(arg)).collect()
}

impl Keyspace {
    pub(super) fn t_digest(&mut self, name: &str, args: &[Vec<u8>]) -> Outcome {
        match name {
            "TDIGEST.CREATE" => return self.t_digest_create(args),
            "TDIGEST.MERGE" => return self.t_digest_merge(args),
            _ => {}
        }
        let arity_ok = match name {
            "TDIGEST.RESET" | "TDIGEST.MIN" | "TDIGEST.MAX" | "TDIGEST.INFO" => args.len() == 2,
            "TDIGEST.TRIMMED_MEAN" => args.len() == 4,
            _ => args.len() >= 3,
        };
        if !arity_ok {
            return Outcome::Refused;
        }
        let Some(Value::TDigest(digest)) = self.values.get_mut(&args[1]) else {
            return Outcome::Refused;
        };
        let values = &args[2..];
        let reply = match name {
            "TDIGEST.ADD" => {
                let Some(values) = doubles(values) else {
                    return Outcome::Refused;
                };
                if values.iter().any(|value| value.is_infinite()) {
                    return Outcome::Refused;
                }
                match values.into_iter().try_for_each(|value| digest.add(value)) {
                    Ok(()) => Reply::Status("OK"),
                    Err(error) => Reply::Error(error.text().into()),
                }
            }
            "TDIGEST.RESET" => {
                digest.reset();
                Reply::Status("OK")
            }
            "TDIGEST.MIN" => Reply::Double(digest.min()),
            "TDIGEST.MAX" => Reply::Double(digest.max()),
            "TDIGEST.QUANTILE" => {
                let Some(quantiles) = doubles(values) else {
                    return Outcome::Refused;
                };
                if quantiles.iter().any(|q| !(0.0..=1.0).contains(q)) {
                    return Outcome::Refused;
                }
                Reply::Array(
                    digest
                        .quantiles(&quantiles)
                        .into_iter()
                        .map(Reply::Double)
                        .collect(),
                )
            }
            "TDIGEST.CDF" => {
                let Some(values) = doubles(values) else {
                    return Outcome::Refused;
                };
                Reply::Array(
                    values
                        .into_iter()
                        .map(|v| Reply::Double(digest.cdf(v)))
                        .collect(),
                )
            }
            "TDIGEST.RANK" | "TDIGEST.REVRANK" => {
                let Some(values) = doubles(values) else {
                    return Outcome::Refused;
                };
                let reverse = name == "TDIGEST.REVRANK";
                Reply::Array(
                    values
                        .into_iter()
                        .map(|v| {
                            Reply::Int(if reverse {
                                digest.rev_rank(v)
                            } else {
                                digest.rank(v)
                            })
                        })
                        .collect(),
                )
            }
            "TDIGEST.BYRANK" | "TDIGEST.BYREVRANK" => {
                let ranks: Option<Vec<i64>> = values.iter().map(|arg| integer(arg)).collect();
                let Some(ranks) = ranks.filter(|ranks| ranks.iter().all(|&r| r >= 0)) else {
                    return Outcome::Refused;
                };
                let reverse = name == "TDIGEST.BYREVRANK";
                Reply::Array(
                    ranks
                        .into_iter()
                        .map(|r| {
                            Reply::Double(if reverse {
                                digest.by_rev_rank(r)
                            } else {
                                digest.by_rank(r)
                            })
                        })
                        .collect(),
                )
            }
            "TDIGEST.TRIMMED_MEAN" => {
                let Some(&[low, high]) = doubles(values).as_deref() else {
                    return Outcome::Refused;
                };
                let outside = |cut: f64| !(0.0..=1.0).contains(&cut);
                if outside(low) || outside(high) || low >= high {
                    return Outcome::Refused;
                }
                Reply::Double(digest.trimmed_mean(low, high))
            }
            "TDIGEST.INFO" => {
                let info = digest.info();
                Reply::Map(vec![
                    ("Compression", Reply::Int(info.compression)),
                    ("Capacity", Reply::Int(info.capacity)),
                    ("Merged nodes", Reply::Int(info.merged_nodes)),
                    ("Unmerged nodes", Reply::Int(info.unmerged_nodes)),
                    ("Merged weight", Reply::Int(info.merged_weight)),
                    ("Unmerged weight", Reply::Int(info.unmerged_weight)),
                    ("Observations", Reply::Int(info.observations)),
                    ("Total compressions", Reply::Int(info.total_compressions)),
                    ("Memory usage", Reply::Int(info.memory_usage as i64)),
                ])
            }
            _ => return Outcome::Refused,
        };
        Outcome::Reply(reply)
    }

    fn t_digest_create(&mut self, args: &[Vec<u8>]) -> Outcome {
        if !(args.len() == 2 || args.len() == 4) || self.values.contains_key(&args[1]) {
            return Outcome::Refused;
        }
        let compression = if args.len() == 4 {
            if position_of(&args[2..], b"COMPRESSION").is_none() {
                return Outcome::Refused;
            }
            match integer(&args[3]) {
                Some(compression) => compression,
                None => return Outcome::Refused,
            }
        } else {
            T_DIGEST_DEFAULT_COMPRESSION
        };
        match TDigest::new(compression, LIMIT_BYTES) {
            Ok(digest) => {
                self.values.insert(args[1].clone(), Value::TDigest(digest));
                Outcome::Reply(Reply::Status("OK"))
            }
            Err(error) => Outcome::Reply(Reply::Error(error.text().into())),
        }
    }

    /// TDIGEST.MERGE dest numkeys src... [COMPRESSION c] [OVERRIDE], checked in RedisBloom's
    /// order.
    fn t_digest_merge(&mut self, args: &[Vec<u8>]) -> Outcome {
        if args.len() < 4 {
            return Outcome::Refused;
        }
        let destination_key = &args[1];
        let destination_compression = match self.values.get(destination_key) {
            None => None,
            Some(Value::TDigest(digest)) => Some(digest.compression()),
            Some(_) => return Outcome::Refused,
        };
        let Some(count) = integer(&args[2]).filter(|&n| n > 0 && n <= args.len() as i64 - 3) else {
            return Outcome::Refused;
        };
        let count = count as usize;
        let options = &args[3 + count..];
        let mut given = None;
        let mut override_destination = false;
        if !options.is_empty() {
            let compression_at = position_of(options, b"COMPRESSION");
            if let Some(at) = compression_at {
                let Some(value) = options.get(at + 1).and_then(|arg| integer(arg)) else {
                    return Outcome::Refused;
                };
                if value <= 0 {
                    return Outcome::Reply(Reply::Error(
                        SketchError::TDigestCompressionNotPositive.text().into(),
                    ));
                }
                given = Some(value);
            }
            override_destination = position_of(options, b"OVERRIDE").is_some();
            if compression_at.is_none() && !override_destination {
                return Outcome::Refused;
            }
        }
        let sources = &args[3..3 + count];
        let mut compressions = Vec::new();
        for key in sources {
            match self.values.get(key) {
                Some(Value::TDigest(digest)) => compressions.push(digest.compression()),
                _ => return Outcome::Refused,
            }
        }
        let compression = merge_compression(
            given,
            destination_compression,
            &compressions,
            override_destination,
        );
        let mut merged = match TDigest::merge_destination(compression, LIMIT_BYTES) {
            Ok(digest) => digest,
            Err(error) => return Outcome::Reply(Reply::Error(error.text().into())),
        };
        if !override_destination {
            if let Some(Value::TDigest(old)) = self.values.get_mut(destination_key) {
                // RedisBloom does not look at this merge's result.
                let _ = merged.merge_from(old);
            }
        }
        for key in sources {
            let Some(Value::TDigest(source)) = self.values.get_mut(key) else {
                unreachable!("checked above");
            };
            if let Err(error) = merged.merge_from(source) {
                return Outcome::Reply(Reply::Error(error.text().into()));
            }
        }
        self.values
            .insert(destination_key.clone(), Value::TDigest(merged));
        Outcome::Reply(Reply::Status("OK"))
    }
}
