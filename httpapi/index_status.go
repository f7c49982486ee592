package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
)

// IndexSourceStatus is one change source's progress (GET /v1/index/status).
type IndexSourceStatus struct {
	// Name is the source: "postgres", "mysql", "streams" or "kafka".
	Name string `json:"name"`
	// BackfilledRows is how many rows the initial copy wrote (postgres, mysql).
	BackfilledRows int64 `json:"backfilledRows"`
	// LagBytes is the WAL (postgres) or binary log (mysql) not yet applied at the last read;
	// LagSeconds the age of the last applied commit when it was applied.
	LagBytes   int64   `json:"lagBytes"`
	LagSeconds float64 `json:"lagSeconds"`
	// LagRecords is how many records are not yet applied (kafka: over the partitions this
	// instance owns, as of their last fetch; see GroupLagRecords for the whole group).
	LagRecords int64 `json:"lagRecords"`
	// GroupLagRecords is (kafka) how many records wait in the whole consumer group: over every
	// partition of the topics, whoever owns it (a killed instance's too), the end offset minus
	// the group's committed offset, as of KafkaGroup.ReadAt. Omitted before the first read.
	GroupLagRecords *int64 `json:"groupLagRecords,omitempty"`
	// KafkaGroup is (kafka) the consumer group: its timing, members and every partition.
	KafkaGroup *IndexKafkaGroup `json:"kafkaGroup,omitempty"`
	// Events is how many row changes the stream applied since the process started (postgres,
	// mysql).
	Events int64 `json:"events"`
	// The binlog source's progress (mysql; omitted when zero): Position is the last applied
	// "file:pos"; PendingEvents the row changes read and not yet applied; EventsPerSecond the
	// applied rate over the last seconds; SnapshotRowsEstimate the snapshot's expected rows and
	// SnapshotPercent its progress (100 once complete); Streaming whether the binlog is being
	// read now.
	Position             string  `json:"position,omitempty"`
	PendingEvents        int64   `json:"pendingEvents,omitempty"`
	EventsPerSecond      float64 `json:"eventsPerSecond,omitempty"`
	SnapshotRowsEstimate int64   `json:"snapshotRowsEstimate,omitempty"`
	SnapshotPercent      float64 `json:"snapshotPercent,omitempty"`
	Streaming            bool    `json:"streaming,omitempty"`
}

// IndexKafkaGroup is the Kafka source's consumer group as this instance last read it.
type IndexKafkaGroup struct {
	// Group is the consumer group; State its state at the coordinator (Stable,
	// PreparingRebalance, CompletingRebalance, Empty, Dead); Members how many members it
	// counts, a killed one included until its session times out.
	Group   string `json:"group"`
	State   string `json:"state,omitempty"`
	Members int    `json:"members"`
	// The group timing: a killed instance's partitions move to the others after about
	// SessionTimeoutSeconds plus HeartbeatIntervalSeconds, at most SessionTimeoutSeconds plus
	// RebalanceTimeoutSeconds. The lag is read every LagIntervalSeconds.
	SessionTimeoutSeconds    float64 `json:"sessionTimeoutSeconds"`
	HeartbeatIntervalSeconds float64 `json:"heartbeatIntervalSeconds"`
	RebalanceTimeoutSeconds  float64 `json:"rebalanceTimeoutSeconds"`
	LagIntervalSeconds       float64 `json:"lagIntervalSeconds"`
	// ReadAt is when the partitions were read, AgeSeconds how long ago (both omitted before
	// the first read).
	ReadAt     *time.Time `json:"readAt,omitempty"`
	AgeSeconds *float64   `json:"ageSeconds,omitempty"`
	// Error is why the last read failed, at ErrorAt (omitted when it succeeded); the partitions
	// are then those of the last read that succeeded.
	Error   string     `json:"error,omitempty"`
	ErrorAt *time.Time `json:"errorAt,omitempty"`
	// Partitions are every partition of the topics.
	Partitions []IndexKafkaPartition `json:"partitions"`
}

// IndexKafkaPartition is one partition's progress in the consumer group.
type IndexKafkaPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// EndOffset is the offset the next record gets; CommittedOffset the group's commit (-1:
	// none); LagRecords the records between them (-1: unknown, see Error).
	EndOffset       int64 `json:"endOffset"`
	CommittedOffset int64 `json:"committedOffset"`
	LagRecords      int64 `json:"lagRecords"`
	// Member, ClientID and Host name the owner (omitted: no member has it); Self whether it is
	// this instance.
	Member   string `json:"member,omitempty"`
	ClientID string `json:"clientId,omitempty"`
	Host     string `json:"host,omitempty"`
	Self     bool   `json:"self"`
	Error    string `json:"error,omitempty"`
}

// indexTableStatus is one declared table's counters.
type indexTableStatus struct {
	DB      string `json:"db"`
	Table   string `json:"table"`
	Applied int64  `json:"applied"`
	Stale   int64  `json:"stale"`
	Failed  int64  `json:"failed"`
}

// indexStatus answers the index status (indexStatusDoc).
func (s *server) indexStatus(w http.ResponseWriter, r *http.Request) error {
	if s.index == nil {
		return redstate.Errorf(redstate.ENOTFOUND, "the index block is not enabled on this server")
	}
	writeJSON(w, http.StatusOK, s.indexStatusDoc(r.Context()))
	return nil
}

// indexStatusDoc is the index counters of every instance sharing the store (as of their last
// flush, plus this instance's unflushed counts), scope "shared"; when the store cannot be read,
// this instance's counters since it started, scope "instance". Then this instance's sources'
// progress. s.index must be set.
func (s *server) indexStatusDoc(ctx context.Context) map[string]any {
	tables := []indexTableStatus{}
	scope := "shared"
	counters, err := s.index.SharedCounters(ctx)
	if err != nil {
		s.logger.Warn("index status: shared counters unreadable; answering this instance's", "err", err)
		scope = "instance"
		counters = index.CounterSet{Tables: map[index.TableRef]index.Counters{}, Skipped: s.index.Skipped(), Unreadable: s.index.Unreadable()}
		for _, t := range s.index.Tables() {
			if st := s.index.Stats(t.DB, t.Table); st != nil {
				counters.Tables[index.TableRef{DB: t.DB, Table: t.Table}] = index.Counters{Applied: st.Applied.Load(), Stale: st.Stale.Load(), Failed: st.Failed.Load()}
			}
		}
	}
	for _, t := range s.index.Tables() {
		c := counters.Tables[index.TableRef{DB: t.DB, Table: t.Table}]
		tables = append(tables, indexTableStatus{DB: t.DB, Table: t.Table, Applied: c.Applied, Stale: c.Stale, Failed: c.Failed})
	}
	sources := []IndexSourceStatus{}
	if s.indexSources != nil {
		sources = append(sources, s.indexSources()...)
	}
	return map[string]any{
		"scope": scope, "tables": tables, "skipped": counters.Skipped, "unreadable": counters.Unreadable, "sources": sources,
	}
}
