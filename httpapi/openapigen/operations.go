package main

import (
	"net/http"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/history"
	"github.com/redstate/redstate/httpapi"
	"github.com/redstate/redstate/queue"
)

// Short names of the error codes for the operation table.
const (
	invalid      = redstate.EINVALID
	notFound     = redstate.ENOTFOUND
	conflict     = redstate.ECONFLICT
	precondition = redstate.EPRECONDITION
	tooLarge     = redstate.ETOOLARGE
	unavailable  = redstate.EUNAVAILABLE
)

// Parameters and headers shared by several operations.
func queryParam(name string, schema obj, desc string) obj {
	return obj{"name": name, "schema": schema, "description": desc}
}

func cursorParam(desc string) obj { return queryParam("cursor", str(""), desc) }

func limitParam() obj {
	return queryParam("limit", obj{"type": "integer", "minimum": 1, "maximum": maxListLimit},
		"Page size (default 100).")
}

func ifMatchHeader(desc string) obj {
	return obj{"name": "If-Match", "schema": str(""), "description": desc}
}

func ifNoneMatchHeader(desc string) obj {
	return obj{"name": "If-None-Match", "schema": str(""), "description": desc}
}

// etagHeader is the ETag response header of a build.
var etagHeader = obj{"ETag": obj{"description": "The stored document's strong ETag (SHA-1 of its bytes), quoted.", "schema": str("")}}

// sse is the body of an event stream.
func sse(desc string) reply {
	return reply{status: http.StatusOK, desc: desc, rawType: "text/event-stream", rawSchema: str("Server-Sent Events.")}
}

// ok is a 200 answer with a JSON body of schema.
func ok(schema, desc string) reply { return reply{status: http.StatusOK, desc: desc, schema: schema} }

