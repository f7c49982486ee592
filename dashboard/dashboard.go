// Package dashboard is redstate's web dashboard: a single page (HTML, JavaScript and CSS, no
// build step, no CDN) embedded in the binary and served by `redstate serve` at /ui/. It reads
// and acts through the JSON API only, with the caller's session (httpapi's /ui/login), so an
// action needs the same role as its API route. Every user-supplied string is rendered as text
// (never markup), and links are made only from http(s) URLs.
package dashboard

import (
	"embed"
	"io/fs"
)

//go:embed assets
var assets embed.FS

// Assets returns the dashboard's files: index.html, app.js, app.css.
func Assets() fs.FS {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded directory exists at build time
	}
	return sub
}
