package httpapi

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/config"
)

// role is an access level; a higher role implies every lower one.
type role int

// Roles, in increasing order of power.
const (
	roleNone  role = iota // no credentials needed (/healthz, /readyz)
	roleRead              // GET/HEAD, events, /metrics
	roleWrite             // PUT/PATCH/DELETE
	roleAdmin             // implies write; reserved for administrative routes
)

var roleNames = map[string]role{"read": roleRead, "write": roleWrite, "admin": roleAdmin}

func (r role) String() string {
	for name, v := range roleNames {
		if v == r {
			return name
		}
	}
	return "none"
}

// credential is a configured token, kept as a SHA-256 digest so every comparison is constant
// time over equal lengths.
type credential struct {
	name   string
	digest [sha256.Size]byte
	role   role
}

// authenticator checks bearer tokens. With no credentials, auth is off.
type authenticator struct {
	creds []credential
}

// newAuthenticator validates the configured tokens: each needs a secret and at least one role,
// all roles must be known, and no two tokens may share a secret.
func newAuthenticator(tokens []config.Token) (*authenticator, error) {
	a := &authenticator{}
	seen := make(map[[sha256.Size]byte]string)
	for i, t := range tokens {
		label := t.Name
		if label == "" {
			label = fmt.Sprintf("#%d", i)
		}
		if t.Token == "" {
			return nil, fmt.Errorf("httpapi: token %s has an empty secret", label)
		}
		if len(t.Roles) == 0 {
			return nil, fmt.Errorf("httpapi: token %s has no roles (want any of read, write, admin)", label)
		}
		c := credential{name: label, digest: sha256.Sum256([]byte(t.Token))}
		for _, name := range t.Roles {
			r, ok := roleNames[name]
			if !ok {
				return nil, fmt.Errorf("httpapi: token %s has unknown role %q (want read, write or admin)", label, name)
			}
			c.role = max(c.role, r)
		}
		if other, dup := seen[c.digest]; dup {
			return nil, fmt.Errorf("httpapi: tokens %s and %s have the same secret", other, label)
		}
		seen[c.digest] = label
		a.creds = append(a.creds, c)
	}
	return a, nil
}

// enabled reports whether any token is configured (auth on).
func (a *authenticator) enabled() bool { return len(a.creds) > 0 }

// authorize checks that r carries a token with at least role need. It returns the token's name
// ("" when auth is off or not needed). Errors: EUNAUTHORIZED (no or unknown token), EFORBIDDEN.
func (a *authenticator) authorize(r *http.Request, need role) (string, error) {
	if need == roleNone || len(a.creds) == 0 {
		return "", nil
	}
	scheme, secret, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(secret) == "" {
		return "", redstate.Errorf(redstate.EUNAUTHORIZED, "missing bearer token (send Authorization: Bearer <token>)")
	}
	digest := sha256.Sum256([]byte(strings.TrimSpace(secret)))
	var found *credential
	for i := range a.creds { // no early exit: the time taken does not depend on which token matched
		if subtle.ConstantTimeCompare(digest[:], a.creds[i].digest[:]) == 1 {
			found = &a.creds[i]
		}
	}
	if found == nil {
		return "", redstate.Errorf(redstate.EUNAUTHORIZED, "invalid bearer token")
	}
	if found.role < need {
		return found.name, redstate.Errorf(redstate.EFORBIDDEN, "token %q lacks the %s role this operation needs", found.name, need)
	}
	return found.name, nil
}
