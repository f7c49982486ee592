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
		return serveAsset(w, "", "index.html")
	})
	s.handle("GET /ui/{file}", roleNone, func(w http.ResponseWriter, r *http.Request) error { return serveAsset(w, "", r.PathValue("file")) })
	s.handle("GET /ui/vendor/{lib}/{file}", roleNone, func(w http.ResponseWriter, r *http.Request) error {
		return serveAsset(w, "vendor/"+r.PathValue("lib"), r.PathValue("file"))
	})
}

// serveAsset answers the embedded dashboard file dir/name (dir "" or "vendor/<library>", name
// one path segment) with the dashboard's security headers.
func serveAsset(w http.ResponseWriter, dir, name string) error {
	full := path.Join(dir, name)
	if name == "" || path.Base(name) != name || (dir != "" && path.Dir(full) != dir) {
		return redstate.Errorf(redstate.ENOTFOUND, "no dashboard file %q", truncate(full))
	}
	body, err := fs.ReadFile(dashboard.Assets(), full)
	if err != nil {
		return redstate.Errorf(redstate.ENOTFOUND, "no dashboard file %q", truncate(full))
	}
	h := w.Header()
	ct := mime.TypeByExtension(path.Ext(name))
	if path.Ext(name) == "" { // LICENSE, SOURCE
		ct = "text/plain; charset=utf-8"
	} else if ct == "" {
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
