package history

import (
	"math"
	"sort"
)

// Bounds are the upper bounds (seconds, inclusive) of the latency histogram buckets every
// Observe counts into; a latency above the last bound counts into an overflow bucket (index
// len(Bounds)). Quantiles are interpolated linearly inside a bucket, so a quantile read is
// exact to within its bucket: 1-2.5-5 steps from a millisecond to an hour.
var Bounds = []float64{
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
	1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 3600,
}

// bucketOf is the histogram bucket of a latency of v seconds.
func bucketOf(v float64) int {
	return sort.SearchFloat64s(Bounds, v) // first bound >= v; len(Bounds) past the last
}

// quantileOf computes quantile q (0..1) of the histogram counts (len(Bounds)+1 buckets);
// false when it holds no observation. The overflow bucket reads as the last bound.
func quantileOf(counts []float64, q float64) (float64, bool) {
	var total float64
	for _, c := range counts {
		total += c
	}
	if total == 0 {
		return 0, false
	}
	rank := q * total
	var seen float64
	for i, c := range counts {
		if c == 0 || seen+c < rank {
			seen += c
			continue
		}
		if i == len(Bounds) {
			return Bounds[len(Bounds)-1], true
		}
		lower := 0.0
		if i > 0 {
			lower = Bounds[i-1]
		}
		return lower + (Bounds[i]-lower)*math.Max(0, rank-seen)/c, true
	}
	return Bounds[len(Bounds)-1], true
}
