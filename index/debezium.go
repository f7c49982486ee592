package index

import (
	"encoding/base64"
	"encoding/json"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redstate/redstate"
)

// Debezium's time.precision.mode values DebeziumSettings accepts (Debezium's connector
// documentation, "Temporal types"). adaptive is PostgreSQL's default, adaptive_time_microseconds
// MySQL's; the two differ only for TIME(0..3), which adaptive writes in milliseconds.
const (
	TimeAdaptive             = "adaptive"
	TimeAdaptiveMicroseconds = "adaptive_time_microseconds"
	TimeConnect              = "connect"
	TimeIsoString            = "isostring"
	TimeMicroseconds         = "microseconds"
	TimeNanoseconds          = "nanoseconds"
)

// Debezium's decimal.handling.mode values DebeziumSettings accepts.
const (
	DecimalPrecise = "precise"
	DecimalDouble  = "double"
	DecimalString  = "string"
)

// Debezium's binary.handling.mode values DebeziumSettings accepts (CommonConnectorConfig's
// BinaryHandlingMode). With bytes the schema type of a binary column is bytes, which the JSON
// converter writes as standard base64; with the others it is string, written as the mode says
// (base64-url-safe padded, as Java's Base64.getUrlEncoder; hex in lower case).
const (
	BinaryBytes         = "bytes"
	BinaryBase64        = "base64"
	BinaryBase64URLSafe = "base64-url-safe"
	BinaryHex           = "hex"
)

// DebeziumSettings say how the Debezium connector feeding the index writes values, for events
// that carry no schema (the JSON converter's schemas.enable=false, Debezium Server's usual
// setting). They are named after the connector's own settings and take its values; set them as
// the connector has them. An event with a schema ({"schema","payload"}) is read by its schema
// and these settings do not apply to it, but for BinaryHandlingMode: its string fields in a
// bytes column are binary values written as that mode says.
type DebeziumSettings struct {
	// TimePrecisionMode is the connector's time.precision.mode (default TimeAdaptive). With
	// adaptive and adaptive_time_microseconds a number in a datetime column is epoch
	// milliseconds when the column declares a precision of 0..3 or none, microseconds for
	// 4..6, nanoseconds for 7..9; in a time column milliseconds of the day for time(0..3) under
	// adaptive, else microseconds; connect is milliseconds throughout, microseconds and
	// nanoseconds their unit throughout; isostring writes strings. A number in a date column is
	// days since the epoch in every mode.
	TimePrecisionMode string `koanf:"time-precision-mode" json:"timePrecisionMode,omitempty"`
	// DecimalHandlingMode is the connector's decimal.handling.mode (default DecimalPrecise).
	// With precise a string in a column declared decimal(p,s) is the base64 of the unscaled
	// two's-complement integer (scale s), and an object {"scale","value"} a variable-scale
	// decimal; with double and string the value is the number.
	DecimalHandlingMode string `koanf:"decimal-handling-mode" json:"decimalHandlingMode,omitempty"`
	// BinaryHandlingMode is the connector's binary.handling.mode (default BinaryBytes): how a
	// string in a bytes column writes the bytes, standard base64 under bytes and base64,
	// URL-safe base64 under base64-url-safe, hex under hex. With a schema a field the schema
	// types bytes is read as bytes whatever the mode; a string field is read by the mode, and
	// refused under bytes (the connector then writes no binary column as a string).
	BinaryHandlingMode string `koanf:"binary-handling-mode" json:"binaryHandlingMode,omitempty"`
}

// DefaultDebeziumSettings are the connectors' defaults.
func DefaultDebeziumSettings() DebeziumSettings {
	return DebeziumSettings{TimePrecisionMode: TimeAdaptive, DecimalHandlingMode: DecimalPrecise, BinaryHandlingMode: BinaryBytes}
}

// withDefaults returns d with its empty settings at their defaults.
func (d DebeziumSettings) withDefaults() DebeziumSettings {
	def := DefaultDebeziumSettings()
	if d.TimePrecisionMode == "" {
		d.TimePrecisionMode = def.TimePrecisionMode
	}
	if d.DecimalHandlingMode == "" {
		d.DecimalHandlingMode = def.DecimalHandlingMode
	}
	if d.BinaryHandlingMode == "" {
		d.BinaryHandlingMode = def.BinaryHandlingMode
	}
	return d
}

