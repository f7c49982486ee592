// Package e2e holds redstate's end-to-end tests; it has no code of its own. TestMain builds
// the redstate binary once (with -race), and the tests run it as a user does: `redstate serve`
// processes and the admin commands against real redis-server processes (package redistest),
// PostgreSQL and MariaDB (sqldb/sqltest), a Kafka broker (kfake), headless Chromium for the
// dashboard and podman for the container image, talking HTTP. They cover every block's API,
// crashes and restarts of servers and of Redis, Redis outages, two deployments sharing one
// Redis by namespace, the `curl` examples of README.md and docs/ (TestDocs_CurlExamplesWork,
// conventions in docexamples_parse_test.go) and every response against the OpenAPI document.
// With -short only the checks that need no server run (the documentation's configuration
// examples, the example parser); the long stress tests carry the build tag soak (`make soak`).
package e2e
