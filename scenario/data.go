package scenario

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ourModulePath identifies this module's go.mod when LocateData looks for
// the module root, so a go.mod of some other project up the tree is not
// taken for ours.
const ourModulePath = "github.com/coordbench/coordbench"

// LocateData resolves a data location: the environment variable env when
// set, else rel relative to the working directory, else relative to the
// module root. dir says whether a directory or a file is wanted.
func LocateData(env, rel string, dir bool) (string, error) {
	kind := "file"
	if dir {
		kind = "directory"
	}
	okKind := func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.IsDir() == dir
	}
	if v := os.Getenv(env); v != "" {
		if !okKind(v) {
			return "", fmt.Errorf("$%s=%s is not a %s", env, v, kind)
		}
		return v, nil
	}
	var tried []string
	if wd, err := os.Getwd(); err == nil {
		p := filepath.Join(wd, rel)
		if okKind(p) {
			return p, nil
		}
		tried = append(tried, p)
		if root, ok := locateModuleRoot(wd); ok {
			p := filepath.Join(root, rel)
			if okKind(p) {
				return p, nil
			}
			tried = append(tried, p)
		}
	}
	return "", fmt.Errorf("no %s found: $%s is not set and none of %s exists", kind, env, strings.Join(slices.Compact(tried), ", "))
}

// locateModuleRoot returns the nearest directory at or above dir whose go.mod
// declares this module.
func locateModuleRoot(dir string) (string, bool) {
	for {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			sc := bufio.NewScanner(f)
			ours := false
			for sc.Scan() {
				if fields := strings.Fields(sc.Text()); len(fields) == 2 && fields[0] == "module" {
					ours = strings.Trim(fields[1], `"`) == ourModulePath
					break
				}
			}
			f.Close()
			if ours {
				return dir, true
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}
