package index

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redstate/redstate"
)

// Event formats accepted by ParseEvents.
const (
	// FormatNative is redstate's own change JSON (see NativeEvent).
	FormatNative = "native"
	// FormatCanal is Alibaba Canal's flat message (data, old, type, es, ts, id, isDdl, pkNames).
	FormatCanal = "canal"
	// FormatDebezium is Debezium's change-event envelope (before, after, source, op, ts_ms),
	// bare or inside {"schema", "payload"}.
	FormatDebezium = "debezium"
)

// NativeEvent is one change in FormatNative.
type NativeEvent struct {
	// DB and Table name the declared table.
	DB    string `json:"db"`
	Table string `json:"table"`
	// Op is insert, update, upsert, snapshot or delete.
	Op string `json:"op"`
	// Row maps columns to values (strings, numbers, booleans or null).
	Row map[string]json.RawMessage `json:"row"`
	// Version is one of {"commitLsn","lsn"} (PostgreSQL), {"file","pos","row"} (MySQL
	// binlog) or {"tsMs","batch","row"} (time-ordered sources).
	Version NativeVersion `json:"version"`
	// Time is when the change happened at the source (RFC 3339), optional.
	Time time.Time `json:"time"`
}

// NativeVersion is the version object of a NativeEvent.
type NativeVersion struct {
	CommitLSN string `json:"commitLsn"`
	LSN       string `json:"lsn"`
	File      string `json:"file"`
	Pos       uint64 `json:"pos"`
	Row       uint32 `json:"row"`
	TsMs      int64  `json:"tsMs"`
	Batch     uint64 `json:"batch"`
	// Position orders changes of one tsMs and batch (see TimeVersion); when absent, the event's
	// delivery position is used.
	Position *uint64 `json:"position"`
}

// version returns the Version the object names; position is the event's delivery position.
func (v NativeVersion) version(position uint64) (Version, error) {
	switch {
	case v.LSN != "":
		lsn, err := ParseLSN(v.LSN)
		if err != nil {
			return "", err
		}
		commit := lsn
		if v.CommitLSN != "" {
			if commit, err = ParseLSN(v.CommitLSN); err != nil {
				return "", err
			}
		}
		return PostgresVersion(commit, lsn), nil
	case v.File != "":
		n, err := BinlogFileNumber(v.File)
		if err != nil {
			return "", err
		}
		return BinlogVersion(n, v.Pos, v.Row), nil
	case v.TsMs > 0:
		if v.Position != nil {
			position = *v.Position
		}
		return TimeVersion(v.TsMs, v.Batch, position, v.Row), nil
	}
	return "", redstate.Errorf(redstate.EINVALID, "version must give lsn (and commitLsn), file/pos/row, or tsMs/batch/row (and position)")
}

// BinlogFileNumber is the sequence number of a binlog file name ("mysql-bin.000042" → 42).
func BinlogFileNumber(file string) (uint32, error) {
	i := strings.LastIndexByte(file, '.')
	n, err := strconv.ParseUint(file[i+1:], 10, 32)
	if err != nil {
		return 0, redstate.Errorf(redstate.EINVALID, "binlog file %q has no numeric suffix", file)
	}
	return uint32(n), nil
}

// Parsed is the outcome of ParseEvents: the changes, how many events were skipped (DDL) and the
// events that could not be read (each message names the event's index).
type Parsed struct {
	Changes []Change
	Skipped int
	Errors  []string
}

// ParseEvents reads a JSON array of events in format (see ParseEventList); the first event is
// at delivery position first. Errors: EINVALID (unknown format, body not a JSON array).
func ParseEvents(format string, body []byte, first uint64) (Parsed, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return Parsed{}, redstate.Errorf(redstate.EINVALID, "events must be a JSON array: %v", err)
	}
	return ParseEventList(format, raw, first)
}

// CheckFormat reports whether format is one ParseEvent reads. Errors: EINVALID.
func CheckFormat(format string) error {
	switch format {
	case "", FormatNative, FormatCanal, FormatDebezium:
		return nil
	}
	return redstate.Errorf(redstate.EINVALID, "unknown event format %q: use native, canal or debezium", format)
}

