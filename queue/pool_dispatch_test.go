package queue

import "testing"

// TestAssign_WeightedSharesStayWithinOneJob: slot by slot, the weighted pool's smooth weighted
// round robin keeps every queue's count within one job of its weight's share at every point of
// the sequence, and gives each exactly its share over whole cycles.
func TestAssign_WeightedSharesStayWithinOneJob(t *testing.T) {
	for _, weights := range [][]int{{6, 1}, {6, 3, 1}, {5, 5, 1}, {100, 1, 1, 1, 1}, {7, 3, 2, 2, 1}} {
		w := &Worker{credit: make([]int, len(weights))}
		var open []int
		total := 0
		for i, x := range weights {
			w.lanes = append(w.lanes, &lane{weight: x})
			open = append(open, i)
			total += x
		}
		counts := make([]int, len(weights))
		for n := 1; n <= 100*total; n++ {
			w.assign(1, open, counts)
			for i, x := range weights {
				if d := counts[i]*total - n*x; d >= total || -d >= total {
					t.Fatalf("weights %v after %d picks: counts %v; queue %d is %d/%d jobs off its share", weights, n, counts, i, d, total)
				}
			}
		}
		for i, x := range weights {
			if counts[i] != 100*x {
				t.Errorf("weights %v: counts %v after 100 cycles, want 100× the weights", weights, counts)
				break
			}
		}
	}
}

// TestAssign_StrictGivesEverySlotToTheFirstOpenQueue: a strict pool asks only its highest
// priority queue that is open; what it cannot fill goes to the next (fill reassigns it).
func TestAssign_StrictGivesEverySlotToTheFirstOpenQueue(t *testing.T) {
	w := &Worker{pool: PoolSettings{Strict: true}, lanes: []*lane{{weight: 3}, {weight: 2}, {weight: 1}}, credit: make([]int, 3)}
	counts := make([]int, 3)
	w.assign(8, []int{1, 2}, counts)
	if counts[0] != 0 || counts[1] != 8 || counts[2] != 0 {
		t.Fatalf("counts %v, want all 8 slots on the first open queue (index 1)", counts)
	}
}
