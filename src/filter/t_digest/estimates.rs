//! What a t-digest answers: the library's `td_cdf`, `td_quantile`, `td_quantiles` and
//! `td_trimmed_mean`, and RedisBloom's ranks built on them, each operation in their order.
//! Each compresses the digest first, as they do.

use super::TDigest;

/// `__td_max` and `__td_min`: plain comparisons, so NaN falls through as in C (unlike
/// `f64::max`).
fn larger(a: f64, b: f64) -> f64 {
    if a > b {
        a
    } else {
        b
    }
}

fn smaller(a: f64, b: f64) -> f64 {
    if a < b {
        a
    } else {
        b
    }
}

fn weighted_average(x1: f64, w1: f64, x2: f64, w2: f64) -> f64 {
    let sorted = |x1: f64, w1: f64, x2: f64, w2: f64| {
        let x = (x1 * w1 + x2 * w2) / (w1 + w2);
        larger(x1, smaller(x, x2))
    };
    if x1 <= x2 {
        sorted(x1, w1, x2, w2)
    } else {
        sorted(x2, w2, x1, w1)
    }
}

/// RedisBloom's `_halfRoundDown`: to the nearest integer, halves toward zero.
fn half_round_down(value: f64) -> f64 {
    let integral = value.trunc();
    let fraction = value - integral;
    if fraction.abs() <= 0.5 {
        integral
    } else if integral >= 0.0 {
        integral + 1.0
    } else {
        integral - 1.0
    }
}

/// A double converted to C's `long long` as x86-64 does: NaN and anything out of range give
/// `i64::MIN`.
fn c_double_to_i64(value: f64) -> i64 {
    const TWO_63: f64 = (1u64 << 63) as f64;
    if (-TWO_63..TWO_63).contains(&value) {
        value as i64
    } else {
        i64::MIN
    }
}

/// The library's test for a fraction outside [0, 1], under which NaN is inside.
#[allow(clippy::manual_range_contains)]
fn outside_unit(fraction: f64) -> bool {
    fraction < 0.0 || fraction > 1.0
}

impl TDigest {
    fn mean(&self, node: usize) -> f64 {
        self.means[node]
    }

    fn weight(&self, node: usize) -> f64 {
        self.weights[node] as f64
    }

    /// TDIGEST.CDF of one value: the estimated fraction of values at or below it; NaN when
    /// nothing is merged.
    pub fn cdf(&mut self, value: f64) -> f64 {
        self.compress();
        if self.merged_nodes == 0 {
            return f64::NAN;
        }
        if value < self.min {
            return 0.0;
        }
        if value > self.max {
            return 1.0;
        }
        if self.merged_nodes == 1 {
            let width = self.max - self.min;
            return if value - self.min <= width {
                // Too close together to interpolate.
                0.5
            } else {
                (value - self.min) / width
            };
        }
        let n = self.merged_nodes;
        let merged_weight = self.merged_weight as f64;
        let left_mean = self.mean(0);
        let left_weight = self.weight(0);
        if value < left_mean {
            let width = left_mean - self.min;
            if width > 0.0 {
                if value == self.min {
                    return 0.5 / merged_weight;
                }
                return (1.0 + (value - self.min) / width * (left_weight / 2.0 - 1.0))
                    / merged_weight;
            }
            return 0.0;
        }
        let right_mean = self.mean(n - 1);
        let right_weight = self.weight(n - 1);
        if value > right_mean {
            let width = self.max - right_mean;
            if width > 0.0 {
                if value == self.max {
                    return 1.0 - 0.5 / merged_weight;
                }
                let dq =
                    (1.0 + (self.max - value) / width * (right_weight / 2.0 - 1.0)) / merged_weight;
                return 1.0 - dq;
            }
            return 1.0;
        }
        let mut weight_so_far = 0.0;
        let mut node = 0;
        while node < n - 1 {
            if self.mean(node) == value {
                // Centroids exactly at the value count as one, half of it below.
                let mut at_value = 0.0;
                while node < n && self.mean(node) == value {
                    at_value += self.weight(node);
                    node += 1;
                }
                return (weight_so_far + at_value / 2.0) / merged_weight;
            }
            if self.mean(node) <= value && value < self.mean(node + 1) {
                let node_weight = self.weight(node);
                let next_weight = self.weight(node + 1);
                let node_mean = self.mean(node);
                let next_mean = self.mean(node + 1);
                if next_mean - node_mean > 0.0 {
                    // A singleton's weight sits at its mean, outside the interpolation.
                    let mut left_excluded = 0.0;
                    let mut right_excluded = 0.0;
                    if node_weight == 1.0 {
                        if next_weight == 1.0 {
                            return (weight_so_far + 1.0) / merged_weight;
                        }
                        left_excluded = 0.5;
                    } else if next_weight == 1.0 {
                        right_excluded = 0.5;
                    }
                    let dw = (node_weight + next_weight) / 2.0;
                    let dw_no_singleton = dw - left_excluded - right_excluded;
                    let base = weight_so_far + node_weight / 2.0 + left_excluded;
                    return (base
                        + dw_no_singleton * (value - node_mean) / (next_mean - node_mean))
                        / merged_weight;
                }
                let dw = (node_weight + next_weight) / 2.0;
                return (weight_so_far + dw) / merged_weight;
            }
            weight_so_far += self.weight(node);
            node += 1;
        }
        1.0 - 0.5 / merged_weight
    }

