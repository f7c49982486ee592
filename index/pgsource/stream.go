package pgsource

import (
	"context"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/sqldb"
)

// stream follows the slot with pgoutput over a replication connection until ctx ends (nil) or
// something fails. Changes are gathered (whole transactions, at most BatchChanges, at most
// PollInterval) and applied; only then is the end of the last applied transaction the
// confirmed position, sent to the server every StatusInterval, when it asks, and on the way
// out. A transaction larger than BatchChanges is applied in parts, its end confirmed after its
// last part.
func (s *Source) stream(ctx context.Context) error {
	var confirmed string
	if err := s.opts.DB.QueryRowContext(ctx, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", s.opts.Slot).Scan(&confirmed); err != nil {
		return sqldb.Map(err, "read slot position")
	}
	start, err := index.ParseLSN(confirmed)
	if err != nil {
		return err
	}
	cfg, err := pgconn.ParseConfig(s.opts.URL)
	if err != nil {
		return redstate.Errorf(redstate.EINVALID, "pg source: database URL: %v", err)
	}
	cfg.RuntimeParams["replication"] = "database"
	conn, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return redstate.Errorf(redstate.EUNAVAILABLE, "pg source: replication connection (the user needs the REPLICATION attribute, pg_hba.conf a line for it): %v", err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	err = pglogrepl.StartReplication(ctx, conn, s.opts.Slot, pglogrepl.LSN(start), pglogrepl.StartReplicationOptions{Mode: pglogrepl.LogicalReplication,
		PluginArgs: []string{"proto_version '1'", "publication_names '" + s.opts.Publication + "'"}})
	if err != nil {
		return redstate.Errorf(redstate.EUNAVAILABLE, "pg source: start replication from %s: %v", confirmed, err)
	}
	s.log.Info("streaming with pgoutput", "from", confirmed, "publication", s.opts.Publication)
	st := &streamState{src: s, conn: conn, applied: start, committed: start, dec: newDecoder(s.opts.Database, s.followed())}
	defer st.sendStatus() // best effort: what was applied
	return st.loop(ctx)
}

// followed maps each followed "schema.table" to its index table.
func (s *Source) followed() map[string]index.TableSpec {
	out := map[string]index.TableSpec{}
	for _, t := range s.opts.Tables {
		schema, name := splitTable(t)
		if spec, ok := s.ix.Table(s.opts.Database, name); ok {
			out[schema+"."+name] = spec
		}
	}
	return out
}

// streamState is one replication session.
type streamState struct {
	src  *Source
	conn *pgconn.PgConn
	dec  *decoder
	// applied is the confirmed position: every transaction ending at or before it is in Redis.
	applied uint64
	// committed is the end of the last transaction received whole; pending holds its changes
	// (and those of the open transaction received so far) not yet applied, lost those that
	// cannot be applied.
	committed  uint64
	pending    []index.Change
	lost       []lostChange
	lastCommit time.Time
	// flushBy is when pending must be applied (zero: nothing pending).
	flushBy time.Time
}

func (st *streamState) loop(ctx context.Context) error {
	s := st.src
	nextStatus := time.Now().Add(s.opts.StatusInterval)
	for {
		now := time.Now()
		if !st.flushBy.IsZero() && !now.Before(st.flushBy) {
			if err := st.flush(ctx); err != nil {
				return err
			}
		}
		if !now.Before(nextStatus) {
			if err := st.sendStatus(); err != nil {
				return err
			}
			nextStatus = now.Add(s.opts.StatusInterval)
		}
		deadline := nextStatus
		if !st.flushBy.IsZero() && st.flushBy.Before(deadline) {
			deadline = st.flushBy
		}
		rctx, cancel := context.WithDeadline(ctx, deadline)
		msg, err := st.conn.ReceiveMessage(rctx)
		cancel()
		if ctx.Err() != nil {
			return nil
		}
		if pgconn.Timeout(err) {
			continue
		}
		if err != nil {
			return redstate.Errorf(redstate.EUNAVAILABLE, "pg source: replication stream: %v", err)
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			if err := st.copyData(ctx, m.Data); err != nil {
				return err
			}
		case *pgproto3.ErrorResponse:
			return redstate.Errorf(redstate.EUNAVAILABLE, "pg source: replication stream: %v", pgconn.ErrorResponseToPgError(m))
		}
	}
}

// copyData handles one message of the replication stream.
func (st *streamState) copyData(ctx context.Context, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	switch data[0] {
	case pglogrepl.PrimaryKeepaliveMessageByteID:
		ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(data[1:])
		if err != nil {
			return redstate.Errorf(redstate.EINVALID, "pg source: %v", err)
		}
		if err := st.flush(ctx); err != nil {
			return err
		}
		if end := uint64(ka.ServerWALEnd); !st.dec.open && end > st.applied {
			// Every transaction that ended before the server's position was sent, and is applied:
			// confirming it lets the server recycle WAL of other tables and databases.
			st.applied = end
		}
		st.setLag(uint64(ka.ServerWALEnd))
		if ka.ReplyRequested {
			return st.sendStatus()
		}
	case pglogrepl.XLogDataByteID:
		xld, err := pglogrepl.ParseXLogData(data[1:])
		if err != nil {
			return redstate.Errorf(redstate.EINVALID, "pg source: %v", err)
		}
		out, err := st.dec.decode(xld.WALData)
		if err != nil {
			return err
		}
		if out.skipped > 0 {
			st.src.ix.CountSkipped(out.skipped)
		}
		st.add(out)
		st.setLag(uint64(xld.ServerWALEnd))
		if len(st.pending) >= st.src.opts.BatchChanges {
			return st.flush(ctx)
		}
	}
	return nil
}

// add queues what a message yielded.
func (st *streamState) add(out decoded) {
	st.pending = append(st.pending, out.changes...)
	st.lost = append(st.lost, out.lost...)
	if out.committed != 0 {
		st.committed, st.lastCommit = out.committed, out.commitTime
		if st.flushBy.IsZero() {
			st.flushBy = time.Now().Add(st.src.opts.PollInterval)
		}
	}
}

// flush applies the pending changes and dead-letters the lost ones; then every transaction
// received whole is applied, and its end becomes the confirmed position.
func (st *streamState) flush(ctx context.Context) error {
	s := st.src
	if len(st.pending) > 0 {
		if _, err := s.ix.Apply(index.WithSource(ctx, s.HistorySource()), st.pending); err != nil {
			return err
		}
		s.Events.Add(int64(len(st.pending)))
	}
	for _, l := range st.lost {
		if err := s.ix.DeadLetterEvent(ctx, "postgres", l.raw, l.reason); err != nil {
			return err
		}
		s.log.Warn("change not applied (dead-lettered)", "reason", l.reason)
	}
	st.pending, st.lost, st.flushBy = st.pending[:0], st.lost[:0], time.Time{}
	if st.committed > st.applied {
		st.applied = st.committed
		if !st.lastCommit.IsZero() {
			s.lagMillis.Store(time.Since(st.lastCommit).Milliseconds())
		}
	}
	return nil
}

// sendStatus confirms the applied position to the server (written, flushed and applied: the
// slot's confirmed_flush_lsn follows it).
func (st *streamState) sendStatus() error {
	err := pglogrepl.SendStandbyStatusUpdate(context.Background(), st.conn, pglogrepl.StandbyStatusUpdate{WALWritePosition: pglogrepl.LSN(st.applied)})
	if err != nil {
		return redstate.Errorf(redstate.EUNAVAILABLE, "pg source: standby status update: %v", err)
	}
	return nil
}

// setLag records the WAL between the server's position and the applied one.
func (st *streamState) setLag(serverEnd uint64) {
	if serverEnd > st.applied {
		st.src.lagBytes.Store(int64(serverEnd - st.applied))
	} else {
		st.src.lagBytes.Store(0)
	}
}
