//! RedisBloom's Count-Min sketch (src/cms.c, src/rm_cms.c): `depth` rows of `width` 32-bit
//! counters, row `i` indexed by MurmurHash2 of the item under seed `i`, modulo the width. Its
//! counts, saturation, merge arithmetic, limits and saved form are RedisBloom 8.8's, so that
//! the same commands give the same numbers.

use super::module_fields::{FieldReader, ModuleField};
use super::sketch_error::check_limit;
use super::sketch_hash::murmur2;
use super::SketchError;

/// The module type RedisBloom registers, and the encoding version it saves with.
pub const COUNT_MIN_TYPE_NAME: &str = "CMSk-TYPE";
pub const COUNT_MIN_ENCODING_VERSION: u64 = 0;

/// RedisBloom's `sizeof(CMSketch)`: width, depth, the array's address, the count.
const HEADER_BYTES: u64 = 32;
const COUNTER_BYTES: u64 = 4;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountMinSketch {
    width: usize,
    depth: usize,
    /// The sum of all increments (CMS.INFO's count), wrapping as RedisBloom's `size_t` does.
    count: u64,
    /// Row after row.
    counters: Vec<u32>,
}

/// One source of CMS.MERGE: the destination itself (which may be merged into itself), or
/// another sketch.
#[derive(Debug, Clone, Copy)]
pub enum CountMinSource<'a> {
    Destination,
    Sketch(&'a CountMinSketch),
}

/// CMS.INFO's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CountMinInfo {
    pub width: u64,
    pub depth: u64,
    pub count: u64,
}

impl CountMinSketch {
    /// CMS.INITBYDIM's sketch, checked as RedisBloom checks it (width, then depth, then their
    /// product) and against `limit_bytes` before anything is allocated.
    pub fn by_dimensions(
        width: i64,
        depth: i64,
        limit_bytes: u64,
    ) -> Result<CountMinSketch, SketchError> {
        if width < 1 {
            return Err(SketchError::CmsInvalidWidth);
        }
        if depth < 1 {
            return Err(SketchError::CmsInvalidDepth);
        }
        Self::checked(width, depth, limit_bytes)
    }

    /// CMS.INITBYPROB's sketch for an overestimation `error` and a `probability` of
    /// exceeding it, both in (0, 1): width = ceil(2 / error), depth = ceil(log10(probability) /
    /// log10(0.5)), the logarithms in single precision as RedisBloom's `log10f`.
    pub fn by_probability(
        error: f64,
        probability: f64,
        limit_bytes: u64,
    ) -> Result<CountMinSketch, SketchError> {
        if !(error > 0.0 && error < 1.0) {
            return Err(SketchError::CmsInvalidOverestimation);
        }
        if !(probability > 0.0 && probability < 1.0) {
            return Err(SketchError::CmsInvalidProbability);
        }
        let width = c_double_to_size((2.0 / error).ceil());
        // log10f(0.5), which gcc folds to the correctly rounded single.
        let log10_half = f32::from_bits(0xbe9a_209b);
        let rows = (probability as f32).log10() / log10_half;
        let depth = c_double_to_size(f64::from(rows).ceil());
        // RedisBloom writes the unsigned results into signed 64-bit variables.
        Self::checked(width as i64, depth as i64, limit_bytes)
    }

    /// RedisBloom's last checks on either constructor's dimensions, then the allocation's.
    fn checked(width: i64, depth: i64, limit_bytes: u64) -> Result<CountMinSketch, SketchError> {
        if width < 1 || depth < 1 || width > i64::MAX / depth {
            return Err(SketchError::CmsInvalidInit);
        }
        let cells = (width as u64) * (depth as u64);
        let bytes = cells
            .checked_mul(COUNTER_BYTES)
            .and_then(|bytes| bytes.checked_add(HEADER_BYTES))
            .ok_or(SketchError::CmsTooLarge {
                bytes: u64::MAX,
                limit: limit_bytes,
            })?;
        check_limit(bytes, limit_bytes, |bytes, limit| {
            SketchError::CmsTooLarge { bytes, limit }
        })?;
        let cells = usize::try_from(cells).map_err(|_| SketchError::CmsTooLarge {
            bytes,
            limit: limit_bytes,
        })?;
        let mut counters = Vec::new();
        counters
            .try_reserve_exact(cells)
            .map_err(|_| SketchError::CmsTooLarge {
                bytes,
                limit: limit_bytes,
            })?;
        counters.resize(cells, 0);
        Ok(CountMinSketch {
            width: width as usize,
            depth: depth as usize,
            count: 0,
            counters,
        })
    }

    pub fn width(&self) -> u64 {
        self.width as u64
    }

