//! RedisBloom's t-digest: the merging digest of its t-digest-c library (deps/t-digest-c,
//! src/tdigest.c) as src/rm_tdigest.c drives it. Values go into a buffer of nodes (mean,
//! weight) after the merged centroids; when the buffer fills, or before any estimate, all
//! nodes are sorted by mean and merged left to right wherever the merged weight stays under
//! the scale function's bound: a centroid of weight w at quantiles q0..q2 may grow while
//! w · compression / (2π · n · ln n) <= q(1 - q) at both ends (n the total weight). There
//! are 6 · compression + 10 nodes.
//!
//! Every floating-point operation is the library's, in its order (gcc without fast-math
//! rounds each as IEEE double, as Rust does), its sort is its own quicksort (middle pivot,
//! Lomuto partition: which of two equal means ends first is the sort's doing, and moves the
//! later sums), and reads that compress (QUANTILE, CDF, RANK, BYRANK, TRIMMED_MEAN, and a
//! save) compress here too, so estimates agree with RedisBloom's to the last bit.
//!
//! Two consequences of the library worth knowing. A digest whose total weight is at most 1
//! never merges: its one value stays in the buffer, so its estimates are NaN (its MIN and MAX
//! are not). And a save writes only the merged centroids, but the buffer's counts too: after
//! a load such a digest holds a node of mean 0 and weight 0 in place of its value, which
//! later merges (RedisBloom does the same; the transcripts record it).

mod estimates;
mod node_sort;

use super::module_fields::{FieldReader, ModuleField};
use super::sketch_error::check_limit;
use super::SketchError;

/// The module type RedisBloom registers, and the encoding version it saves with.
pub const T_DIGEST_TYPE_NAME: &str = "TDIS-TYPE";
pub const T_DIGEST_ENCODING_VERSION: u64 = 0;
/// TDIGEST.CREATE's compression when none is given.
pub const T_DIGEST_DEFAULT_COMPRESSION: i64 = 100;

/// `sizeof(td_histogram_t)`.
const HEADER_BYTES: u64 = 80;
/// A node: its mean (f64) and its weight (i64).
const NODE_BYTES: u64 = 16;

#[derive(Debug, Clone)]
pub struct TDigest {
    compression: f64,
    min: f64,
    max: f64,
    /// The nodes there are room for (`cap`), at most `i32::MAX` as in the library.
    capacity: usize,
    merged_nodes: usize,
    unmerged_nodes: usize,
    total_compressions: i64,
    merged_weight: i64,
    unmerged_weight: i64,
    /// `capacity` each: the merged centroids, then the buffered values.
    means: Vec<f64>,
    weights: Vec<i64>,
}

/// TDIGEST.INFO's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TDigestInfo {
    pub compression: i64,
    pub capacity: i64,
    pub merged_nodes: i64,
    pub unmerged_nodes: i64,
    pub merged_weight: i64,
    pub unmerged_weight: i64,
    pub observations: i64,
    pub total_compressions: i64,
    pub memory_usage: u64,
}

/// Digests equal when every field is, doubles by bit pattern.
impl PartialEq for TDigest {
    fn eq(&self, other: &TDigest) -> bool {
        let bits = |values: &[f64]| values.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        self.compression.to_bits() == other.compression.to_bits()
            && self.min.to_bits() == other.min.to_bits()
            && self.max.to_bits() == other.max.to_bits()
            && self.capacity == other.capacity
            && self.merged_nodes == other.merged_nodes
            && self.unmerged_nodes == other.unmerged_nodes
            && self.total_compressions == other.total_compressions
            && self.merged_weight == other.merged_weight
            && self.unmerged_weight == other.unmerged_weight
            && bits(&self.means) == bits(&other.means)
            && self.weights == other.weights
    }
}

/// The nodes a compression gives room for, None past what the library can represent.
fn capacity_for(compression: i64) -> Option<usize> {
    let capacity = compression.checked_mul(6)?.checked_add(10)?;
    (capacity <= i64::from(i32::MAX)).then_some(capacity as usize)
}

fn bytes_for(capacity: usize) -> u64 {
    HEADER_BYTES + NODE_BYTES * capacity as u64
}