// operations is every route registered by httpapi, with the role it is registered with.
func operations() []operation {
	buildID := map[string]string{"buildId": "A UUID in any case; canonicalized."}
	viewer := map[string]string{"viewer": "The viewing user's id (> 0); the calling back-end authenticates its users."}
	return []operation{
		// Builds (httpapi/builds.go, builds_list.go, builds_events.go).
		{method: "PUT", path: "/v1/builds/{buildId}", id: "putBuild", role: "write", tag: "builds",
			summary:  "Store a whole build document",
			desc:     "If-Match makes the write conditional (412 when stale, 404 when the build is gone; * is refused); If-None-Match: * makes it create-only.",
			pathDesc: buildID, body: "BuildInput",
			headers: []obj{ifMatchHeader("One or more strong ETags the stored document must have."), ifNoneMatchHeader("* only: create, never replace.")},
			replies: []reply{{status: 200, desc: "The stored document.", schema: "Build", headers: etagHeader}},
			codes:   []string{invalid, notFound, precondition, conflict, tooLarge, unavailable}},
		{method: "GET", path: "/v1/builds/{buildId}", id: "getBuild", role: "read", tag: "builds",
			summary: "Read a build document byte for byte", pathDesc: buildID,
			headers: []obj{ifNoneMatchHeader("ETags; 304 when one matches.")},
			replies: []reply{{status: 200, desc: "The stored document.", schema: "Build", headers: etagHeader}, {status: 304, desc: "Not modified.", headers: etagHeader}},
			codes:   []string{invalid, notFound, unavailable}},
		{method: "HEAD", path: "/v1/builds/{buildId}", id: "headBuild", role: "read", tag: "builds",
			summary: "Check a build, its ETag and the time it has left", pathDesc: buildID,
			headers: []obj{ifNoneMatchHeader("ETags; 304 when one matches.")},
			replies: []reply{{status: 200, desc: "The build exists.", headers: obj{
				"ETag":                 etagHeader["ETag"],
				"Redstate-TTL-Seconds": obj{"description": "Seconds the build has left, rounded up.", "schema": obj{"type": "integer"}},
			}}, {status: 304, desc: "Not modified.", headers: etagHeader}},
			codes: []string{invalid, notFound, unavailable}},
		{method: "DELETE", path: "/v1/builds/{buildId}", id: "deleteBuild", role: "write", tag: "builds",
			summary: "Delete a build", pathDesc: buildID,
			headers: []obj{ifMatchHeader("Strong ETags; * means no extra condition.")},
			replies: []reply{{status: 204, desc: "Deleted."}},
			codes:   []string{invalid, notFound, precondition, unavailable}},
		{method: "PATCH", path: "/v1/builds/{buildId}/platforms/{platform}", id: "patchPlatform", role: "write", tag: "builds",
			summary: "Change one platform's result (JSON merge patch)", pathDesc: map[string]string{"buildId": buildID["buildId"], "platform": "The platform name."},
			desc: "The body is a JSON merge patch (RFC 7396, application/merge-patch+json or application/json) of the platform's entry: members given replace the entry's, " +
				"a null member clears one, members left out keep their values; a platform not yet in the build is added. The merge is a compare-and-set on the build's ETag, " +
				"so a concurrent change of another platform is never lost.",
			headers: []obj{ifMatchHeader("Strong ETags; * means no extra condition.")},
			body:    "PlatformPatch",
			replies: []reply{{status: 200, desc: "The new document.", schema: "Build", headers: etagHeader}},
			codes:   []string{invalid, notFound, precondition, conflict, tooLarge, unavailable}},
		{method: "GET", path: "/v1/builds/{buildId}/events", id: "buildEvents", role: "read", tag: "builds", stream: true,
			summary: "Stream a build's changes (Server-Sent Events)", pathDesc: buildID,
			desc: "Events: snapshot (id = ETag, data = document) or missing (data = {\"buildId\"}) first; then saved (id = ETag, data = document), " +
				"deleted and gap (data = {\"buildId\"}); a gap is followed by a fresh snapshot or missing. A \": ping\" comment is sent every heartbeat.",
			replies: []reply{sse("The event stream.")},
			codes:   []string{invalid, unavailable}},
		{method: "GET", path: "/v1/builds", id: "listBuilds", role: "read", tag: "builds",
			summary: "List builds, or read a batch of builds with ?ids=",
			desc:    "With ids: a batch read (BuildBatch) of at most 1000 distinct ids; ids cannot be combined with cursor or limit. Without: a page of all builds (BuildPage).",
			query: []obj{
				queryParam("ids", array(str(""), ""), "Comma-separated buildIds; the parameter may repeat."),
				cursorParam("The cursor of the previous page."), limitParam(),
			},
			replies: []reply{ok("BuildListing", "A page of builds, or the batch read.")},
			codes:   []string{invalid, unavailable}},
		{method: "GET", path: "/v1/projects/{projectId}/builds", id: "listProjectBuilds", role: "read", tag: "builds",
			summary:  "List a project's builds, newest first",
			pathDesc: map[string]string{"projectId": "One path segment, percent-decoded (a%2Fb is project a/b)."},
			query:    []obj{cursorParam("The cursor of the previous page."), limitParam()},
			replies:  []reply{ok("BuildPage", "A page of builds.")},
			codes:    []string{invalid, unavailable}},

		// Report flow (httpapi/reports.go). Without the report flow every route is 404.
		{method: "POST", path: "/api/assessment/submit", id: "submitAnswers", role: "write", tag: "reports",
			summary: "Store answers and enqueue the report job (the seed's SubmitAnswersAsync)", body: "SubmitRequest",
			replies: []reply{{status: 202, desc: "Accepted with status 3.", schema: "SubmitResponse"}},
			codes:   []string{invalid, notFound, conflict, unavailable}},
		{method: "GET", path: "/api/assessment/{id}/result", id: "getReportResult", role: "read", tag: "reports",
			summary: "A record's report status (the seed's GetResultStatusAsync)", pathDesc: map[string]string{"id": "The record id, an integer."},
			replies: []reply{ok("ReportStatus", "The status.")},
			codes:   []string{invalid, notFound, unavailable}},
		{method: "POST", path: "/api/assessment/{id}/result", id: "completeReport", role: "admin", tag: "reports",
			summary: "Report a finished report (generators outside redstate)", pathDesc: map[string]string{"id": "The record id, an integer."},
			body:    "CompleteReportRequest",
			replies: []reply{ok("ReportStatus", "The record, now in status 4.")},
			codes:   []string{invalid, notFound, conflict, unavailable}},
		{method: "POST", path: "/api/assessment/{id}/failure", id: "failReport", role: "admin", tag: "reports",
			summary: "Report that a report cannot be generated", pathDesc: map[string]string{"id": "The record id, an integer."},
			body:    "FailReportRequest",
			replies: []reply{ok("ReportStatus", "The record, now in status 5.")},
			codes:   []string{invalid, notFound, conflict, unavailable}},
		{method: "POST", path: "/api/admin/assessmentRecord/regenerateReport", id: "regenerateReport", role: "admin", tag: "reports",
			summary: "Regenerate one report (status 3 or 5)", body: "RegenerateRequest",
			replies: []reply{ok("Empty", "Enqueued.")},
			codes:   []string{invalid, notFound, conflict, unavailable}},
		{method: "POST", path: "/api/admin/assessmentRecord/batchRegenerateReport", id: "batchRegenerateReport", role: "admin", tag: "reports",
			summary: "Regenerate several reports", body: "BatchRegenerateRequest",
			replies: []reply{ok("BatchRegenerateResult", "How many were enqueued and skipped.")},
			codes:   []string{invalid, notFound, unavailable}},

		// Queue administration (httpapi/queues.go).
		{method: "GET", path: "/v1/queues/{queue}/stats", id: "queueStats", role: "admin", tag: "queues",
			summary: "A queue's pending, running, retrying, scheduled and dead counts, and whether it is paused", pathDesc: queueDesc,
			replies: []reply{ok("QueueStats", "The counts.")},
			codes:   []string{invalid, notFound, unavailable}},
		{method: "GET", path: "/v1/queues/{queue}/dead", id: "listDeadLetters", role: "admin", tag: "queues",
			summary: "List a queue's dead letters, newest first", pathDesc: queueDesc,
			query: []obj{
				queryParam("start", obj{"type": "integer", "minimum": 0}, "Offset (default 0)."),
				queryParam("count", obj{"type": "integer", "minimum": 1, "maximum": queue.MaxListCount}, "Entries (default 100)."),
			},
			replies: []reply{ok("DeadLetters", "The dead letters.")},
			codes:   []string{invalid, notFound, unavailable}},
		{method: "POST", path: "/v1/queues/{queue}/dead/requeue", id: "requeueDeadLetter", role: "admin", tag: "queues",
			summary: "Requeue one dead letter", pathDesc: queueDesc, body: "RequeueRequest",
			replies: []reply{ok("QueueCount", "requeued is 1.")},
			codes:   []string{invalid, notFound, unavailable}},
		{method: "POST", path: "/v1/queues/{queue}/dead/requeue-all", id: "requeueAllDeadLetters", role: "admin", tag: "queues",
			summary: "Requeue every dead letter", pathDesc: queueDesc,
			replies: []reply{ok("QueueCount", "How many were requeued.")},
			codes:   []string{invalid, notFound, unavailable}},
		{method: "DELETE", path: "/v1/queues/{queue}/dead", id: "purgeDeadLetters", role: "admin", tag: "queues",
			summary: "Delete every dead letter", pathDesc: queueDesc,
			replies: []reply{ok("QueueCount", "How many were deleted.")},
			codes:   []string{invalid, notFound, unavailable}},

		// Jobs with a record and pausing (httpapi/queue_jobs.go).
		{method: "POST", path: "/v1/queues/{queue}/jobs", id: "enqueueJob", role: "write", tag: "queues",
			summary: "Enqueue a job with a payload and options", pathDesc: queueDesc, body: "EnqueueJobRequest",
			desc: "The job gets a record (see getJob). With an id of a job whose record exists, nothing is enqueued and that job is answered 200 (an idempotent retry). " +
				"409 conflict when a uniqueFor lock of another job refuses it; the message names that job.",
			replies: []reply{
				{status: 201, desc: "Enqueued.", schema: "QueueJob", headers: jobLocation},
				{status: 200, desc: "A job of this id exists: it, unchanged.", schema: "QueueJob", headers: jobLocation},
			},
			codes: []string{invalid, notFound, conflict, unavailable}},
		{method: "GET", path: "/v1/queues/{queue}/jobs", id: "listJobs", role: "read", tag: "queues",
			summary: "List a queue's jobs in one state, oldest transition first", pathDesc: queueDesc,
			query: []obj{
				queryParam("state", enum(str(""), "scheduled", "pending", "active", "retrying", "done", "dead", "cancelled"), "The state (required)."),
				cursorParam("The next of the previous page."),
				queryParam("limit", obj{"type": "integer", "minimum": 1, "maximum": queue.MaxListCount}, "Page size (default 100)."),
			},
			replies: []reply{ok("QueueJobPage", "One page of jobs.")},
			codes:   []string{invalid, notFound, unavailable}},
		{method: "GET", path: "/v1/queues/{queue}/jobs/{id}", id: "getJob", role: "read", tag: "queues",
			summary: "One job: its state, attempts with their errors and times, and its result", pathDesc: jobDesc,
			desc:    "404 for a job never enqueued with a record (POST /v1/queues/{queue}/jobs) or finished longer ago than its retention.",
			replies: []reply{ok("QueueJob", "The job.")},
			codes:   []string{invalid, notFound, unavailable}},
		{method: "DELETE", path: "/v1/queues/{queue}/jobs/{id}", id: "cancelJob", role: "write", tag: "queues",
			summary: "Cancel a job", pathDesc: jobDesc,
			desc:    "A scheduled, pending or retrying job is cancelled and never runs (200; again 200 when it is already cancelled); an active one is asked to stop (202, cancelRequested): its handler's context is cancelled and the job ends cancelled. 409 when it is done or dead.",
			replies: []reply{{status: 200, desc: "Cancelled.", schema: "QueueJob"}, {status: 202, desc: "Running: asked to stop.", schema: "QueueJob"}},
			codes:   []string{invalid, notFound, conflict, unavailable}},
		{method: "POST", path: "/v1/queues/{queue}/jobs/{id}/requeue", id: "requeueJob", role: "write", tag: "queues",
			summary: "Move a dead job back to pending", pathDesc: jobDesc,
			desc:    "409 when the job is not dead; 404 when its record or its dead letter is gone.",
			replies: []reply{ok("QueueJob", "The job, pending again.")},
			codes:   []string{invalid, notFound, conflict, unavailable}},
		{method: "POST", path: "/v1/queues/{queue}/pause", id: "pauseQueue", role: "write", tag: "queues",
			summary: "Pause a queue: its workers on every instance take no jobs; enqueue still works", pathDesc: queueDesc,
			replies: []reply{ok("QueuePauseState", "paused is true.")},
			codes:   []string{invalid, notFound, unavailable}},
		{method: "POST", path: "/v1/queues/{queue}/resume", id: "resumeQueue", role: "write", tag: "queues",
			summary: "Resume a paused queue", pathDesc: queueDesc,
			replies: []reply{ok("QueuePauseState", "paused is false.")},
			codes:   []string{invalid, notFound, unavailable}},

		// Stage executor (httpapi/executor.go). Without the executor every route is 404; while
		// it is degraded, 503.
		{method: "POST", path: "/v1/executor/plans", id: "createPlan", role: "write", tag: "executor",
			summary: "Create (and by default start) a plan", body: "CreatePlanRequest",
			replies: []reply{{status: 201, desc: "The plan's status.", schema: "PlanStatus", headers: obj{
				"Location": obj{"description": "/v1/executor/plans/{planId}.", "schema": str("")},
			}}},
			codes: []string{invalid, notFound, conflict, unavailable}},
		{method: "GET", path: "/v1/executor/plans/{planId}", id: "getPlan", role: "read", tag: "executor",
			summary: "A plan's status with its tasks (the seed's queryPlanStatus)",
			replies: []reply{ok("PlanStatus", "The plan.")},
			codes:   []string{invalid, notFound, unavailable}},
		{method: "POST", path: "/v1/executor/plans/{planId}/{action}", id: "planAction", role: "write", tag: "executor",
			summary: "Pause, resume or cancel every task of a plan",
			replies: []reply{ok("PlanActionResult", "One result per task; a task the action does not apply to has ok false.")},
			codes:   []string{invalid, notFound, unavailable}},
		{method: "GET", path: "/v1/executor/tasks/{taskId}", id: "getTask", role: "read", tag: "executor",
			summary: "A task's status",
			replies: []reply{ok("TaskStatus", "The task.")},
			codes:   []string{invalid, notFound, unavailable}},
		{method: "GET", path: "/v1/executor/tenants/{tenantId}/task", id: "getTenantTask", role: "read", tag: "executor",
			summary: "A tenant's current task with progress (the seed's queryTaskStatusByTenant)",
			replies: []reply{ok("TaskStatus", "The task.")},
			codes:   []string{invalid, notFound, unavailable}},
		{method: "GET", path: "/v1/executor/tenants/{tenantId}/checkpoint", id: "getTenantCheckpoint", role: "read", tag: "executor",
			summary: "Whether a tenant's current task has a checkpoint",
			replies: []reply{ok("TenantCheckpoint", "The checkpoint state; an unreadable checkpoint is shown as such.")},
			codes:   []string{invalid, notFound, unavailable}},
		{method: "POST", path: "/v1/executor/tenants/{tenantId}/retry", id: "retryTenantTask", role: "admin", tag: "executor",
			summary: "Retry a tenant's failed task (the seed's retryTaskByTenant)", body: "RetryTenantRequest",
			replies: []reply{{status: 202, desc: "The retry is under way.", schema: "RetryTenantAccepted"}},
			codes:   []string{invalid, notFound, conflict, unavailable}},
		{method: "POST", path: "/v1/executor/tenants/{tenantId}/{action}", id: "tenantAction", role: "write", tag: "executor",
			summary: "Pause, resume or cancel a tenant's current task",
			replies: []reply{{status: 202, desc: "The action is under way.", schema: "TenantActionAccepted"}},
			codes:   []string{invalid, notFound, conflict, unavailable}},

		// CDC tag index (httpapi/index.go). Without the index every route is 404.
		{method: "POST", path: "/v1/index/events", id: "applyIndexEvents", role: "write", tag: "index",
			summary: "Apply a batch of change events",
			desc:    "Events that cannot be read or converted are counted as failed, never failing the batch. On 503 resend the whole batch: versions make it idempotent.",
			body:    "IndexEventsRequest",
			replies: []reply{ok("IndexApplyResult", "What happened to the events.")},
			codes:   []string{invalid, notFound, unavailable}},
		{method: "GET", path: "/v1/index/{db}/{table}", id: "queryIndex", role: "read", tag: "index",
			summary: "Rows of a table matching the conditions",
			desc:    "Every query parameter other than cursor and count is a condition column=value; the conditions must be a declared combination (400 lists them). With cursor or count the answer is one page.",
			query: []obj{
				{"name": "conditions", "style": "form", "explode": true, "schema": mapOf(str(""), ""), "description": "Conditions, one query parameter per column."},
				cursorParam("Paged query: the cursor of the previous page (0 to start)."),
				queryParam("count", obj{"type": "integer", "minimum": 1, "maximum": 10000}, "Paged query: rows per page (default 500)."),
			},
			replies: []reply{ok("IndexRows", "The matching rows.")},
			codes:   []string{invalid, notFound, unavailable}},
		{method: "POST", path: "/v1/index/{db}/{table}/batch", id: "queryIndexBatch", role: "read", tag: "index",
			summary: "Several queries of one table in one round trip per node", body: "IndexBatchRequest",
			replies: []reply{ok("IndexBatchResult", "One result per query, in request order.")},
			codes:   []string{invalid, notFound, unavailable}},

		// Feed (httpapi/feed.go). Without the feed every route is 404.
		{method: "POST", path: "/v1/feed/posts", id: "publishPost", role: "write", tag: "feed",
			summary: "Publish a post (the seed's saveBlog); the fan-out runs durably in the background", body: "PublishPostRequest",
			replies: []reply{{status: 201, desc: "The stored post.", schema: "Post"}},
			codes:   []string{invalid, notFound, conflict, unavailable}},
		{method: "POST", path: "/v1/feed/posts/{post}/announce", id: "announcePost", role: "write", tag: "feed",
			summary: "Announce a post your application stored in the posts table (feed.sql.owns-tables false): cache, index and fan out",
			desc:    "Idempotent. Reads the post from SQL; 404 when it is not there.",
			replies: []reply{ok("Post", "The post as read from SQL.")},
			codes:   []string{invalid, notFound, unavailable}},
		{method: "POST", path: "/v1/feed/users/{viewer}/following/sync", id: "followsChanged", role: "write", tag: "feed",
			summary: "Tell the feed your application changed the viewer's follows (feed.sql.owns-tables false)", pathDesc: viewer,
			desc:    "Merges the viewer's unread state from SQL. Idempotent.",
			replies: []reply{{status: 204, desc: "Merged."}},
			codes:   []string{invalid, notFound, unavailable}},
		{method: "POST", path: "/v1/feed/users/{viewer}/read/{post}", id: "markPostRead", role: "write", tag: "feed",
			summary: "Mark a post read (the seed's markBlogAsRead)", pathDesc: viewer,
			replies: []reply{{status: 204, desc: "Marked."}},
			codes:   []string{invalid, notFound, unavailable}},
		{method: "POST", path: "/v1/feed/users/{viewer}/authors/{author}/read-all", id: "markAuthorRead", role: "write", tag: "feed",
			summary: "Mark every post of an author read", pathDesc: viewer,
			replies: []reply{ok("Marked", "How many posts were newly marked.")},
			codes:   []string{invalid, notFound, unavailable}},
		{method: "PUT", path: "/v1/feed/users/{viewer}/following/{author}", id: "follow", role: "write", tag: "feed",
			summary: "Follow an author", pathDesc: viewer,
			replies: []reply{ok("Changed", "Whether the viewer was not following before.")},
			codes:   []string{invalid, notFound, conflict, unavailable}},
		{method: "DELETE", path: "/v1/feed/users/{viewer}/following/{author}", id: "unfollow", role: "write", tag: "feed",
			summary: "Unfollow an author", pathDesc: viewer,
			replies: []reply{ok("Changed", "Whether the viewer was following before.")},
			codes:   []string{invalid, notFound, conflict, unavailable}},
		{method: "PUT", path: "/v1/feed/users/{viewer}/likes/{post}", id: "like", role: "write", tag: "feed",
			summary: "Like a post", pathDesc: viewer,
			replies: []reply{ok("Changed", "Whether the viewer did not like it before.")},
			codes:   []string{invalid, notFound, conflict, unavailable}},
		{method: "DELETE", path: "/v1/feed/users/{viewer}/likes/{post}", id: "unlike", role: "write", tag: "feed",
			summary: "Unlike a post", pathDesc: viewer,
			replies: []reply{ok("Changed", "Whether the viewer liked it before.")},
			codes:   []string{invalid, notFound, conflict, unavailable}},
		{method: "GET", path: "/v1/feed/users/{viewer}/authors/{author}/posts", id: "queryPosts", role: "read", tag: "feed",
			summary: "An author's posts, all or unread (the seed's queryUserBlogByReadStatus)", pathDesc: viewer,
			desc: "Page with current=N (the seed's page number) or cursor (the next of the previous page; stable under concurrent publishing).",
			query: []obj{
				queryParam("readStatus", enum(str(""), "ALL", "UNREAD"), "ALL (default) or UNREAD, any case."),
				queryParam("size", obj{"type": "integer"}, "Posts per page (default 10)."),
				queryParam("current", obj{"type": "integer"}, "Page number."),
				cursorParam("The next of the previous page."),
			},
			replies: []reply{ok("FeedPage", "One page of posts.")},
			codes:   []string{invalid, notFound, unavailable}},
		{method: "GET", path: "/v1/feed/users/{viewer}/unread-counts", id: "unreadCounts", role: "read", tag: "feed",
			summary: "A viewer's unread posts per author", pathDesc: viewer,
			replies: []reply{ok("UnreadCounts", "The counts.")},
			codes:   []string{invalid, notFound, unavailable}},
		{method: "GET", path: "/v1/feed/users/{viewer}/events", id: "feedEvents", role: "read", tag: "feed", stream: true,
			summary: "Stream a viewer's unread counts (Server-Sent Events)", pathDesc: viewer,
			desc:    "Sends a counts event (data = UnreadCounts) at once and whenever the counts change, on any instance; a \": ping\" comment every heartbeat.",
			replies: []reply{sse("The event stream.")},
			codes:   []string{invalid, notFound, unavailable}},

		// Dashboard support (httpapi/overview.go, executor_state.go, index_status.go).
		{method: "GET", path: "/v1/overview", id: "overview", role: "read", tag: "operations",
			summary: "What runs, on what, and whether it is healthy (the dashboard's first page)",
			replies: []reply{ok("Overview", "The overview.")},
			codes:   []string{notFound}},
		{method: "GET", path: "/v1/ui/events", id: "dashboardEvents", role: "read", tag: "operations", stream: true,
			summary: "The dashboard's live stream: one Server-Sent Events stream multiplexing topics (docs/dashboard.md)",
			desc: "Each event is change (id = the resume token, data = {\"topic\",\"version\"}): the topic's state changed and the page reads it again through the API. " +
				"Every topic is announced once when the stream opens, except those whose version the client already has (Last-Event-ID, or ?since= for a new stream). " +
				"A topic announces at most server.dashboard-updates-per-second changes a second; changes in between coalesce. The stream needs the highest role of its topics " +
				"(queues and executor: admin; the others: read), and counts against server.max-event-streams and server.max-event-streams-per-client. A \": ping\" comment is sent every heartbeat.",
			query: []obj{
				queryParam("topic", array(str(""), ""), "A topic (repeat for more, at most server.dashboard-max-topics): overview, builds, project:<projectId>, build:<buildId>, "+
					"queues, queue:<queue>, executor, plan:<planId>, task:<taskId>, tenant:<tenantId>, index, feed:<userId>."),
				queryParam("since", str(""), "The resume token of the last event a previous stream delivered (used when there is no Last-Event-ID header)."),
			},
			replies: []reply{sse("The event stream.")},
			codes:   []string{invalid, notFound, unavailable}},
		{method: "GET", path: "/v1/stats/series", id: "statsSeries", role: "read", tag: "operations",
			summary: "The statistics history of some metrics over a window, shared by every instance (the dashboard's charts)",
			desc: "Columnar: times is the one time axis of every series (uPlot's data shape); a value is null where no instance wrote. " +
				"15m answers 900 points at 1 s, 1h 360 at 10 s, 24h 1440 at 1 min; at most 100 series and 500,000 bucket fields looked up (a latency series reads 22 per point). Counters are rates (unit 1/s or 1/min), gauges the last value written in a step, quantiles are computed over the step's histogram of every instance.",
			query: []obj{
				queryParam("metric", obj{"type": "array", "items": enum(str(""), metricNames()...)}, "A metric (repeat for several; GET /v1/stats/metrics lists them)."),
				queryParam("window", enum(str(""), "15m", "1h", "24h"), "The window up to now (default 15m)."),
				queryParam("since", obj{"type": "integer", "minimum": 0}, "Only the points after this Unix time (seconds): a chart holding the window polls for its new points."),
				queryParam("label.queue", str(""), "Only the series of this queue."),
				queryParam("label.state", str(""), "Only the series of this state (queue.size: pending, scheduled, active, retrying, dead; executor.tasks: a task status)."),
				queryParam("label.source", str(""), "Only the series of this index source (binlog, kafka:<topic>/<partition>, pgoutput:<slot>, stream:<key>, push)."),
				queryParam("label.stage", str(""), "Only the series of this executor stage handler."),
			},
			replies: []reply{ok("StatsSeries", "The series, by metric in the query's order, then by labels.")},
			codes:   []string{invalid, notFound, tooLarge, unavailable}},
		{method: "GET", path: "/v1/stats/metrics", id: "statsMetrics", role: "read", tag: "operations",
			summary: "The metrics of the statistics history: unit, kind, labels and the label sets written in the last day",
			replies: []reply{ok("StatsMetrics", "Every metric, and the windows.")},
			codes:   []string{notFound, unavailable}},
		{method: "GET", path: "/v1/queues", id: "listQueues", role: "admin", tag: "queues",
			summary: "The configured queues with their counts: all, or one page",
			desc:    "Sorted by name. With limit, one page after cursor; only that page's counts are read.",
			query: []obj{
				queryParam("limit", obj{"type": "integer", "minimum": 1, "maximum": queue.MaxListCount}, "Page size (default: every queue)."),
				cursorParam("The next of the previous page."),
				queryParam("match", str(""), "Only names containing this (case-insensitive)."),
			},
			replies: []reply{ok("QueueList", "The queues, sorted by name.")},
			codes:   []string{invalid}},
		{method: "GET", path: "/v1/queues/{queue}/throughput", id: "queueThroughput", role: "admin", tag: "queues",
			summary:  "A queue's jobs per minute and outcome, shared by every instance",
			pathDesc: queueDesc,
			query:    []obj{queryParam("minutes", obj{"type": "integer", "minimum": 1, "maximum": queue.MaxThroughputMinutes}, "How many minutes up to now (default 180).")},
			replies:  []reply{ok("QueueThroughput", "Every minute, oldest first.")},
			codes:    []string{invalid, notFound, unavailable}},
		{method: "GET", path: "/v1/executor/state", id: "executorState", role: "admin", tag: "executor",
			summary: "Key counts, held tenant locks (holder, fence, time left), plans and checkpoints",
			replies: []reply{ok("ExecutorState", "The state.")},
			codes:   []string{notFound, unavailable}},
		{method: "GET", path: "/v1/index/status", id: "indexStatus", role: "read", tag: "index",
			summary: "The index counters of every instance (shared in the store), and this instance's sources' progress",
			replies: []reply{ok("IndexStatus", "The counters.")},
			codes:   []string{notFound}},

		// Dashboard (httpapi/ui.go, ui_session.go; docs/dashboard.md).
		{method: "GET", path: "/ui", id: "dashboardRedirect", role: "none", tag: "dashboard",
			summary: "Redirect to /ui/",
			replies: []reply{{status: 301, desc: "Moved to /ui/.", headers: obj{"Location": obj{"description": "/ui/", "schema": str("")}}}}},
		{method: "GET", path: "/ui/", id: "dashboardPage", role: "none", tag: "dashboard",
			summary: "The dashboard's page",
			replies: []reply{{status: 200, desc: "The page.", rawType: "text/html", rawSchema: str("")}},
			codes:   []string{notFound}},
		{method: "GET", path: "/ui/{file}", id: "dashboardAsset", role: "none", tag: "dashboard",
			summary: "One of the dashboard's files (app.js, app.css)", pathDesc: map[string]string{"file": "The file name."},
			replies: []reply{{status: 200, desc: "The file.", rawType: "*/*", rawSchema: str("")}},
			codes:   []string{notFound}},
		{method: "GET", path: "/ui/vendor/{lib}/{file}", id: "dashboardVendorAsset", role: "none", tag: "dashboard",
			summary:  "A file of a library the dashboard embeds unmodified (vendor/uplot: uPlot.iife.min.js, uPlot.min.css, LICENSE, SOURCE)",
			pathDesc: map[string]string{"lib": "The library's directory.", "file": "The file name."},
			replies:  []reply{{status: 200, desc: "The file.", rawType: "*/*", rawSchema: str("")}},
			codes:    []string{notFound}},
		{method: "POST", path: "/ui/login", id: "dashboardLogin", role: "none", tag: "dashboard",
			summary: "Exchange an API token for a session cookie (HttpOnly, SameSite=Strict) and a CSRF token",
			body:    "LoginRequest",
			replies: []reply{{status: 200, desc: "The session; Set-Cookie carries redstate_session.", schema: "Session", headers: obj{
				"Set-Cookie": obj{"description": "redstate_session=…; HttpOnly; SameSite=Strict.", "schema": str("")},
			}}},
			codes: []string{invalid, tooLarge, redstate.EUNAUTHORIZED, httpapi.ETOOMANYREQUESTS}},
		{method: "POST", path: "/ui/logout", id: "dashboardLogout", role: "none", tag: "dashboard",
			summary: "Clear the session cookie",
			replies: []reply{{status: 204, desc: "Cleared."}}},
		{method: "GET", path: "/ui/session", id: "dashboardSession", role: "none", tag: "dashboard",
			summary: "Whether auth is on and the caller's session (name, role, CSRF token)",
			replies: []reply{ok("Session", "The session.")}},

		// Operations (httpapi/server.go, health.go, openapi.go).
		{method: "GET", path: "/healthz", id: "healthz", role: "none", tag: "operations",
			summary: "Liveness: the process is up",
			replies: []reply{ok("Status", "status ok.")}},
		{method: "GET", path: "/readyz", id: "readyz", role: "none", tag: "operations",
			summary: "Readiness: Redis answers and no block runs degraded",
			replies: []reply{ok("Status", "status ready.")},
			codes:   []string{unavailable}},
		{method: "GET", path: "/metrics", id: "metrics", role: "read", tag: "operations",
			summary: "Prometheus metrics",
			replies: []reply{{status: 200, desc: "Prometheus text exposition format.", rawType: "text/plain", rawSchema: str("")}}},
		{method: "GET", path: "/openapi.json", id: "openapi", role: "none", tag: "operations",
			summary: "This OpenAPI 3.1 document",
			replies: []reply{{status: 200, desc: "The document.", rawType: "application/json", rawSchema: obj{"type": "object"}}}},
	}
}

// queueDesc describes the {queue} path parameter.
var queueDesc = map[string]string{"queue": "A configured queue name; one path segment, percent-decoded (report:queue or report%3Aqueue)."}

// jobDesc describes the path parameters of one job.
var jobDesc = map[string]string{"queue": queueDesc["queue"], "id": "The job id."}

// jobLocation is the Location header of an enqueued job.
var jobLocation = obj{"Location": obj{"description": "/v1/queues/{queue}/jobs/{id}.", "schema": str("")}}

// metricNames are the statistics history's metrics.
func metricNames() []string {
	var out []string
	for _, m := range history.Metrics() {
		out = append(out, m.Name)
	}
	return out
}
