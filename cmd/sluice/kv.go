package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sluicehq/sluice/client"
)

func runKV(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return dispatch(ctx, "kv", []subcommand{
		{"get", "STORE KEY", "print the value of a key", kvGet},
		{"set", "STORE KEY VALUE [--ttl 1h]", "set a key (VALUE - reads stdin)", kvSet},
		{"list", "STORE [--prefix P] [--limit N]", "list the live keys of a store", kvList},
		{"delete", "STORE KEY", "delete a key", kvDelete},
	}, args, stdout, stderr)
}

// kvValue is a value as printed: its text, or its bytes in base64.
func kvValue(e client.KVEntry) string {
	if e.Value != nil {
		return *e.Value
	}
	return "base64:" + e.ValueBase64
}

func kvKey(e client.KVEntry) string {
	if e.Key != "" {
		return e.Key
	}
	return "base64:" + e.KeyBase64
}

func kvGet(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("kv get", "STORE KEY")
	pos, c, err := f.start(args, stdout, "STORE", "KEY")
	if err != nil {
		return err
	}
	e, err := c.KV.Get(ctx, pos[0], pos[1])
	if err != nil {
		return err
	}
	return f.output(stdout, e, func(w io.Writer) error {
		if e.Value == nil { // not text: the raw bytes
			b, _ := base64.StdEncoding.DecodeString(e.ValueBase64)
			_, err := w.Write(b)
			return err
		}
		_, err := fmt.Fprintln(w, *e.Value)
		return err
	})
}

func kvSet(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("kv set", "STORE KEY VALUE [--ttl 1h]")
	ttl := f.Duration("ttl", 0, "expire the key after this long (whole seconds; default never)")
	pos, c, err := f.start(args, stdout, "STORE", "KEY", "VALUE")
	if err != nil {
		return err
	}
	if *ttl < 0 {
		return usageErrorf("--ttl %s: must not be negative", *ttl)
	}
	value := []byte(pos[2])
	if pos[2] == "-" {
		if value, err = io.ReadAll(io.LimitReader(os.Stdin, 1<<20+1)); err != nil {
			return err
		}
	}
	if err := c.KV.Set(ctx, pos[0], pos[1], value, *ttl); err != nil {
		return err
	}
	msg := "set %s in store %s"
	if *ttl > 0 {
		msg += fmt.Sprintf(" (expires in %s)", ttl.Round(time.Second))
	}
	return done(f, stdout, map[string]any{"store": pos[0], "key": pos[1], "ttl_seconds": int64(ttl.Seconds())}, msg, pos[1], pos[0])
}

func kvList(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("kv list", "STORE [--prefix P] [--limit N] [--after KEY | --after-base64 B64]")
	prefix := f.String("prefix", "", "only keys starting with this")
	limit := f.Int("limit", 100, "at most this many keys (1-1000)")
	after := f.String("after", "", "only keys sorting after KEY (the last of the previous page)")
	after64 := f.String("after-base64", "", "the same, the key's bytes in base64 (a key that is not text)")
	pos, c, err := f.start(args, stdout, "STORE")
	if err != nil {
		return err
	}
	if *limit < 1 || *limit > 1000 {
		return usageErrorf("--limit %d: use 1-1000", *limit)
	}
	if *after64 != "" {
		if *after != "" {
			return usageErrorf("give --after or --after-base64, not both")
		}
		b, err := base64.StdEncoding.DecodeString(*after64)
		if err != nil {
			return usageErrorf("--after-base64 %q: %v", *after64, err)
		}
		*after = string(b)
	}
	l, err := c.KV.List(ctx, pos[0], *prefix, *after, *limit)
	if err != nil {
		return err
	}
	return f.output(stdout, l, func(w io.Writer) error {
		rows := make([][]string, len(l.Entries))
		for i, e := range l.Entries {
			exp := "-"
			if e.ExpiresAt != nil {
				exp = stamp(*e.ExpiresAt)
			}
			v := kvValue(e)
			if len(v) > 60 {
				v = v[:57] + "..."
			}
			rows[i] = []string{kvKey(e), v, fmt.Sprint(e.SizeBytes), exp}
		}
		if err := table(w, "KEY\tVALUE\tBYTES\tEXPIRES", rows); err != nil || l.NextBase64 == "" {
			return err
		}
		_, err := fmt.Fprintf(w, "more: sluice kv list %s --limit %d --after-base64 %s\n", pos[0], *limit, l.NextBase64)
		return err
	})
}

func kvDelete(ctx context.Context, args []string, stdout, _ io.Writer) error {
	f := newCLIFlags("kv delete", "STORE KEY")
	pos, c, err := f.start(args, stdout, "STORE", "KEY")
	if err != nil {
		return err
	}
	if err := c.KV.Delete(ctx, pos[0], pos[1]); err != nil {
		return err
	}
	return done(f, stdout, map[string]any{"store": pos[0], "key": pos[1], "deleted": true}, "deleted %s from store %s", pos[1], pos[0])
}
