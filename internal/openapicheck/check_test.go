package openapicheck

import (
	"net/http"
	"strings"
	"testing"
)

// testDoc documents GET /things/{id}: 200 with {"name": string}, 404 with code not_found.
const testDoc = `{"openapi":"3.1.0","info":{"title":"t","version":"1"},"paths":{"/things/{id}":{"get":{
"x-redstate-role":"read",
"parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],
"responses":{
 "200":{"description":"ok","content":{"application/json":{"schema":{"type":"object","required":["name"],"properties":{"name":{"type":"string"}},"additionalProperties":false}}}},
 "404":{"description":"missing","x-redstate-error-codes":["not_found"],"content":{"application/json":{"schema":{"type":"object","required":["code","message"],"properties":{"code":{"type":"string"},"message":{"type":"string"}}}}}}
}}}}}`

func TestCheck(t *testing.T) {
	c, err := New([]byte(testDoc))
	if err != nil {
		t.Fatal(err)
	}
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	cases := []struct {
		name, method, path string
		status             int
		body               string
		wantErr            string // "" when the response matches
	}{
		{"match", "GET", "/things/1", 200, `{"name":"a"}`, ""},
		{"wrong type", "GET", "/things/1", 200, `{"name":1}`, "does not match"},
		{"unknown member", "GET", "/things/1", 200, `{"name":"a","extra":1}`, "does not match"},
		{"undocumented status", "GET", "/things/1", 409, `{"code":"conflict","message":"m"}`, "does not match"},
		{"listed code", "GET", "/things/1", 404, `{"code":"not_found","message":"m"}`, ""},
		{"unlisted code", "GET", "/things/1", 404, `{"code":"gone","message":"m"}`, "lists only"},
		{"unknown route", "GET", "/other", 404, `{"code":"not_found","message":"m"}`, ""},
		{"other method", "POST", "/things/1", 405, `{"code":"method_not_allowed","message":"m"}`, ""},
		{"redirect", "GET", "/things//1", 301, `{"code":"redirect","message":"m"}`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, "http://127.0.0.1:1"+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = c.Check(req, tc.status, jsonHeader, []byte(tc.body))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
