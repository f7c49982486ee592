// Package suggest finds the name a user probably meant when they typed an unknown one: a
// configuration key, a query parameter, a command-line flag.
package suggest

import "strings"

// Closest returns the candidate nearest to name by edit distance (insertions, deletions,
// substitutions and transpositions of adjacent characters, ignoring case), or "" when none is
// within maxDist. Among candidates at the same distance the first wins.
func Closest(name string, candidates []string, maxDist int) string {
	best, bestDist := "", maxDist+1
	lower := strings.ToLower(name)
	for _, c := range candidates {
		if d := Distance(lower, strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// Near is Closest with a bound that grows with the name's length: a third of it, at least one,
// so a short name is matched only by a near miss ("limt" suggests "limit"; "page" suggests no
// "size").
func Near(name string, candidates []string) string {
	return Closest(name, candidates, max(1, len(name)/3))
}

// Distance is the optimal string alignment distance between a and b: the fewest insertions,
// deletions, substitutions and transpositions of adjacent bytes that turn a into b.
func Distance(a, b string) int {
	prevPrev := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prevPrev[j-2]+1)
			}
		}
		prevPrev, prev, cur = prev, cur, prevPrev
	}
	return prev[len(b)]
}
