package config

import (
	"reflect"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/redstate/redstate/executor"
	"github.com/redstate/redstate/internal/redact"
	"github.com/redstate/redstate/queue"
)

// Redaction replaces every secret in Redacted's result.
const Redaction = redact.Marker

// Redacted returns a copy of c fit for printing and logging: Redis passwords (including one
// inside redis.url), the sentinel password, the Kafka SASL password and every auth token are
// replaced by "***".
// c itself is not modified.
func (c Config) Redacted() Config {
	out := c
	if out.Redis.Password != "" {
		out.Redis.Password = Redaction
	}
	if out.Redis.Sentinel.Password != "" {
		out.Redis.Sentinel.Password = Redaction
	}
	out.Redis.URL = redact.URL(out.Redis.URL)
	out.Database.URL = redact.URL(out.Database.URL)
	out.Index.Postgres.URL = redact.URL(out.Index.Postgres.URL)
	out.Index.MySQL.URL = redact.URL(out.Index.MySQL.URL)
	if out.Index.Kafka.SASL.Password != "" {
		out.Index.Kafka.SASL.Password = Redaction
	}
	if c.Queue.Queues != nil {
		out.Queue.Queues = make([]queue.Spec, len(c.Queue.Queues))
		for i, q := range c.Queue.Queues {
			q.RetryDelays = slices.Clone(q.RetryDelays)
			q.Webhook.URL = redact.URL(q.Webhook.URL)
			if q.Webhook.Secret != "" {
				q.Webhook.Secret = Redaction
			}
			out.Queue.Queues[i] = q
		}
	}
	if c.Executor.Handlers != nil {
		out.Executor.Handlers = make([]executor.HandlerConfig, len(c.Executor.Handlers))
		for i, h := range c.Executor.Handlers {
			h.URL = redact.URL(h.URL)
			if h.Secret != "" {
				h.Secret = Redaction
			}
			out.Executor.Handlers[i] = h
		}
	}
	out.Redis.ClusterAddrs = slices.Clone(c.Redis.ClusterAddrs)
	out.Redis.Sentinel.Addrs = slices.Clone(c.Redis.Sentinel.Addrs)
	if c.Auth.Tokens != nil {
		out.Auth.Tokens = make([]Token, len(c.Auth.Tokens))
		for i, t := range c.Auth.Tokens {
			t.Roles = slices.Clone(t.Roles)
			if t.Token != "" {
				t.Token = Redaction
			}
			out.Auth.Tokens[i] = t
		}
	}
	return out
}

// YAML returns c as a YAML document with every key in struct order, in the same form Load
// reads (durations as "10s"). Call it on Redacted() before printing.
func (c Config) YAML() ([]byte, error) {
	return yaml.Marshal(toNode(reflect.ValueOf(c)))
}

func toNode(v reflect.Value) *yaml.Node {
	switch {
	case v.Type() == durationType:
		return scalar(time.Duration(v.Int()).String(), "!!str")
	case v.Kind() == reflect.Struct:
		n := &yaml.Node{Kind: yaml.MappingNode}
		t := v.Type()
		for _, f := range koanfFields(t) {
			n.Content = append(n.Content, scalar(f.Name, "!!str"), toNode(v.FieldByIndex(f.Index)))
		}
		return n
	case v.Kind() == reflect.Slice:
		n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		if v.Type().Elem().Kind() == reflect.Struct {
			n.Style = 0
		}
		for i := range v.Len() {
			n.Content = append(n.Content, toNode(v.Index(i)))
		}
		return n
	default:
		n := &yaml.Node{}
		if err := n.Encode(v.Interface()); err != nil {
			return scalar(v.String(), "!!str")
		}
		return n
	}
}

func scalar(value, tag string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value}
}