    pub fn depth(&self) -> u64 {
        self.depth as u64
    }

    /// The index of `item`'s counter in `row`.
    fn cell(&self, item: &[u8], row: usize) -> usize {
        // RedisBloom passes the row number as the hash's 32-bit seed.
        let hash = murmur2(item, row as u32);
        hash as usize % self.width + row * self.width
    }

    /// CMS.INCRBY of one item: adds `by` to its counter in every row, saturating at
    /// `u32::MAX`, and returns its new estimate; None when that estimate is saturated, which
    /// RedisBloom answers with `CMS: INCRBY overflow` (the increment took effect all the same).
    pub fn increment(&mut self, item: &[u8], by: u64) -> Option<u32> {
        let mut smallest = u32::MAX;
        for row in 0..self.depth {
            let cell = self.cell(item, row);
            let counter = &mut self.counters[cell];
            // RedisBloom adds the 64-bit increment into the 32-bit counter (keeping the low
            // bits), then saturates if the result is below the increment.
            *counter = counter.wrapping_add(by as u32);
            if u64::from(*counter) < by {
                *counter = u32::MAX;
            }
            smallest = smallest.min(*counter);
        }
        self.count = self.count.wrapping_add(by);
        (smallest != u32::MAX).then_some(smallest)
    }

    /// CMS.QUERY of one item: its smallest counter.
    pub fn query(&self, item: &[u8]) -> u32 {
        (0..self.depth)
            .map(|row| self.counters[self.cell(item, row)])
            .min()
            .expect("a sketch has at least one row")
    }

    pub fn same_dimensions(&self, other: &CountMinSketch) -> bool {
        self.width == other.width && self.depth == other.depth
    }

    /// CMS.MERGE into this sketch: every counter becomes the weighted sum of the sources'
    /// (this sketch's current counters where a source is `Destination`), and the count the
    /// weighted sum of their counts. As RedisBloom, nothing changes unless every product and
    /// partial sum fits a signed 64-bit integer, every counter lands in 0..=u32::MAX and the
    /// count is not negative.
    pub fn merge(&mut self, sources: &[(CountMinSource<'_>, i64)]) -> Result<(), SketchError> {
        if sources.iter().any(|(which, _)| match which {
            CountMinSource::Destination => false,
            CountMinSource::Sketch(sketch) => !self.same_dimensions(sketch),
        }) {
            return Err(SketchError::CmsDimensionsDiffer);
        }
        // RedisBloom checks every cell before it writes any.
        for cell in 0..self.counters.len() {
            let mut sum = 0i64;
            for &(which, weight) in sources {
                sum = i64::from(self.counter_of(which, cell))
                    .checked_mul(weight)
                    .and_then(|product| sum.checked_add(product))
                    .ok_or(SketchError::CmsMergeOverflow)?;
            }
            if !(0..=i64::from(u32::MAX)).contains(&sum) {
                return Err(SketchError::CmsMergeOverflow);
            }
        }
        let mut count = 0i64;
        for &(which, weight) in sources {
            let source_count = match which {
                CountMinSource::Destination => self.count,
                CountMinSource::Sketch(sketch) => sketch.count,
            };
            count = i64::try_from(i128::from(source_count) * i128::from(weight))
                .ok()
                .and_then(|product| count.checked_add(product))
                .ok_or(SketchError::CmsMergeOverflow)?;
        }
        if count < 0 {
            return Err(SketchError::CmsMergeOverflow);
        }
        // Each cell reads every source's counter before it is written, so the destination
        // can be among the sources.
        for cell in 0..self.counters.len() {
            let sum: i64 = sources
                .iter()
                .map(|&(which, weight)| i64::from(self.counter_of(which, cell)) * weight)
                .sum();
            self.counters[cell] = sum as u32;
        }
        self.count = count as u64;
        Ok(())
    }

    fn counter_of(&self, source: CountMinSource<'_>, cell: usize) -> u32 {
        match source {
            CountMinSource::Destination => self.counters[cell],
            CountMinSource::Sketch(sketch) => sketch.counters[cell],
        }
    }

    pub fn info(&self) -> CountMinInfo {
        CountMinInfo {
            width: self.width as u64,
            depth: self.depth as u64,
            count: self.count,
        }
    }

    /// The bytes RedisBloom reports for this sketch (its `mem_usage`): MEMORY USAGE's value
    /// part.
    pub fn memory_usage(&self) -> u64 {
        HEADER_BYTES + COUNTER_BYTES * self.counters.len() as u64
    }

    pub fn to_shape(&self) -> CountMinShape {
        CountMinShape {
            width: self.width as u64,
            depth: self.depth as u64,
            count: self.count,
            counters: self
                .counters
                .iter()
                .flat_map(|counter| counter.to_le_bytes())
                .collect(),
        }
    }

    /// The sketch a saved form describes, checked (dimensions, the counters' length without
    /// overflow, `limit_bytes`) before anything is allocated.
    pub fn from_shape(
        shape: &CountMinShape,
        limit_bytes: u64,
    ) -> Result<CountMinSketch, SketchError> {
        if shape.width == 0 || shape.depth == 0 {
            return Err(SketchError::BadSavedForm);
        }
        let expected = shape
            .width
            .checked_mul(shape.depth)
            .and_then(|cells| cells.checked_mul(COUNTER_BYTES))
            .ok_or(SketchError::BadSavedForm)?;
        if expected != shape.counters.len() as u64 {
            return Err(SketchError::BadSavedForm);
        }
        let bytes = expected + HEADER_BYTES;
        check_limit(bytes, limit_bytes, |bytes, limit| {
            SketchError::CmsTooLarge { bytes, limit }
        })?;
        Ok(CountMinSketch {
            width: shape.width as usize,
            depth: shape.depth as usize,
            count: shape.count,
            counters: shape
                .counters
                .chunks_exact(4)
                .map(|bytes| u32::from_le_bytes(bytes.try_into().expect("chunks of 4")))
                .collect(),
        })
    }
}

/// A Count-Min sketch as RedisBloom 8.8 saves it (`CMSk-TYPE`, encoding version 0):
/// unsigned width, unsigned depth, unsigned count, then the counters as one string buffer,
/// row after row, each a little-endian u32.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountMinShape {
    pub width: u64,
    pub depth: u64,
    pub count: u64,
    pub counters: Vec<u8>,
}

impl CountMinShape {
    pub fn to_fields(&self) -> Vec<ModuleField> {
        vec![
            ModuleField::Unsigned(self.width),
            ModuleField::Unsigned(self.depth),
            ModuleField::Unsigned(self.count),
            ModuleField::Buffer(self.counters.clone()),
        ]
    }

