package redact

import "testing"

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"":                                     "",
		"redis://127.0.0.1:6379":               "redis://127.0.0.1:6379",
		"redis://app@127.0.0.1:6379":           "redis://app@127.0.0.1:6379",
		"redis://app:hunter2@127.0.0.1:6379/0": "redis://app:***@127.0.0.1:6379/0",
		"postgres://u:p@h:5432/db?sslmode=x":   "postgres://u:***@h:5432/db?sslmode=x",
		"::not a url with user:pw@host":        Marker,
	} {
		if got := URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}
