package cli

import (
	"time"

	"github.com/redstate/redstate/httpapi"
	"github.com/redstate/redstate/index/kafkasource"
)

// kafkaGroupStatus adds the Kafka source's group to st for GET /v1/index/status: the whole
// group's lag as last read (now is the answer's time, for the read's age).
func kafkaGroupStatus(st *httpapi.IndexSourceStatus, d *kafkasource.Detail, now time.Time) {
	g, timing := d.Group, d.Timing
	kg := &httpapi.IndexKafkaGroup{Group: g.Group, State: g.State, Members: g.Members,
		SessionTimeoutSeconds: timing.SessionTimeout.Seconds(), HeartbeatIntervalSeconds: timing.HeartbeatInterval.Seconds(),
		RebalanceTimeoutSeconds: timing.RebalanceTimeout.Seconds(), LagIntervalSeconds: timing.GroupLagInterval.Seconds(),
		Error: g.Err, Partitions: []httpapi.IndexKafkaPartition{}}
	if !g.ReadAt.IsZero() {
		records, at, age := g.Records, g.ReadAt, now.Sub(g.ReadAt).Seconds()
		st.GroupLagRecords, kg.ReadAt, kg.AgeSeconds = &records, &at, &age
	}
	if g.Err != "" {
		at := g.ErrAt
		kg.ErrorAt = &at
	}
	for _, p := range g.Partitions {
		kg.Partitions = append(kg.Partitions, httpapi.IndexKafkaPartition{Topic: p.Topic, Partition: p.Partition, EndOffset: p.End,
			CommittedOffset: p.Committed, LagRecords: p.Lag, Member: p.Member, ClientID: p.ClientID, Host: p.Host, Self: p.Self, Error: p.Err})
	}
	st.KafkaGroup = kg
}
