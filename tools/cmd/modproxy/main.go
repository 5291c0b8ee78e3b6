// Command modproxy writes a file-system Go module proxy holding the given
// modules of the working tree at one release version, in the layout the go
// command reads with GOPROXY=file://DIR:
//
//	DIR/<escaped module path>/@v/list
//	DIR/<escaped module path>/@v/<version>.info
//	DIR/<escaped module path>/@v/<version>.mod
//	DIR/<escaped module path>/@v/<version>.zip
//
// Usage:
//
//	modproxy -version v0.1.0 -out DIR MODULEDIR...
//
// Each module's zip holds the files git tracks in its directory, as they
// are in the working tree, plus untracked files git does not ignore (what
// a commit of the tree would publish), without the files of nested
// modules. A module without a LICENSE file of its own gets the one at the
// root of the git repository, as the go command does when it zips a
// module in a subdirectory of a repository; a module that would have no
// license is an error. It refuses a module whose go.mod has a replace directive or
// requires another of the given modules at a version other than -version:
// published, such a go.mod could not be installed with go install
// pkg@version, or would pull in another release of its sibling.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
	modzip "golang.org/x/mod/zip"
)

func main() {
	version := flag.String("version", "", "release `version` of every module (e.g. v0.1.0)")
	out := flag.String("out", "", "proxy `directory` to write (created when absent)")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: modproxy -version vX.Y.Z -out DIR MODULEDIR...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *version == "" || *out == "" || flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*version, *out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
}

// mod is one module directory to publish.
type mod struct {
	dir    string
	path   string
	gomod  []byte
	parsed *modfile.File
}

func run(version, out string, dirs []string) error {
	if !semver.IsValid(version) || semver.Canonical(version) != version || semver.Build(version) != "" {
		return fmt.Errorf("version %q is not a canonical semantic version such as v0.1.0", version)
	}
	mods := make([]*mod, 0, len(dirs))
	paths := make(map[string]bool)
	for _, dir := range dirs {
		m, err := readMod(dir)
		if err != nil {
			return err
		}
		if err := module.Check(m.path, version); err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		mods = append(mods, m)
		paths[m.path] = true
	}
	var problems []string
	for _, m := range mods {
		for _, r := range m.parsed.Replace {
			problems = append(problems, fmt.Sprintf("%s/go.mod: replace %s: a published go.mod must not replace modules", m.dir, r.Old.Path))
		}
		for _, r := range m.parsed.Require {
			if paths[r.Mod.Path] && r.Mod.Version != version {
				problems = append(problems, fmt.Sprintf("%s/go.mod: requires %s %s, want the release version %s", m.dir, r.Mod.Path, r.Mod.Version, version))
			}
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "\n"))
	}
	now := time.Now().UTC().Truncate(time.Second)
	for _, m := range mods {
		if err := m.write(out, version, now); err != nil {
			return fmt.Errorf("%s: %w", m.dir, err)
		}
		fmt.Printf("%s %s\n", m.path, version)
	}
	return nil
}

func readMod(dir string) (*mod, error) {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return nil, err
	}
	f, err := modfile.Parse(filepath.Join(dir, "go.mod"), b, nil)
	if err != nil {
		return nil, err
	}
	if f.Module == nil {
		return nil, fmt.Errorf("%s/go.mod has no module line", dir)
	}
	return &mod{dir: dir, path: f.Module.Mod.Path, gomod: b, parsed: f}, nil
}

// write adds m at version to the proxy in out.
func (m *mod) write(out, version string, t time.Time) error {
	esc, err := module.EscapePath(m.path)
	if err != nil {
		return err
	}
	vdir := filepath.Join(out, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return err
	}
	files, err := m.files()
	if err != nil {
		return err
	}
	var zbuf bytes.Buffer
	if err := modzip.Create(&zbuf, module.Version{Path: m.path, Version: version}, files); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, t})
	if err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		version + ".zip":  zbuf.Bytes(),
		version + ".mod":  m.gomod,
		version + ".info": info,
	} {
		if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
			return err
		}
	}
	return addToList(filepath.Join(vdir, "list"), version)
}

// addToList adds version to a proxy's list file unless it is there.
func addToList(name, version string) error {
	b, err := os.ReadFile(name)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for _, v := range strings.Fields(string(b)) {
		if v == version {
			return nil
		}
	}
	return os.WriteFile(name, append(b, version+"\n"...), 0o644)
}

// files lists the module's files: those git tracks or would add, that
// exist in the working tree and are not in a nested module.
func (m *mod) files() ([]modzip.File, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", ".")
	cmd.Dir = m.dir
	cmd.Stderr = os.Stderr
	outb, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	seen := make(map[string]bool)
	var files []modzip.File
	for _, name := range strings.Split(string(outb), "\x00") {
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		full := filepath.Join(m.dir, filepath.FromSlash(name))
		fi, err := os.Lstat(full)
		if errors.Is(err, os.ErrNotExist) {
			continue // deleted in the working tree
		}
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			continue
		}
		if nested(m.dir, name) {
			continue
		}
		files = append(files, file{slash: name, full: full, info: fi})
	}
	if !seen["LICENSE"] {
		cmd := exec.Command("git", "rev-parse", "--show-toplevel")
		cmd.Dir = m.dir
		top, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("git rev-parse: %w", err)
		}
		full := filepath.Join(strings.TrimSpace(string(top)), "LICENSE")
		fi, err := os.Lstat(full)
		if err != nil {
			return nil, fmt.Errorf("no LICENSE in the module or at the repository root: %w", err)
		}
		files = append(files, file{slash: "LICENSE", full: full, info: fi})
	}
	return files, nil
}

// nested reports whether the slash path name, relative to the module root
// dir, lies in a directory below the root that has its own go.mod.
func nested(dir, name string) bool {
	for d := path.Dir(name); d != "." && d != "/"; d = path.Dir(d) {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(d), "go.mod")); err == nil {
			return true
		}
	}
	return false
}

// file is a working-tree file for modzip.Create.
type file struct {
	slash string
	full  string
	info  os.FileInfo
}

func (f file) Path() string                 { return f.slash }
func (f file) Lstat() (os.FileInfo, error)  { return f.info, nil }
func (f file) Open() (io.ReadCloser, error) { return os.Open(f.full) }
