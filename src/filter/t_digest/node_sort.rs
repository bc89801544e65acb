//! t-digest-c's sort of the nodes by mean: a quicksort with the middle element as pivot and
//! Lomuto's partition, the weights moved alongside. It is not stable, and where nodes share a
//! mean their order decides which weights merge first, so it is followed step for step. The
//! library recurses; the ranges are disjoint, so a stack of them gives the same result without
//! recursing once per node on inputs of many equal means.

pub(super) fn sort(means: &mut [f64], weights: &mut [i64]) {
    if means.is_empty() {
        return;
    }
    let mut ranges = vec![(0, means.len() - 1)];
    while let Some((start, end)) = ranges.pop() {
        if start >= end {
            continue;
        }
        if end - start == 1 {
            if means[start] > means[end] {
                means.swap(start, end);
                weights.swap(start, end);
            }
            continue;
        }
        let pivot = partition(means, weights, start, end, (start + end) / 2);
        if pivot > start {
            ranges.push((start, pivot - 1));
        }
        ranges.push((pivot + 1, end));
    }
}

/// Moves the pivot to the end, the means below it to the front, then the pivot after them;
/// returns where it landed.
fn partition(
    means: &mut [f64],
    weights: &mut [i64],
    start: usize,
    end: usize,
    pivot: usize,
) -> usize {
    let pivot_mean = means[pivot];
    means.swap(pivot, end);
    weights.swap(pivot, end);
    // One past the last mean below the pivot.
    let mut below = start;
    for j in start..end {
        if means[j] < pivot_mean {
            means.swap(below, j);
            weights.swap(below, j);
            below += 1;
        }
    }
    means.swap(below, end);
    weights.swap(below, end);
    below
}

#[cfg(test)]
mod tests {
    use super::sort;

    #[test]
    fn sorts_and_keeps_pairs_together() {
        let mut means = vec![5.0, 1.0, 4.0, 1.0, 3.0, 9.0, 1.0, 0.5];
        let mut weights: Vec<i64> = (0..8).collect();
        let pairs: Vec<(u64, i64)> = means
            .iter()
            .map(|m: &f64| m.to_bits())
            .zip(weights.iter().copied())
            .collect();
        sort(&mut means, &mut weights);
        assert!(means.windows(2).all(|w| w[0] <= w[1]));
        for (mean, weight) in means.iter().zip(&weights) {
            assert!(pairs.contains(&(mean.to_bits(), *weight)));
        }
    }

    /// The library's order for equal means: three equal values rotate (the middle one, the
    /// pivot, goes first; the first goes last).
    #[test]
    fn equal_means_land_where_the_library_puts_them() {
        let mut means = vec![2.0, 2.0, 2.0];
        let mut weights = vec![10, 20, 30];
        sort(&mut means, &mut weights);
        assert_eq!(weights, [20, 30, 10]);
    }

    #[test]
    fn many_equal_means_do_not_recurse() {
        let mut means = vec![1.0; 5_000];
        let mut weights: Vec<i64> = (0..5_000).collect();
        sort(&mut means, &mut weights);
        let mut seen = weights.clone();
        seen.sort_unstable();
        assert!(seen.into_iter().eq(0..5_000));
    }
}