// Validate reports an unknown mode (an empty one is its default), naming its key. Errors:
// EINVALID.
func (d DebeziumSettings) Validate() error {
	d = d.withDefaults()
	switch d.TimePrecisionMode {
	case TimeAdaptive, TimeAdaptiveMicroseconds, TimeConnect, TimeIsoString, TimeMicroseconds, TimeNanoseconds:
	default:
		return redstate.Errorf(redstate.EINVALID, "time-precision-mode %q: use adaptive, adaptive_time_microseconds, connect, isostring, microseconds or nanoseconds (the connector's time.precision.mode)", d.TimePrecisionMode)
	}
	switch d.DecimalHandlingMode {
	case DecimalPrecise, DecimalDouble, DecimalString:
	default:
		return redstate.Errorf(redstate.EINVALID, "decimal-handling-mode %q: use precise, double or string (the connector's decimal.handling.mode)", d.DecimalHandlingMode)
	}
	switch d.BinaryHandlingMode {
	case BinaryBytes, BinaryBase64, BinaryBase64URLSafe, BinaryHex:
	default:
		return redstate.Errorf(redstate.EINVALID, "binary-handling-mode %q: use bytes, base64, base64-url-safe or hex (the connector's binary.handling.mode)", d.BinaryHandlingMode)
	}
	return nil
}

// Time units of epoch and time-of-day numbers, in nanoseconds.
const (
	unitMilli = int64(time.Millisecond)
	unitMicro = int64(time.Microsecond)
	unitNano  = int64(time.Nanosecond)
)

// localLayout is the form of a date-time without a zone (the database's own local time).
const localLayout = "2006-01-02T15:04:05.999999999"

// epochLocal formats n units since the epoch as a date-time without a zone: Debezium encodes a
// DATETIME or TIMESTAMP WITHOUT TIME ZONE as the epoch count of that wall-clock time read as
// UTC. ok is false outside the years 1..9999.
func epochLocal(n, unit int64) (string, bool) {
	per := int64(time.Second) / unit
	sec, frac := n/per, n%per
	if frac < 0 {
		sec, frac = sec-1, frac+per
	}
	t := time.Unix(sec, frac*unit).UTC()
	if y := t.Year(); y < 1 || y > 9999 {
		return "", false
	}
	return t.Format(localLayout), true
}

// epochDate formats days since the epoch as a date.
func epochDate(days int64) (string, bool) {
	if days < -719162 || days > 2932896 { // 0001-01-01 .. 9999-12-31
		return "", false
	}
	return time.Unix(days*86400, 0).UTC().Format("2006-01-02"), true
}

// timeOfDay formats n units since midnight as [-]HH:MM:SS[.fraction] (hours may pass 23: a
// MySQL TIME is a duration).
func timeOfDay(n, unit int64) string {
	var b strings.Builder
	ns := n * unit
	if ns < 0 {
		b.WriteByte('-')
		ns = -ns
	}
	h, rest := ns/int64(time.Hour), ns%int64(time.Hour)
	m, rest := rest/int64(time.Minute), rest%int64(time.Minute)
	s, frac := rest/int64(time.Second), rest%int64(time.Second)
	if h < 10 {
		b.WriteByte('0')
	}
	b.WriteString(strconv.FormatInt(h, 10))
	b.WriteByte(':')
	b.WriteString(twoDigits(m))
	b.WriteByte(':')
	b.WriteString(twoDigits(s))
	if frac > 0 {
		f := strconv.FormatInt(frac+int64(time.Second), 10)[1:] // nine digits
		b.WriteByte('.')
		b.WriteString(strings.TrimRight(f, "0"))
	}
	return b.String()
}

func twoDigits(n int64) string {
	if n < 10 {
		return "0" + strconv.FormatInt(n, 10)
	}
	return strconv.FormatInt(n, 10)
}

