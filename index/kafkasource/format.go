package kafkasource

import (
	"encoding/json"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
)

// envelopeFields are the top-level fields that tell the two formats apart.
type envelopeFields struct {
	// Debezium: the JSON converter's wrapper, or the bare envelope.
	Payload json.RawMessage `json:"payload"`
	Op      json.RawMessage `json:"op"`
	Source  json.RawMessage `json:"source"`
	// Canal flat message.
	Data  json.RawMessage `json:"data"`
	Type  json.RawMessage `json:"type"`
	IsDdl json.RawMessage `json:"isDdl"`
}

// detectFormat says which format an event is in (index.FormatAuto): Debezium when it has
// payload, op or source; Canal when it has type with data or isDdl. Errors: EINVALID (neither,
// or not a JSON object).
func detectFormat(raw []byte) (string, error) {
	var f envelopeFields
	if err := json.Unmarshal(raw, &f); err != nil {
		return "", redstate.Errorf(redstate.EINVALID, "not a JSON object: %v", err)
	}
	switch {
	case f.Payload != nil || f.Op != nil || f.Source != nil:
		return index.FormatDebezium, nil
	case f.Type != nil && (f.Data != nil || f.IsDdl != nil):
		return index.FormatCanal, nil
	}
	return "", redstate.Errorf(redstate.EINVALID, "neither a Canal flat message (type, data) nor a Debezium event (payload, op, source)")
}
