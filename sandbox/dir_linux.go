//go:build linux

package sandbox

// The private directory of a run: what is written into it, with which
// owners and modes, and how it is removed.

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// rootSlack is the minimal root's tmpfs beyond the run's files: directories
// and symlinks.
const rootSlack = 2 << 20

// treeBytes is the size of the files under dir, each rounded up to a page.
func treeBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n += (fi.Size() + 4095) &^ 4095
		}
		return nil
	})
	return n, err
}

func scriptBytes(path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return (fi.Size() + 4095) &^ 4095
}

// stripPaths takes the private directory and the minimal root's own paths
// off the output, so that what the code printed reads the same in every
// mode and names no host directory.
func stripPaths(out, dir string) string {
	out = strings.ReplaceAll(out, dir+string(filepath.Separator), "")
	return strings.ReplaceAll(out, insideDir+"/", "")
}

// prepareDir writes the boot script, the library and the script into the
// private directory and makes the work directory and the minimal root's
// mount point, with the ownership and modes the run's identity needs: it
// may read the library and the script and write the work directory only.
// Where each run has an identity of its own, the private directory is
// its group's alone (0710): no other run, whose command line on the host's
// /proc names this directory, can read the script or the work directory.
func (r *Runner) prepareDir(dir string, p *probe, id identity, req Request) (lib, work, script string, err error) {
	mode := os.FileMode(0o711) // the sandboxed identity may enter, not list
	if p.dropUser {
		if err := os.Chown(dir, 0, id.gid); err != nil {
			return "", "", "", fmt.Errorf("sandbox: %w", err)
		}
		mode = 0o710
	}
	if err := os.Chmod(dir, mode); err != nil {
		return "", "", "", fmt.Errorf("sandbox: %w", err)
	}
	if err := copyTree(filepath.Join(dir, "boot"), mustSub(bootFS, "py")); err != nil {
		return "", "", "", fmt.Errorf("sandbox: write the boot script: %w", err)
	}
	lib = filepath.Join(dir, "lib")
	for _, d := range []string{lib, filepath.Join(dir, "root")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return "", "", "", fmt.Errorf("sandbox: %w", err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			return "", "", "", fmt.Errorf("sandbox: %w", err)
		}
	}
	if r.opts.Lib != nil {
		if err := copyTree(lib, r.opts.Lib); err != nil {
			return "", "", "", fmt.Errorf("sandbox: write the library: %w", err)
		}
	}
	script = filepath.Join(dir, ScriptFile(req.Name))
	if err := writeReadable(script, []byte(req.Script)); err != nil {
		return "", "", "", fmt.Errorf("sandbox: write the script: %w", err)
	}
	work = filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		return "", "", "", fmt.Errorf("sandbox: %w", err)
	}
	if p.dropUser {
		if err := os.Chown(work, id.uid, id.gid); err != nil {
			return "", "", "", fmt.Errorf("sandbox: %w", err)
		}
	}
	return lib, work, script, nil
}

func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err) // an embedded directory that is not there: a build error
	}
	return sub
}

// copyTree writes the tree of src under dst, readable by everyone whatever
// the umask.
func copyTree(dst string, src fs.FS) error {
	return fs.WalkDir(src, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dst, filepath.FromSlash(path))
		if d.IsDir() {
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			return os.Chmod(target, 0o755)
		}
		b, err := fs.ReadFile(src, path)
		if err != nil {
			return err
		}
		return writeReadable(target, b)
	})
}

func writeReadable(path string, b []byte) error {
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return err
	}
	return os.Chmod(path, 0o644)
}

// removeDir removes a private directory even where the code made a
// subdirectory unreadable.
func removeDir(dir string) error {
	if err := os.RemoveAll(dir); err == nil {
		return nil
	}
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() {
			_ = os.Chmod(path, 0o700)
		}
		return nil
	})
	return os.RemoveAll(dir)
}
