package pgqueue

import (
	"encoding/json"
	"regexp"
	"strings"
)

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// ValidName reports whether name is a valid queue or topic name: 1-80
// characters from A-Z a-z 0-9 _ -.
func ValidName(name string) bool { return nameRE.MatchString(name) }

// checkName returns an ErrInvalidName error for an invalid queue or topic
// name, worded like the SQL API's.
func checkName(kind, name string) error {
	if ValidName(name) {
		return nil
	}
	return newError(ErrInvalidName, "invalid %s name %s: use 1-80 characters from A-Z a-z 0-9 _ -", kind, quote(name))
}

// quote renders s as a JSON string, the way the SQL API quotes names in
// its messages.
func quote(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}
