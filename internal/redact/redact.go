// Package redact hides secrets in values that are printed or logged: the password of a URL's
// user info, or a whole value that may hold credentials but does not parse.
package redact

import (
	"net/url"
	"strings"
)

// Marker replaces every redacted secret.
const Marker = "***"

// URL returns rawURL with the password of its user info replaced by Marker. A value that does
// not parse as a URL is redacted whole when it may hold credentials ('@').
func URL(rawURL string) string {
	if rawURL == "" {
		return ""
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		if strings.Contains(rawURL, "@") {
			return Marker
		}
		return rawURL
	}
	if u.User == nil {
		return rawURL
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), Marker)
		// url.String percent-escapes '*'; keep the marker readable.
		s := u.String()
		return strings.Replace(s, url.QueryEscape(Marker), Marker, 1)
	}
	return rawURL
}
