package manifest_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/functions/manifest"
)

// Every key the manifest reader accepts is documented in docs/manifest.md,
// so the reference cannot drift from the parser: a new key without a line
// there fails this test.
func TestEveryManifestKeyIsDocumented(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/manifest.md")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	collectYAMLKeys(reflect.TypeFor[manifest.Manifest](), keys)
	// Enqueue decodes itself (to keep its body as JSON): its keys are
	// those of its UnmarshalYAML.
	keys["queue"], keys["body"] = true, true
	if len(keys) < 20 {
		t.Fatalf("found only %d manifest keys by reflection; the walk is broken", len(keys))
	}
	for key := range keys {
		if !strings.Contains(string(doc), "`"+key+"`") {
			t.Errorf("manifest key %q is not documented in docs/manifest.md (write it as `%s`)", key, key)
		}
	}
}

// collectYAMLKeys adds the yaml keys of struct type t and of the structs
// it holds (through pointers, slices and maps).
func collectYAMLKeys(t reflect.Type, keys map[string]bool) {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		collectYAMLKeys(t.Elem(), keys)
		return
	case reflect.Struct:
	default:
		return
	}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		keys[name] = true
		collectYAMLKeys(f.Type, keys)
	}
}