/// TDIGEST.MERGE's compression: the one given; else the destination's when it exists and is
/// kept (no OVERRIDE); else the largest of the sources'.
pub fn merge_compression(
    given: Option<i64>,
    destination: Option<f64>,
    sources: &[f64],
    override_destination: bool,
) -> i64 {
    if let Some(compression) = given {
        return compression;
    }
    match destination {
        Some(compression) if !override_destination => compression as i64,
        _ => sources
            .iter()
            .map(|&compression| compression as i64)
            .fold(0, i64::max),
    }
}

impl TDigest {
    /// TDIGEST.CREATE's digest, the compression checked (positive) and the digest's size
    /// against `limit_bytes` before anything is allocated.
    pub fn new(compression: i64, limit_bytes: u64) -> Result<TDigest, SketchError> {
        Self::allocate(compression, limit_bytes, |bytes, limit| {
            SketchError::TDigestTooLarge { bytes, limit }
        })
    }

    /// TDIGEST.MERGE's fresh destination: as `new`, with MERGE's error when too large. Merge
    /// into it the destination's old digest (unless OVERRIDE) and then each source, in
    /// order, with `merge_from`.
    pub fn merge_destination(compression: i64, limit_bytes: u64) -> Result<TDigest, SketchError> {
        Self::allocate(compression, limit_bytes, |bytes, limit| {
            SketchError::TDigestMergeTooLarge { bytes, limit }
        })
    }

    fn allocate(
        compression: i64,
        limit_bytes: u64,
        too_large: fn(u64, u64) -> SketchError,
    ) -> Result<TDigest, SketchError> {
        if compression <= 0 {
            return Err(SketchError::TDigestCompressionNotPositive);
        }
        let capacity = capacity_for(compression).ok_or(too_large(u64::MAX, limit_bytes))?;
        let bytes = bytes_for(capacity);
        check_limit(bytes, limit_bytes, too_large)?;
        let mut means = Vec::new();
        let mut weights = Vec::new();
        means
            .try_reserve_exact(capacity)
            .ok()
            .and_then(|()| weights.try_reserve_exact(capacity).ok())
            .ok_or(too_large(bytes, limit_bytes))?;
        means.resize(capacity, 0.0);
        weights.resize(capacity, 0);
        Ok(TDigest {
            compression: compression as f64,
            min: f64::MAX,
            max: -f64::MAX,
            capacity,
            merged_nodes: 0,
            unmerged_nodes: 0,
            total_compressions: 0,
            merged_weight: 0,
            unmerged_weight: 0,
            means,
            weights,
        })
    }

    /// TDIGEST.RESET: empty, with its compression.
    pub fn reset(&mut self) {
        self.min = f64::MAX;
        self.max = -f64::MAX;
        self.merged_nodes = 0;
        self.merged_weight = 0;
        self.unmerged_nodes = 0;
        self.unmerged_weight = 0;
        self.total_compressions = 0;
    }

    pub fn compression(&self) -> f64 {
        self.compression
    }

    /// The number of values added (the sum of all weights).
    pub fn size(&self) -> i64 {
        self.merged_weight + self.unmerged_weight
    }

    /// TDIGEST.ADD of one value (RedisBloom refuses NaN and infinities before it gets here).
    pub fn add(&mut self, value: f64) -> Result<(), SketchError> {
        self.add_weighted(value, 1)
    }

    fn add_weighted(&mut self, mean: f64, weight: i64) -> Result<(), SketchError> {
        if self.merged_nodes + self.unmerged_nodes + 1 >= self.capacity {
            self.compress();
        }
        let position = self.merged_nodes + self.unmerged_nodes;
        if position >= self.capacity {
            return Err(SketchError::TDigestOverflow);
        }
        let unmerged_weight = self
            .unmerged_weight
            .checked_add(weight)
            .ok_or(SketchError::TDigestOverflow)?;
        unmerged_weight
            .checked_add(self.merged_weight)
            .ok_or(SketchError::TDigestOverflow)?;
        // The library also refuses weights whose sums overflow a double; a 64-bit integer's
        // never does.
        if mean < self.min {
            self.min = mean;
        }
        if mean > self.max {
            self.max = mean;
        }
        self.means[position] = mean;
        self.weights[position] = weight;
        self.unmerged_nodes += 1;
        self.unmerged_weight = unmerged_weight;
        Ok(())
    }

