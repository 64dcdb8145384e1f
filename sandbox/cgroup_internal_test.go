//go:build linux

package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlanCgroups: where runs' cgroups are made, from /proc/self/cgroup and
// /proc/self/mountinfo as machines of each kind show them (a pure v2 host,
// a hybrid host whose v2 hierarchy has no controllers, a container with a
// cgroup namespace, a v2 hierarchy that refuses the controllers).
func TestPlanCgroups(t *testing.T) {
	const v1Mounts = `36 25 0:31 / /sys/fs/cgroup/memory rw,relatime shared:13 - cgroup cgroup rw,memory
37 25 0:32 / /sys/fs/cgroup/pids rw,relatime shared:14 - cgroup cgroup rw,pids
38 25 0:33 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:15 - cgroup cgroup rw,cpu,cpuacct
39 25 0:34 / /sys/fs/cgroup/unified rw,relatime shared:16 - cgroup2 cgroup2 rw
`
	ok := func(string) error { return nil }
	refuse := func(dir string) error { return errors.New(dir + " offers only hugetlb") }
	cases := []struct {
		name, own, mounts string
		usable            func(string) error
		version           int
		dirs              map[string]string
		err               string
		// cpu: v1's cpu controller is used; cpuWhy is in why not.
		cpu    bool
		cpuWhy string
	}{
		{name: "v2", own: "0::/system.slice/green.service\n",
			mounts:  "30 24 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n",
			usable:  ok,
			version: 2, dirs: map[string]string{"": "/sys/fs/cgroup/system.slice/green.service"}},
		{name: "hybrid, v2 without controllers", own: "9:pids:/job\n4:memory:/job/x\n2:cpu,cpuacct:/\n0::/\n",
			mounts: v1Mounts, usable: refuse,
			version: 1, cpu: true, dirs: map[string]string{"memory": "/sys/fs/cgroup/memory/job/x", "pids": "/sys/fs/cgroup/pids/job",
				"cpuacct": "/sys/fs/cgroup/cpu,cpuacct", "cpu": "/sys/fs/cgroup/cpu,cpuacct"}},
		{name: "v1, cpu and cpuacct apart", own: "9:pids:/\n4:memory:/job\n2:cpuacct:/\n1:cpu:/\n0::/\n",
			mounts: "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n33 31 0:30 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct\n" +
				"35 31 0:32 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n39 31 0:36 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n",
			usable: refuse, version: 1, cpu: true, dirs: map[string]string{"memory": "/sys/fs/cgroup/memory/job", "pids": "/sys/fs/cgroup/pids",
				"cpuacct": "/sys/fs/cgroup/cpuacct", "cpu": "/sys/fs/cgroup/cpu"}},
		{name: "v1 without cpu", own: "9:pids:/\n4:memory:/\n2:cpuacct:/\n",
			mounts: "36 25 0:31 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n37 25 0:32 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n" +
				"38 25 0:33 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct\n",
			usable: ok, version: 1, cpuWhy: "no cpu controller",
			dirs: map[string]string{"memory": "/sys/fs/cgroup/memory", "pids": "/sys/fs/cgroup/pids", "cpuacct": "/sys/fs/cgroup/cpuacct"}},
		{name: "container with a cgroup namespace", own: "0::/\n",
			mounts:  "500 400 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
			usable:  ok,
			version: 2, dirs: map[string]string{"": "/sys/fs/cgroup"}},
		{name: "a mount of part of the tree", own: "0::/docker/abc/sub\n",
			mounts:  "500 400 0:26 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
			usable:  ok,
			version: 2, dirs: map[string]string{"": "/sys/fs/cgroup/sub"}},
		{name: "a mount showing another part of the tree", own: "0::/elsewhere\n",
			mounts: "500 400 0:26 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
			usable: ok, err: "no cgroup hierarchy"},
		{name: "v1 without pids", own: "4:memory:/\n2:cpuacct:/\n",
			mounts: "36 25 0:31 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n38 25 0:33 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct\n",
			usable: ok, err: "only 2 of the memory, pids and cpuacct"},
		{name: "none", own: "0::/\n", mounts: "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n", usable: ok, err: "no cgroup hierarchy"},
		{name: "escaped mount point", own: "0::/a b\n",
			mounts:  `30 24 0:26 / /sys/fs/my\040cgroup rw - cgroup2 cgroup2 rw` + "\n",
			usable:  ok,
			version: 2, dirs: map[string]string{"": "/sys/fs/my cgroup/a b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, err := planCgroups(tc.own, tc.mounts, tc.usable)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %+v, %v; want an error saying %q", h, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := h.v1
			if h.version == 2 {
				got = map[string]string{"": h.v2}
			}
			if h.version != tc.version || len(got) != len(tc.dirs) {
				t.Fatalf("got v%d %v, want v%d %v", h.version, got, tc.version, tc.dirs)
			}
			for k, v := range tc.dirs {
				if got[k] != v {
					t.Errorf("%q: %q, want %q", k, got[k], v)
				}
			}
			if h.version == 1 && (h.cpu != tc.cpu || !strings.Contains(h.cpuWhy, tc.cpuWhy)) {
				t.Errorf("cpu %v (%q), want %v (%q)", h.cpu, h.cpuWhy, tc.cpu, tc.cpuWhy)
			}
		})
	}
}