    /// The library's walk to the value at `index` (a weight from the left), resuming from
    /// `weight_so_far` and `node`, which consecutive non-decreasing quantiles share.
    fn value_at_index(&self, index: f64, weight_so_far: &mut f64, node: &mut usize) -> f64 {
        let n = self.merged_nodes;
        let left_weight = self.weight(0);
        if left_weight > 1.0 && index < left_weight / 2.0 {
            // One sample sits at min: interpolate with the rest of the left centroid.
            return self.min
                + (index - 1.0) / (left_weight / 2.0 - 1.0) * (self.mean(0) - self.min);
        }
        if index > (self.merged_weight - 1) as f64 {
            return self.max;
        }
        let right_weight = self.weight(n - 1);
        let right_mean = self.mean(n - 1);
        let merged_weight = self.merged_weight as f64;
        if right_weight > 1.0 && merged_weight - index <= right_weight / 2.0 {
            return self.max
                - (merged_weight - index - 1.0) / (right_weight / 2.0 - 1.0)
                    * (self.max - right_mean);
        }
        while *node < n - 1 {
            let i = *node;
            let node_weight = self.weight(i);
            let next_weight = self.weight(i + 1);
            let node_mean = self.mean(i);
            let next_mean = self.mean(i + 1);
            let dw = (node_weight + next_weight) / 2.0;
            if *weight_so_far + dw > index {
                // Centroids i and i + 1 bracket the index; singletons are not interpolated.
                let mut left_unit = 0.0;
                if node_weight == 1.0 {
                    if index - *weight_so_far < 0.5 {
                        return node_mean;
                    }
                    left_unit = 0.5;
                }
                let mut right_unit = 0.0;
                if next_weight == 1.0 {
                    if *weight_so_far + dw - index <= 0.5 {
                        return next_mean;
                    }
                    right_unit = 0.5;
                }
                let z1 = index - *weight_so_far - left_unit;
                let z2 = *weight_so_far + dw - index - right_unit;
                return weighted_average(node_mean, z2, next_mean, z1);
            }
            *weight_so_far += dw;
            *node += 1;
        }
        // Past the last centroid's middle: interpolate out to max.
        let z1 = index - merged_weight - right_weight / 2.0;
        let z2 = right_weight / 2.0 - z1;
        weighted_average(right_mean, z1, self.max, z2)
    }

    /// `td_quantile`: the value below which a fraction `q` of the values lie; NaN outside
    /// [0, 1] or with nothing merged, min for an index below 1.
    pub fn quantile(&mut self, q: f64) -> f64 {
        self.compress();
        if outside_unit(q) || self.merged_nodes == 0 {
            return f64::NAN;
        }
        if self.merged_nodes == 1 {
            return self.mean(0);
        }
        let index = q * self.merged_weight as f64;
        if index < 1.0 {
            return self.min;
        }
        let mut weight_so_far = self.weight(0) / 2.0;
        let mut node = 0;
        self.value_at_index(index, &mut weight_so_far, &mut node)
    }

