//! CMS.* as RedisBloom's src/rm_cms.c parses them, applied to `CountMinSketch`.

use super::reply_model::{double, integer, Reply};
use super::sketch_keyspace::{Keyspace, Outcome, Value, LIMIT_BYTES};
use crate::filter::{CountMinSketch, CountMinSource, SketchError};

impl Keyspace {
    pub(super) fn count_min(&mut self, name: &str, args: &[Vec<u8>]) -> Outcome {
        match name {
            "CMS.INITBYDIM" | "CMS.INITBYPROB" => self.count_min_create(name, args),
            "CMS.INCRBY" => self.count_min_increment(args),
            "CMS.QUERY" if args.len() >= 3 => match self.count_min_at(&args[1]) {
                Some(sketch) => Outcome::Reply(Reply::Array(
                    args[2..]
                        .iter()
                        .map(|item| Reply::Int(i64::from(sketch.query(item))))
                        .collect(),
                )),
                None => Outcome::Refused,
            },
            "CMS.MERGE" => self.count_min_merge(args),
            "CMS.INFO" if args.len() == 2 => match self.count_min_at(&args[1]) {
                Some(sketch) => {
                    let info = sketch.info();
                    Outcome::Reply(Reply::Map(vec![
                        ("width", Reply::Int(info.width as i64)),
                        ("depth", Reply::Int(info.depth as i64)),
                        ("count", Reply::Int(info.count as i64)),
                    ]))
                }
                None => Outcome::Refused,
            },
            _ => Outcome::Refused,
        }
    }

    fn count_min_at(&self, key: &[u8]) -> Option<&CountMinSketch> {
        match self.values.get(key) {
            Some(Value::CountMin(sketch)) => Some(sketch),
            _ => None,
        }
    }

    fn count_min_create(&mut self, name: &str, args: &[Vec<u8>]) -> Outcome {
        if args.len() != 4 || self.values.contains_key(&args[1]) {
            return Outcome::Refused;
        }
        let created = if name == "CMS.INITBYDIM" {
            let (Some(width), Some(depth)) = (integer(&args[2]), integer(&args[3])) else {
                return Outcome::Refused;
            };
            CountMinSketch::by_dimensions(width, depth, LIMIT_BYTES)
        } else {
            let (Some(error), Some(probability)) = (double(&args[2]), double(&args[3])) else {
                return Outcome::Refused;
            };
            CountMinSketch::by_probability(error, probability, LIMIT_BYTES)
        };
        match created {
            Ok(sketch) => {
                self.values.insert(args[1].clone(), Value::CountMin(sketch));
                Outcome::Reply(Reply::Status("OK"))
            }
            Err(error) => Outcome::Reply(Reply::Error(error.text().into())),
        }
    }

    fn count_min_increment(&mut self, args: &[Vec<u8>]) -> Outcome {
        if args.len() < 4 || args.len() % 2 == 1 {
            return Outcome::Refused;
        }
        let Some(Value::CountMin(sketch)) = self.values.get_mut(&args[1]) else {
            return Outcome::Refused;
        };
        let mut pairs = Vec::new();
        for pair in args[2..].chunks(2) {
            match integer(&pair[1]) {
                Some(by) if by >= 0 => pairs.push((&pair[0], by as u64)),
                _ => return Outcome::Refused,
            }
        }
        Outcome::Reply(Reply::Array(
            pairs
                .into_iter()
                .map(|(item, by)| match sketch.increment(item, by) {
                    Some(count) => Reply::Int(i64::from(count)),
                    None => Reply::Error(SketchError::CmsIncrByOverflow.text().into()),
                })
                .collect(),
        ))
    }

    /// CMS.MERGE dest numkeys src... [WEIGHTS w...]: each source's weight, key and
    /// dimensions checked in turn, as RedisBloom's parser does.
    fn count_min_merge(&mut self, args: &[Vec<u8>]) -> Outcome {
        if args.len() < 4 || self.count_min_at(&args[1]).is_none() {
            return Outcome::Refused;
        }
        let Some(count) = integer(&args[2]).filter(|&n| n > 0) else {
            return Outcome::Refused;
        };
        let rest = &args[3..];
        let weights_at = rest
            .iter()
            .position(|arg| arg.eq_ignore_ascii_case(b"WEIGHTS"));
        let count_fits = match weights_at {
            None => count == rest.len() as i64,
            Some(at) => at as i64 == count && rest.len() as i64 == 1 + count * 2,
        };
        if !count_fits {
            return Outcome::Refused;
        }
        let count = count as usize;
        let destination = self.count_min_at(&args[1]).expect("checked");
        let mut sources = Vec::new();
        for i in 0..count {
            let weight = match weights_at {
                None => 1,
                Some(_) => match integer(&rest[count + 1 + i]) {
                    Some(weight) => weight,
                    None => return Outcome::Refused,
                },
            };
            let Some(source) = self.count_min_at(&rest[i]) else {
                return Outcome::Refused;
            };
            if !source.same_dimensions(destination) {
                return Outcome::Reply(Reply::Error(
                    SketchError::CmsDimensionsDiffer.text().into(),
                ));
            }
            sources.push((rest[i].clone(), weight));
        }
        // The destination leaves the keys while it merges, so that the others can be read.
        let Some(Value::CountMin(mut destination)) = self.values.remove(&args[1]) else {
            unreachable!("checked above");
        };
        let merged = {
            let weighted: Vec<(CountMinSource<'_>, i64)> = sources
                .iter()
                .map(|(key, weight)| {
                    let source = if *key == args[1] {
                        CountMinSource::Destination
                    } else {
                        CountMinSource::Sketch(self.count_min_at(key).expect("checked"))
                    };
                    (source, *weight)
                })
                .collect();
            destination.merge(&weighted)
        };
        self.values
            .insert(args[1].clone(), Value::CountMin(destination));
        match merged {
            Ok(()) => Outcome::Reply(Reply::Status("OK")),
            Err(error) => Outcome::Reply(Reply::Error(error.text().into())),
        }
    }
}