    pub fn from_fields(fields: Vec<ModuleField>) -> Result<CountMinShape, SketchError> {
        let mut reader = FieldReader::new(fields);
        let shape = CountMinShape {
            width: reader.unsigned()?,
            depth: reader.unsigned()?,
            count: reader.unsigned()?,
            counters: reader.buffer()?,
        };
        reader.finish()?;
        Ok(shape)
    }
}

/// A double converted to C's `size_t` as gcc does on x86-64: truncation below 2^63, 2^63 and
/// up through the signed conversion of the difference, which leaves 0 for anything from 2^64
/// (infinity included) and 2^63 for NaN.
fn c_double_to_size(value: f64) -> u64 {
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    let signed = |value: f64| {
        if value.is_nan() || !(-TWO_63..TWO_63).contains(&value) {
            i64::MIN
        } else {
            value as i64
        }
    };
    if value >= TWO_63 {
        (signed(value - TWO_63) as u64) ^ (1 << 63)
    } else {
        signed(value) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NO_LIMIT: u64 = u64::MAX;

    #[test]
    fn sizes_from_probabilities_as_redisbloom() {
        // CMS.INFO after CMS.INITBYPROB in the recorded transcripts.
        for (error, probability, width, depth) in [
            (0.01, 0.01, 200, 7),
            (0.999, 0.999, 3, 1),
            (0.1, 0.1, 20, 4),
            (0.2, 0.5, 10, 1),
            (0.002, 0.9, 1000, 1),
            (0.05, 0.01, 40, 7),
        ] {
            let sketch = CountMinSketch::by_probability(error, probability, NO_LIMIT).unwrap();
            assert_eq!(
                (sketch.width(), sketch.depth()),
                (width, depth),
                "{error} {probability}"
            );
        }
        // A probability that rounds to 0 in single precision leaves a depth of 0.
        assert_eq!(
            CountMinSketch::by_probability(0.5, 1e-300, NO_LIMIT),
            Err(SketchError::CmsInvalidInit)
        );
        assert_eq!(
            CountMinSketch::by_probability(5e-324, 0.5, NO_LIMIT),
            Err(SketchError::CmsInvalidInit)
        );
        assert_eq!(
            CountMinSketch::by_probability(1.0, 0.5, NO_LIMIT),
            Err(SketchError::CmsInvalidOverestimation)
        );
        assert_eq!(
            CountMinSketch::by_probability(0.5, f64::NAN, NO_LIMIT),
            Err(SketchError::CmsInvalidProbability)
        );
    }

    #[test]
    fn dimensions_are_checked_before_allocating() {
        assert_eq!(
            CountMinSketch::by_dimensions(0, 5, NO_LIMIT),
            Err(SketchError::CmsInvalidWidth)
        );
        assert_eq!(
            CountMinSketch::by_dimensions(5, -1, NO_LIMIT),
            Err(SketchError::CmsInvalidDepth)
        );
        assert_eq!(
            CountMinSketch::by_dimensions(1 << 40, 1 << 40, NO_LIMIT),
            Err(SketchError::CmsInvalidInit)
        );
        assert!(matches!(
            CountMinSketch::by_dimensions(1 << 61, 2, NO_LIMIT),
            Err(SketchError::CmsTooLarge { .. })
        ));
        assert_eq!(
            CountMinSketch::by_dimensions(1000, 10, 40_000),
            Err(SketchError::CmsTooLarge {
                bytes: 40_032,
                limit: 40_000
            })
        );
        assert_eq!(
            CountMinSketch::by_dimensions(1000, 10, 40_032)
                .unwrap()
                .memory_usage(),
            40_032
        );
    }

    #[test]
    fn saturates_at_u32_max() {
        let mut sketch = CountMinSketch::by_dimensions(10, 2, NO_LIMIT).unwrap();
        assert_eq!(sketch.increment(b"a", 4_294_967_294), Some(4_294_967_294));
        assert_eq!(sketch.increment(b"a", 1), None);
        assert_eq!(sketch.increment(b"a", 1), None);
        assert_eq!(sketch.query(b"a"), u32::MAX);
        // An increment of 2^32 or more saturates at once.
        assert_eq!(sketch.increment(b"b", 1 << 32), None);
        assert_eq!(sketch.info().count, 4_294_967_296 + 4_294_967_296);
    }

    #[test]
    fn merges_with_weights_and_refuses_overflow_untouched() {
        let mut a = CountMinSketch::by_dimensions(50, 3, NO_LIMIT).unwrap();
        let mut b = CountMinSketch::by_dimensions(50, 3, NO_LIMIT).unwrap();
        a.increment(b"x", 10);
        b.increment(b"x", 3);
        b.increment(b"y", 7);
        let before = a.clone();
        a.merge(&[
            (CountMinSource::Destination, 2),
            (CountMinSource::Sketch(&b), -1),
        ])
        .unwrap_err();
        assert_eq!(a, before);
        a.merge(&[
            (CountMinSource::Destination, 2),
            (CountMinSource::Sketch(&b), 1),
        ])
        .unwrap();
        assert_eq!(a.query(b"x"), 23);
        assert!(a.query(b"y") >= 7);
        assert_eq!(a.info().count, 30);
        let mut huge = CountMinSketch::by_dimensions(50, 3, NO_LIMIT).unwrap();
        huge.increment(b"x", u64::from(u32::MAX) - 1);
        assert_eq!(
            huge.merge(&[(CountMinSource::Destination, 2)]),
            Err(SketchError::CmsMergeOverflow)
        );
        let other = CountMinSketch::by_dimensions(51, 3, NO_LIMIT).unwrap();
        assert_eq!(
            a.merge(&[(CountMinSource::Sketch(&other), 1)]),
            Err(SketchError::CmsDimensionsDiffer)
        );
    }

    #[test]
    fn the_saved_form_round_trips_and_is_checked() {
        let mut sketch = CountMinSketch::by_dimensions(7, 3, NO_LIMIT).unwrap();
        sketch.increment(b"hello", 12);
        let shape = sketch.to_shape();
        assert_eq!(shape.counters.len(), 84);
        let fields = shape.to_fields();
        let copy = CountMinShape::from_fields(fields).unwrap();
        assert_eq!(CountMinSketch::from_shape(&copy, NO_LIMIT).unwrap(), sketch);
        let mut wrapped = shape.clone();
        wrapped.width = 1 << 62;
        wrapped.depth = 1;
        wrapped.counters.clear();
        assert_eq!(
            CountMinSketch::from_shape(&wrapped, NO_LIMIT),
            Err(SketchError::BadSavedForm)
        );
        let mut short = shape.clone();
        short.counters.pop();
        assert!(CountMinSketch::from_shape(&short, NO_LIMIT).is_err());
        assert!(CountMinSketch::from_shape(&shape, 100).is_err());
        assert!(CountMinShape::from_fields(vec![ModuleField::Unsigned(1)]).is_err());
    }

    #[test]
    fn converts_doubles_to_size_t_as_gcc() {
        assert_eq!(c_double_to_size(3.0), 3);
        assert_eq!(c_double_to_size(9_223_372_036_854_775_808.0), 1 << 63);
        assert_eq!(c_double_to_size(1e19), 10_000_000_000_000_000_000);
        assert_eq!(c_double_to_size(1e20), 0);
        assert_eq!(c_double_to_size(f64::INFINITY), 0);
    }
}