// decodeDecimal turns Kafka Connect's Decimal (base64 of the unscaled big-endian two's-
// complement integer) and its scale into decimal text: "JxA=" scale 0 is "10000", "AfM=" scale 2
// "4.99". ok is false when b64 is not base64.
func decodeDecimal(b64 string, scale int) (string, bool) {
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "", false
	}
	n := new(big.Int).SetBytes(raw)
	if len(raw) > 0 && raw[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(raw))))
	}
	return scaled(n, scale), true
}

// scaled writes n × 10^-scale as decimal text (a negative scale appends zeros).
func scaled(n *big.Int, scale int) string {
	digits := new(big.Int).Abs(n).String()
	sign := ""
	if n.Sign() < 0 {
		sign = "-"
	}
	if scale <= 0 {
		if n.Sign() == 0 {
			return "0"
		}
		return sign + digits + strings.Repeat("0", -scale)
	}
	if len(digits) <= scale {
		digits = strings.Repeat("0", scale-len(digits)+1) + digits
	}
	return sign + digits[:len(digits)-scale] + "." + digits[len(digits)-scale:]
}

// variableScaleDecimal reads io.debezium.data.VariableScaleDecimal as the JSON converter writes
// it, {"scale":2,"value":"<base64>"}; ok is false for anything else.
func variableScaleDecimal(s string) (string, bool) {
	if !strings.HasPrefix(strings.TrimSpace(s), "{") {
		return "", false
	}
	var v struct {
		Scale *int   `json:"scale"`
		Value string `json:"value"`
	}
	if json.Unmarshal([]byte(s), &v) != nil || v.Scale == nil {
		return "", false
	}
	return decodeDecimal(v.Value, *v.Scale)
}

// dbzField is one field of a Debezium (Kafka Connect) struct schema.
type dbzField struct {
	Type       string            `json:"type"`
	Name       string            `json:"name"`
	Field      string            `json:"field"`
	Parameters map[string]string `json:"parameters"`
	Fields     []dbzField        `json:"fields"`
}

// dbzImages are an envelope's before and after images as its schema describes them.
type dbzImages struct {
	before, after dbzImage
}

// dbzImage is one image's fields by column: only the fields whose values need decoding (a
// semantic type redstate reads, or bytes); the others are read as they are.
type dbzImage struct {
	fields map[string]dbzField
	// bytes are the columns whose values the schema types bytes (no semantic type redstate
	// reads): decoded to their bytes (Change.DecodedBytes).
	bytes []string
}

// schemaCacheMax bounds the schemas kept parsed: a few per table (one per table version).
const schemaCacheMax = 512

// schemaCache keeps envelope schemas parsed, by their text: every event of a table repeats its
// schema, which is larger than the row and costs more to parse. The parsed images are never
// modified, so they are shared.
var schemaCache = struct {
	sync.RWMutex
	m map[string]dbzImages
}{m: map[string]dbzImages{}}

// debeziumSchema is parseDebeziumSchema through schemaCache.
func debeziumSchema(raw json.RawMessage) (dbzImages, error) {
	schemaCache.RLock()
	imgs, ok := schemaCache.m[string(raw)]
	schemaCache.RUnlock()
	if ok {
		return imgs, nil
	}
	imgs, err := parseDebeziumSchema(raw)
	if err != nil {
		return imgs, err
	}
	schemaCache.Lock()
	if len(schemaCache.m) >= schemaCacheMax {
		clear(schemaCache.m) // schemas changed many times: start over
	}
	schemaCache.m[string(raw)] = imgs
	schemaCache.Unlock()
	return imgs, nil
}

// parseDebeziumSchema reads the envelope schema of {"schema","payload"}. A schema that does not
// describe before and after (not an envelope, or none) gives no fields: every value is read as
// it is.
func parseDebeziumSchema(raw json.RawMessage) (dbzImages, error) {
	var env dbzField
	if err := json.Unmarshal(raw, &env); err != nil {
		return dbzImages{}, redstate.Errorf(redstate.EINVALID, "Debezium schema: %v", err)
	}
	var imgs dbzImages
	for _, f := range env.Fields {
		var decoded dbzImage
		for _, c := range f.Fields {
			if c.decodes() {
				if decoded.fields == nil {
					decoded.fields = map[string]dbzField{}
				}
				decoded.fields[c.Field] = c
			}
			if c.rawBytes() {
				decoded.bytes = append(decoded.bytes, c.Field)
			}
		}
		switch f.Field {
		case "before":
			imgs.before = decoded
		case "after":
			imgs.after = decoded
		}
	}
	return imgs, nil
}

