package buildstatus

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// identityPrefix is how every stored document written by this package begins: Encode writes
// buildId then projectId first (struct order).
var identityPrefix = []byte(`{"buildId":"`)

// IdentityOf returns the buildId and projectId of a stored document without decoding the rest of
// it. Documents written by Encode are read from their fixed prefix; any other JSON (a foreign
// producer's field order) is decoded just far enough to find the two fields.
func IdentityOf(stored []byte) (buildID, projectID string, err error) {
	if rest, ok := bytes.CutPrefix(stored, identityPrefix); ok && len(rest) > 36+len(`","projectId":"`) {
		id := rest[:36]
		rest = rest[36:]
		if tail, ok := bytes.CutPrefix(rest, []byte(`","projectId":"`)); ok {
			end := bytes.IndexByte(tail, '"')
			if end >= 0 && bytes.IndexByte(tail[:end], '\\') < 0 {
				return string(id), string(tail[:end]), nil
			}
		}
	}
	var ident struct {
		BuildID   string `json:"buildId"`
		ProjectID string `json:"projectId"`
	}
	if err := json.Unmarshal(stored, &ident); err != nil {
		return "", "", fmt.Errorf("stored build is not a PublishResponse: %w", err)
	}
	return ident.BuildID, ident.ProjectID, nil
}
