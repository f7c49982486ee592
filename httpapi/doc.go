// Package httpapi is redstate's HTTP/JSON API: the build-status registry (docs/buildstatus.md) over
// net/http, with bearer-token auth, JSON errors, Server-Sent Events, Prometheus metrics and
// request logging. New returns the http.Handler; cmd/redstate mounts it on a server.
//
// # Routes
//
// Role needed in brackets (auth is off when no tokens are configured; admin implies write,
// write implies read). {buildId} must be a UUID (any case; it is canonicalized) or the answer is
// 400 invalid and the store is never called.
//
//	PUT    /v1/builds/{buildId}                       [write] body PublishResponse → 200 document, ETag
//	GET    /v1/builds/{buildId}                       [read]  → 200 stored document byte for byte, ETag; 304; 404
//	HEAD   /v1/builds/{buildId}                       [read]  → 200/404, ETag, Redstate-TTL-Seconds
//	DELETE /v1/builds/{buildId}                       [write] → 204; 404; 412
//	PATCH  /v1/builds/{buildId}/platforms/{platform}  [write] body PlatformResult → 200 document, ETag
//	GET    /v1/builds/{buildId}/events                [read]  → text/event-stream
//	GET    /v1/builds?ids=a,b,c                       [read]  → {"builds":{"<id>":<doc>,...},"missing":["<id>",...]}
//	GET    /v1/builds?cursor=C&limit=N                [read]  → {"builds":[<doc>,...],"cursor":"<next or empty>"}
//	GET    /v1/projects/{projectId}/builds?cursor=C&limit=N [read] → same page shape, newest first
//	POST   /api/assessment/submit                     [write] {"recordId","answers"} → 202 {"id","status":3,"statusText"}
//	GET    /api/assessment/{id}/result                [read]  → report.Status
//	POST   /api/admin/assessmentRecord/regenerateReport      [admin] {"id"} → 200 {}
//	POST   /api/admin/assessmentRecord/batchRegenerateReport [admin] {"ids"} → 200 {"SuccessCount","SkippedCount"}
//	GET    /v1/queues/{queue}/stats                   [admin] → {"queue","pending","running","retrying","scheduled","dead","paused","pool"?}
//	GET    /v1/queues/{queue}/dead?start=0&count=100  [admin] → {"queue","start","deadLetters":[...]}
//	POST   /v1/queues/{queue}/dead/requeue            [admin] {"raw"} → {"queue","requeued":1}
//	POST   /v1/queues/{queue}/dead/requeue-all        [admin] → {"queue","requeued":n}
//	DELETE /v1/queues/{queue}/dead                    [admin] → {"queue","purged":n}
//	GET    /healthz                                   [none]  → {"status":"ok"}
//	GET    /readyz                                    [none]  → {"status":"ready"} or 503 unavailable
//	GET    /metrics                                   [read]  → Prometheus text format
//	GET    /openapi.json                              [none]  → the OpenAPI 3.1 document of every route (docs/openapi.md)
//
// PUT: the body's buildId may be omitted (the path's is used) and must otherwise equal the
// path's. If-Match: "<etag>" makes the write conditional (412 when stale, 404 when the build
// is gone; If-Match: * is rejected as 400); If-None-Match: * makes it create-only (412 when the
// build exists). PATCH and DELETE honour If-Match the same way (* means no extra condition).
// PATCH's body platform may be omitted and must otherwise equal the path's. ETags are the
// SHA-1 of the stored bytes, quoted.
//
// Batch reads take at most buildstatus.MaxBatch distinct ids (repeated ids are read once);
// more is 400 invalid, because the request itself is wrong, not its body size. Missing ids are
// listed canonicalized, in request order. ids cannot be combined with cursor or limit. limit
// defaults to 100 and must be 1..1000; a non-integer is 400. Cursors are opaque.
//
// projectId is one path segment, percent-decoded: project "a/b" is requested as
// /v1/projects/a%2Fb/builds; '*', ':', '{', '}' are ordinary characters.
//
// Events: the handler subscribes before reading the current value, so nothing is lost between
// the two. The stream starts with "event: snapshot" (id: ETag, data: the document) or
// "event: missing" (data: {"buildId":...}); then "event: saved" (id: ETag, data: document),
// "event: deleted" (data: {"buildId":...}) and "event: gap" (events were dropped; it is
// followed by a fresh snapshot or missing event). Data is always one line of JSON. A ": ping"
// comment is sent every HeartbeatInterval. The server's write deadline is cleared for streams.
//
// # Errors
//
// Every error is JSON, {"code":"<code>","message":"<text>"}, with the status from one table
// (the seed-004 business errors add "businessCode": 1001, 2005 or 3241; see docs/queue.md):
//
//	invalid                400   bad id, body, query parameter or header
//	unauthorized           401   no or unknown bearer token (WWW-Authenticate: Bearer)
//	forbidden              403   the token lacks the needed role
//	not_found              404   unknown build ("build not found (构建任务不存在)") or unknown route
//	method_not_allowed     405   the route exists for other methods (Allow header)
//	conflict               409   a build's projectId never changes
//	precondition_failed    412   If-Match / If-None-Match failed
//	too_large              413   body over MaxBodyBytes (the limit is in the message)
//	unsupported_media_type 415   a body without a JSON Content-Type, or another type (a bodyless request may send none)
//	unavailable            503   backend unavailable (Retry-After: 1)
//	internal               500   "internal error"; the cause is only logged
//
// Bodies are strict JSON: one object, no unknown fields, nothing after it; date-times are
// ISO-8601 strings.
//
// # Operations
//
// Every response carries X-Request-Id (the client's, when short printable ASCII, else a new
// one). Each request is logged once (method, route pattern, path, status, duration, bytes, token
// name — never the token) at Info, at Error for 5xx, and at Debug for /healthz, /readyz and
// /metrics. Metrics: redstate_http_requests_total{route,method,code} and
// redstate_http_request_duration_seconds{route,method}, where route is the matched mux pattern
// or "unmatched" and unusual methods count as "OTHER", so cardinality stays bounded.
package httpapi