// ParseEventList reads events in format; event i is at delivery position first+i (the position
// orders the messages of one Canal batch, see TimeVersion). A malformed event is reported in
// Errors and never stops the others; DDL is skipped and counted. Errors: EINVALID (unknown
// format).
func ParseEventList(format string, raw []json.RawMessage, first uint64) (Parsed, error) {
	if err := CheckFormat(format); err != nil {
		return Parsed{}, err
	}
	var p Parsed
	for i, ev := range raw {
		changes, skipped, err := ParseEvent(format, ev, first+uint64(i))
		p.Add(i, changes, skipped, err)
	}
	return p, nil
}

// Add records what ParseEvent gave for the event at index i of a list: its changes, a skip, or
// err (the message naming the event's index).
func (p *Parsed) Add(i int, changes []Change, skipped bool, err error) {
	switch {
	case err != nil:
		p.Errors = append(p.Errors, fmt.Sprintf("event %d: %s", i, redstate.ErrorMessage(err)))
	case skipped:
		p.Skipped++
	default:
		p.Changes = append(p.Changes, changes...)
	}
}

// ParseEvent reads one event in format delivered at position: its place in the stream it came
// in (see TimeVersion), which must be the same whenever the event is delivered again (the index
// in a resent batch, a replay file's line, a stream entry's id, a Kafka offset). skipped is true
// for DDL and other events that change no row. Errors: EINVALID (the event cannot be read; the
// format is not checked, see CheckFormat).
func ParseEvent(format string, raw json.RawMessage, position uint64) (changes []Change, skipped bool, err error) {
	switch format {
	case FormatCanal:
		return parseCanal(raw, position)
	case FormatDebezium:
		return parseDebezium(raw, position)
	}
	changes, err = parseNative(raw, position)
	return changes, false, err
}

func parseNative(raw json.RawMessage, position uint64) ([]Change, error) {
	var ev NativeEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, redstate.Errorf(redstate.EINVALID, "not a native event: %v", err)
	}
	op, err := opOf(ev.Op)
	if err != nil {
		return nil, err
	}
	v, err := ev.Version.version(position)
	if err != nil {
		return nil, err
	}
	row, err := textRow(ev.Row)
	if err != nil {
		return nil, err
	}
	return []Change{{DB: ev.DB, Table: ev.Table, Op: op, Row: row, Version: v, Time: ev.Time, Encoding: EncodingNative}}, nil
}

// opOf maps an operation name of any format to an Op.
func opOf(s string) (Op, error) {
	switch strings.ToLower(s) {
	case "insert", "update", "upsert", "snapshot", "c", "u", "r":
		return OpUpsert, nil
	case "delete", "d":
		return OpDelete, nil
	case "truncate", "t":
		return OpTruncate, nil
	}
	return "", redstate.Errorf(redstate.EINVALID, "unknown change op %q", s)
}

// TextRow is textRow for sources outside the package: JSON column values as the text values
// converters read (strings as they are, numbers by their literal, booleans as true/false, null
// as NULL, objects and arrays as JSON). A string value that is not valid JSON text is kept raw.
func TextRow(in map[string]json.RawMessage) map[string]*string {
	row, err := textRow(in)
	if err != nil {
		row = make(map[string]*string, len(in))
		for col, v := range in {
			s := string(v)
			row[col] = &s
		}
	}
	return row
}

// textRow turns JSON column values into the text values converters read: strings as they are,
// numbers by their literal, booleans as true/false, null as NULL, objects and arrays as JSON.
func textRow(in map[string]json.RawMessage) (map[string]*string, error) {
	out := make(map[string]*string, len(in))
	for col, v := range in {
		v = bytes.TrimSpace(v)
		switch {
		case len(v) == 0 || string(v) == "null":
			out[col] = nil
		case v[0] == '"':
			if s, ok := plainString(v); ok {
				out[col] = &s
				continue
			}
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, redstate.Errorf(redstate.EINVALID, "column %s: %v", col, err)
			}
			out[col] = &s
		default:
			s := string(v)
			out[col] = &s
		}
	}
	return out, nil
}

// plainString returns the text of the JSON string v when it needs no decoding (no escape,
// no control character, valid UTF-8): its bytes between the quotes, as json.Unmarshal would
// return them, without its cost. ok is false otherwise.
func plainString(v []byte) (s string, ok bool) {
	if len(v) < 2 || v[len(v)-1] != '"' {
		return "", false
	}
	in := v[1 : len(v)-1]
	for _, c := range in {
		if c < 0x20 || c == '\\' || c == '"' {
			return "", false
		}
	}
	if !utf8.Valid(in) {
		return "", false
	}
	return string(in), true
}

