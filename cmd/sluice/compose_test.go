package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/client"
	"github.com/sluicehq/sluice/client/clienttest"
	"github.com/sluicehq/sluice/internal/wasmbuild"
)

// docker-compose.yml parses, its sluice service's healthcheck is `sluice
// health` (and works against a running server), the Dockerfile's
// HEALTHCHECK too, and its one-shot first-key service creates a working
// key in the database. No Docker engine is needed: the commands run
// in-process.
func TestComposeFile(t *testing.T) {
	// Not parallel: it sets DATABASE_URL.
	root, err := wasmbuild.Root()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "docker-compose.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Image       string         `yaml:"image"`
			Build       string         `yaml:"build"`
			Command     []string       `yaml:"command"`
			Profiles    []string       `yaml:"profiles"`
			Environment map[string]any `yaml:"environment"`
			DependsOn   map[string]struct {
				Condition string `yaml:"condition"`
			} `yaml:"depends_on"`
			Healthcheck struct {
				Test []string `yaml:"test"`
			} `yaml:"healthcheck"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &compose); err != nil {
		t.Fatalf("docker-compose.yml: %v", err)
	}
	srv := clienttest.New(t)
	ctx := context.Background()

	health := compose.Services["sluice"].Healthcheck.Test
	if len(health) < 3 || health[0] != "CMD" || health[1] != "/usr/local/bin/sluice" || health[2] != "health" {
		t.Fatalf("sluice healthcheck = %q, want [CMD /usr/local/bin/sluice health ...]", health)
	}
	args := append([]string(nil), health[2:]...)
	for i := range args {
		if i > 0 && args[i-1] == "--addr" {
			args[i] = srv.URL
		}
	}
	var out, errOut bytes.Buffer
	if code := run(ctx, args, &out, &errOut); code != 0 {
		t.Errorf("healthcheck %q against a running server: exit %d: %s", args, code, errOut.String())
	}

	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^HEALTHCHECK .*\\\n\s+CMD \["/usr/local/bin/sluice", "health"\]`).Match(dockerfile) {
		t.Errorf("Dockerfile has no HEALTHCHECK running sluice health")
	}

	fk := compose.Services["first-key"]
	if fk.Image != compose.Services["sluice"].Image || fk.DependsOn["sluice"].Condition != "service_healthy" || len(fk.Profiles) == 0 {
		t.Errorf("first-key service: %+v; want the sluice image, after sluice is healthy, only when named", fk)
	}
	if fk.Environment["DATABASE_URL"] != compose.Services["sluice"].Environment["DATABASE_URL"] {
		t.Errorf("first-key's DATABASE_URL differs from sluice's")
	}
	t.Setenv("DATABASE_URL", os.Getenv(clienttest.EnvVar))
	out.Reset()
	errOut.Reset()
	if code := run(ctx, append(append([]string(nil), fk.Command...), "--schema", srv.Schema), &out, &errOut); code != 0 {
		t.Fatalf("first-key %q: exit %d: %s", fk.Command, code, errOut.String())
	}
	m := regexp.MustCompile(`export SLUICE_KEY=(\S+):(\S+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("first-key printed no key:\n%s", out.String())
	}
	c, err := client.New(srv.URL, m[1], m[2])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Queues.Create(ctx, "first", client.QueueSettings{}); err != nil {
		t.Errorf("the first key cannot create a queue: %v", err)
	}
	if _, err := c.Functions.List(ctx); err != nil {
		t.Errorf("the first key cannot list functions: %v", err)
	}
	if !strings.Contains(string(data), "docker compose run --rm first-key") {
		t.Errorf("docker-compose.yml does not say how to run first-key")
	}
}
