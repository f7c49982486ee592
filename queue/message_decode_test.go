package queue

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"
)

// decodeAsStruct decodes b as UnmarshalJSON did before it parsed the members once: the envelope
// by encoding/json's struct decoding, then every member again for Fields. UnmarshalJSON must
// agree with it on every input, in outcome and error.
func decodeAsStruct(b []byte) (Message, error) {
	var w wireMessage
	if err := json.Unmarshal(b, &w); err != nil {
		return Message{}, err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return Message{}, err
	}
	if all == nil {
		return Message{}, fmt.Errorf("a queue message is a JSON object, got %s", b)
	}
	fields := map[string]json.RawMessage{}
	for k, v := range all {
		if !isEnvelopeMember(k) {
			fields[k] = v
		}
	}
	var m Message
	err := m.fromWire(w, fields)
	return m, err
}

func TestMessage_UnmarshalAgreesWithStructDecoding(t *testing.T) {
	for _, raw := range []string{
		`{"RecordId":7,"RetryCount":0,"EnqueueTime":"2026-11-29T03:53:44","JobId":"0123456789abcdef0123456789abcdef"}`,
		`{"RetryCount":2,"EnqueueTime":"2025-01-15T10:30:00.25","Payload":{"a":[1,2]},"LastError":"boom","FailedAt":"2025-01-15T10:31:00"}`,
		`{"Job":{"Timeout":5000000000},"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00","JobId":"j1"}`,
		`{"retrycount":3,"EnqueueTime":"2025-01-15T10:30:00"}`,                    // another case: struct decoding matches it
		`{"RetryCount":1,"retryCount":4,"EnqueueTime":"2025-01-15T10:30:00"}`,     // the last of several spellings wins
		`{"RetryCount":1,"RetryCount":5,"EnqueueTime":"2025-01-15T10:30:00"}`,     // duplicates: the last wins
		`{"RetryCount":null,"EnqueueTime":null,"Payload":null,"JobId":null}`,      // nulls leave the zero values
		`{"RetryCount":1.0,"EnqueueTime":"2025-01-15T10:30:00"}`,                  // not an int
		`{"RetryCount":"1","EnqueueTime":"2025-01-15T10:30:00"}`,                  // a string
		`{"RetryCount":99999999999999999999,"EnqueueTime":"2025-01-15T10:30:00"}`, // overflows
		`{"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00","JobId":"a\"b\u00e9\ud83d\ude00"}`,
		`{"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00","LastError":"caf` + "\xff" + `"}`, // invalid UTF-8
		`{"RetryCount":0,"EnqueueTime":7}`,
		`{"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00","JobId":1}`,
		`{"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00","Job":"x"}`,
		`{"RetryCount":0,"EnqueueTime":"yesterday"}`,
		`{"Key":{"n":[1, 2]},"b":"x","RetryCount":0,"EnqueueTime":"2025-01-15T18:30:00+08:00"}`,
		` {"RetryCount":0,"EnqueueTime":"2025-01-15T10:30:00"} `,
		`{}`, `null`, `[1,2]`, `"x"`, `{not json`, `{"RetryCount":0`,
	} {
		var got Message
		gotErr := got.UnmarshalJSON([]byte(raw))
		want, wantErr := decodeAsStruct([]byte(raw))
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Errorf("%s: error %v, struct decoding %v", raw, gotErr, wantErr)
			continue
		}
		if len(want.Fields) == 0 {
			want.Fields = nil
		}
		if gotErr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", raw, got, want)
		}
	}
}

// BenchmarkDecodeMessage measures DecodeMessage of a report job as the bench enqueues it.
func BenchmarkDecodeMessage(b *testing.B) {
	m := NewMessage(time.Now(), nil)
	m.Fields = map[string]json.RawMessage{"RecordId": json.RawMessage("123456")}
	raw, err := EncodeMessage(m)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("once", func(b *testing.B) {
		for b.Loop() {
			if _, err := DecodeMessage(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("struct", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeAsStruct(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
}