// TestCgroupStatsOver: which counter names which limit, memory first (an
// OOM kill may also refuse forks on the way).
func TestCgroupStatsOver(t *testing.T) {
	for _, tc := range []struct {
		s    cgroupStats
		want string
	}{
		{cgroupStats{cpuNS: 5e8}, ""},
		{cgroupStats{cpuNS: 2e9 + 1}, LimitCPU},
		{cgroupStats{pidsMax: 1, cpuNS: 3e9}, LimitProcesses},
		{cgroupStats{oomKills: 1, pidsMax: 2}, LimitMemory},
	} {
		if got := tc.s.over(2e9); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.s, got, tc.want)
		}
	}
}

// TestCreateCgroupCPU: a run's cgroup gets the equal CPU share where the
// host has the cpu controller, and one directory where cpu and cpuacct are
// mounted together (cgroup v1's usual "cpu,cpuacct"); without the
// controller, no share is written. A directory tree stands in for the
// cgroup file systems (their control files are files to write).
func TestCreateCgroupCPU(t *testing.T) {
	root := t.TempDir()
	mem, pids, cc := filepath.Join(root, "memory"), filepath.Join(root, "pids"), filepath.Join(root, "cpu,cpuacct")
	for _, d := range []string{mem, pids, cc} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	read := func(path string) string {
		b, _ := os.ReadFile(path)
		return string(b)
	}
	h := &cgroupHost{version: 1, v1: map[string]string{"memory": mem, "pids": pids, "cpuacct": cc, "cpu": cc}, cpu: true}
	g, err := h.create(cgroupLimits{memory: 1 << 30, pids: 8})
	if err != nil {
		t.Fatal(err)
	}
	if g.dirs["cpu"] != g.dirs["cpuacct"] || filepath.Dir(g.dirs["cpu"]) != cc {
		t.Errorf("dirs %v: want cpu and cpuacct in one directory under %s", g.dirs, cc)
	}
	if got := read(g.dirs["cpu"] + "/cpu.shares"); got != cpuSharesV1 {
		t.Errorf("cpu.shares %q, want %s", got, cpuSharesV1)
	}
	if read(g.dirs["memory"]+"/memory.limit_in_bytes") != "1073741824" || read(g.dirs["pids"]+"/pids.max") != "8" {
		t.Errorf("limits not written: %v", g.dirs)
	}
	h.cpu = false
	if g, err = h.create(cgroupLimits{memory: 1 << 30, pids: 8}); err != nil {
		t.Fatal(err)
	}
	if _, ok := g.dirs["cpu"]; ok || fileExists(g.dirs["cpuacct"]+"/cpu.shares") {
		t.Errorf("without the cpu controller: dirs %v, cpu.shares written", g.dirs)
	}
	v2 := &cgroupHost{version: 2, v2: root, cpu: true}
	if g, err = v2.create(cgroupLimits{memory: 1 << 30, pids: 8}); err != nil {
		t.Fatal(err)
	}
	if got := read(g.dirs[""] + "/cpu.weight"); got != cpuWeightV2 {
		t.Errorf("v2 cpu.weight %q, want %s", got, cpuWeightV2)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
