package runtime

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// threadCgroup moves threads into a cgroup (Config.LongGuestCgroup) and
// back into the one the process runs in, through the two cgroups' thread
// files: "tasks" on cgroup v1, "cgroup.threads" on v2.
type threadCgroup struct {
	dir        string
	into, home *os.File
}

// openThreadCgroup opens dir, a cgroup, and the cgroup of the same
// hierarchy that the process runs in, for moving threads between them.
func openThreadCgroup(dir string) (*threadCgroup, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(dir); err != nil {
		return nil, err
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	m, err := cgroupMountOf(dir)
	if err != nil {
		return nil, err
	}
	own, err := m.ownCgroup()
	if err != nil {
		return nil, err
	}
	file := "tasks"
	if m.v2 {
		file = "cgroup.threads"
	}
	into, err := os.OpenFile(filepath.Join(dir, file), os.O_WRONLY, 0)
	if err != nil {
		return nil, err
	}
	home, err := os.OpenFile(filepath.Join(own, file), os.O_WRONLY, 0)
	if err != nil {
		_ = into.Close()
		return nil, fmt.Errorf("the process's own cgroup: %w", err)
	}
	return &threadCgroup{dir: dir, into: into, home: home}, nil
}

// enter moves thread tid into the cgroup.
func (c *threadCgroup) enter(tid int) error { return writeTID(c.into, tid) }

// leave moves thread tid back into the process's own cgroup.
func (c *threadCgroup) leave(tid int) error { return writeTID(c.home, tid) }

func writeTID(f *os.File, tid int) error {
	_, err := f.WriteAt(strconv.AppendInt(nil, int64(tid), 10), 0)
	return err
}

// close closes the thread files.
func (c *threadCgroup) close() error {
	return errors.Join(c.into.Close(), c.home.Close())
}

// cgroupMount is a mounted cgroup hierarchy, from /proc/self/mountinfo.
type cgroupMount struct {
	point       string   // where it is mounted
	root        string   // the cgroup shown there (not "/" in a container)
	v2          bool     // cgroup2, the unified hierarchy
	controllers []string // v1: the controllers (and name=) it was mounted with
}

// cgroupMountOf finds the cgroup hierarchy mounted deepest above dir.
func cgroupMountOf(dir string) (cgroupMount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return cgroupMount{}, err
	}
	defer f.Close()
	var best cgroupMount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// id parent major:minor root point options [optional...] - type source super-options
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		a, b := strings.Fields(pre), strings.Fields(post)
		if !ok || len(a) < 5 || len(b) < 3 || (b[0] != "cgroup" && b[0] != "cgroup2") {
			continue
		}
		point := unescapeMountinfo(a[4])
		if !within(dir, point) || len(point) <= len(best.point) {
			continue
		}
		best = cgroupMount{point: point, root: unescapeMountinfo(a[3]), v2: b[0] == "cgroup2"}
		if !best.v2 {
			best.controllers = strings.Split(b[2], ",")
		}
	}
	if err := sc.Err(); err != nil {
		return cgroupMount{}, err
	}
	if best.point == "" {
		return cgroupMount{}, fmt.Errorf("%s is not in a cgroup filesystem", dir)
	}
	return best, nil
}

// ownCgroup returns the directory of the process's cgroup in m's
// hierarchy, from /proc/self/cgroup.
func (m cgroupMount) ownCgroup() (string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(data)) {
		// hierarchy-id:controllers:path; v2's line is "0::path".
		parts := strings.SplitN(strings.TrimSuffix(line, "\n"), ":", 3)
		if len(parts) != 3 {
			continue
		}
		var match bool
		if m.v2 {
			match = parts[0] == "0" && parts[1] == ""
		} else {
			match = parts[1] != "" && !slices.ContainsFunc(strings.Split(parts[1], ","), func(c string) bool {
				return !slices.Contains(m.controllers, c)
			})
		}
		if !match {
			continue
		}
		if !within(parts[2], m.root) {
			return "", fmt.Errorf("the process's cgroup %s is outside the hierarchy mounted at %s", parts[2], m.point)
		}
		return filepath.Join(m.point, strings.TrimPrefix(parts[2], m.root)), nil
	}
	return "", fmt.Errorf("the process is in no cgroup of the hierarchy mounted at %s", m.point)
}

// within reports whether path is dir or lies below it.
func within(path, dir string) bool {
	return dir == "/" || path == dir || strings.HasPrefix(path, dir+"/")
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
