package streamsource

import (
	"context"
	"strings"

	"github.com/redstate/redstate/internal/rediserr"
)

// Backlog returns, for each stream of the source, the entries its consumer group has not
// applied yet: those never delivered (XINFO GROUPS lag) plus those delivered and not
// acknowledged (pending). A stream whose lag Redis cannot tell (an entry deleted in the
// group's range: lag -1) or that has no group yet is left out. One XINFO GROUPS per stream.
// Errors: EUNAVAILABLE.
func (s *Source) Backlog(ctx context.Context) (map[string]int64, error) {
	out := make(map[string]int64, len(s.opts.Streams))
	for _, stream := range s.opts.Streams {
		groups, err := s.opts.Client.XInfoGroups(ctx, stream).Result()
		if err != nil {
			if strings.HasSuffix(err.Error(), "no such key") {
				continue // the stream does not exist yet
			}
			return nil, rediserr.Map(err, "stream backlog")
		}
		for _, g := range groups {
			if g.Name == s.opts.Group && g.Lag >= 0 {
				out[stream] = g.Lag + g.Pending
			}
		}
	}
	return out, nil
}