    /// Sorts every node by mean and merges neighbours the scale function allows; nothing
    /// merges (but the sort happened) while the total weight is at most 1.
    pub fn compress(&mut self) {
        if self.unmerged_nodes == 0 {
            return;
        }
        let nodes = self.merged_nodes + self.unmerged_nodes;
        node_sort::sort(&mut self.means[..nodes], &mut self.weights[..nodes]);
        let total_weight = self.merged_weight as f64 + self.unmerged_weight as f64;
        if total_weight <= 1.0 {
            return;
        }
        // The library checks these for infinities, which weights below 2^63 never give.
        let denominator = 2.0 * std::f64::consts::PI * total_weight * total_weight.ln();
        let normalizer = self.compression / denominator;
        let mut current = 0;
        let mut weight_so_far = 0.0;
        for next in 1..nodes {
            let proposed_weight = self.weights[current] as f64 + self.weights[next] as f64;
            let z = proposed_weight * normalizer;
            let q0 = weight_so_far / total_weight;
            let q2 = (weight_so_far + proposed_weight) / total_weight;
            if z <= q0 * (1.0 - q0) && z <= q2 * (1.0 - q2) {
                // Wrapping as gcc's code does: a loaded form's weights need not add up to
                // its merged weight, so the sum is not bounded by the checks on adds.
                self.weights[current] = self.weights[current].wrapping_add(self.weights[next]);
                let delta = self.means[next] - self.means[current];
                let weighted_delta =
                    (delta * self.weights[next] as f64) / self.weights[current] as f64;
                self.means[current] += weighted_delta;
            } else {
                weight_so_far += self.weights[current] as f64;
                current += 1;
                self.weights[current] = self.weights[next];
                self.means[current] = self.means[next];
            }
            if current != next {
                self.weights[next] = 0;
                self.means[next] = 0.0;
            }
        }
        self.merged_nodes = current + 1;
        self.merged_weight = total_weight as i64;
        self.unmerged_nodes = 0;
        self.unmerged_weight = 0;
        self.total_compressions += 1;
    }

    /// Adds every centroid of `from` (compressed first, as the library does, which TDIGEST.INFO
    /// of the source then shows) to this digest.
    pub fn merge_from(&mut self, from: &mut TDigest) -> Result<(), SketchError> {
        self.compress();
        from.compress();
        for node in 0..from.merged_nodes + from.unmerged_nodes {
            self.add_weighted(from.means[node], from.weights[node])?;
        }
        Ok(())
    }

    /// TDIGEST.MIN: NaN when empty.
    pub fn min(&self) -> f64 {
        if self.size() > 0 {
            self.min
        } else {
            f64::NAN
        }
    }

    /// TDIGEST.MAX: NaN when empty.
    pub fn max(&self) -> f64 {
        if self.size() > 0 {
            self.max
        } else {
            f64::NAN
        }
    }

    pub fn info(&self) -> TDigestInfo {
        TDigestInfo {
            compression: self.compression as i64,
            capacity: self.capacity as i64,
            merged_nodes: self.merged_nodes as i64,
            unmerged_nodes: self.unmerged_nodes as i64,
            merged_weight: self.merged_weight,
            unmerged_weight: self.unmerged_weight,
            observations: self.size(),
            total_compressions: self.total_compressions,
            memory_usage: self.memory_usage(),
        }
    }

    /// The bytes RedisBloom reports for this digest (its `mem_usage`, TDIGEST.INFO's Memory
    /// usage): MEMORY USAGE's value part.
    pub fn memory_usage(&self) -> u64 {
        bytes_for(self.capacity)
    }

    /// The saved form, after compressing as RedisBloom's save does (which later
    /// TDIGEST.INFO shows).
    pub fn to_shape(&mut self) -> TDigestShape {
        self.compress();
        let merged = self.merged_nodes;
        TDigestShape {
            compression: self.compression,
            min: self.min,
            max: self.max,
            capacity: self.capacity as i64,
            merged_nodes: merged as i64,
            unmerged_nodes: self.unmerged_nodes as i64,
            total_compressions: self.total_compressions,
            merged_weight: self.merged_weight as f64,
            unmerged_weight: self.unmerged_weight as f64,
            means: self.means[..merged].to_vec(),
            weights: self.weights[..merged].iter().map(|&w| w as f64).collect(),
        }
    }

