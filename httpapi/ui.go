package httpapi

import (
	"io/fs"
	"mime"
	"net/http"
	"path"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/dashboard"
)

// uiCSP is the dashboard's Content-Security-Policy: its own script and style only (no inline
// code, no other origin), so a string that slipped into markup could still not run.
const uiCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

// uiRoutes serves the dashboard's page and assets (no credentials needed: they hold no data;
// every figure is read through the API with the caller's session).
func (s *server) uiRoutes() {
	s.handle("GET /ui", roleNone, func(w http.ResponseWriter, r *http.Request) error {
		http.Redirect(w, r, "/ui/", http.StatusMovedPermanently)
		return nil
	})
	s.handle("GET /ui/", roleNone, func(w http.ResponseWriter, r *http.Request) error {
		if r.URL.Path != "/ui/" {
			return redstate.Errorf(redstate.ENOTFOUND, "no dashboard page %q", truncate(r.URL.Path))
		}
		return serveAsset(w, "index.html")
	})
	s.handle("GET /ui/{file}", roleNone, func(w http.ResponseWriter, r *http.Request) error { return serveAsset(w, r.PathValue("file")) })
}

// serveAsset answers one embedded dashboard file with the dashboard's security headers.
func serveAsset(w http.ResponseWriter, name string) error {
	body, err := fs.ReadFile(dashboard.Assets(), name)
	if err != nil || name == "" || path.Base(name) != name {
		return redstate.Errorf(redstate.ENOTFOUND, "no dashboard file %q", truncate(name))
	}
	h := w.Header()
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "application/octet-stream"
	}
	h.Set("Content-Type", ct)
	h.Set("Content-Security-Policy", uiCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return nil
}
