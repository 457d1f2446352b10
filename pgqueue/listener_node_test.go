package pgqueue

import (
	"testing"

	"github.com/jackc/pgx/v5"
)

// A Citus node's connection settings are the pool's (user, password,
// database, TLS mode, runtime parameters) at the node's host and port, the
// TLS server name following the host where the pool checked or sent one,
// one attempt per TLS choice.
func TestNodeConfigKeepsThePoolsSettings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url        string
		tls        []bool // TLS on each attempt: the config, then its fallbacks
		serverName string // of the TLS attempts
	}{
		{"postgres://u:pw@coord:5432/db?sslmode=disable&application_name=sluice", []bool{false}, ""},
		{"postgres://u:pw@coord:5432/db?sslmode=prefer&application_name=sluice", []bool{true, false}, "worker-1"},
		{"postgres://u:pw@coord:5432/db?sslmode=require&application_name=sluice", []bool{true}, "worker-1"},
		{"postgres://u:pw@coord:5432/db?sslmode=verify-full&application_name=sluice", []bool{true}, "worker-1"},
		// Several coordinator hosts (HA): the node is one host.
		{"postgres://u:pw@coord-a:5432,coord-b:5433/db?sslmode=prefer&application_name=sluice", []bool{true, false}, "worker-1"},
	} {
		pool, err := pgx.ParseConfig(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		cfg := node{host: "worker-1", port: 6432}.config(pool)
		if cfg.User != "u" || cfg.Password != "pw" || cfg.Database != "db" || cfg.RuntimeParams["application_name"] != "sluice" {
			t.Errorf("%s: node config has user %q, password %q, database %q, params %v; want the pool's", tc.url, cfg.User, cfg.Password, cfg.Database, cfg.RuntimeParams)
		}
		hosts := []string{cfg.Host}
		ports := []uint16{cfg.Port}
		tlsOn := []bool{cfg.TLSConfig != nil}
		names := []string{}
		if cfg.TLSConfig != nil {
			names = append(names, cfg.TLSConfig.ServerName)
		}
		for _, f := range cfg.Fallbacks {
			hosts, ports, tlsOn = append(hosts, f.Host), append(ports, f.Port), append(tlsOn, f.TLSConfig != nil)
			if f.TLSConfig != nil {
				names = append(names, f.TLSConfig.ServerName)
			}
		}
		if len(tlsOn) != len(tc.tls) {
			t.Errorf("%s: %d connection attempts (TLS %v), want %d (TLS %v)", tc.url, len(tlsOn), tlsOn, len(tc.tls), tc.tls)
			continue
		}
		for i := range tlsOn {
			if hosts[i] != "worker-1" || ports[i] != 6432 || tlsOn[i] != tc.tls[i] {
				t.Errorf("%s: attempt %d goes to %s:%d with TLS %v, want worker-1:6432 with TLS %v", tc.url, i, hosts[i], ports[i], tlsOn[i], tc.tls[i])
			}
		}
		for _, n := range names {
			if n != tc.serverName {
				t.Errorf("%s: TLS server name %q, want %q", tc.url, n, tc.serverName)
			}
		}
		// The pool's own settings are left as they were.
		if pool.Host == "worker-1" || (pool.TLSConfig != nil && pool.TLSConfig.ServerName == "worker-1") {
			t.Errorf("%s: the pool's config was changed", tc.url)
		}
	}
	// The zero node is the pool's own server, unchanged.
	pool, _ := pgx.ParseConfig("postgres://u@coord:5432/db?sslmode=prefer")
	if cfg := (node{}).config(pool); cfg.Host != "coord" || cfg.Port != 5432 || len(cfg.Fallbacks) != len(pool.Fallbacks) {
		t.Errorf("zero node: %s:%d with %d fallbacks, want the pool's coord:5432 with %d", cfg.Host, cfg.Port, len(cfg.Fallbacks), len(pool.Fallbacks))
	}
}