// canalHeader is the fields of Canal's flat message but its rows.
type canalHeader struct {
	Database string `json:"database"`
	Table    string `json:"table"`
	Type     string `json:"type"`
	Es       int64  `json:"es"`
	Ts       int64  `json:"ts"`
	ID       uint64 `json:"id"`
	IsDdl    bool   `json:"isDdl"`
}

// canalMessage is Canal's flat message, its values as they are.
type canalMessage struct {
	canalHeader
	Data []map[string]json.RawMessage `json:"data"`
}

// canalText is Canal's flat message with every value a string or null, as Canal writes them.
type canalText struct {
	canalHeader
	Data textRows `json:"data"`
}

// parseCanal reads a flat message: one change per row of data, versioned by (es, id, delivery
// position, row index). Canal gives no binlog position in flat messages; es has the binlog's
// 1-second resolution; id is the batch id, increasing per Canal instance but shared by every
// flat message Canal's MQ converter makes of one batch, so only the delivery order (which Canal
// keeps per partition) orders the messages of one batch.
func parseCanal(raw json.RawMessage, position uint64) ([]Change, bool, error) {
	// Canal writes every value as a JSON string or null: decoded straight into text, the rows
	// need no second pass; a message with other values is read again value by value.
	var text canalText
	err := json.Unmarshal(raw, &text)
	if err == nil {
		return text.changes(position)
	}
	var m canalMessage
	if _, typed := err.(*json.UnmarshalTypeError); !typed {
		return nil, false, redstate.Errorf(redstate.EINVALID, "not a Canal flat message: %v", err)
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, false, redstate.Errorf(redstate.EINVALID, "not a Canal flat message: %v", err)
	}
	rows := make([]map[string]*string, len(m.Data))
	for i, d := range m.Data {
		if rows[i], err = textRow(d); err != nil {
			return nil, false, err
		}
	}
	text.canalHeader, text.Data = m.canalHeader, rows
	return text.changes(position)
}

// changes are the changes of m delivered at position; skipped for DDL and other statements but
// TRUNCATE (a DDL to Canal), which empties the table.
func (m canalText) changes(position uint64) ([]Change, bool, error) {
	typ := strings.ToUpper(m.Type)
	if m.IsDdl && typ != "TRUNCATE" {
		return nil, true, nil
	}
	var op Op
	switch typ {
	case "INSERT", "UPDATE":
		op = OpUpsert
	case "DELETE":
		op = OpDelete
	case "TRUNCATE":
		op = OpTruncate
	default:
		return nil, true, nil // QUERY, CREATE, ALTER, …: not row changes
	}
	if m.Es <= 0 {
		return nil, false, redstate.Errorf(redstate.EINVALID, "Canal message has no es (event time)")
	}
	if op == OpTruncate {
		return []Change{{DB: m.Database, Table: m.Table, Op: op, Version: TimeVersion(m.Es, m.ID, position, 0), Time: time.UnixMilli(m.Es).UTC()}}, false, nil
	}
	changes := make([]Change, 0, len(m.Data))
	for i, row := range m.Data {
		changes = append(changes, Change{DB: m.Database, Table: m.Table, Op: op, Row: row,
			Version: TimeVersion(m.Es, m.ID, position, uint32(i)), Time: time.UnixMilli(m.Es).UTC(), Encoding: EncodingCanal})
	}
	return changes, false, nil
}

// debeziumEvent is Debezium's envelope.
type debeziumEvent struct {
	Before map[string]json.RawMessage `json:"before"`
	After  map[string]json.RawMessage `json:"after"`
	Source struct {
		DB       string          `json:"db"`
		Table    string          `json:"table"`
		LSN      *uint64         `json:"lsn"`
		Sequence string          `json:"sequence"`
		File     string          `json:"file"`
		Pos      uint64          `json:"pos"`
		Row      uint32          `json:"row"`
		TsMs     int64           `json:"ts_ms"`
		Snapshot json.RawMessage `json:"snapshot"`
	} `json:"source"`
	Op   string `json:"op"`
	TsMs int64  `json:"ts_ms"`
}