    /// TDIGEST.QUANTILE: RedisBloom cuts the list into runs of non-decreasing quantiles and
    /// answers each run with one `td_quantiles` walk, which (unlike `td_quantile`) has no
    /// shortcut to min for an index below 1. The quantiles are in [0, 1] (RedisBloom refuses
    /// others before it gets here).
    pub fn quantiles(&mut self, quantiles: &[f64]) -> Vec<f64> {
        let mut values = Vec::with_capacity(quantiles.len());
        let mut start = 0;
        while start < quantiles.len() {
            let mut end = start;
            while end + 1 < quantiles.len() && quantiles[end] <= quantiles[end + 1] {
                end += 1;
            }
            self.quantile_run(&quantiles[start..=end], &mut values);
            start = end + 1;
        }
        values
    }

    fn quantile_run(&mut self, quantiles: &[f64], values: &mut Vec<f64>) {
        self.compress();
        match self.merged_nodes {
            0 => values.extend(quantiles.iter().map(|_| f64::NAN)),
            1 => values.extend(quantiles.iter().map(|&q| {
                if outside_unit(q) {
                    f64::NAN
                } else {
                    self.mean(0)
                }
            })),
            _ => {
                let mut weight_so_far = self.weight(0) / 2.0;
                let mut node = 0;
                for &q in quantiles {
                    let index = q * self.merged_weight as f64;
                    values.push(self.value_at_index(index, &mut weight_so_far, &mut node));
                }
            }
        }
    }

    /// TDIGEST.RANK of one value: about how many values are below it, half of those equal
    /// counted; -1 below min, the size above max, -2 when empty.
    pub fn rank(&mut self, value: f64) -> i64 {
        self.rank_of(value, false)
    }

    /// TDIGEST.REVRANK of one value: about how many values are above it; -1 above max, the
    /// size below min, -2 when empty.
    pub fn rev_rank(&mut self, value: f64) -> i64 {
        self.rank_of(value, true)
    }

    fn rank_of(&mut self, value: f64, reverse: bool) -> i64 {
        let size = self.size() as f64;
        let rank = if size == 0.0 {
            -2.0
        } else if value < self.min {
            if reverse {
                size
            } else {
                -1.0
            }
        } else if value > self.max {
            if reverse {
                -1.0
            } else {
                size
            }
        } else {
            let below = self.cdf(value) * size;
            if reverse {
                (size - below.round()).round()
            } else {
                half_round_down(below)
            }
        };
        c_double_to_i64(rank)
    }

    /// TDIGEST.BYRANK of one rank (not negative): min at 0, infinity from the size on, NaN
    /// when empty.
    pub fn by_rank(&mut self, rank: i64) -> f64 {
        self.value_of_rank(rank, false)
    }

    /// TDIGEST.BYREVRANK of one rank (not negative): max at 0, -infinity from the size on,
    /// NaN when empty.
    pub fn by_rev_rank(&mut self, rank: i64) -> f64 {
        self.value_of_rank(rank, true)
    }

    fn value_of_rank(&mut self, rank: i64, reverse: bool) -> f64 {
        let size = self.size() as f64;
        let rank = rank as f64;
        if size == 0.0 {
            f64::NAN
        } else if rank == 0.0 {
            if reverse {
                self.max
            } else {
                self.min
            }
        } else if rank >= size {
            if reverse {
                f64::NEG_INFINITY
            } else {
                f64::INFINITY
            }
        } else {
            let from_left = if reverse { size - rank - 1.0 } else { rank };
            self.quantile(from_left / size)
        }
    }

    /// TDIGEST.TRIMMED_MEAN: the mean of the values between the two quantiles (each in
    /// [0, 1]); NaN when nothing is merged.
    pub fn trimmed_mean(&mut self, low: f64, high: f64) -> f64 {
        self.compress();
        if self.merged_nodes == 0 || outside_unit(low) || outside_unit(high) {
            return f64::NAN;
        }
        if self.merged_nodes == 1 {
            return self.mean(0);
        }
        let merged_weight = self.merged_weight as f64;
        let leftmost = (merged_weight * low).floor();
        let rightmost = (merged_weight * high).ceil();
        let mut count_done = 0.0;
        let mut trimmed_sum = 0.0;
        let mut trimmed_count = 0.0;
        for node in 0..self.merged_nodes {
            let node_weight = self.weight(node);
            let mut count_add = node_weight;
            count_add -= smaller(larger(0.0, leftmost - count_done), count_add);
            count_add = smaller(larger(0.0, rightmost - count_done), count_add);
            count_done += node_weight;
            trimmed_sum += self.mean(node) * count_add;
            trimmed_count += count_add;
            if count_done >= rightmost {
                break;
            }
        }
        trimmed_sum / trimmed_count
    }
}
