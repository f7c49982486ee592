// Package keyspace holds the rules every block follows when user-supplied text meets a Redis key
// or a SCAN pattern, and the Redis Cluster slot arithmetic the blocks need to co-locate keys.
package keyspace

import (
	"strconv"
	"strings"
	"sync"
)

// EscapeSegment makes free text safe to embed as one segment of a Redis key. Every byte outside
// [A-Za-z0-9._-] is percent-encoded ("%2A" for '*'), so the result contains no ':' separator,
// no hash-tag brace, no glob metacharacter and no whitespace, and distinct inputs always give
// distinct outputs (the encoding is injective). The empty string is encoded as "%".
func EscapeSegment(s string) string {
	if s == "" {
		return "%"
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isSafe(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&0x0f])
	}
	return b.String()
}

// UnescapeSegment reverses EscapeSegment. ok is false if s is not an EscapeSegment output.
func UnescapeSegment(s string) (string, bool) {
	if s == "%" {
		return "", true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			if !isSafe(c) {
				return "", false
			}
			b.WriteByte(c)
			continue
		}
		if i+2 >= len(s) {
			return "", false
		}
		v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(v))
		i += 2
	}
	return b.String(), true
}

const hexDigits = "0123456789ABCDEF"

func isSafe(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '.' || c == '_' || c == '-'
}

// GlobEscape escapes s so that it matches itself literally inside a Redis glob pattern (SCAN
// MATCH, KEYS, PSUBSCRIBE): '*', '?', '[', ']' and '\' get a backslash.
func GlobEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// SlotCount is the number of Redis Cluster hash slots.
const SlotCount = 16384

// Slot returns the Redis Cluster hash slot of key, honouring hash tags exactly as Redis does:
// if the key contains "{" followed later by "}" with at least one byte between them, only the
// bytes between the first "{" and the first "}" after it are hashed.
func Slot(key string) int {
	if s := strings.IndexByte(key, '{'); s >= 0 {
		if e := strings.IndexByte(key[s+1:], '}'); e > 0 {
			key = key[s+1 : s+1+e]
		}
	}
	return int(crc16(key) % SlotCount)
}

var (
	slotTagsOnce sync.Once
	slotTags     [SlotCount]string
)

// SlotTag returns a short string whose hash slot is slot, so that a key containing
// "{"+SlotTag(slot)+"}" lands in that slot. It lets a block put an index entry into the same
// slot as a key it does not control the name of (for example a seed-defined key with no tag).
func SlotTag(slot int) string {
	slotTagsOnce.Do(func() {
		found := 0
		for n := 0; found < SlotCount; n++ {
			tag := strconv.FormatInt(int64(n), 36)
			s := int(crc16(tag) % SlotCount)
			if slotTags[s] == "" {
				slotTags[s] = tag
				found++
			}
		}
	})
	return slotTags[slot]
}

// crc16 is CRC16-CCITT (XModem), the checksum Redis Cluster uses for key slots, a byte at a
// time from crc16Table (a tenth of the bitwise loop's time: the lock computes several slots
// per call).
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^s[i]]
	}
	return crc
}

// crc16Table holds crc16Bitwise of each byte value shifted into the top byte.
var crc16Table = func() (t [256]uint16) {
	for b := range t {
		t[b] = crc16Bitwise(string([]byte{byte(b)}))
	}
	return t
}()

// crc16Bitwise is CRC16-CCITT (XModem) a bit at a time (polynomial 0x1021, initial value 0).
func crc16Bitwise(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for j := 0; j < 8; j++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
