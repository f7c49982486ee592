package keyspace

import (
	"testing"

	"pgregory.net/rapid"
)

func TestSlot_KnownValues(t *testing.T) {
	// Values from the Redis Cluster specification and CLUSTER KEYSLOT.
	cases := map[string]int{"foo": 12182, "bar": 5061, "{user1000}.following": 3443, "{user1000}.followers": 3443, "foo{}{bar}": 8363, "foo{{bar}}zap": 4015, "foo{bar}{zap}": 5061}
	for key, want := range cases {
		if got := Slot(key); got != want {
			t.Errorf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
}

func TestSlotTag_HashesToItsSlot(t *testing.T) {
	for slot := 0; slot < SlotCount; slot++ {
		tag := SlotTag(slot)
		if got := Slot("x:{" + tag + "}:y"); got != slot {
			t.Fatalf("SlotTag(%d) = %q lands in slot %d", slot, tag, got)
		}
	}
}

func TestEscapeSegment_RoundTripsAndIsSafe(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.String().Draw(t, "s")
		e := EscapeSegment(s)
		for i := 0; i < len(e); i++ {
			if c := e[i]; !isSafe(c) && c != '%' {
				t.Fatalf("EscapeSegment(%q) = %q contains unsafe byte %q", s, e, c)
			}
		}
		back, ok := UnescapeSegment(e)
		if !ok || back != s {
			t.Fatalf("UnescapeSegment(EscapeSegment(%q)) = %q, %v", s, back, ok)
		}
	})
}

func TestEscapeSegment_HostileInput(t *testing.T) {
	for in, want := range map[string]string{"*": "%2A", "a?b": "a%3Fb", "[x]": "%5Bx%5D", "p:1": "p%3A1", "{t}": "%7Bt%7D", "": "%", "%": "%25"} {
		if got := EscapeSegment(in); got != want {
			t.Errorf("EscapeSegment(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestGlobEscape(t *testing.T) {
	if got, want := GlobEscape(`a*b?c[d]e\f`), `a\*b\?c\[d\]e\\f`; got != want {
		t.Errorf("GlobEscape = %q, want %q", got, want)
	}
}

// TestCRC16_TableMatchesBitwise: the table-driven checksum equals the bitwise one on every
// byte value and on strings of many lengths.
func TestCRC16_TableMatchesBitwise(t *testing.T) {
	var s []byte
	for i := range 1000 {
		s = append(s, byte(i*131+i/7))
		if got, want := crc16(string(s)), crc16Bitwise(string(s)); got != want {
			t.Fatalf("crc16 of %d bytes = %#04x, want %#04x", len(s), got, want)
		}
	}
	if got := crc16("123456789"); got != 0x31C3 {
		t.Errorf("crc16(123456789) = %#04x, want the XModem check value 0x31c3", got)
	}
}