    /// The digest a saved form describes, checked before anything is allocated: a positive
    /// integral compression whose capacity is the saved one, and the digest's size against
    /// `limit_bytes`; node counts within the capacity; weights integral, not negative, below
    /// 2^63. The buffer's nodes, which the form leaves out, load as mean 0, weight 0.
    pub fn from_shape(shape: &TDigestShape, limit_bytes: u64) -> Result<TDigest, SketchError> {
        let bad = SketchError::BadSavedForm;
        const TWO_63: f64 = (1u64 << 63) as f64;
        let compression = shape.compression;
        if !(1.0..TWO_63).contains(&compression) || compression.fract() != 0.0 {
            return Err(bad);
        }
        let capacity = capacity_for(compression as i64).ok_or(bad)?;
        let merged = usize::try_from(shape.merged_nodes).map_err(|_| bad)?;
        let unmerged = usize::try_from(shape.unmerged_nodes).map_err(|_| bad)?;
        let integral = |weight: f64| {
            ((0.0..TWO_63).contains(&weight) && weight.fract() == 0.0)
                .then_some(weight as i64)
                .ok_or(bad)
        };
        if shape.capacity != capacity as i64
            || merged
                .checked_add(unmerged)
                .is_none_or(|nodes| nodes > capacity)
            || shape.means.len() != merged
            || shape.weights.len() != merged
            || shape.total_compressions < 0
        {
            return Err(bad);
        }
        let merged_weight = integral(shape.merged_weight)?;
        let unmerged_weight = integral(shape.unmerged_weight)?;
        merged_weight.checked_add(unmerged_weight).ok_or(bad)?;
        check_limit(bytes_for(capacity), limit_bytes, |bytes, limit| {
            SketchError::TDigestTooLarge { bytes, limit }
        })?;
        let mut means = shape.means.clone();
        let mut weights = shape
            .weights
            .iter()
            .map(|&weight| integral(weight))
            .collect::<Result<Vec<_>, _>>()?;
        means.resize(capacity, 0.0);
        weights.resize(capacity, 0);
        Ok(TDigest {
            compression,
            min: shape.min,
            max: shape.max,
            capacity,
            merged_nodes: merged,
            unmerged_nodes: unmerged,
            total_compressions: shape.total_compressions,
            merged_weight,
            unmerged_weight,
            means,
            weights,
        })
    }
}

/// A t-digest as RedisBloom 8.8 saves it (`TDIS-TYPE`, encoding version 0), compressed first:
/// doubles compression, min and max; signed capacity, merged nodes, unmerged nodes and total
/// compressions (as `SaveSigned` writes them: unsigned fields of their bits); doubles merged weight and unmerged weight; then the merged centroids' means
/// and then their weights, one double each.
#[derive(Debug, Clone, PartialEq)]
pub struct TDigestShape {
    pub compression: f64,
    pub min: f64,
    pub max: f64,
    pub capacity: i64,
    pub merged_nodes: i64,
    pub unmerged_nodes: i64,
    pub total_compressions: i64,
    pub merged_weight: f64,
    pub unmerged_weight: f64,
    pub means: Vec<f64>,
    pub weights: Vec<f64>,
}

impl TDigestShape {
    pub fn to_fields(&self) -> Vec<ModuleField> {
        let mut fields = vec![
            ModuleField::Double(self.compression),
            ModuleField::Double(self.min),
            ModuleField::Double(self.max),
            // `SaveSigned`: the bits as an unsigned field.
            ModuleField::Unsigned(self.capacity as u64),
            ModuleField::Unsigned(self.merged_nodes as u64),
            ModuleField::Unsigned(self.unmerged_nodes as u64),
            ModuleField::Unsigned(self.total_compressions as u64),
            ModuleField::Double(self.merged_weight),
            ModuleField::Double(self.unmerged_weight),
        ];
        fields.extend(self.means.iter().copied().map(ModuleField::Double));
        fields.extend(self.weights.iter().copied().map(ModuleField::Double));
        fields
    }

