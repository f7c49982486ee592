// Package deploy holds redstate's deployment and monitoring kits and the tests that keep them
// working: deploy/compose.yaml (Docker Compose), deploy/helm/redstate (Helm chart),
// deploy/systemd/redstate.service (systemd unit) and deploy/monitoring (Prometheus rules and
// a Grafana dashboard). The package has no code of its own; docs/deploy.md explains each kit
// and the production checklist.
//
// Its tests parse every kit and check it against the server it deploys: the environment of
// the compose file and the configuration block of the chart load with the configuration loader,
// the systemd unit passes systemd-analyze verify, the rules pass promtool check rules and their
// unit tests, and every metric a rule or the dashboard names is one that a running server
// exports. The Helm checks run helm lint and helm template and take minutes the first time
// (helm is built from its module); they are behind the build tag deploycheck
// (make deploy-check).
package deploy