// parseDebezium reads an envelope (bare, or the payload of {"schema","payload"}, then read by
// its schema: see debeziumRow); "op":"t" is a truncate of the table, "m" (a logical decoding
// message) and events without op are skipped. Versions:
// PostgreSQL from source.sequence ["<last commit LSN>","<LSN>"] (else the LSN alone), MySQL
// from source file/pos/row; a connector that gives neither (SQL Server, Oracle, MongoDB, …) is
// ordered like Canal by its change time (source.ts_ms, else ts_ms) and the delivery position. A
// delete's row is its before image (only the key is needed).
func parseDebezium(raw json.RawMessage, position uint64) ([]Change, bool, error) {
	var wrapped struct {
		Schema  json.RawMessage `json:"schema"`
		Payload json.RawMessage `json:"payload"`
	}
	var schema json.RawMessage
	if err := json.Unmarshal(raw, &wrapped); err == nil && len(wrapped.Payload) > 0 && string(wrapped.Payload) != "null" {
		raw, schema = wrapped.Payload, wrapped.Schema
	}
	var ev debeziumEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, false, redstate.Errorf(redstate.EINVALID, "not a Debezium change event: %v", err)
	}
	if ev.Op == "" || ev.Op == "m" {
		return nil, true, nil // schema change, heartbeat, transaction boundary, logical decoding message
	}
	op, err := opOf(ev.Op)
	if err != nil {
		return nil, false, err
	}
	ch := Change{DB: ev.Source.DB, Table: ev.Source.Table, Op: op}
	if op != OpTruncate { // a truncate names the table alone
		image := ev.After
		if op == OpDelete {
			image = ev.Before
		}
		if image == nil {
			return nil, false, redstate.Errorf(redstate.EINVALID, "Debezium %q event has no %s image", ev.Op, map[bool]string{true: "before", false: "after"}[op == OpDelete])
		}
		if err := debeziumRow(&ch, image, schema, op == OpDelete); err != nil {
			return nil, false, err
		}
	}
	ts := ev.Source.TsMs
	if ts == 0 {
		ts = ev.TsMs
	}
	var v Version
	src := ev.Source
	switch {
	case src.Sequence != "":
		var seq []*string
		if err := json.Unmarshal([]byte(src.Sequence), &seq); err != nil || len(seq) != 2 || seq[1] == nil {
			return nil, false, redstate.Errorf(redstate.EINVALID, "Debezium source.sequence %q is not [commitLsn, lsn]", src.Sequence)
		}
		lsn, err := strconv.ParseUint(*seq[1], 10, 64)
		if err != nil {
			return nil, false, redstate.Errorf(redstate.EINVALID, "Debezium source.sequence LSN %q", *seq[1])
		}
		commit := lsn
		if seq[0] != nil {
			if commit, err = strconv.ParseUint(*seq[0], 10, 64); err != nil {
				return nil, false, redstate.Errorf(redstate.EINVALID, "Debezium source.sequence commit LSN %q", *seq[0])
			}
		}
		v = PostgresVersion(commit, lsn)
	case src.LSN != nil:
		v = PostgresVersion(*src.LSN, *src.LSN)
	case src.File != "":
		n, err := BinlogFileNumber(src.File)
		if err != nil {
			return nil, false, err
		}
		v = BinlogVersion(n, src.Pos, src.Row)
	case ts > 0:
		v = TimeVersion(ts, 0, position, 0)
	default:
		return nil, false, redstate.Errorf(redstate.EINVALID, "Debezium event has no source lsn, sequence, file/pos or ts_ms to order it by")
	}
	if ts > 0 {
		ch.Time = time.UnixMilli(ts).UTC()
	}
	ch.Version = v
	return []Change{ch}, false, nil
}

// debeziumRow sets ch's row from an image of an envelope whose schema (JSON null or absent:
// none) is schema: with a schema every value is decoded by its field's type into the index's
// text (EncodingDebeziumSchema, a bytes field into its bytes); without one the values are kept as
// the converter wrote them, to be read by the index's DebeziumSettings (EncodingDebezium).
// before selects the before image's schema.
func debeziumRow(ch *Change, image map[string]json.RawMessage, schema json.RawMessage, before bool) error {
	row, err := textRow(image)
	if err != nil {
		return err
	}
	ch.Row, ch.Encoding = row, EncodingDebezium
	if len(schema) == 0 || string(schema) == "null" {
		return nil
	}
	imgs, err := debeziumSchema(schema)
	if err != nil {
		return err
	}
	img := imgs.after
	if before {
		img = imgs.before
	}
	for col, f := range img.fields {
		if v := row[col]; v != nil {
			d, err := f.decode(col, *v)
			if err != nil {
				return err
			}
			row[col] = &d
		}
	}
	ch.Encoding, ch.DecodedBytes = EncodingDebeziumSchema, img.bytes
	return nil
}
