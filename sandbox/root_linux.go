//go:build linux

package sandbox

import (
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// The minimal root (mode "root" of the boot script): what the code's file
// system holds. The probe asks the interpreter what it needs (needsScript:
// its executable, its standard library and package directories, and every
// file it has mapped after importing Options.Modules); planRoot turns that
// into bind mounts and symlinks, resolving symlink chains the way the
// dynamic loader will follow them (/lib64 → usr/lib64, libblas.so.3 →
// /etc/alternatives/… → the real library) so that each link exists in the
// new root and each real file or directory is bound read-only. Nothing is
// bound that holds, or lies inside, one of Options.Hidden.

// Paths of the run's own files inside the minimal root.
const (
	insideDir  = "/sandbox"
	insideLib  = insideDir + "/lib"
	insideWork = insideDir + "/work"
)

// rootDevices are bound into the minimal root's /dev.
func rootDevices() []string { return []string{"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"} }

// needsScript prints what the interpreter needs, as JSON, after importing
// the modules: {"executable", "dirs": [...], "mapped": [...]}.
func needsScript(modules []string) string {
	var b strings.Builder
	b.WriteString("import json, os, sys, sysconfig\n")
	for _, m := range modules {
		fmt.Fprintf(&b, "import %s\n", m)
	}
	b.WriteString(`here = os.path.dirname(os.path.abspath(__file__))
dirs = set(sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib"))
dirs.update(p for p in sys.path if p)
dirs = sorted(d for d in dirs if os.path.isdir(d) and not os.path.abspath(d).startswith(here))
mapped = set()
with open("/proc/self/maps") as f:
    for line in f:
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith("/") and not parts[5].endswith(" (deleted)\n"):
            mapped.add(parts[5].strip())
print(json.dumps({"executable": sys.executable, "dirs": dirs, "mapped": sorted(mapped)}))
`)
	return b.String()
}

// rootNeeds is needsScript's answer.
type rootNeeds struct {
	Executable string   `json:"executable"`
	Dirs       []string `json:"dirs"`
	Mapped     []string `json:"mapped"`
}

// rootLayout is the content of the minimal root besides the run's own files.
type rootLayout struct {
	// Binds are real paths (no symlink among their components), bound at
	// the same path, read-only; Dir says whether each is a directory.
	Binds []bindMount
	// Symlinks are recreated at the same path with the same target.
	Symlinks [][2]string
}

type bindMount struct {
	Path string
	Dir  bool
}

// MarshalJSON writes a bind as the boot script reads it: [path, is_dir].
func (b bindMount) MarshalJSON() ([]byte, error) { return json.Marshal([]any{b.Path, b.Dir}) }

// planRoot lays out the minimal root for needs; hidden paths must stay out.
func planRoot(needs rootNeeds, hidden []string) (*rootLayout, error) {
	p := &rootPlanner{binds: map[string]bool{}, links: map[string]string{}}
	exe, err := p.resolve(needs.Executable, 0)
	if err != nil {
		return nil, fmt.Errorf("the interpreter %s: %w", needs.Executable, err)
	}
	p.binds[exe] = false
	// The program interpreter the executable names (/lib64/ld-linux…).
	if f, err := elf.Open(exe); err == nil {
		for _, prog := range f.Progs {
			if prog.Type != elf.PT_INTERP {
				continue
			}
			b := make([]byte, prog.Filesz)
			if _, err := prog.ReadAt(b, 0); err == nil {
				if interp := strings.TrimRight(string(b), "\x00"); interp != "" {
					if real, err := p.resolve(interp, 0); err == nil {
						p.binds[filepath.Dir(real)] = true
					}
				}
			}
		}
		f.Close()
	}
	for _, d := range needs.Dirs {
		real, err := p.resolve(d, 0)
		if err != nil {
			continue // a directory of sys.path that is not there
		}
		p.binds[real] = true
	}
	var libDirs []string
	for _, m := range needs.Mapped {
		real, err := p.resolve(m, 0)
		if err != nil {
			continue
		}
		base := filepath.Base(real)
		if strings.HasSuffix(base, ".so") || strings.Contains(base, ".so.") {
			dir := filepath.Dir(real)
			p.binds[dir] = true
			libDirs = append(libDirs, dir)
		} else if _, ok := p.binds[real]; !ok {
			p.binds[real] = false
		}
	}
	// Links in the library directories that lead elsewhere (Debian's
	// alternatives: libblas.so.3 → /etc/alternatives/…) must resolve in
	// the new root as on the host.
	slices.Sort(libDirs)
	for _, dir := range slices.Compact(libDirs) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.Type()&os.ModeSymlink == 0 {
				continue
			}
			// Every link of the chain is recorded (those inside a
			// bound directory come with it); the end is bound unless a
			// bound directory holds it.
			real, err := p.resolve(filepath.Join(dir, e.Name()), 0)
			if err != nil || p.inBind(real) {
				continue
			}
			if fi, err := os.Stat(real); err == nil {
				p.binds[real] = fi.IsDir()
			}
		}
	}
	layout := p.layout()
	for _, b := range layout.Binds {
		for _, h := range hidden {
			h = filepath.Clean(h)
			if real, err := filepath.EvalSymlinks(h); err == nil {
				h = real
			}
			if within(h, b.Path) || within(b.Path, h) {
				return nil, fmt.Errorf("binding %s into the sandbox would expose %s", b.Path, h)
			}
		}
	}
	return layout, nil
}

// rootPlanner collects binds and symlinks.
type rootPlanner struct {
	binds map[string]bool // real path → is a directory
	links map[string]string
}

// resolve follows path component by component from "/", recording every
// symlink met, and returns the real path.
func (p *rootPlanner) resolve(path string, depth int) (string, error) {
	if depth > 40 {
		return "", fmt.Errorf("%s: too many levels of symbolic links", path)
	}
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("%s is not absolute", path)
	}
	parts := strings.Split(strings.TrimPrefix(filepath.Clean(path), "/"), "/")
	cur := "/"
	for i, part := range parts {
		if part == "" {
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		if err != nil {
			return "", err
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := os.Readlink(next)
			if err != nil {
				return "", err
			}
			p.links[next] = target
			if !filepath.IsAbs(target) {
				target = filepath.Join(cur, target)
			}
			return p.resolve(filepath.Join(append([]string{target}, parts[i+1:]...)...), depth+1)
		}
		cur = next
	}
	return cur, nil
}

// inBind reports whether path lies in a directory bound so far.
func (p *rootPlanner) inBind(path string) bool {
	for b, dir := range p.binds {
		if dir && within(path, b) {
			return true
		}
	}
	return false
}

// layout keeps the binds not inside another bound directory and the links
// not brought by a bind, in a stable order.
func (p *rootPlanner) layout() *rootLayout {
	l := &rootLayout{}
	var paths []string
	for b := range p.binds {
		paths = append(paths, b)
	}
	slices.Sort(paths)
	covered := func(path string) bool {
		for _, b := range l.Binds {
			if b.Dir && within(path, b.Path) {
				return true
			}
		}
		return false
	}
	for _, b := range paths {
		if !covered(b) {
			l.Binds = append(l.Binds, bindMount{Path: b, Dir: p.binds[b]})
		}
	}
	var links []string
	for s := range p.links {
		links = append(links, s)
	}
	slices.Sort(links)
	for _, s := range links {
		if !covered(s) {
			l.Symlinks = append(l.Symlinks, [2]string{s, p.links[s]})
		}
	}
	return l
}

// within reports whether path is dir or lies inside it.
func within(path, dir string) bool {
	return path == dir || dir == "/" || strings.HasPrefix(path, dir+"/")
}
