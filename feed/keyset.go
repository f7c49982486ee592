package feed

// pageSize is the size of the pages the feed's own loops read from SQL and Redis.
const pageSize = 1000

// keyset walks a list by keyset pages, the one pagination loop of the feed: fetch returns up to
// limit items strictly after a key (the zero key is the start), key gives an item's key, and
// each receives every non-empty page, in order, and may end the walk by returning false. A page
// shorter than limit is the last.
func keyset[K, T any](limit int, fetch func(after K, limit int) ([]T, error), key func(T) K, each func(page []T) (bool, error)) error {
	var after K
	for {
		page, err := fetch(after, limit)
		if err != nil {
			return err
		}
		if len(page) > 0 {
			if more, err := each(page); err != nil || !more {
				return err
			}
		}
		if len(page) < limit {
			return nil
		}
		after = key(page[len(page)-1])
	}
}

// cursorAfter is the cursor of the pages after r.
func cursorAfter(r PostRef) Cursor { return Cursor{Time: r.CreateTime, ID: r.ID} }

// followerKey is the key of the pages of followers after f.
func followerKey(f Follow) int64 { return f.Follower }

// idKey is the key of the pages of ids after id.
func idKey(id int64) int64 { return id }

// collectRefs reads every keyset page of fetch (newest first) and returns them concatenated.
func collectRefs(fetch func(after Cursor, limit int) ([]PostRef, error)) ([]PostRef, error) {
	var out []PostRef
	err := keyset(pageSize, fetch, cursorAfter, func(page []PostRef) (bool, error) {
		out = append(out, page...)
		return true, nil
	})
	return out, err
}

// refIDs returns the ids of refs.
func refIDs(refs []PostRef) []int64 {
	ids := make([]int64, len(refs))
	for i, r := range refs {
		ids[i] = r.ID
	}
	return ids
}