// decodes reports whether a value of f needs decoding to its text.
func (f dbzField) decodes() bool {
	switch f.Name {
	case "", "io.debezium.data.Json", "io.debezium.data.Enum", "io.debezium.data.EnumSet", "io.debezium.data.Uuid",
		"io.debezium.data.Xml", "io.debezium.time.ZonedTimestamp", "io.debezium.time.ZonedTime", "io.debezium.time.Year",
		"io.debezium.time.MicroDuration", "io.debezium.time.Interval":
		return f.Type == "bytes"
	}
	return true
}

// rawBytes reports whether decode turns a value of f into its bytes: the schema type bytes
// without a semantic type that reads them otherwise (Decimal).
func (f dbzField) rawBytes() bool {
	return f.Type == "bytes" && f.Name != "org.apache.kafka.connect.data.Decimal"
}

// decode turns the text of a value of f (a JSON number's literal, a string's text, an
// object's JSON) into the text the index reads: dates as 2006-01-02, times of day as
// 15:04:05.999999999, Debezium's local date-times as 2006-01-02T15:04:05.999999999 (no zone),
// decimals as their digits, bytes as the bytes. Errors: EINVALID naming the column.
func (f dbzField) decode(col, v string) (string, error) {
	bad := func(why string) error {
		shown := v
		if len(shown) > 64 {
			shown = shown[:64] + "…"
		}
		return redstate.Errorf(redstate.EINVALID, "column %s (Debezium %s): %q %s", col, f.kind(), shown, why)
	}
	integer := func() (int64, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, bad("is not an integer")
		}
		return n, nil
	}
	local := func(unit int64) (string, error) {
		n, err := integer()
		if err != nil {
			return "", err
		}
		s, ok := epochLocal(n, unit)
		if !ok {
			return "", bad("is out of the years 1..9999")
		}
		return s, nil
	}
	tod := func(unit int64) (string, error) {
		n, err := integer()
		if err != nil {
			return "", err
		}
		return timeOfDay(n, unit), nil
	}
	switch f.Name {
	case "io.debezium.time.Date", "org.apache.kafka.connect.data.Date":
		n, err := integer()
		if err != nil {
			return "", err
		}
		s, ok := epochDate(n)
		if !ok {
			return "", bad("is out of the years 1..9999")
		}
		return s, nil
	case "io.debezium.time.Time", "org.apache.kafka.connect.data.Time":
		return tod(unitMilli)
	case "io.debezium.time.MicroTime":
		return tod(unitMicro)
	case "io.debezium.time.NanoTime":
		return tod(unitNano)
	case "io.debezium.time.Timestamp", "org.apache.kafka.connect.data.Timestamp":
		return local(unitMilli)
	case "io.debezium.time.MicroTimestamp":
		return local(unitMicro)
	case "io.debezium.time.NanoTimestamp":
		return local(unitNano)
	case "io.debezium.time.IsoDate", "io.debezium.time.IsoTime", "io.debezium.time.IsoTimestamp":
		// The database's local value written "at UTC": the zone says nothing of it.
		return strings.TrimSuffix(v, "Z"), nil
	case "org.apache.kafka.connect.data.Decimal":
		scale, err := strconv.Atoi(f.Parameters["scale"])
		if err != nil {
			return "", bad("has no scale in its schema")
		}
		s, ok := decodeDecimal(v, scale)
		if !ok {
			return "", bad("is not base64")
		}
		return s, nil
	case "io.debezium.data.VariableScaleDecimal":
		s, ok := variableScaleDecimal(v)
		if !ok {
			return "", bad(`is not {"scale","value"}`)
		}
		return s, nil
	}
	if f.rawBytes() {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			return "", bad("is not base64")
		}
		return string(b), nil
	}
	return v, nil
}

// kind names f's type in messages.
func (f dbzField) kind() string {
	if f.Name != "" {
		return f.Name
	}
	return f.Type
}
