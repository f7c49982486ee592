// Package groups splits a batch into groups that share a key (a Cluster slot, a node), the
// step before one script call or one round trip per group.
package groups

// By returns items split by key, each group in the order of its items and the groups in the
// order their keys first appear.
func By[T any, K comparable](items []T, key func(T) K) [][]T {
	index := map[K]int{}
	var out [][]T
	for _, item := range items {
		k := key(item)
		g, ok := index[k]
		if !ok {
			g = len(out)
			index[k] = g
			out = append(out, nil)
		}
		out[g] = append(out[g], item)
	}
	return out
}

// Indexes returns 0, 1, …, n-1: the items of a batch of n to group by position.
func Indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}
