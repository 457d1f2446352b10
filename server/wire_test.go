package server

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/wire"
)

// jsonNames returns the JSON names of a struct's fields, those of
// embedded structs included, sorted.
func jsonNames(rt reflect.Type) []string {
	var names []string
	for i := range rt.NumField() {
		f := rt.Field(i)
		if f.Anonymous {
			names = append(names, jsonNames(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

func without(names []string, drop string) []string {
	return slices.DeleteFunc(slices.Clone(names), func(n string) bool { return n == drop })
}

// The bodies the server decodes into its own forms (to check every number
// with a message naming the field) take the names of the wire types the
// client sends, and no others.
func TestRequestFormsMatchWire(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		form, wire []string
	}{
		{jsonNames(reflect.TypeFor[receiveRequest]()), jsonNames(reflect.TypeFor[wire.ReceiveRequest]())},
		{jsonNames(reflect.TypeFor[sendEntriesRequest]()), jsonNames(reflect.TypeFor[wire.SendEntriesRequest]())},
		{jsonNames(reflect.TypeFor[sendEntry]()), jsonNames(reflect.TypeFor[wire.SendEntry]())},
		{jsonNames(reflect.TypeFor[visibilityRequest]()), jsonNames(reflect.TypeFor[wire.VisibilityRequest]())},
		{jsonNames(reflect.TypeFor[redriveRequest]()), jsonNames(reflect.TypeFor[wire.RedriveRequest]())},
		{jsonNames(reflect.TypeFor[setAliasRequest]()), jsonNames(reflect.TypeFor[wire.SetAliasRequest]())},
		{jsonNames(reflect.TypeFor[subscribeRequest]()), jsonNames(reflect.TypeFor[wire.SubscribeRequest]())},
		{jsonNames(reflect.TypeFor[publishEntriesRequest]()), jsonNames(reflect.TypeFor[wire.PublishEntriesRequest]())},
		{jsonNames(reflect.TypeFor[publishEntry]()), jsonNames(reflect.TypeFor[wire.PublishEntry]())},
		// A listed trigger's updated_at is the server's to set.
		{jsonNames(reflect.TypeFor[triggerRequest]()), without(jsonNames(reflect.TypeFor[wire.Trigger]()), "updated_at")},
		{slices.Sorted(slices.Values(append([]string{"name", deadLetterQueueOption, fifoOption}, queueOptions...))), jsonNames(reflect.TypeFor[wire.CreateQueueRequest]())},
	} {
		if !slices.Equal(c.form, c.wire) {
			t.Errorf("the server decodes %v, the wire type has %v", c.form, c.wire)
		}
	}
}

// The codes the server maps errors to are the wire's.
func TestErrorCodesAreWire(t *testing.T) {
	t.Parallel()
	known := []string{wire.CodeInvalidJSON, wire.CodeInvalidArgument, wire.CodeInvalidName, wire.CodeUnsupportedMediaType,
		wire.CodeUnauthorized, wire.CodeForbidden, wire.CodeQueueNotFound, wire.CodeMessageNotFound, wire.CodeNotFound,
		wire.CodeMethodNotAllowed, wire.CodeQueueExists, wire.CodeConflict, wire.CodeStaleReceipt, wire.CodeMessageTooLarge,
		wire.CodeBodyTooLarge, wire.CodeInvalidSignature, wire.CodeInternal, wire.CodeUnavailable,
		wire.CodeTopicNotFound, wire.CodeTopicExists, wire.CodeQueueInUse, wire.CodeLimitExceeded}
	var codes []string
	for _, k := range pgqueueKinds {
		codes = append(codes, k.code)
	}
	for _, c := range codes {
		if !slices.Contains(known, c) {
			t.Errorf("the server answers code %q, which package wire does not name", c)
		}
	}
}
