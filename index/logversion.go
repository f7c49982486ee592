package index

import (
	"encoding/json"
	"fmt"
	"strings"
)

// LogVersion is the version of a change read from one partition of a log (a Kafka topic
// partition) whose event gives no source position (Canal flat messages, Debezium events
// without lsn/sequence/file): the record's offset in its partition, then the row's index in
// the record. Within one partition a later record always has a higher version, whatever the
// events' times and batch ids; versions of different partitions do not compare meaningfully,
// so every change of one row must land in one partition (see docs/index.md, Kafka).
func LogVersion(offset uint64, row uint32) Version {
	return Version(fmt.Sprintf("k%016x%08x", offset, row))
}

// ParseLogEvent is ParseEvent for a Canal or Debezium event read at offset of a log
// partition: the changes ParseEvent would order by time (TimeVersion: Canal flat messages,
// Debezium events without a source position) get LogVersion(offset, row index in the event)
// instead; those with a source position (PostgreSQL LSN, binlog file/pos/row) keep it, since
// it orders them across partitions too. A native event keeps the version it gives. Errors as
// ParseEvent.
func ParseLogEvent(format string, raw json.RawMessage, offset uint64) (changes []Change, skipped bool, err error) {
	changes, skipped, err = ParseEvent(format, raw, offset)
	if format == FormatNative || format == "" {
		return changes, skipped, err
	}
	for i := range changes {
		if strings.HasPrefix(string(changes[i].Version), "t") {
			changes[i].Version = LogVersion(offset, uint32(i))
		}
	}
	return changes, skipped, err
}