    /// The shape the fields describe: `merged_nodes` means, then as many weights.
    pub fn from_fields(fields: Vec<ModuleField>) -> Result<TDigestShape, SketchError> {
        let mut reader = FieldReader::new(fields);
        let compression = reader.double()?;
        let min = reader.double()?;
        let max = reader.double()?;
        let capacity = reader.signed()?;
        let merged_nodes = reader.signed()?;
        let unmerged_nodes = reader.signed()?;
        let total_compressions = reader.signed()?;
        let merged_weight = reader.double()?;
        let unmerged_weight = reader.double()?;
        if merged_nodes < 0 {
            return Err(SketchError::BadSavedForm);
        }
        // Bounded by the fields there are: a missing one ends the loop with an error.
        let mut means = Vec::new();
        for _ in 0..merged_nodes {
            means.push(reader.double()?);
        }
        let mut weights = Vec::new();
        for _ in 0..merged_nodes {
            weights.push(reader.double()?);
        }
        reader.finish()?;
        Ok(TDigestShape {
            compression,
            min,
            max,
            capacity,
            merged_nodes,
            unmerged_nodes,
            total_compressions,
            merged_weight,
            unmerged_weight,
            means,
            weights,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NO_LIMIT: u64 = u64::MAX;

    #[test]
    fn creates_as_redisbloom_checks() {
        assert_eq!(
            TDigest::new(0, NO_LIMIT).err(),
            Some(SketchError::TDigestCompressionNotPositive)
        );
        assert!(matches!(
            TDigest::new(1_000_000_000_000_000_000, NO_LIMIT),
            Err(SketchError::TDigestTooLarge { .. })
        ));
        assert!(matches!(
            TDigest::merge_destination(1 << 40, 1 << 30),
            Err(SketchError::TDigestMergeTooLarge { .. })
        ));
        let digest = TDigest::new(100, NO_LIMIT).unwrap();
        // TDIGEST.INFO of a new digest, as recorded from RedisBloom.
        assert_eq!(
            digest.info(),
            TDigestInfo {
                compression: 100,
                capacity: 610,
                merged_nodes: 0,
                unmerged_nodes: 0,
                merged_weight: 0,
                unmerged_weight: 0,
                observations: 0,
                total_compressions: 0,
                memory_usage: 9840,
            }
        );
        assert!(digest.min().is_nan() && digest.max().is_nan());
        assert_eq!(
            TDigest::new(100, 9839).err(),
            Some(SketchError::TDigestTooLarge {
                bytes: 9840,
                limit: 9839
            })
        );
    }

    /// The library never merges a total weight of 1, so one value has no estimates.
    #[test]
    fn a_single_value_stays_unmerged() {
        let mut digest = TDigest::new(100, NO_LIMIT).unwrap();
        digest.add(5.0).unwrap();
        assert!(digest.quantile(0.5).is_nan());
        assert!(digest.cdf(5.0).is_nan());
        assert_eq!((digest.min(), digest.max()), (5.0, 5.0));
        assert_eq!(digest.rank(5.0), i64::MIN);
        assert_eq!(digest.info().unmerged_nodes, 1);
        digest.add(7.0).unwrap();
        // Two singletons: the median's index (1) lands on the second.
        assert_eq!(digest.quantile(0.5), 7.0);
        assert_eq!(digest.info().merged_nodes, 2);
    }

    #[test]
    fn compresses_when_the_buffer_fills() {
        let mut digest = TDigest::new(5, NO_LIMIT).unwrap();
        for value in 0..39 {
            digest.add(f64::from(value)).unwrap();
        }
        assert_eq!(digest.info().total_compressions, 0);
        digest.add(39.0).unwrap();
        let info = digest.info();
        assert_eq!(info.total_compressions, 1);
        assert_eq!(info.unmerged_nodes, 1);
        assert_eq!(info.merged_weight + info.unmerged_weight, 40);
        assert!(info.merged_nodes < 39);
    }

    #[test]
    fn merges_with_redisbloom_s_compression_rule() {
        assert_eq!(merge_compression(Some(7), Some(100.0), &[500.0], false), 7);
        assert_eq!(merge_compression(None, Some(100.0), &[500.0], false), 100);
        assert_eq!(
            merge_compression(None, Some(100.0), &[50.0, 500.0], true),
            500
        );
        assert_eq!(merge_compression(None, None, &[50.0, 20.0], false), 50);
        let mut a = TDigest::new(100, NO_LIMIT).unwrap();
        let mut b = TDigest::new(50, NO_LIMIT).unwrap();
        for value in 0..100 {
            a.add(f64::from(value)).unwrap();
            b.add(f64::from(value + 100)).unwrap();
        }
        let mut merged = TDigest::merge_destination(100, NO_LIMIT).unwrap();
        merged.merge_from(&mut a).unwrap();
        merged.merge_from(&mut b).unwrap();
        assert_eq!(merged.size(), 200);
        assert_eq!((merged.min(), merged.max()), (0.0, 199.0));
        // The sources were compressed by the merge.
        assert_eq!(a.info().unmerged_nodes, 0);
        assert_eq!(b.info().total_compressions, 1);
    }

    #[test]
    fn the_saved_form_round_trips_and_is_checked() {
        let mut digest = TDigest::new(20, NO_LIMIT).unwrap();
        for value in 0..300 {
            digest.add(f64::from(value * 7 % 101)).unwrap();
        }
        let shape = digest.to_shape();
        // Saving compresses.
        assert_eq!(digest.info().unmerged_nodes, 0);
        let fields = shape.to_fields();
        assert_eq!(fields.len(), 9 + 2 * shape.merged_nodes as usize);
        let copy = TDigestShape::from_fields(fields).unwrap();
        assert_eq!(copy, shape);
        let mut loaded = TDigest::from_shape(&copy, NO_LIMIT).unwrap();
        assert_eq!(loaded, digest);
        assert_eq!(loaded.quantile(0.3), digest.quantile(0.3));

        let refused = |shape: &TDigestShape| TDigest::from_shape(shape, NO_LIMIT).is_err();
        let mut bad = shape.clone();
        bad.capacity += 1;
        assert!(refused(&bad));
        let mut bad = shape.clone();
        bad.compression = 20.5;
        assert!(refused(&bad));
        let mut bad = shape.clone();
        bad.compression = f64::NAN;
        assert!(refused(&bad));
        let mut bad = shape.clone();
        bad.unmerged_nodes = bad.capacity;
        assert!(refused(&bad));
        let mut bad = shape.clone();
        bad.weights[0] = 1.5;
        assert!(refused(&bad));
        let mut bad = shape.clone();
        bad.weights[0] = -1.0;
        assert!(refused(&bad));
        let mut bad = shape.clone();
        bad.means.pop();
        assert!(refused(&bad));
        assert!(TDigest::from_shape(&shape, 100).is_err());
        let mut fields = shape.to_fields();
        fields.pop();
        assert!(TDigestShape::from_fields(fields).is_err());
    }

    /// RedisBloom's flow test `test_tdigest_merge_percentile`.
    #[test]
    fn merges_percentiles_as_redisbloom_s_own_test_expects() {
        let mut from = TDigest::new(500, NO_LIMIT).unwrap();
        for x in 1..10_000 {
            from.add(f64::from(x) * 0.01).unwrap();
        }
        let mut to = TDigest::merge_destination(500, NO_LIMIT).unwrap();
        to.merge_from(&mut from).unwrap();
        assert_eq!(to.quantiles(&[1.0]), [to.max()]);
        assert_eq!(to.quantiles(&[0.0]), [to.min()]);
        let estimates = to.quantiles(&[0.01, 0.5, 0.95, 0.99]);
        for (estimate, expected) in estimates.into_iter().zip([1.0, 50.0, 95.0, 99.0]) {
            assert!(
                (estimate - expected).abs() <= 0.01,
                "{estimate} for {expected}"
            );
        }
    }

    /// A digest saved with one value in its buffer loads with a node of mean 0, weight 0 in
    /// its place, as RedisBloom's does.
    #[test]
    fn a_buffered_value_loads_as_a_zero_node() {
        let mut digest = TDigest::new(100, NO_LIMIT).unwrap();
        digest.add(42.0).unwrap();
        let shape = digest.to_shape();
        assert_eq!((shape.merged_nodes, shape.unmerged_nodes), (0, 1));
        let mut loaded = TDigest::from_shape(&shape, NO_LIMIT).unwrap();
        assert_eq!((loaded.min(), loaded.max()), (42.0, 42.0));
        loaded.add(50.0).unwrap();
        loaded.compress();
        assert_eq!(loaded.info().merged_nodes, 2);
        assert_eq!(loaded.means[..2], [0.0, 50.0]);
    }
}
