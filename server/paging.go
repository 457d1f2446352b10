package server

import (
	"cmp"
	"net/http"
	"slices"
	"strconv"
)

// maxPage is the most items a list answers with at once (and the
// default page size).
const maxPage = 1000

// listPage reads a list's limit (1 to maxPage, maxPage by default) and
// after (the next cursor of the previous page, "" for the first).
func listPage(r *http.Request) (limit int, after string, err error) {
	n, err := queryInt(r, "limit", 1, maxPage, maxPage)
	if err != nil {
		return 0, "", err
	}
	if v := r.URL.Query()["after"]; len(v) > 1 {
		return 0, "", badRequest("query parameter after is given %d times: give it once", len(v))
	}
	return int(n), r.URL.Query().Get("after"), nil
}

// pageByName returns the items whose name sorts (by bytes) after after,
// at most limit of them, in name order, and the next page's cursor ("" on
// the last page).
func pageByName[T any](items []T, name func(T) string, limit int, after string) ([]T, string) {
	items = slices.Clone(items)
	slices.SortStableFunc(items, func(a, b T) int { return cmp.Compare(name(a), name(b)) })
	i, _ := slices.BinarySearchFunc(items, after, func(it T, s string) int {
		if name(it) <= s {
			return -1
		}
		return 1
	})
	items = items[i:]
	if len(items) <= limit {
		return items, ""
	}
	return items[:limit], name(items[limit-1])
}

// pageByID returns the items after the one whose id is after (the list's
// own order), at most limit, and the next cursor; an unknown after is a
// 400.
func pageByID[T any](items []T, id func(T) string, limit int, after string) ([]T, string, error) {
	if after != "" {
		i := slices.IndexFunc(items, func(it T) bool { return id(it) == after })
		if i < 0 {
			return nil, "", badRequest("after %q: not in this list; give the next of the previous page", truncate(after, 60))
		}
		items = items[i+1:]
	}
	if len(items) <= limit {
		return items, "", nil
	}
	return items[:limit], id(items[limit-1]), nil
}

// nextInvocation is the next cursor of a page of invocations: the last
// id when the page is full.
func nextInvocation(n, limit int, lastID int64) string {
	if n < limit || n == 0 {
		return ""
	}
	return strconv.FormatInt(lastID, 10)
}
